// What the GPU cases of the 16-bit and FP8 GEMMs (gemm16_case.cu,
// gemm8_case.cu) share: device buffers, seeded random matrices, C read back
// and judged against the FP64 reference (docs/verification.md), and the
// median of timed runs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../../cuda/gemm/element16.cuh"
#include "harness/gemm16_case.hpp"  // Gemm16Check
#include "parray/cuda/check.hpp"
#include "parray/cuda_runtime.hpp"

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

// A grid for a kernel that strides over n elements, 256 threads a block.
inline unsigned grid_for(long long n) { return unsigned(std::min<long long>((n + 255) / 256, 8192)); }

// rows x cols of random values (NaN in the ld - cols padding) in T, and
// their exact FP32 values and absolute values (same layout; either may be null).
template <class T>
__global__ void fill(T* x, float* exact, float* magnitude, long long rows, long long cols, long long ld,
                     std::uint64_t seed) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < rows * ld;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const bool inside = e % ld < cols;
    cuda::ladder::put(&x[e], inside ? uniform(seed, e) : __int_as_float(0x7fc00000));
    const float v = cuda::ladder::as_float(x[e]);
    if (exact) exact[e] = v;
    if (magnitude) magnitude[e] = fabsf(v);
  }
}

template <class T>
void fill_matrix(void* x, float* exact, float* magnitude, index_t rows, index_t cols, index_t ld, std::uint64_t seed) {
  fill<<<grid_for(rows * ld), 256>>>(static_cast<T*>(x), exact, magnitude, rows, cols, ld, seed);
  PARRAY_CUDA_CHECK_LAUNCH();
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

// C as read back (raw: rows x ldc elements of `bytes` each), judged by the
// rules of docs/verification.md against the FP64 reference `ref` and |A||B|
// `abs` (rows x n): no NaN or Inf, the padding past N untouched (still NaN),
// every element within gamma (|alpha| |A||B| + |beta| |C0|) of the reference
// (c0: C0 as FP32, rows x ldc, read only where beta != 0), and the relative
// Frobenius error within frobenius_tol.
inline Gemm16Check judge_c(const std::vector<unsigned char>& raw, index_t rows, index_t n, index_t ldc,
                           std::size_t bytes, bool bf16, const std::vector<double>& ref, const std::vector<double>& abs,
                           const std::vector<float>& c0, double alpha, double beta, double gamma,
                           double frobenius_tol) {
  Gemm16Check r;
  r.frobenius_tol = frobenius_tol;
  double num = 0, den = 0;
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < ldc; ++j) {
      const double v = stored_value(&raw[(std::size_t(i) * ldc + j) * bytes], bytes, bf16);
      // Built with append: GCC 12 warns falsely (-Wrestrict) on chains of operator+.
      const auto at = [&] {
        return std::string("(").append(std::to_string(i)).append(", ").append(std::to_string(j)).append(")");
      };
      if (j >= n) {  // padding: never written
        if (!std::isnan(v) && r.note.empty()) r.note = std::string("C's padding written at ").append(at());
        continue;
      }
      const std::size_t e = std::size_t(i) * n + j;
      if (!std::isfinite(v)) {
        if (r.note.empty()) r.note = std::string("NaN or Inf at ").append(at());
        continue;
      }
      const double c = beta != 0 ? std::fabs(double(c0[std::size_t(i) * ldc + j])) : 0.0;
      const double bound = gamma * (std::fabs(alpha) * abs[e] + std::fabs(beta) * c);
      const double err = std::fabs(v - ref[e]);
      r.worst = std::max(r.worst, bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0));
      num += err * err;
      den += ref[e] * ref[e];
    }
  r.frobenius = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (r.note.empty() && r.frobenius > r.frobenius_tol) r.note = "relative Frobenius error above its tolerance";
  if (r.note.empty() && r.worst > 1.0) r.note = "an element outside its error bound";
  r.passed = r.note.empty();
  return r;
}

// The median of `reps` CUDA-event timings of run() after one warm-up, in ms.
inline double median_event_ms(const std::function<void()>& run, int reps) {
  run();
  std::vector<double> ms;
  for (int r = 0; r < std::max(reps, 1); ++r) ms.push_back(cuda::event_time_ms(run));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace parray::case_data
