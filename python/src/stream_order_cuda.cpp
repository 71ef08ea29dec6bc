#include <cuda_runtime_api.h>

#include "parray/cuda/check.hpp"
#include "stream_order.hpp"

namespace parray::python {

namespace {

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

GpuStream caller_stream(std::uintptr_t number) {
  if (number == 0 || number == 1) return cudaStreamLegacy;  // what the caller asked for
  if (number == 2) return cudaStreamPerThread;
  return reinterpret_cast<cudaStream_t>(number);
}

void on_device(int device, const std::function<void()>& work) {
  CurrentDevice current(device);
  work();
}

}  // namespace parray::python
