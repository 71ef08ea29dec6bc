// Step 7 — 2-D register blocking: each thread computes a TM x TN = 8 x 8
// block of C from TM values of A and TN values of B held in registers; the
// block (256 threads) computes a 128 x 128 tile, BK = 8.
//
// Over step 6: per k, a thread loads TM + TN = 16 values from shared memory
// for TM * TN = 64 FMAs (an outer product), 4x fewer shared loads per FMA,
// and the larger tile halves global traffic per FMA again.
#pragma once

#include "gemm/06_blocktile_1d.cuh"  // load_tiles
#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

// acc += ra rb^T: a thread's outer product of TM values of A and TN of B.
template <int TM, int TN, class T>
__device__ __forceinline__ void outer_product_add(T (&acc)[TM][TN], const T (&ra)[TM], const T (&rb)[TN]) {
#pragma unroll
  for (int t = 0; t < TM; ++t)
#pragma unroll
    for (int u = 0; u < TN; ++u) acc[t][u] += ra[t] * rb[u];
}

// A thread's TM x TN accumulators into C at (i0, j0), alpha and beta
// applied, the elements past the edges left out.
template <int TM, int TN, class T, class OpC>
__device__ void store_thread_tile(OpC& c, const T (&acc)[TM][TN], int i0, int j0, int M, int N, T alpha, T beta) {
#pragma unroll
  for (int t = 0; t < TM; ++t)
#pragma unroll
    for (int u = 0; u < TN; ++u)
      if (i0 + t < M && j0 + u < N) store_c(c(i0 + t, j0 + u), alpha * acc[t][u], beta);
}

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
    load_tiles<BM, BN, BK, NT>(a, b, As, Bs, M, N, K, m0, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int t = 0; t < TM; ++t) ra[t] = As[trow * TM + t][kk];
#pragma unroll
      for (int u = 0; u < TN; ++u) rb[u] = Bs[kk][tcol * TN + u];
      outer_product_add(acc, ra, rb);
    }
    __syncthreads();
  }
  store_thread_tile(c, acc, m0 + trow * TM, n0 + tcol * TN, M, N, alpha, beta);
}

}  // namespace parray::cuda::ladder
