// Which path a CPU GEMM takes: direct, small or packed.
#include "gemm.hpp"

#include <algorithm>

#include "blocked.hpp"
#include "blocking.hpp"
#include "direct.hpp"
#include "../gemv/few_columns.hpp"
#include "isa.hpp"
#include "parray/gemv.hpp"

namespace parray::cpu {

namespace {

// Below this many multiply-adds, packing and the microkernel's fixed costs do
// not pay; an i-p-j loop through the layout is faster (docs/cpu-gemm.md).
constexpr double kSmallWork = 24.0 * 24 * 24;

template <class T>
void small_gemm(const GemmCall<T>& call) {
  const MatrixView<const T>& a = call.a;
  const MatrixView<const T>& b = call.b;
  const MatrixView<T>& c = call.c;
  const index_t m = c.rows(), n = c.cols(), k = a.cols();
  T acc[64];
  for (index_t j0 = 0; j0 < n; j0 += 64) {
    const index_t nb = std::min<index_t>(64, n - j0);
    for (index_t i = 0; i < m; ++i) {
      for (index_t j = 0; j < nb; ++j) acc[j] = T(0);
      for (index_t p = 0; p < k; ++p) {
        const T aip = a(i, p);
        for (index_t j = 0; j < nb; ++j) acc[j] += aip * b(p, j0 + j);
      }
      for (index_t j = 0; j < nb; ++j) {
        T& out = c(i, j0 + j);
        out = call.beta == T(0) ? call.alpha * acc[j] : call.alpha * acc[j] + call.beta * out;
      }
    }
  }
}

// The microkernels write rows of C with NR contiguous columns. A C whose
// columns are strided but whose rows are contiguous is computed as
// C^T = B^T A^T instead.
template <class T>
bool wants_c_transposed(const GemmCall<T>& call) {
  const Axis& ccols = call.c.layout.cols;
  const Axis& crows = call.c.layout.rows;
  return !(ccols.is_strided() && ccols.stride[0] == 1) && crows.is_strided() && crows.stride[0] == 1;
}

// call has C's columns contiguous, or neither C's rows nor its columns.
template <class T>
void cpu_gemm_oriented(const GemmCall<T>& call, Isa isa) {
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  if (isa == Isa::avx512 && direct_applicable(call)) {
    // The direct kernel's tile differs from the packed one's (12 x 32 / 12 x 16
    // against 8 x 48 / 8 x 24): its K block and row block follow its own MR and NR.
    const DirectKernel<T>& dk = direct_kernel_avx512<T>();
    const BlockSizes dbs = block_sizes(sizeof(T), dk.mr, dk.nr, m);
    if (prefer_direct(m, n, k, sizeof(T), dbs)) {
      direct_gemm(call, dk, dbs);
      return;
    }
  }
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (work <= kSmallWork) {
    small_gemm(call);
  } else {
    const MicroKernel<T>& uk = microkernel<T>(isa);
    blocked_gemm(call, uk, block_sizes(sizeof(T), uk.mr, uk.nr, m), choose_tile_order(m, n, k, sizeof(T)));
  }
}

}  // namespace

// M = 1 or N = 1 with the vector operand and C contiguous: a GEMV
// (gemv-cpu's kernels), which streams the matrix once; the packed path would
// pack a whole panel for one row or column of C.
template <class T>
bool ran_as_gemv(const GemmCall<T>& call) {
  auto unit = [](const Axis& a, index_t size) { return size <= 1 || (a.is_strided() && a.stride[0] == 1); };
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  if (n != 1 && m != 1) return false;
  // N = 1: rows of A dotted with the vector, unless they are shorter than a
  // vector register, where a dot product is mostly its masked load and
  // reduction and the small path's loop is faster.
  if (n == 1 && (k >= 16 || m * k >= (index_t(1) << 14)) && unit(call.b.layout.rows, k) &&
      unit(call.c.layout.rows, m)) {
    gemv_cpu(GemvCall<T>{call.alpha, call.a, call.b.data, call.beta, call.c.data, call.threads});
    return true;
  }
  // M = 1 reads B by columns where B is row-major: below 2^14 elements that
  // path's set-up (a zeroed block of y) costs more than the small path's
  // whole product.
  if (m == 1 && m * n * k >= (index_t(1) << 14) && unit(call.a.layout.cols, k) && unit(call.c.layout.cols, n)) {
    gemv_cpu(GemvCall<T>{call.alpha, call.b.t(), call.a.data, call.beta, call.c.data, call.threads});
    return true;
  }
  return false;
}

template <class T>
void cpu_gemm(const GemmCall<T>& call, Isa isa) {
  if (ran_as_gemv(call) || gemm_few_columns(call)) return;
  // Only the transposed problem is built anew: a GemmCall is three views of
  // ~170 bytes each, and copying it showed up in a 64^3 product's profile.
  if (wants_c_transposed(call))
    cpu_gemm_oriented(GemmCall<T>{call.alpha, call.b.t(), call.a.t(), call.beta, call.c.t(), call.threads, call.stream,
                                  call.precision},
                      isa);
  else
    cpu_gemm_oriented(call, isa);
}

template void cpu_gemm<float>(const GemmCall<float>&, Isa);
template void cpu_gemm<double>(const GemmCall<double>&, Isa);

}  // namespace parray::cpu
