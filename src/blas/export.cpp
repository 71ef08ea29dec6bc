// libparray_blas.so: parray's CPU GEMM behind the standard BLAS entry points,
// so an unchanged CBLAS or Fortran-BLAS program can link it (or LD_PRELOAD it)
// and get parray's GEMM. Only the four symbols below are exported
// (exports.map). Errors are reported the way BLAS's xerbla does: a message on
// stderr naming the routine and the bad argument, and the call returns
// without touching C; exceptions never cross the C boundary.
#include <cstdio>

#include "parray/gemm.hpp"

namespace {

// CBLAS enumerations (fixed by the CBLAS standard).
constexpr int kRowMajor = 101, kColMajor = 102, kNoTrans = 111, kTrans = 112, kConjTrans = 113;

template <class T>
void cblas_gemm(const char* routine, int order, int ta, int tb, int m, int n, int k, T alpha, const T* a, int lda,
                const T* b, int ldb, T beta, T* c, int ldc) {
  using namespace parray;
  try {
    if (order != kRowMajor && order != kColMajor) throw Error("Order is neither CblasRowMajor nor CblasColMajor");
    auto trans = [](int t, const char* name) {
      if (t == kNoTrans) return Trans::no;
      if (t == kTrans || t == kConjTrans) return Trans::yes;  // real data: conjugate = transpose
      throw Error(std::string(name) + " is not a CBLAS_TRANSPOSE value");
    };
    gemm<T>(order == kRowMajor ? Order::row_major : Order::col_major, trans(ta, "TransA"), trans(tb, "TransB"), m, n,
            k, alpha, a, lda, b, ldb, beta, c, ldc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parray %s: %s\n", routine, e.what());
  }
}

template <class T>
void fortran_gemm(const char* routine, const char* ta, const char* tb, const int* m, const int* n, const int* k,
                  const T* alpha, const T* a, const int* lda, const T* b, const int* ldb, const T* beta, T* c,
                  const int* ldc) {
  auto trans = [](const char* t) {
    const char ch = t ? *t : '?';
    return ch == 'N' || ch == 'n' ? kNoTrans : ch == 'T' || ch == 't' || ch == 'C' || ch == 'c' ? kTrans : -1;
  };
  if (!m || !n || !k || !alpha || !beta || !lda || !ldb || !ldc) {
    std::fprintf(stderr, "parray %s: a null argument\n", routine);
    return;
  }
  cblas_gemm<T>(routine, kColMajor, trans(ta), trans(tb), *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc);
}

}  // namespace

extern "C" {

void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
                 int ldb, float beta, float* c, int ldc) {
  cblas_gemm<float>("cblas_sgemm", order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                 const double* b, int ldb, double beta, double* c, int ldc) {
  cblas_gemm<double>("cblas_dgemm", order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Fortran BLAS (column-major; gfortran's hidden string lengths, if passed, are ignored).
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc) {
  fortran_gemm<float>("sgemm_", ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc) {
  fortran_gemm<double>("dgemm_", ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // extern "C"
