// libparray_blas.so: parray's CPU GEMM behind the standard BLAS entry points,
// so an unchanged CBLAS or Fortran-BLAS program can link it (or LD_PRELOAD it)
// and get parray's GEMM. Exported (exports.map): cblas_sgemm, cblas_dgemm,
// sgemm_, dgemm_ and the default error handlers xerbla_ and cblas_xerbla.
//
// Illegal arguments are reported the BLAS way, checked in the reference
// routines' order so that the first illegal one is named:
//   * sgemm_/dgemm_ call xerbla_("SGEMM ", &info, 6) with the reference
//     SGEMM's INFO (1 transa, 2 transb, 3 m, 4 n, 5 k, 8 lda, 10 ldb, 13 ldc);
//     the 6 is gfortran's hidden length of SRNAME, which a Fortran XERBLA needs.
//   * cblas_sgemm/cblas_dgemm call cblas_xerbla(p, "cblas_sgemm", form, ...)
//     with the number netlib's CBLAS passes: 1 order, 2 TransA, 3 TransB, then
//     the Fortran routine's INFO + 1. A row-major call is the Fortran call
//     C^T = op(B)^T op(A)^T, so there the number names M for N and lda for
//     ldb (4 <-> 5, 9 <-> 11) and the handler swaps them back (netlib's own
//     cblas_xerbla does, from its RowMajorStrg flag, and so does the CBLAS
//     test suite's): keeping that convention lets handlers written for the
//     reference, and its test suite, work unchanged.
// Then the call returns without reading or writing any operand. The reference
// quick returns hold too: M or N == 0, or (alpha or K == 0) and beta == 1,
// leave C untouched. Exceptions never cross the C boundary.
//
// Both default handlers are exported and weak, as netlib's are: a program's
// own xerbla_ or cblas_xerbla comes first in the dynamic linker's lookup order
// and replaces them, which is how netlib's test programs (xblat3, x?cblat3)
// catch the error exits.
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>

#include "parray/gemm.hpp"

extern "C" {
void xerbla_(const char* srname, const int* info, std::size_t srname_len);
void cblas_xerbla(int p, const char* rout, const char* form, ...);
}

namespace {

using parray::Order;
using parray::Trans;
using TransArg = std::optional<Trans>;  // std::nullopt: not a legal value

// CBLAS enumerations (fixed by the CBLAS standard).
constexpr int kRowMajor = 101, kColMajor = 102, kNoTrans = 111, kTrans = 112, kConjTrans = 113;

// Set while cblas_xerbla is called for a row-major call on this thread: the
// reference's RowMajorStrg, which the default handler reads to print the
// parameter's real position.
thread_local bool reporting_row_major = false;

// The reference xGEMM's INFO for a column-major call: the position of the
// first illegal argument in the order it checks them, 0 when all are legal.
int reference_info(TransArg ta, TransArg tb, int m, int n, int k, int lda, int ldb, int ldc) {
  auto too_small = [](int ld, int rows) { return ld < (rows > 1 ? rows : 1); };
  if (!ta) return 1;
  if (!tb) return 2;
  if (m < 0) return 3;
  if (n < 0) return 4;
  if (k < 0) return 5;
  if (too_small(lda, *ta == Trans::no ? m : k)) return 8;
  if (too_small(ldb, *tb == Trans::no ? k : n)) return 10;
  if (too_small(ldc, m)) return 13;
  return 0;
}

// One GEMM with legal arguments, in CBLAS terms.
template <class T>
struct GemmArgs {
  Order order;
  Trans ta, tb;
  int m, n, k;
  T alpha;
  const T* a;
  int lda;
  const T* b;
  int ldb;
  T beta;
  T* c;
  int ldc;
};

// routine: the name for messages ("cblas_sgemm", or the blank-padded "SGEMM ").
template <class T>
void run(const char* routine, const GemmArgs<T>& g) {
  // The reference returns before touching C when there is nothing to add.
  if (g.m == 0 || g.n == 0 || ((g.alpha == T(0) || g.k == 0) && g.beta == T(1))) return;
  const int name_len = static_cast<int>(std::strcspn(routine, " "));
  try {
    parray::gemm<T>(g.order, g.ta, g.tb, g.m, g.n, g.k, g.alpha, g.a, g.lda, g.b, g.ldb, g.beta, g.c, g.ldc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parray %.*s: %s\n", name_len, routine, e.what());
  } catch (...) {
    std::fprintf(stderr, "parray %.*s: unknown exception\n", name_len, routine);
  }
}

template <class... Args>
void report_cblas(int p, const char* routine, bool row_major, const char* form, Args... args) {
  reporting_row_major = row_major;
  cblas_xerbla(p, routine, form, args...);
  reporting_row_major = false;
}

TransArg cblas_trans(int t) {
  if (t == kNoTrans) return Trans::no;
  if (t == kTrans || t == kConjTrans) return Trans::yes;  // real data: conjugate = transpose
  return std::nullopt;
}

template <class T>
void cblas_gemm(const char* routine, int order, int ta, int tb, int m, int n, int k, T alpha, const T* a, int lda,
                const T* b, int ldb, T beta, T* c, int ldc) {
  if (order != kRowMajor && order != kColMajor)
    return report_cblas(1, routine, false, "Illegal layout setting, %d\n", order);
  const bool row = order == kRowMajor;
  const TransArg op_a = cblas_trans(ta), op_b = cblas_trans(tb);
  if (!op_a) return report_cblas(2, routine, row, "Illegal TransA setting, %d\n", ta);
  if (!op_b) return report_cblas(3, routine, row, "Illegal TransB setting, %d\n", tb);
  const int info = row ? reference_info(op_b, op_a, n, m, k, ldb, lda, ldc)
                       : reference_info(op_a, op_b, m, n, k, lda, ldb, ldc);
  if (info != 0) return report_cblas(info + 1, routine, row, "");
  run(routine, GemmArgs<T>{row ? Order::row_major : Order::col_major, *op_a, *op_b, m, n, k, alpha, a, lda, b,
                           ldb, beta, c, ldc});
}

TransArg fortran_trans(const char* t) {
  const char ch = t ? *t : '\0';
  if (ch == 'N' || ch == 'n') return Trans::no;
  if (ch == 'T' || ch == 't' || ch == 'C' || ch == 'c') return Trans::yes;
  return std::nullopt;
}

// The position of the first null among the scalar arguments of ?gemm_ (the
// matrices, positions 7, 9 and 12, may be null where nothing is read), 0 if
// none: a C caller's null is reported as an illegal value, not dereferenced.
int first_null_scalar(const void* const (&args)[13]) {
  for (int i = 0; i < 13; ++i)
    if (args[i] == nullptr && i != 6 && i != 8 && i != 11) return i + 1;
  return 0;
}

// srname: the reference's CHARACTER*6 name, "SGEMM " or "DGEMM ".
template <class T>
void fortran_gemm(const char* srname, const char* ta, const char* tb, const int* m, const int* n, const int* k,
                  const T* alpha, const T* a, const int* lda, const T* b, const int* ldb, const T* beta, T* c,
                  const int* ldc) {
  const TransArg op_a = fortran_trans(ta), op_b = fortran_trans(tb);
  int info = first_null_scalar({ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
  if (info == 0) info = reference_info(op_a, op_b, *m, *n, *k, *lda, *ldb, *ldc);
  if (info != 0) return xerbla_(srname, &info, 6);
  run(srname, GemmArgs<T>{Order::col_major, *op_a, *op_b, *m, *n, *k, *alpha, a, *lda, b, *ldb, *beta, c, *ldc});
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

// Fortran BLAS (column-major). gfortran's hidden lengths of TRANSA and TRANSB,
// passed after ldc, are not needed: only the first character counts.
void sgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const float* alpha,
            const float* a, const int* lda, const float* b, const int* ldb, const float* beta, float* c,
            const int* ldc) {
  fortran_gemm<float>("SGEMM ", ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void dgemm_(const char* ta, const char* tb, const int* m, const int* n, const int* k, const double* alpha,
            const double* a, const int* lda, const double* b, const int* ldb, const double* beta, double* c,
            const int* ldc) {
  fortran_gemm<double>("DGEMM ", ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// The reference BLAS XERBLA's message. The reference then STOPs the program;
// this one returns, as OpenBLAS's does: the routine that called it returns
// without computing anything, and a library should not end its host program
// over one bad call (a program that wants that defines its own xerbla_). On
// stderr rather than the reference's stdout, which is the program's own output.
// srname_len is gfortran's hidden length; a C caller that passes none passes
// a NUL-terminated name, so the name also ends at a NUL.
__attribute__((weak)) void xerbla_(const char* srname, const int* info, std::size_t srname_len) {
  const int len = static_cast<int>(strnlen(srname, srname_len));
  std::fprintf(stderr, " ** On entry to %.*s parameter number %2d had an illegal value\n", len, srname, *info);
}

// Netlib CBLAS's message, with the parameter's position in the cblas_ call
// (swapped back for a row-major call, see the top of the file). The reference
// then exits; this one returns, for the same reason as xerbla_.
__attribute__((weak)) void cblas_xerbla(int p, const char* rout, const char* form, ...) {
  if (reporting_row_major) p = p == 4 ? 5 : p == 5 ? 4 : p == 9 ? 11 : p == 11 ? 9 : p;
  if (p != 0) std::fprintf(stderr, "Parameter %d to routine %s was incorrect\n", p, rout);
  va_list args;
  va_start(args, form);
  std::vfprintf(stderr, form, args);
  va_end(args);
}

}  // extern "C"
