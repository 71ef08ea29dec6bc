/* A program with no xerbla_ or cblas_xerbla of its own, making illegal
 * calls: libparray_blas's default handlers print the reference messages, with
 * a row-major call's parameters numbered as in the call, and return. The test
 * matches the messages and the last line. */
#include <stdio.h>

void sgemm_(const char*, const char*, const int*, const int*, const int*, const float*, const float*, const int*,
            const float*, const int*, const float*, float*, const int*);
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
void cblas_dgemm(int, int, int, int, int, int, double, const double*, int, const double*, int, double, double*,
                 int);

enum { RowMajor = 101, ColMajor = 102, NoTrans = 111 };

int main(void) {
  float a[4] = {0}, c[4] = {0};
  double ad[4] = {0}, cd[4] = {0};
  const int bad_m = -1, one = 1;
  const float alpha = 1, beta = 0;
  sgemm_("N", "N", &bad_m, &one, &one, &alpha, a, &one, a, &one, &beta, c, &one); /* m: 3 */
  cblas_dgemm(ColMajor, 999, NoTrans, 1, 1, 1, 1.0, ad, 1, ad, 1, 0.0, cd, 1);     /* TransA: 2 */
  cblas_dgemm(RowMajor, NoTrans, NoTrans, -1, 1, 1, 1.0, ad, 1, ad, 1, 0.0, cd, 1); /* M: 4 */
  cblas_sgemm(RowMajor, NoTrans, NoTrans, 2, 2, 2, 1.0f, a, 2, a, 1, 0.0f, c, 2);  /* ldb < N: 11 */
  fprintf(stderr, "returned after each\n");
  return 0;
}
