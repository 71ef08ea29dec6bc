// Step 3 — coalesced global access: a warp covers 32 consecutive columns of
// one row of C (blocks of 32 x 8), so each load of B and each store of C is
// one full 128-byte line, and A is one broadcast per warp.
//
// Over step 2: step 2's 16-wide blocks split each warp over two rows, so every
// B load and C store touched two half-used lines. For column-major C (and B)
// the mapping is flipped by the launcher (threadIdx.x runs down the rows), so
// the contiguous dimension is always the one that the warp spans.
#pragma once

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

// ColsFast: threadIdx.x runs along columns of C (row-major C/B), else rows.
template <bool ColsFast, class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(256) void coalesced(int M, int N, int K, T alpha, OpA a, OpB b, T beta, OpC c) {
  const int fast = blockIdx.x * 32 + threadIdx.x, slow = blockIdx.y * 8 + threadIdx.y;
  const int i = ColsFast ? slow : fast, j = ColsFast ? fast : slow;
  if (i >= M || j >= N) return;
  T acc = 0;
  for (int k = 0; k < K; ++k) acc += a(i, k) * b(k, j);
  store_c(c(i, j), alpha * acc, beta);
}

}  // namespace parray::cuda::ladder
