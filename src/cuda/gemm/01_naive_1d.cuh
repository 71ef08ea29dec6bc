// Step 1 — the CUDA lab report's kernel: one thread per element of C, 1-D thread blocks
// of BS = 32..512 threads, grid (rows, cols / BS).
//
// blockIdx.x is the row of C, blockIdx.y * BS + threadIdx.x the column. A warp
// reads one element of A (a broadcast) and 32 consecutive elements of a row
// of B per k, so B is coalesced; but nothing is reused from on-chip memory:
// every FMA costs two loads (served by L1/L2), and with one row per block the
// A row is re-read by every block of that row.
// Its speed: docs/gpu-ladder.md.
#pragma once

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <int BS, class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(BS) void naive_1d(int M, int N, int K, T alpha, OpA a, OpB b, T beta, OpC c) {
  const int i = blockIdx.x;                       // row of C
  const int j = blockIdx.y * BS + threadIdx.x;    // column of C
  if (i >= M || j >= N) return;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += a(i, k) * b(k, j);
  store_c(c(i, j), alpha * acc, beta);
}

}  // namespace parray::cuda::ladder
