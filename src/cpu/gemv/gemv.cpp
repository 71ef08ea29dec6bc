// parray's CPU GEMV, the GEMV registry and the gemv() dispatcher.
//
// GEMV reads every element of A once and does 2 flops per element: it is
// bound by memory bandwidth, so the code aims at streaming A at full speed on
// every core, whatever the layout:
//   * rows contiguous (row-major, any ld): each thread takes a block of rows
//     and computes eight (AVX-512) or four dot products at a time, sharing
//     each load of x (dots.hpp: one kernel per instruction set);
//   * columns contiguous (column-major, any ld): each thread owns a block of
//     2048 rows of y (8 KiB in FP32, stays in L1) and adds four columns of A
//     at a time into it (axpy form), so A is still read contiguously;
//   * any other layout (nested axes, non-unit strides): the same row loop
//     through the layout's offset tables.
// The column-major loops are compiled for AVX-512, AVX2 and the baseline ISA
// (target_clones) and chosen at load time from cpuid.
// Measured (Zen 4, 2 cores, bench/results/gemv-*.csv): see docs/knn.md.
#include "parray/gemv.hpp"

#include <omp.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "../gemm/isa.hpp"
#include "dots.hpp"
#include "few_columns.hpp"
#include "parray/config.hpp"

namespace parray {

// ---- registry ---------------------------------------------------------------

GemvRegistry& gemv_registry() {
  static GemvRegistry r;
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_gemv(r);
    r.set_default(Device::cpu, "gemv-cpu");
#if PARRAY_HAVE_CUDA
    register_cuda_gemv(r);
    if (r.find_or_null("gemv-gpu-06-shapes")) r.set_default(Device::gpu, "gemv-gpu-06-shapes");
#else
    r.add_missing({"gemv-gpu", "built without CUDA"});
#endif
  });
  return r;
}

// ---- CPU kernels ----------------------------------------------------------------

namespace {

#define PARRAY_GEMV_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

#define PARRAY_AXPY(T)                                                                                  \
  /* t[0..m) += x0 c0 + x1 c1 + x2 c2 + x3 c3 for four contiguous columns */                            \
  PARRAY_GEMV_CLONES void axpy4(T* t, const T* c0, const T* c1, const T* c2, const T* c3, T x0, T x1, T x2, \
                                T x3, index_t m) {                                                      \
    _Pragma("omp simd") for (index_t i = 0; i < m; ++i) t[i] += x0 * c0[i] + x1 * c1[i] + x2 * c2[i] +  \
                                                                 x3 * c3[i];                            \
  }                                                                                                     \
  /* eight columns: half the traffic on t per column of A */                                          \
  PARRAY_GEMV_CLONES void axpy8(T* t, const T* c, index_t ld, const T* x, index_t m) {                  \
    const T* c0 = c; const T* c1 = c + ld; const T* c2 = c + 2 * ld; const T* c3 = c + 3 * ld;          \
    const T* c4 = c + 4 * ld; const T* c5 = c + 5 * ld; const T* c6 = c + 6 * ld; const T* c7 = c + 7 * ld; \
    const T x0 = x[0], x1 = x[1], x2 = x[2], x3 = x[3], x4 = x[4], x5 = x[5], x6 = x[6], x7 = x[7];     \
    _Pragma("omp simd") for (index_t i = 0; i < m; ++i) t[i] += (x0 * c0[i] + x1 * c1[i] + x2 * c2[i] + \
                                                                 x3 * c3[i]) + (x4 * c4[i] + x5 * c5[i] + \
                                                                 x6 * c6[i] + x7 * c7[i]);              \
  }                                                                                                     \
  PARRAY_GEMV_CLONES void axpy1(T* t, const T* c0, T x0, index_t m) {                                   \
    _Pragma("omp simd") for (index_t i = 0; i < m; ++i) t[i] += x0 * c0[i];                             \
  }

PARRAY_AXPY(float)
PARRAY_AXPY(double)

template <class T>
T finish(T alpha, T acc, T beta, const T* y) {
  return beta == T(0) ? alpha * acc : alpha * acc + beta * *y;
}

// Rows [i0, i1) of y from A's contiguous rows, dots.widest_rows at a time,
// then four, two, one.
template <class T>
void gemv_rows(const GemvCall<T>& c, const cpu::DotKernel<T>& dots, index_t i0, index_t i1) {
  const index_t n = c.a.cols(), ld = c.a.layout.rows.stride[0];
  constexpr int kMaxRows = 8;
  while (i0 < i1) {
    const index_t left = i1 - i0;
    const int count = left >= dots.widest_rows ? dots.widest_rows : left >= 4 ? 4 : left >= 2 ? 2 : 1;
    const T* rows[kMaxRows];
    for (int r = 0; r < count; ++r) rows[r] = c.a.data + (i0 + r) * ld;
    T acc[kMaxRows];
    if (count == dots.widest_rows) dots.widest(rows, c.x, n, acc);
    else dots.rows[count == 4 ? 2 : count - 1](rows, c.x, n, acc);
    for (int r = 0; r < count; ++r) c.y[i0 + r] = finish(c.alpha, acc[r], c.beta, c.y + i0 + r);
    i0 += count;
  }
}

template <class T>
void gemv_rows_contiguous(const GemvCall<T>& c) {
  const index_t m = c.a.rows();
  const cpu::DotKernel<T>& dots = cpu::dot_kernel<T>(cpu::selected_isa());
  if (c.threads == 1) return gemv_rows(c, dots, 0, m);  // no parallel region: it costs a small GEMV's time
  const index_t step = dots.widest_rows, blocks = (m + step - 1) / step;
#pragma omp parallel num_threads(c.threads)
  {
    const index_t t = omp_get_thread_num(), parts = omp_get_num_threads();
    gemv_rows(c, dots, step * (blocks * t / parts), std::min(m, step * (blocks * (t + 1) / parts)));
  }
}

// Rows [i0, i0 + mb) of y (mb <= kColsBlock) from A's contiguous columns,
// summed in t.
constexpr index_t kColsBlock = 2048;  // rows of y per task: 8 KiB (FP32) stays in L1

template <class T>
void gemv_cols_block(const GemvCall<T>& c, index_t i0, index_t mb, T* t) {
  const index_t n = c.a.cols(), ld = c.a.layout.cols.stride[0];
  const T* a = c.a.data;
  std::fill(t, t + mb, T(0));
  index_t j = 0;
  for (; j + 8 <= n; j += 8) axpy8(t, a + i0 + j * ld, ld, c.x + j, mb);
  for (; j + 4 <= n; j += 4)
    axpy4(t, a + i0 + j * ld, a + i0 + (j + 1) * ld, a + i0 + (j + 2) * ld, a + i0 + (j + 3) * ld, c.x[j],
          c.x[j + 1], c.x[j + 2], c.x[j + 3], mb);
  for (; j < n; ++j) axpy1(t, a + i0 + j * ld, c.x[j], mb);
  for (index_t i = 0; i < mb; ++i) c.y[i0 + i] = finish(c.alpha, t[i], c.beta, c.y + i0 + i);
}

template <class T>
void gemv_cols_contiguous(const GemvCall<T>& c) {
  const index_t m = c.a.rows(), blocks = (m + kColsBlock - 1) / kColsBlock;
  if (c.threads == 1) {  // no parallel region: it costs a small GEMV's time
    alignas(64) T t[kColsBlock];
    for (index_t b = 0; b < blocks; ++b)
      gemv_cols_block(c, b * kColsBlock, std::min(kColsBlock, m - b * kColsBlock), t);
    return;
  }
#pragma omp parallel num_threads(c.threads)
  {
    alignas(64) T t[kColsBlock];
#pragma omp for schedule(static)
    for (index_t b = 0; b < blocks; ++b)
      gemv_cols_block(c, b * kColsBlock, std::min(kColsBlock, m - b * kColsBlock), t);
  }
}

template <class T>
void gemv_any_layout(const GemvCall<T>& c) {
  const index_t m = c.a.rows(), n = c.a.cols();
  const std::vector<index_t> cols = c.a.layout.cols.offsets();
#pragma omp parallel for num_threads(c.threads) schedule(static) if (c.threads > 1)
  for (index_t i = 0; i < m; ++i) {
    const T* row = c.a.data + c.a.layout.rows.offset(i);
    T acc = 0;
    for (index_t j = 0; j < n; ++j) acc += row[cols[static_cast<std::size_t>(j)]] * c.x[j];
    c.y[i] = finish(c.alpha, acc, c.beta, c.y + i);
  }
}

template <class T>
void gemv_any(GemvCall<T> c) {
  // Below ~64K elements per thread a fork/join costs more than it saves.
  c.threads = int(std::max<index_t>(1, std::min<index_t>(c.threads, c.a.rows() * c.a.cols() / 65536)));
  const MatrixLayout& l = c.a.layout;
  const bool cols_unit = l.cols.is_strided() && (l.cols.stride[0] == 1 || c.a.cols() == 1);
  const bool rows_unit = l.rows.is_strided() && (l.rows.stride[0] == 1 || c.a.rows() == 1);
  if (cols_unit && l.rows.is_strided()) gemv_rows_contiguous(c);
  else if (rows_unit && l.cols.is_strided()) gemv_cols_contiguous(c);
  else gemv_any_layout(c);
}

}  // namespace

namespace cpu {

// B's columns as contiguous rows of k elements: where they lie when B is
// column-major, else copied into `copy`.
template <class T>
void columns_of_b(const MatrixView<const T>& b, std::vector<T>& copy, const T** cols) {
  const index_t k = b.rows(), n = b.cols();
  const MatrixLayout& l = b.layout;
  if (l.is_strided() && (l.rows.stride[0] == 1 || k == 1)) {
    for (index_t j = 0; j < n; ++j) cols[j] = &b(0, j);
    return;
  }
  if (copy.size() < static_cast<std::size_t>(n * k)) copy.resize(static_cast<std::size_t>(n * k));
  if (l.is_strided()) {  // row-major B: a column at a time, written contiguously (B's few columns share lines)
    const index_t rs = l.rows.stride[0], cs = n > 1 ? l.cols.stride[0] : 0;
    for (index_t j = 0; j < n; ++j) {
      const T* from = b.data + j * cs;
      T* to = copy.data() + j * k;
      for (index_t p = 0; p < k; ++p) to[p] = from[p * rs];
    }
  } else {
    for (index_t j = 0; j < n; ++j)
      for (index_t p = 0; p < k; ++p) copy[static_cast<std::size_t>(j * k + p)] = b(p, j);
  }
  for (index_t j = 0; j < n; ++j) cols[j] = copy.data() + j * k;
}

// C's row i = alpha acc + beta C's row i (C not read when beta = 0).
template <class T>
void store_row(const MatrixView<T>& c, index_t i, const T* acc, T alpha, T beta) {
  const index_t n = c.cols();
  if (c.layout.cols.is_strided()) {  // one offset for the row, then a stride
    T* row = &c(i, 0);
    const index_t cs = n > 1 ? c.layout.cols.stride[0] : 0;
    if (beta == T(0))
      for (index_t j = 0; j < n; ++j) row[j * cs] = alpha * acc[j];
    else
      for (index_t j = 0; j < n; ++j) row[j * cs] = alpha * acc[j] + beta * row[j * cs];
    return;
  }
  for (index_t j = 0; j < n; ++j) {
    T& x = c(i, j);
    x = beta == T(0) ? alpha * acc[j] : alpha * acc[j] + beta * x;
  }
}

// One row of C, its columns [j, n) into acc: the dot kernels' "rows" are
// B's columns and the vector is A's row, four, then two, then one at a time.
template <class T>
void few_columns_of_row(const DotKernel<T>& dots, const T* row, const T* const* cols, index_t j, index_t n,
                        index_t k, T* acc) {
  for (; j + 4 <= n; j += 4) dots.rows[2](cols + j, row, k, acc + j);
  if (j + 2 <= n) dots.rows[1](cols + j, row, k, acc + j), j += 2;
  if (j < n) dots.rows[0](cols + j, row, k, acc + j);
}

// Which tile takes which of C's columns: groups of four, then the two or
// three left (three as a group of four repeating its last column, one as a
// pair repeating it), so that every column is in a tile.
struct ColumnGroup {
  int tile;         // DotKernel::tiles' index: 0 four columns, 1 two
  index_t col[4];   // the group's columns, the last repeated as padding
  int distinct;     // columns past these repeat the last and are not stored
};

inline int column_groups(index_t n, ColumnGroup* groups) {
  int count = 0;
  index_t j = 0;
  for (; j + 4 <= n; j += 4) groups[count++] = {0, {j, j + 1, j + 2, j + 3}, 4};
  const index_t rest = n - j;
  if (rest == 3) groups[count++] = {0, {j, j + 1, j + 2, j + 2}, 3};
  if (rest == 2) groups[count++] = {1, {j, j + 1, j + 1, j + 1}, 2};
  if (rest == 1) groups[count++] = {1, {j, j, j, j}, 1};
  return count;
}

// A's rows dotted with B's columns in tiles (dots.hpp: 8 rows x 2 columns
// and 4 x 4 on AVX-512), so A is read once per two or four columns where the
// packed path would pack a panel of A for a few columns of C, and a tile's
// dot products run as independent chains; the rows past the last whole
// block of tiles by the row kernels.
template <class T>
bool gemm_few_columns(const GemmCall<T>& call) {
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  const MatrixLayout& la = call.a.layout;
  if (n < 2 || n > kFewColumns || k < few_columns_min_k(n) || m * n * k < (index_t(1) << 14)) return false;
  if (!la.is_strided() || !(la.cols.stride[0] == 1 || k == 1)) return false;
  // B's copy: kept by the thread up to 64 K elements (a new one each call
  // costs an allocation and its zeroing), larger ones for the call only.
  thread_local std::vector<T> kept;
  std::vector<T> own;
  std::vector<T>& copy = n * k <= (index_t(1) << 16) ? kept : own;
  const T* cols[kFewColumns];
  columns_of_b(call.b, copy, cols);
  const DotKernel<T>& dots = dot_kernel<T>(selected_isa());
  ColumnGroup groups[kFewColumns];
  const int group_count = column_groups(n, groups);
  constexpr index_t kMaxBlock = 8;  // rows of the tallest tile (AVX-512's 8 x 2)
  const index_t lda = m > 1 ? la.rows.stride[0] : 0, block = dots.tiles[1].rows;
  const int threads = int(std::max<index_t>(1, std::min<index_t>(call.threads, m * k / 65536)));
  const T alpha = call.alpha, beta = call.beta;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (index_t i0 = 0; i0 < m; i0 += block) {
    const index_t rows = std::min(block, m - i0);
    const T* a[kMaxBlock];
    for (index_t r = 0; r < rows; ++r) a[r] = call.a.data + (i0 + r) * lda;
    T acc[kMaxBlock][kFewColumns];
    if (rows == block) {
      for (int g = 0; g < group_count; ++g) {
        const ColumnGroup& cg = groups[g];
        const typename DotKernel<T>::Tile& tile = dots.tiles[cg.tile];
        const int width = cg.tile == 0 ? 4 : 2;
        const T* b[4] = {cols[cg.col[0]], cols[cg.col[1]], cols[cg.col[2]], cols[cg.col[3]]};
        for (index_t r0 = 0; r0 < rows; r0 += tile.rows) {
          T out[16];
          tile.run(a + r0, b, k, out);
          for (index_t r = 0; r < tile.rows; ++r)
            for (int q = 0; q < cg.distinct; ++q) acc[r0 + r][cg.col[q]] = out[r * width + q];
        }
      }
    } else {
      for (index_t r = 0; r < rows; ++r) few_columns_of_row(dots, a[r], cols, 0, n, k, acc[r]);
    }
    for (index_t r = 0; r < rows; ++r) store_row(call.c, i0 + r, acc[r], alpha, beta);
  }
  return true;
}

template <class T>
void gemv_cpu(const GemvCall<T>& call) {
  gemv_any(call);
}

template void gemv_cpu<float>(const GemvCall<float>&);
template void gemv_cpu<double>(const GemvCall<double>&);
template bool gemm_few_columns<float>(const GemmCall<float>&);
template bool gemm_few_columns<double>(const GemmCall<double>&);

}  // namespace cpu

void register_cpu_gemv(GemvRegistry& r) {
  GemvImpl i;
  i.name = "gemv-cpu";
  i.description = "parray CPU GEMV: row blocks x 4 dot products (row-major) or L1-resident axpy blocks "
                  "(column-major), AVX-512/AVX2 clones, OpenMP";
  i.device = Device::cpu;
  i.threaded = true;
  i.preconditions = "any layout (strided fast paths; nested layouts through offset tables)";
  i.run_f32 = [](const GemvCall<float>& c) { gemv_any(c); };
  i.run_f64 = [](const GemvCall<double>& c) { gemv_any(c); };
  r.add(std::move(i));
}

// ---- dispatcher ------------------------------------------------------------------

template <class T>
void gemv(T alpha, MatrixView<const T> a, const T* x, T beta, T* y, const GemvOptions& options) {
  const index_t m = a.rows(), n = a.cols();
  if (m < 0 || n < 0) throw Error("gemv: A has a negative size");
  if (options.threads < 0) throw Error("gemv: thread count " + std::to_string(options.threads) + " is negative");
  const GemvImpl& impl = gemv_registry().find(options.impl);
  if (!impl.supports(dtype_of<T>()))
    throw Error("gemv: implementation '" + impl.name + "' does not support " + dtype_name(dtype_of<T>()));
  if (m == 0) return;
  if (!y) throw Error("gemv: y is a null pointer with length " + std::to_string(m));
  const bool want_device = impl.operand_memory == Memory::device;
  if (want_device != (a.memory == Memory::device))
    throw Error("gemv: implementation '" + impl.name + "' needs A in " + (want_device ? "device" : "host") +
                " memory, got " + memory_name(a.memory));
  const bool reads_a = n > 0 && alpha != T(0);
  if (reads_a && (!a.data || !x)) throw Error("gemv: A or x is a null pointer");
  if (!reads_a && !want_device) {  // BLAS: A and x are not read
    for (index_t i = 0; i < m; ++i) y[i] = beta == T(0) ? T(0) : beta * y[i];
    return;
  }
  if (std::string why = impl.why_not(a.layout); !why.empty())
    throw Error("gemv: implementation '" + impl.name + "' cannot take this layout: " + why);
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  GemvCall<T> call{alpha, a, x, beta, y, threads, options.stream};
  if (!reads_a) call.a.layout.cols.size = 0;  // device: the kernels see N = 0 and never read A
  if constexpr (std::is_same_v<T, float>) impl.run_f32(call);
  else impl.run_f64(call);
}

template void gemv<float>(float, MatrixView<const float>, const float*, float, float*, const GemvOptions&);
template void gemv<double>(double, MatrixView<const double>, const double*, double, double*, const GemvOptions&);

}  // namespace parray
