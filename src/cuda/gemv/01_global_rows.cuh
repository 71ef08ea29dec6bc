// GEMV step 1 (the GEMV lab report, kernel 1 "MatVecMulGlobalMemory"): one thread per
// row of A, everything in global memory, the dot product in a register.
//
// On a row-major A the 32 threads of a warp read 32 different rows: every
// load touches a different 32-byte sector and only 4 of its bytes are used.
// Speeds: docs/knn.md. On a column-major A the same code is step 2 by
// accident: Parray's point that the layout, not the kernel, decides the
// access pattern.
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::gemv_kernels {

// y[i] = alpha * sum_j A(i, j) x[j] + beta * y[i]; A(i, j) = a[i * rs + j * cs].
template <class T>
__global__ void __launch_bounds__(256) global_rows(index_t m, index_t n, const T* __restrict__ a, index_t rs,
                                                   index_t cs, const T* __restrict__ x, T* __restrict__ y, T alpha,
                                                   T beta) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  T acc = 0;
  const T* row = a + i * rs;
  for (index_t j = 0; j < n; ++j) acc += row[j * cs] * x[j];
  y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
}

}  // namespace parray::cuda::gemv_kernels
