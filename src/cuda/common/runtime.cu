// Host-side helpers of the CUDA backend (parray/cuda_runtime.hpp).
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "parray/cuda/check.hpp"
#include "parray/cuda_runtime.hpp"

namespace parray::cuda {

double event_time_ms(const std::function<void()>& run) {
  cudaEvent_t start, stop;
  PARRAY_CUDA_CHECK(cudaEventCreate(&start));
  PARRAY_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = 0;
  try {
    PARRAY_CUDA_CHECK(cudaEventRecord(start, 0));
    run();
    PARRAY_CUDA_CHECK(cudaEventRecord(stop, 0));
    PARRAY_CUDA_CHECK(cudaEventSynchronize(stop));
    PARRAY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  } catch (...) {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    throw;
  }
  PARRAY_CUDA_CHECK(cudaEventDestroy(start));
  PARRAY_CUDA_CHECK(cudaEventDestroy(stop));
  return ms;
}

namespace {
__global__ void empty_kernel() {}
}  // namespace

void launch_empty_kernel(void* stream) {
  empty_kernel<<<1, 1, 0, stream ? static_cast<cudaStream_t>(stream) : cudaStreamPerThread>>>();
  PARRAY_CUDA_CHECK(cudaGetLastError());
}

void synchronize() { PARRAY_CUDA_CHECK(cudaDeviceSynchronize()); }

void flush_l2() {
  static void* buffer = nullptr;
  static size_t bytes = 0;
  if (!buffer) {
    int dev = 0, l2 = 0;
    PARRAY_CUDA_CHECK(cudaGetDevice(&dev));
    PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    bytes = size_t(std::max(l2, 1 << 20)) * 2;  // twice the L2
    PARRAY_CUDA_CHECK(cudaMalloc(&buffer, bytes));
  }
  PARRAY_CUDA_CHECK(cudaMemsetAsync(buffer, 0x5a, bytes, 0));
}

std::string device_description() {
  int dev = 0, clock_khz = 0, runtime = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  PARRAY_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  PARRAY_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, %d SMs, %d MHz, CUDA %d.%d, sm_%d%d", p.name, p.multiProcessorCount,
                clock_khz / 1000, runtime / 1000, (runtime % 1000) / 10, p.major, p.minor);
  return buf;
}

double fp32_peak_gflops() {
  int dev = 0, sms = 0, clock_khz = 0, major = 0, minor = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&dev));
  PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  // FP32 lanes per SM: 128 on Volta..Hopper except sm_70/75 (64) and GA100 (64).
  int lanes = 128;
  if ((major == 7) || (major == 8 && minor == 0)) lanes = 64;
  return double(sms) * lanes * 2.0 * clock_khz * 1e-6;  // kHz * 1e-6 = GHz -> GFLOP/s
}

}  // namespace parray::cuda
