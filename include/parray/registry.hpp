// The one registry of GEMM implementations. The CLI lists and selects from it,
// the tests iterate over it and the benchmarks read it; nothing else keeps a
// list of implementations.
//
// An implementation receives a GemmCall in which the dispatcher (gemm.cpp) has
// already handled the trivial cases: M, N, K >= 1 and alpha != 0. It must
// still honour beta == 0 (C not read) and work for every layout its
// `unsupported` hook accepts.
#pragma once

#include <algorithm>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/impl_registry.hpp"
#include "parray/matrix.hpp"
#include "parray/precision.hpp"

namespace parray {

template <class T>
struct GemmCall {
  T alpha;
  MatrixView<const T> a;  // M x K
  MatrixView<const T> b;  // K x N
  T beta;
  MatrixView<T> c;        // M x N
  int threads;            // >= 1, already resolved
  // The GPU stream the call's work goes on (nullptr: the calling thread's
  // default stream, cudaStreamPerThread); host implementations ignore it.
  GpuStream stream = nullptr;
  // The least accuracy the caller asked for (the dtype's own when unset): an
  // implementation that selects its kernel by precision (gpu-auto) reads it.
  Precision precision = Precision::fp32;
};

// A strided batch of products of one shape, as gemm_batched hands it to an
// implementation that runs batches in one go: product z reads matrix z of
// each operand, first's views moved by z * stride elements (a, b: 0
// broadcasts). The dispatcher has checked the views of first as a call of
// its own, and batch >= 2, M, N, K >= 1, alpha != 0.
template <class T>
struct GemmBatchCall {
  GemmCall<T> first;
  index_t batch;
  index_t stride_a, stride_b, stride_c;
};

struct GemmImpl : ImplInfo, TypedRuns<GemmCall> {
  // Benchmarks time it in a child process of its own, with the thread count
  // in its environment (OpenBLAS, BLIS: their thread pools would otherwise
  // share the process with parray's, and BLIS's OpenMP build reads the count
  // only from the environment). Tests still call it in the process.
  bool own_process = false;
  // Which of its kernels a library picked on this CPU (OpenBLAS's core, BLIS's
  // configuration), asked after a call; empty where not known. Benchmarks
  // record it, so that a baseline held back by its CPU detection (or by an
  // OPENBLAS_CORETYPE in the environment) is seen as such.
  std::function<std::string()> kernel_info;
  // Returns why this implementation cannot take operands of these layouts,
  // or an empty string when it can. Empty hook: every layout.
  std::function<std::string(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c)>
      unsupported;
  // The format the inputs are rounded to before the products (tensor cores'
  // TF32, FP16, BF16); unset: used at their dtype's own precision. What a
  // call gets is delivers(dtype) and gemm() refuses a call that asks more.
  std::optional<Precision> rounds_inputs;
  // The implementation picks its kernel by the precision asked (GemmCall::
  // precision): it delivers exactly what a call asks, down to the lowest
  // precision it has a kernel for (gpu-auto: TF32, BF16, FP16 tensor cores).
  std::vector<Precision> selects_down_to;
  // A whole strided batch at once where the implementation has a kernel for
  // it: true when it ran (queued) the batch, false when it leaves the batch
  // to gemm_batched, which then runs the products in turn. Empty: in turn.
  std::function<bool(const GemmBatchCall<float>&)> run_batch_f32;
  std::function<bool(const GemmBatchCall<double>&)> run_batch_f64;

  Precision delivers(Dtype d) const {
    if (!rounds_inputs) return precision_of(d);
    return meets(*rounds_inputs, precision_of(d)) ? precision_of(d) : *rounds_inputs;
  }
  // What a call that asks for `asked` (unset: the dtype's own) gets: the
  // request itself where the implementation selects a kernel for it, else
  // delivers(d).
  Precision delivers(Dtype d, std::optional<Precision> asked) const {
    const Precision want = asked.value_or(precision_of(d)), own = delivers(d);
    if (meets(own, want) && std::find(selects_down_to.begin(), selects_down_to.end(), want) != selects_down_to.end() &&
        meets(precision_of(d), want))
      return want;
    return own;
  }

  std::string why_not(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) const {
    return unsupported ? unsupported(a, b, c) : std::string();
  }
};

// Why `impl` cannot give a call of dtype d the precision asked (unset: d's
// own), or an empty string when it can.
inline std::string precision_shortfall(const GemmImpl& impl, Dtype d, std::optional<Precision> asked) {
  const Precision want = asked.value_or(precision_of(d)), got = impl.delivers(d);
  if (meets(got, want)) return {};
  return "implementation '" + impl.name + "' delivers " + precision_name(got) + " products of " + dtype_name(d) +
         " data, the call asks for " + precision_name(want);
}

// gemm()'s checks of a call through `impl` (dimensions, C's overlap,
// dtype, precision, memory, layouts) and its BLAS corner cases: M or N = 0
// does nothing, K = 0 or alpha = 0 scales C. Returns the call the
// implementation would receive, or nothing where the corner case has done
// the work.
template <class T>
std::optional<GemmCall<T>> checked_gemm_call(const GemmImpl& impl, T alpha, const MatrixView<const T>& a,
                                             const MatrixView<const T>& b, T beta, const MatrixView<T>& c,
                                             int threads, std::optional<Precision> precision, GpuStream stream);

class Registry : public ImplRegistry<GemmImpl> {
 public:
  Registry() : ImplRegistry<GemmImpl>("implementation") {}
};

// The process-wide registry, filled on first use with parray's own
// implementations (every backend built in: register_backends).
// Baselines live outside the library and add themselves through
// register_baselines() (src/baselines), called by the CLI, tests and benchmarks.
Registry& registry();

// Every backend built into the library registers its implementations: a
// function generated from the build's list of backends (CMakeLists.txt,
// PARRAY_BACKENDS), each backend's own hook in turn. Called once by registry().
void register_backends(Registry& r);

}  // namespace parray
