// Step 6 — 1-D register blocking: each thread computes TM = 8 elements of a
// column of C, keeping them in registers; the block computes a BM x BN =
// 64 x 64 tile with BK = 8 steps of K staged in shared memory.
//
// Over step 5: one shared load of B feeds TM FMAs (the B value is held in a
// register across the TM rows), so shared-memory traffic per FMA drops from
// 2 loads to ~1.1, and global traffic per FMA halves again (64-wide tiles).
#pragma once

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

// One k-tile of A and of B into shared memory, a value a thread at a time
// (the block's NT threads stride over the tile); values past the edges are 0.
template <int BM, int BN, int BK, int NT, class T, class OpA, class OpB>
__device__ void load_tiles(const OpA& a, const OpB& b, T (&As)[BM][BK], T (&Bs)[BK][BN], int M, int N, int K, int m0,
                           int n0, int k0) {
  for (int e = threadIdx.x; e < BM * BK; e += NT) {
    const int r = e / BK, kk = e % BK;
    As[r][kk] = (m0 + r < M && k0 + kk < K) ? a(m0 + r, k0 + kk) : T(0);
  }
  for (int e = threadIdx.x; e < BK * BN; e += NT) {
    const int kk = e / BN, cc = e % BN;
    Bs[kk][cc] = (k0 + kk < K && n0 + cc < N) ? b(k0 + kk, n0 + cc) : T(0);
  }
}

template <int BM, int BN, int BK, int TM, class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(BM* BN / TM) void blocktile_1d(int M, int N, int K, T alpha, OpA a, OpB b, T beta,
                                                          OpC c) {
  constexpr int NT = BM * BN / TM;
  __shared__ T As[BM][BK];  // (BM, BK) tile of A
  __shared__ T Bs[BK][BN];  // (BK, BN) tile of B
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tcol = threadIdx.x % BN, trow = threadIdx.x / BN;  // rows trow*TM .. +TM of column tcol
  T acc[TM] = {};
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles<BM, BN, BK, NT>(a, b, As, Bs, M, N, K, m0, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      const T bv = Bs[kk][tcol];
#pragma unroll
      for (int t = 0; t < TM; ++t) acc[t] += As[trow * TM + t][kk] * bv;
    }
    __syncthreads();
  }
  const int j = n0 + tcol;
#pragma unroll
  for (int t = 0; t < TM; ++t) {
    const int i = m0 + trow * TM + t;
    if (i < M && j < N) store_c(c(i, j), alpha * acc[t], beta);
  }
}

}  // namespace parray::cuda::ladder
