// Step 7 — 2-D register blocking: each thread computes a TM x TN = 8 x 8
// block of C from TM values of A and TN values of B held in registers; the
// block (256 threads) computes a 128 x 128 tile, BK = 8.
//
// Over step 6: per k, a thread loads TM + TN = 16 values from shared memory
// for TM * TN = 64 FMAs (an outer product), 4x fewer shared loads per FMA,
// and the larger tile halves global traffic per FMA again.
#pragma once

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <int BM, int BN, int BK, int TM, int TN, class T, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(BM* BN / (TM * TN)) void blocktile_2d(int M, int N, int K, T alpha, OpA a, OpB b,
                                                                 T beta, OpC c) {
  constexpr int NT = BM * BN / (TM * TN);
  __shared__ T As[BM][BK];  // (BM, BK) tile of A
  __shared__ T Bs[BK][BN];  // (BK, BN) tile of B
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tcol = threadIdx.x % (BN / TN), trow = threadIdx.x / (BN / TN);
  T acc[TM][TN] = {};
  T ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int e = threadIdx.x; e < BM * BK; e += NT) {
      const int r = e / BK, kk = e % BK;
      As[r][kk] = (m0 + r < M && k0 + kk < K) ? a(m0 + r, k0 + kk) : T(0);
    }
    for (int e = threadIdx.x; e < BK * BN; e += NT) {
      const int kk = e / BN, cc = e % BN;
      Bs[kk][cc] = (k0 + kk < K && n0 + cc < N) ? b(k0 + kk, n0 + cc) : T(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int t = 0; t < TM; ++t) ra[t] = As[trow * TM + t][kk];
#pragma unroll
      for (int u = 0; u < TN; ++u) rb[u] = Bs[kk][tcol * TN + u];
#pragma unroll
      for (int t = 0; t < TM; ++t)
#pragma unroll
        for (int u = 0; u < TN; ++u) acc[t][u] += ra[t] * rb[u];
    }
    __syncthreads();
  }
#pragma unroll
  for (int t = 0; t < TM; ++t)
#pragma unroll
    for (int u = 0; u < TN; ++u) {
      const int i = m0 + trow * TM + t, j = n0 + tcol * TN + u;
      if (i < M && j < N) store_c(c(i, j), alpha * acc[t][u], beta);
    }
}

}  // namespace parray::cuda::ladder
