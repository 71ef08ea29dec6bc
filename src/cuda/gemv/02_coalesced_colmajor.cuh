// GEMV step 2 (the GEMV lab report, kernel 2 "MatVecMulGlobalMemoryAlign"): still one
// thread per row, but A is stored column-major (the GEMV lab report transposes it first),
// so at each j the 32 threads of a warp read 32 consecutive elements: one
// 128-byte line per warp load, fully used. Precondition: unit row stride.
// Adds over step 1: coalescing. Each thread still has one load in flight per
// iteration and x[j] is re-read by every thread (from L1).
// Still far below a copy (docs/perf-notes.md): 16384-32768 threads with one
// load each cannot cover HBM latency.
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::gemv_kernels {

// A(i, j) = a[i + j * ld]  (column-major)
template <class T>
__global__ void __launch_bounds__(256) coalesced_colmajor(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                          const T* __restrict__ x, T* __restrict__ y, T alpha,
                                                          T beta) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  T acc = 0;
  for (index_t j = 0; j < n; ++j) acc += a[i + j * ld] * x[j];
  y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
}

}  // namespace parray::cuda::gemv_kernels
