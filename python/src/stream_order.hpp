// GPU work of a Python call on the caller's CUDA stream.
//
// The library takes a stream per call (GemmOptions::stream, GemvOptions,
// KnnOptions, Gemm16Args), so a binding passes the caller's stream — the one
// PyTorch or CuPy named in the DLPack exchange — straight through: the work
// is queued after what the caller had queued there (the inputs' producers)
// and before anything it queues afterwards, with no events and no host wait.
// Defined only when the module is built with CUDA (stream_order_cuda.cpp).
#pragma once

#include <cstdint>
#include <functional>

#include "parray/core.hpp"

namespace parray::python {

// The stream of DLPack stream number `number`: 1 (or 0) the legacy default
// stream, 2 the per-thread default stream, otherwise a cudaStream_t.
GpuStream caller_stream(std::uintptr_t number);

// Runs `work` with `device` the current CUDA device, restored after it.
void on_device(int device, const std::function<void()>& work);

}  // namespace parray::python
