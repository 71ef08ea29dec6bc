// parray's CPU GEMV, the GEMV registry and the gemv() dispatcher.
//
// GEMV reads every element of A once and does 2 flops per element: it is
// bound by memory bandwidth, so the code aims at streaming A at full speed on
// every core, whatever the layout:
//   * rows contiguous (row-major, any ld): each thread takes a block of rows
//     and computes four dot products at a time, sharing each load of x;
//   * columns contiguous (column-major, any ld): each thread owns a block of
//     2048 rows of y (8 KiB in FP32, stays in L1) and adds four columns of A
//     at a time into it (axpy form), so A is still read contiguously;
//   * any other layout (nested axes, non-unit strides): the same row loop
//     through the layout's offset tables.
// The inner loops are compiled for AVX-512, AVX2 and the baseline ISA
// (target_clones) and chosen at load time from cpuid.
// Measured (Zen 4, 2 cores, bench/results/gemv-*.csv): see docs/knn.md.
#include "parray/gemv.hpp"

#include <omp.h>

#include <algorithm>
#include <mutex>
#include <vector>

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

// Four dot products of contiguous rows with x.
#define PARRAY_DOT4(T)                                                                                  \
  PARRAY_GEMV_CLONES void dot4(const T* a0, const T* a1, const T* a2, const T* a3, const T* x, index_t n, \
                               T* out) {                                                                \
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                                   \
    _Pragma("omp simd reduction(+ : s0, s1, s2, s3)") for (index_t j = 0; j < n; ++j) {                 \
      const T xj = x[j];                                                                                \
      s0 += a0[j] * xj;                                                                                 \
      s1 += a1[j] * xj;                                                                                 \
      s2 += a2[j] * xj;                                                                                 \
      s3 += a3[j] * xj;                                                                                 \
    }                                                                                                   \
    out[0] = s0, out[1] = s1, out[2] = s2, out[3] = s3;                                                 \
  }                                                                                                     \
  PARRAY_GEMV_CLONES T dot1(const T* a0, const T* x, index_t n) {                                       \
    T s0 = 0;                                                                                           \
    _Pragma("omp simd reduction(+ : s0)") for (index_t j = 0; j < n; ++j) s0 += a0[j] * x[j];           \
    return s0;                                                                                          \
  }                                                                                                     \
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

PARRAY_DOT4(float)
PARRAY_DOT4(double)

template <class T>
T finish(T alpha, T acc, T beta, const T* y) {
  return beta == T(0) ? alpha * acc : alpha * acc + beta * *y;
}

template <class T>
void gemv_rows_contiguous(const GemvCall<T>& c) {
  const index_t m = c.a.rows(), n = c.a.cols(), ld = c.a.layout.rows.stride[0];
  const T* a = c.a.data;
#pragma omp parallel for num_threads(c.threads) schedule(static) if (c.threads > 1)
  for (index_t i0 = 0; i0 < m; i0 += 4) {
    T acc[4];
    if (i0 + 4 <= m) {
      dot4(a + i0 * ld, a + (i0 + 1) * ld, a + (i0 + 2) * ld, a + (i0 + 3) * ld, c.x, n, acc);
    } else {
      for (index_t i = i0; i < m; ++i) acc[i - i0] = dot1(a + i * ld, c.x, n);
    }
    for (index_t i = i0; i < std::min(m, i0 + 4); ++i) c.y[i] = finish(c.alpha, acc[i - i0], c.beta, c.y + i);
  }
}

template <class T>
void gemv_cols_contiguous(const GemvCall<T>& c) {
  const index_t m = c.a.rows(), n = c.a.cols(), ld = c.a.layout.cols.stride[0];
  const T* a = c.a.data;
  constexpr index_t kBlock = 2048;  // rows of y per task: 8 KiB (FP32) stays in L1
  const index_t blocks = (m + kBlock - 1) / kBlock;
#pragma omp parallel num_threads(c.threads) if (c.threads > 1)
  {
    alignas(64) T t[kBlock];
#pragma omp for schedule(static)
    for (index_t b = 0; b < blocks; ++b) {
      const index_t i0 = b * kBlock, mb = std::min(kBlock, m - i0);
      std::fill(t, t + mb, T(0));
      index_t j = 0;
      for (; j + 8 <= n; j += 8) axpy8(t, a + i0 + j * ld, ld, c.x + j, mb);
      for (; j + 4 <= n; j += 4)
        axpy4(t, a + i0 + j * ld, a + i0 + (j + 1) * ld, a + i0 + (j + 2) * ld, a + i0 + (j + 3) * ld, c.x[j],
              c.x[j + 1], c.x[j + 2], c.x[j + 3], mb);
      for (; j < n; ++j) axpy1(t, a + i0 + j * ld, c.x[j], mb);
      for (index_t i = 0; i < mb; ++i) c.y[i0 + i] = finish(c.alpha, t[i], c.beta, c.y + i0 + i);
    }
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
void gemv_cpu(GemvCall<T> c) {
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

// Each row of A dotted with B's columns four at a time: dot4 with B^T's rows
// as the four "rows" and A's row as the vector, so A is read once per four
// columns where the packed path would pack a panel of A for a few columns.
template <class T>
bool gemm_few_columns(const GemmCall<T>& call) {
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  const MatrixLayout& la = call.a.layout;
  // Short rows (K < 128) pay a dot4 call per four columns of every row for
  // little work; the small path's one loop nest is faster there
  // (docs/cpu-gemm.md has the figures).
  if (n < 2 || n > kFewColumns || k < 128 || m * n * k < (index_t(1) << 14)) return false;
  if (!la.is_strided() || !(la.cols.stride[0] == 1 || k == 1)) return false;
  const index_t rows4 = (n + 3) / 4 * 4;  // B^T's rows, padded with zeros to whole dot4s
  std::vector<T> bt(static_cast<std::size_t>(rows4 * k), T(0));
  for (index_t j = 0; j < n; ++j)
    for (index_t p = 0; p < k; ++p) bt[static_cast<std::size_t>(j * k + p)] = call.b(p, j);
  const index_t lda = m > 1 ? la.rows.stride[0] : 0;
  const int threads = int(std::max<index_t>(1, std::min<index_t>(call.threads, m * k / 65536)));
  const T alpha = call.alpha, beta = call.beta;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (index_t i = 0; i < m; ++i) {
    const T* row = call.a.data + i * lda;
    for (index_t j0 = 0; j0 < n; j0 += 4) {
      T acc[4];
      const T* b0 = bt.data() + j0 * k;
      dot4(b0, b0 + k, b0 + 2 * k, b0 + 3 * k, row, k, acc);
      for (index_t q = 0; q < 4 && j0 + q < n; ++q) {
        T& c = call.c(i, j0 + q);
        c = beta == T(0) ? alpha * acc[q] : alpha * acc[q] + beta * c;
      }
    }
  }
  return true;
}

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
  i.run_f32 = [](const GemvCall<float>& c) { gemv_cpu(c); };
  i.run_f64 = [](const GemvCall<double>& c) { gemv_cpu(c); };
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
