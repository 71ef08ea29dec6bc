// What the GPU cases of the 16-bit and FP8 GEMMs (gemm16_case.cu,
// gemm8_case.cu) share: device buffers, seeded random values, and C's
// elements read back as stored.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "parray/cuda/check.hpp"

namespace parray::case_data {

// Device memory of a case, freed with it.
struct DeviceBytes {
  void* p = nullptr;
  explicit DeviceBytes(std::size_t bytes) {
    if (bytes) PARRAY_CUDA_CHECK(cudaMalloc(&p, bytes));
  }
  ~DeviceBytes() { cudaFree(p); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  template <class T>
  T* as() const { return static_cast<T*>(p); }
};

// Element e's value in [-1, 1) of the stream `seed` (splitmix64).
__device__ inline float uniform(std::uint64_t seed, long long e) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(e + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * 0x1p-23f - 1.f;
}

// An element of C as stored: FP32 (bytes = 4), or BF16 / FP16 (bytes = 2).
inline double stored_value(const unsigned char* p, std::size_t bytes, bool bf16) {
  if (bytes == 4) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  if (bf16) {
    const std::uint32_t w = std::uint32_t(bits) << 16;
    float v;
    std::memcpy(&v, &w, 4);
    return v;
  }
  __half_raw raw;
  raw.x = bits;
  return __half2float(__half(raw));
}

}  // namespace parray::case_data
