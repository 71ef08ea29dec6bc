// Step 2 — the odd-size GEMM note's kernel: 2-D 16x16 thread blocks with grid-stride loops,
// so a fixed grid covers any M x N (1037 x 1031 in the odd-size GEMM note).
//
// Over step 1: a 2-D block shares each A element between 16 columns and each
// B element between 16 rows through L1, and the grid no longer depends on the
// size. A fix over the note's kernel: its inner loop never reset the column index, so
// a grid smaller than the matrix left all rows after the first stride
// unwritten; here both loops restart (the NaN-poisoned tests catch it).
// A warp is 2 rows x 16 columns: half-warps read 64-byte pieces of B.
#pragma once

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(256) void grid_stride_2d(int M, int N, int K, T alpha, OpA a, OpB b, T beta,
                                                      OpC c) {
  for (int i = blockIdx.y * blockDim.y + threadIdx.y; i < M; i += gridDim.y * blockDim.y) {
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < N; j += gridDim.x * blockDim.x) {
      T acc = 0;
      for (int k = 0; k < K; ++k) acc += a(i, k) * b(k, j);
      store_c(c(i, j), alpha * acc, beta);
    }
  }
}

}  // namespace parray::cuda::ladder
