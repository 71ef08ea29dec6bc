// GEMV step 3 (the GEMV lab report, kernel 3 "MatVecMulConstantMemory"): x in constant
// memory. All threads of a warp read the same x[j], which the constant cache
// broadcasts in one transaction, freeing the L1/LSU path for A.
// Constant memory holds 64 KiB per module, so x is staged in chunks of
// kChunk elements (32 KiB each for FP32 and FP64): the launcher copies a chunk
// to the symbol and accumulates (beta = 1 after the first chunk) - the
// fallback when x does not fit. Layout: any strided (coalesced when column-major).
// The memory space of x is not what limits steps 1-4 (docs/perf-notes.md).
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::gemv_kernels {

template <class T>
struct ConstantX {
  static constexpr index_t kChunk = 32768 / sizeof(T);
};

__constant__ float c_x_f32[ConstantX<float>::kChunk];
__constant__ double c_x_f64[ConstantX<double>::kChunk];

template <class T>
__device__ __forceinline__ T const_x(index_t j) {
  if constexpr (sizeof(T) == 4) return c_x_f32[j];
  else return c_x_f64[j];
}

// Columns [j0, j0 + len) of A with x[j0 + t] = const_x(t).
template <class T>
__global__ void __launch_bounds__(256) constant_x(index_t m, index_t j0, index_t len, const T* __restrict__ a,
                                                  index_t rs, index_t cs, T* __restrict__ y, T alpha, T beta) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  T acc = 0;
  const T* p = a + i * rs + j0 * cs;
  for (index_t t = 0; t < len; ++t) acc += p[t * cs] * const_x<T>(t);
  y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
}

}  // namespace parray::cuda::gemv_kernels
