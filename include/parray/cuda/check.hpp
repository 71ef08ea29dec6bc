// Checked CUDA calls: every runtime call and every launch goes through
// PARRAY_CUDA_CHECK, which throws parray::Error naming the file, the line, the
// call and the CUDA error string (a GEMM that silently failed to launch would
// otherwise "pass" with whatever C held).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "parray/core.hpp"

namespace parray::cuda {

[[noreturn]] inline void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + what + ": " +
              cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

// The stream a call's work is queued on: the caller's, or, for nullptr, the
// calling thread's default stream. Never the legacy default stream, on which
// every thread's work would serialise with every other's.
inline cudaStream_t on_stream(GpuStream s) { return s ? s : cudaStreamPerThread; }

}  // namespace parray::cuda

#define PARRAY_CUDA_CHECK(call)                                                   \
  do {                                                                            \
    cudaError_t parray_cuda_err_ = (call);                                        \
    if (parray_cuda_err_ != cudaSuccess)                                          \
      ::parray::cuda::cuda_fail(parray_cuda_err_, #call, __FILE__, __LINE__);     \
  } while (0)

// After a <<<...>>> launch: configuration errors show at once, faults later
// (at the next synchronising call, which is checked too).
#define PARRAY_CUDA_CHECK_LAUNCH() PARRAY_CUDA_CHECK(cudaGetLastError())
