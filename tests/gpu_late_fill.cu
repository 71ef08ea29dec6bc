// A kernel for gpu_stream_order_test.cpp and gpu_streams_test.cpp (which g++
// compiles): work that takes a while and then writes C, on the legacy default
// stream or on a given one.
#include <cuda_runtime.h>

namespace parray::test {

namespace {
__device__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Every block waits `ns` nanoseconds, then writes `value` into its share of c.
__global__ void late_fill_kernel(float* c, long long n, float value, unsigned long long ns) {
  if (threadIdx.x == 0) {
    const unsigned long long start = now_ns();
    while (now_ns() - start < ns) {
    }
  }
  __syncthreads();
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    c[i] = value;
}

}  // namespace

// Enqueues late_fill_kernel on the legacy default stream; returns its launch status.
cudaError_t launch_late_fill(float* c, long long n, float value, unsigned long long ns) {
  late_fill_kernel<<<64, 256>>>(c, n, value, ns);
  return cudaGetLastError();
}

// The same on `stream`.
cudaError_t launch_late_fill_on(cudaStream_t stream, float* c, long long n, float value, unsigned long long ns) {
  late_fill_kernel<<<64, 256, 0, stream>>>(c, n, value, ns);
  return cudaGetLastError();
}

}  // namespace parray::test
