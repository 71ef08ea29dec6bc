// PCIe rates the out-of-core GEMM depends on (src/cuda/multigpu/out_of_core.cpp
// models them): pinned host <-> device, contiguous and as the row blocks the
// out-of-core GEMM copies (cudaMemcpy2DAsync, rows of `width` floats out of
// rows of 32768), to, from and both ways at once, on 1 and on all GPUs at once.
// Not part of the build: scripts/gpu-check compiles it with nvcc.
//   nvcc -O2 -o pcie_rate bench/micro/pcie_rate.cu && ./pcie_rate > rates.csv
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr size_t kPitch = 32768;              // host row length in floats (the 32768^3 operands)
constexpr size_t kRows = 16384;               // host rows per buffer: 2 GiB
constexpr size_t kBytes = size_t(512) << 20;  // per GPU and direction, at most

struct Gpu {
  float *host_in = nullptr, *host_out = nullptr, *dev_in = nullptr, *dev_out = nullptr;
  cudaStream_t up{}, down{};
};

// Bytes one copy moves: `width` floats per row (0: one contiguous copy).
size_t copy_bytes(size_t width) {
  return width == 0 ? kBytes : std::min(kRows, kBytes / (width * sizeof(float))) * width * sizeof(float);
}

// One direction of one GPU.
void enqueue(Gpu& g, bool to_device, size_t width) {
  cudaStream_t s = to_device ? g.up : g.down;
  if (width == 0) {
    if (to_device) {
      CHECK(cudaMemcpyAsync(g.dev_in, g.host_in, kBytes, cudaMemcpyHostToDevice, s));
    } else {
      CHECK(cudaMemcpyAsync(g.host_out, g.dev_out, kBytes, cudaMemcpyDeviceToHost, s));
    }
    return;
  }
  const size_t rows = copy_bytes(width) / (width * sizeof(float));
  if (to_device)
    CHECK(cudaMemcpy2DAsync(g.dev_in, width * sizeof(float), g.host_in, kPitch * sizeof(float),
                            width * sizeof(float), rows, cudaMemcpyHostToDevice, s));
  else
    CHECK(cudaMemcpy2DAsync(g.host_out, kPitch * sizeof(float), g.dev_out, width * sizeof(float),
                            width * sizeof(float), rows, cudaMemcpyDeviceToHost, s));
}

}  // namespace

int main() {
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  std::vector<Gpu> gpus{size_t(count)};
  const size_t host_bytes = kRows * kPitch * sizeof(float);
  for (int d = 0; d < count; ++d) {
    CHECK(cudaSetDevice(d));
    Gpu& g = gpus[size_t(d)];
    CHECK(cudaMallocHost(reinterpret_cast<void**>(&g.host_in), host_bytes));
    CHECK(cudaMallocHost(reinterpret_cast<void**>(&g.host_out), host_bytes));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&g.dev_in), kBytes));
    CHECK(cudaMalloc(reinterpret_cast<void**>(&g.dev_out), kBytes));
    CHECK(cudaStreamCreateWithFlags(&g.up, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&g.down, cudaStreamNonBlocking));
  }
  std::printf("gpus_at_once,direction,row_floats,gb_per_s_per_gpu\n");
  const char* names[] = {"h2d", "d2h", "both"};
  for (int at_once : {1, count}) {
    for (int dir = 0; dir < 3; ++dir)
      for (size_t width : {size_t(0), size_t(512), size_t(4096), size_t(8192), size_t(16384)}) {
        std::vector<double> rates;
        for (int rep = 0; rep < 4; ++rep) {
          for (int d = 0; d < at_once; ++d) {
            CHECK(cudaSetDevice(d));
            CHECK(cudaDeviceSynchronize());
          }
          const auto t0 = std::chrono::steady_clock::now();
          for (int d = 0; d < at_once; ++d) {
            CHECK(cudaSetDevice(d));
            if (dir != 1) enqueue(gpus[size_t(d)], true, width);
            if (dir != 0) enqueue(gpus[size_t(d)], false, width);
          }
          for (int d = 0; d < at_once; ++d) {
            CHECK(cudaSetDevice(d));
            CHECK(cudaDeviceSynchronize());
          }
          const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          if (rep > 0) rates.push_back(double(copy_bytes(width)) * (dir == 2 ? 2 : 1) / s / 1e9);  // first: warm-up
        }
        std::sort(rates.begin(), rates.end());
        std::printf("%d,%s,%zu,%.2f\n", at_once, names[dir], width, rates[rates.size() / 2]);
        std::fflush(stdout);
      }
    if (count == 1) break;
  }
  return 0;
}
