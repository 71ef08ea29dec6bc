// Step 4 — shared-memory tiles (the CPU/GPU GEMM report and the odd-size GEMM
// note): a 16x16 block stages a 16x16 tile of A and of B in shared memory per
// step of K, zero-padded where the tile hangs over the edge of the matrix, so
// every element loaded from global memory is used 16 times.
//
// Over step 3: global traffic drops 16x. The inner loop reads As[ty][kk]
// (one address per half-warp: a broadcast) and Bs[kk][tx] (16 consecutive
// words): no bank conflicts. Still one FMA per two shared loads, so the kernel
// is bound by shared-memory bandwidth, not arithmetic.
#pragma once

#include "parray/cuda/operand.cuh"
#include "parray/static_layout.hpp"

namespace parray::cuda::ladder {

template <int TILE, class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(TILE* TILE) void smem_tiles(int M, int N, int K, T alpha, OpA a, OpB b, T beta,
                                                       OpC c) {
  using Tile = SDense<TILE, TILE>;  // smem T [TILE][TILE]
  __shared__ T As[Tile::size];      // (TILE rows of A, TILE k)
  __shared__ T Bs[Tile::size];      // (TILE k, TILE columns of B)
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int i = blockIdx.y * TILE + ty, j = blockIdx.x * TILE + tx;
  T acc = 0;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    As[Tile::offset(ty, tx)] = (i < M && k0 + tx < K) ? a(i, k0 + tx) : T(0);
    Bs[Tile::offset(ty, tx)] = (k0 + ty < K && j < N) ? b(k0 + ty, j) : T(0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += As[Tile::offset(ty, kk)] * Bs[Tile::offset(kk, tx)];
    __syncthreads();
  }
  if (i < M && j < N) store_c(c(i, j), alpha * acc, beta);
}

}  // namespace parray::cuda::ladder
