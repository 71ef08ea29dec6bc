// Step 5 — the odd-size GEMM note's "improvement 2": the A tile stored transposed in shared
// memory, AsT[k][i], and the bank conflicts that this creates, measured and
// removed (the CPU/GPU GEMM report's open question).
//
// Shared memory has 32 banks of 4 bytes; word w lives in bank w % 32. A warp
// of a 16x16 block is threads (ty, tx) with ty in {0, 1}, tx in 0..15. The
// transposed store AsT[tx][ty] (row length 16) hits word 16 tx + ty: banks
// 0/16 + ty only, 8 threads per bank -> an 8-way conflict on every store. The
// reads AsT[kk][ty] are broadcasts either way, so transposing buys nothing on
// the read side. Pad = 1 makes the row length 17 (Parray's `smem [16][17]`
// seen as [#S_0][16 #S_1]): word 17 tx + ty, 17 coprime to 32, all banks
// distinct. ncu's l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
// shows the difference (docs/gpu-ladder.md); the CPU/GPU GEMM report saw "little gain"
// because its conflicts were of this kind and its reads were broadcasts.
#pragma once

#include "parray/cuda/operand.cuh"
#include "parray/static_layout.hpp"

namespace parray::cuda::ladder {

template <int TILE, int Pad, class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(TILE* TILE) void smem_transposed_a(int M, int N, int K, T alpha, OpA a, OpB b,
                                                              T beta, OpC c) {
  using Store = SDense<TILE, TILE + Pad>;                        // smem T [TILE][TILE + Pad]
  using AT = SNest<typename Store::template dim<0>, SResize<TILE, typename Store::template dim<1>>>;  // [#S_0][TILE #S_1]
  using Tile = SDense<TILE, TILE>;
  __shared__ T AsT[Store::size];  // (TILE k, TILE rows of A): A transposed
  __shared__ T Bs[Tile::size];    // (TILE k, TILE columns of B)
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int i0 = blockIdx.y * TILE, i = i0 + ty, j = blockIdx.x * TILE + tx;
  T acc = 0;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    AsT[AT::offset(tx, ty)] = (i < M && k0 + tx < K) ? a(i, k0 + tx) : T(0);
    Bs[Tile::offset(ty, tx)] = (k0 + ty < K && j < N) ? b(k0 + ty, j) : T(0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < TILE; ++kk) acc += AsT[AT::offset(kk, ty)] * Bs[Tile::offset(kk, tx)];
    __syncthreads();
  }
  if (i < M && j < N) store_c(c(i, j), alpha * acc, beta);
}

}  // namespace parray::cuda::ladder
