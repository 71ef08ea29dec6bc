#include <cuda_runtime_api.h>

#include "parray/cuda/check.hpp"
#include "stream_order.hpp"

namespace parray::python {

namespace {

cudaStream_t stream_of(std::uintptr_t number) {
  if (number == 0 || number == 1) return cudaStreamLegacy;
  if (number == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(number);
}

// A caller thread's two events on one device, created on its first call
// there: one pair per thread, so that two Python threads calling at once
// never re-record each other's events between a record and its wait.
struct OrderEvents {
  cudaEvent_t inputs_ready = nullptr, work_done = nullptr;
  OrderEvents() {
    PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&inputs_ready, cudaEventDisableTiming));
    PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&work_done, cudaEventDisableTiming));
  }
};

OrderEvents& events_of(int device) {
  thread_local OrderEvents* per_device[64] = {};
  if (device < 0 || device >= 64) throw Error("CUDA device " + std::to_string(device) + " is out of range");
  if (!per_device[device]) per_device[device] = new OrderEvents();  // lives as long as the thread
  return *per_device[device];
}

class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    PARRAY_CUDA_CHECK(cudaGetDevice(&previous_));
    if (device != previous_) PARRAY_CUDA_CHECK(cudaSetDevice(device));
  }
  ~CurrentDevice() { cudaSetDevice(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace

void run_on_caller_stream(int device, std::uintptr_t stream, const std::function<void()>& work) {
  CurrentDevice current(device);
  const cudaStream_t caller = stream_of(stream);
  if (caller == cudaStreamLegacy) {  // the library's own stream: already in order
    work();
    return;
  }
  OrderEvents& events = events_of(device);
  PARRAY_CUDA_CHECK(cudaEventRecord(events.inputs_ready, caller));
  PARRAY_CUDA_CHECK(cudaStreamWaitEvent(cudaStreamLegacy, events.inputs_ready, 0));
  work();
  PARRAY_CUDA_CHECK(cudaEventRecord(events.work_done, cudaStreamLegacy));
  PARRAY_CUDA_CHECK(cudaStreamWaitEvent(caller, events.work_done, 0));
}

}  // namespace parray::python
