/* An ordinary CBLAS + Fortran-BLAS program, written against the standard
 * <cblas.h> and nothing of parray's: the test links it against
 * libparray_blas.so and checks the products against a plain loop. Exits 0
 * when every product is right. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*, const int*,
            const float*, const int*, const float*, float*, const int*);
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
            const double*, const int*, const double*, double*, const int*);

enum { M = 67, N = 45, K = 129 };

static int check(const char* what, const double* got, const double* want, int count, double tol) {
  for (int i = 0; i < count; ++i)
    if (!(fabs(got[i] - want[i]) <= tol * (1.0 + fabs(want[i])))) {
      printf("%s: element %d is %g, expected %g\n", what, i, got[i], want[i]);
      return 1;
    }
  printf("%s: ok\n", what);
  return 0;
}

int main(void) {
  static float a[M * K], b[K * N], c[M * N];
  static double ad[M * K], bd[K * N], cd[M * N], want[M * N], got[M * N];
  unsigned s = 12345;
  for (int i = 0; i < M * K; ++i) ad[i] = a[i] = (float)((s = s * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
  for (int i = 0; i < K * N; ++i) bd[i] = b[i] = (float)((s = s * 1103515245u + 12345u) % 2001) / 1000.0f - 1.0f;
  /* Row-major reference C = 2 A B + 0.5 * 1 */
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int p = 0; p < K; ++p) acc += ad[i * K + p] * bd[p * N + j];
      want[i * N + j] = 2.0 * acc + 0.5;
    }
  int bad = 0;

  for (int i = 0; i < M * N; ++i) c[i] = 1.0f;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 2.0f, a, K, b, N, 0.5f, c, N);
  for (int i = 0; i < M * N; ++i) got[i] = c[i];
  bad |= check("cblas_sgemm row-major", got, want, M * N, 1e-4);

  for (int i = 0; i < M * N; ++i) cd[i] = 1.0;
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 2.0, ad, K, bd, N, 0.5, cd, N);
  bad |= check("cblas_dgemm row-major", cd, want, M * N, 1e-12);

  /* Fortran, column-major: C^T = B^T A^T with the row-major arrays read as
   * column-major transposes. */
  const int m = N, n = M, k = K, ldb = N, lda = K, ldc = N;
  const double alpha = 2.0, beta = 0.5;
  for (int i = 0; i < M * N; ++i) cd[i] = 1.0;
  dgemm_("N", "N", &m, &n, &k, &alpha, bd, &ldb, ad, &lda, &beta, cd, &ldc);
  bad |= check("dgemm_ column-major", cd, want, M * N, 1e-12);

  const float alphaf = 2.0f, betaf = 0.5f;
  for (int i = 0; i < M * N; ++i) c[i] = 1.0f;
  sgemm_("N", "N", &m, &n, &k, &alphaf, b, &ldb, a, &lda, &betaf, c, &ldc);
  for (int i = 0; i < M * N; ++i) got[i] = c[i];
  bad |= check("sgemm_ column-major", got, want, M * N, 1e-4);

  /* Transposed operands: C = A B with A given as its transpose (K x M). */
  static float at[K * M];
  for (int i = 0; i < M; ++i)
    for (int p = 0; p < K; ++p) at[p * M + i] = a[i * K + p];
  for (int i = 0; i < M * N; ++i) c[i] = 1.0f;
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, M, N, K, 2.0f, at, M, b, N, 0.5f, c, N);
  for (int i = 0; i < M * N; ++i) got[i] = c[i];
  bad |= check("cblas_sgemm A transposed", got, want, M * N, 1e-4);
  return bad;
}
