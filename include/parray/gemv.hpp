// GEMV: y = alpha * A * x + beta * y for A of any matrix layout, and the one
// table of GEMV implementations (CPU, the GPU ladder of the GEMV lab report, baselines)
// that the CLI, the tests and the benchmarks read.
//
// BLAS semantics as for gemm(): beta == 0 means y is not read; alpha == 0
// means A and x are not read; M == 0 or N == 0 is valid. x and y are
// contiguous vectors (x of length N = A.cols(), y of length M = A.rows()) in
// the memory space the implementation asks for.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "parray/registry.hpp"

namespace parray {

template <class T>
struct GemvCall {
  T alpha;
  MatrixView<const T> a;  // M x N
  const T* x;             // N
  T beta;
  T* y;                   // M
  int threads;            // >= 1, resolved
  // The GPU stream of the call's work (nullptr: the calling thread's default
  // stream, cudaStreamPerThread); host implementations ignore it.
  GpuStream stream = nullptr;
};

struct GemvImpl : ImplInfo, TypedRuns<GemvCall> {
  // Why this implementation cannot take A of this layout, or "".
  std::function<std::string(const MatrixLayout& a)> unsupported;

  std::string why_not(const MatrixLayout& a) const { return unsupported ? unsupported(a) : std::string(); }
};

class GemvRegistry : public ImplRegistry<GemvImpl> {
 public:
  GemvRegistry() : ImplRegistry<GemvImpl>("GEMV implementation") {}
};

// Filled on first use with parray's CPU GEMV and, with CUDA, the GPU ladder
// and cuBLAS. OpenBLAS is added by register_gemv_baselines() (harness side).
GemvRegistry& gemv_registry();
void register_cpu_gemv(GemvRegistry& r);
void register_cuda_gemv(GemvRegistry& r);  // only when built with CUDA
void register_gemv_baselines(GemvRegistry& r);

struct GemvOptions {
  std::string impl = "cpu";
  int threads = 0;  // 0: OMP_NUM_THREADS or all cores
  // The CUDA stream of a GPU implementation's work, as GemmOptions::stream:
  // the call returns once its work is queued there. nullptr: the calling
  // thread's default stream. Nothing goes to the legacy default stream.
  GpuStream stream = nullptr;
};

template <class T>
void gemv(T alpha, MatrixView<const T> a, const T* x, T beta, T* y, const GemvOptions& options = {});

extern template void gemv<float>(float, MatrixView<const float>, const float*, float, float*, const GemvOptions&);
extern template void gemv<double>(double, MatrixView<const double>, const double*, double, double*,
                                  const GemvOptions&);

}  // namespace parray
