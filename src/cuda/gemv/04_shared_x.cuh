// GEMV step 4 (the GEMV lab report, kernel 4 "MatVecMulSharedMemory"): x staged in
// shared memory, blockDim elements at a time: each element of x is loaded
// from global memory once per block instead of once per thread, and the
// threads of a block read it back as a shared-memory broadcast. Any strided
// layout (coalesced when column-major); one thread per row as in steps 1-3.
// Its speed: docs/perf-notes.md.
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::gemv_kernels {

template <class T, int kBlock>
__global__ void __launch_bounds__(kBlock) shared_x(index_t m, index_t n, const T* __restrict__ a, index_t rs,
                                                   index_t cs, const T* __restrict__ x, T* __restrict__ y, T alpha,
                                                   T beta) {
  __shared__ T xs[kBlock];  // (kBlock) slice of x
  const index_t i = index_t(blockIdx.x) * kBlock + threadIdx.x;
  const T* row = a + (i < m ? i : 0) * rs;
  T acc = 0;
  for (index_t j0 = 0; j0 < n; j0 += kBlock) {
    const index_t len = n - j0 < kBlock ? n - j0 : kBlock;
    __syncthreads();
    if (threadIdx.x < len) xs[threadIdx.x] = x[j0 + threadIdx.x];
    __syncthreads();
    if (i < m)
      for (index_t t = 0; t < len; ++t) acc += row[(j0 + t) * cs] * xs[t];
  }
  if (i < m) y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
}

}  // namespace parray::cuda::gemv_kernels
