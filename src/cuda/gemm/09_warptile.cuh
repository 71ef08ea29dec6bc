// Step 9 — warp tiling: the 128 x 128 block tile is split into 64 x 64 warp
// tiles, and each warp into WNITER = 4 sub-tiles of 64 x 16 that its 32
// threads cover as 8 x 4 threads of TM x TN = 8 x 4 (128 accumulators per
// thread); BK = 16, 128 threads. Loads are step 8's (float4 when allowed).
//
// Over step 8: the threads of a warp now read a compact 64 x 16 region of the
// shared tiles per sub-tile, so each shared load instruction touches few
// distinct addresses (broadcasts, no bank conflicts), and the larger per-
// thread tile (8 x 16) raises FMAs per shared load from 4 to 5.3; the warp is
// the unit the scheduler sees, which is what the tiling is matched to.
#pragma once

#include "gemm/08_vectorized.cuh"  // load_tiles_float4 (and step 7's outer_product_add)
#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <bool Vec, int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, class OpA,
          class OpB, class OpC>
__global__ __launch_bounds__(NT) void warptile(int M, int N, int K, float alpha, OpA a, OpB b, float beta, OpC c) {
  constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER), WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  __shared__ __align__(16) float AsT[BK][BM];  // (BK, BM): A transposed
  __shared__ __align__(16) float Bs[BK][BN];   // (BK, BN)
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
  const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
  float acc[WMITER * TM][WNITER * TN] = {};
  float ra[WMITER * TM], rb[WNITER * TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles_float4<Vec, BM, BN, BK, NT>(a, b, AsT, Bs, M, N, K, m0, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int t = 0; t < TM; ++t) ra[wm * TM + t] = AsT[kk][wrow * WM + wm * WSUBM + trow * TM + t];
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int u = 0; u < TN; ++u) rb[wn * TN + u] = Bs[kk][wcol * WN + wn * WSUBN + tcol * TN + u];
      outer_product_add(acc, ra, rb);
    }
    __syncthreads();
  }
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int t = 0; t < TM; ++t)
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int u = 0; u < TN; ++u) {
          const int i = m0 + wrow * WM + wm * WSUBM + trow * TM + t;
          const int j = n0 + wcol * WN + wn * WSUBN + tcol * TN + u;
          if (i < M && j < N) store_c(c(i, j), alpha * acc[wm * TM + t][wn * TN + u], beta);
        }
}

}  // namespace parray::cuda::ladder
