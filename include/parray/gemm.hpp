// The GEMM API: C = alpha * A * B + beta * C over views of any layout.
//
// BLAS semantics: beta == 0 means C is not read (NaN there does not
// propagate); alpha == 0 means A and B are not read; M, N or K == 0 is valid.
// Bad arguments throw parray::Error with a message that says what is wrong.
#pragma once

#include <optional>
#include <string>

#include "parray/core.hpp"
#include "parray/matrix.hpp"
#include "parray/precision.hpp"

namespace parray {

struct GemmOptions {
  // A registered implementation (see `parray list`), or "cpu" / "gpu" for
  // that device's default.
  std::string impl = "cpu";
  // CPU threads; 0 means OMP_NUM_THREADS or all cores.
  int threads = 0;
  // The least accuracy the products may have (precision.hpp); unset: the
  // dtype's own (fp32 for float, fp64 for double). An implementation that
  // delivers less is an error, never a silent downgrade.
  std::optional<Precision> precision = std::nullopt;
  // The CUDA stream of a GPU implementation's work, as a cuBLAS handle's:
  // the call returns once its work is queued there (operands in device
  // memory must stay alive until it has run). nullptr: the calling thread's
  // default stream (cudaStreamPerThread). The library queues nothing on the
  // legacy default stream.
  GpuStream stream = nullptr;
};

template <class T>
void gemm(T alpha, const MatrixView<const T>& a, const MatrixView<const T>& b, T beta, const MatrixView<T>& c,
          const GemmOptions& options = {});

// The same through an implementation already taken from the registry
// (registry().find): no lookup by name. threads, precision and stream as in
// GemmOptions.
struct GemmImpl;
template <class T>
void gemm(const GemmImpl& impl, T alpha, const MatrixView<const T>& a, const MatrixView<const T>& b, T beta,
          const MatrixView<T>& c, int threads = 0, std::optional<Precision> precision = {}, GpuStream stream = nullptr);

// The same for views of non-const data (what Array::view returns).
template <class T>
void gemm(T alpha, MatrixView<T> a, MatrixView<T> b, T beta, MatrixView<T> c, const GemmOptions& options = {}) {
  gemm<T>(alpha, MatrixView<const T>(a), MatrixView<const T>(b), beta, c, options);
}

// The CBLAS-shaped entry for callers holding plain pointers. The leading
// dimensions follow BLAS rules: for row-major, lda >= max(1, columns of the
// stored A), and so on.
enum class Order { row_major, col_major };
enum class Trans { no, yes };

template <class T>
void gemm(Order order, Trans trans_a, Trans trans_b, index_t m, index_t n, index_t k, T alpha,
          const T* a, index_t lda, const T* b, index_t ldb, T beta, T* c, index_t ldc,
          const GemmOptions& options = {});

extern template void gemm<float>(float, const MatrixView<const float>&, const MatrixView<const float>&, float,
                                 const MatrixView<float>&, const GemmOptions&);
extern template void gemm<float>(const GemmImpl&, float, const MatrixView<const float>&,
                                 const MatrixView<const float>&, float, const MatrixView<float>&, int,
                                 std::optional<Precision>, GpuStream);
extern template void gemm<double>(const GemmImpl&, double, const MatrixView<const double>&,
                                  const MatrixView<const double>&, double, const MatrixView<double>&, int,
                                  std::optional<Precision>, GpuStream);
extern template void gemm<double>(double, const MatrixView<const double>&, const MatrixView<const double>&, double,
                                  const MatrixView<double>&, const GemmOptions&);
extern template void gemm<float>(Order, Trans, Trans, index_t, index_t, index_t, float, const float*,
                                 index_t, const float*, index_t, float, float*, index_t, const GemmOptions&);
extern template void gemm<double>(Order, Trans, Trans, index_t, index_t, index_t, double, const double*,
                                  index_t, const double*, index_t, double, double*, index_t,
                                  const GemmOptions&);

}  // namespace parray
