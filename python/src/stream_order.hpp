// GPU work of a Python call ordered on the caller's CUDA stream.
//
// The library launches on the legacy default stream; PyTorch's and CuPy's
// streams other than their default are non-blocking, so nothing orders the
// two by itself. run_on_caller_stream brackets the work with two events: the
// default stream waits for what the caller's stream had queued (the inputs'
// producers), and the caller's stream waits for the library's work before
// anything queued on it afterwards. To the caller the work behaves as if it
// ran on its stream, and no host thread waits. Defined only when the module
// is built with CUDA (stream_order_cuda.cpp).
#pragma once

#include <cstdint>
#include <functional>

namespace parray::python {

// `stream` is a DLPack stream number: 1 the legacy default stream, 2 the
// per-thread default stream, otherwise a cudaStream_t. `device` becomes the
// current CUDA device for the work and is restored after it.
void run_on_caller_stream(int device, std::uintptr_t stream, const std::function<void()>& work);

}  // namespace parray::python
