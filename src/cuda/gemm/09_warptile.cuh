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
    for (int e = threadIdx.x; e < BM * BK / 4; e += NT) {
      const int r = e / (BK / 4), kk = (e % (BK / 4)) * 4, i = m0 + r;
      float4 v;
      if (Vec && i < M && k0 + kk + 3 < K) {
        v = *reinterpret_cast<const float4*>(&a(i, k0 + kk));
      } else {
        v.x = (i < M && k0 + kk + 0 < K) ? a(i, k0 + kk + 0) : 0.f;
        v.y = (i < M && k0 + kk + 1 < K) ? a(i, k0 + kk + 1) : 0.f;
        v.z = (i < M && k0 + kk + 2 < K) ? a(i, k0 + kk + 2) : 0.f;
        v.w = (i < M && k0 + kk + 3 < K) ? a(i, k0 + kk + 3) : 0.f;
      }
      AsT[kk + 0][r] = v.x, AsT[kk + 1][r] = v.y, AsT[kk + 2][r] = v.z, AsT[kk + 3][r] = v.w;
    }
    for (int e = threadIdx.x; e < BK * BN / 4; e += NT) {
      const int kk = e / (BN / 4), cc = (e % (BN / 4)) * 4, k = k0 + kk, j = n0 + cc;
      float4 v;
      if (Vec && k < K && j + 3 < N) {
        v = *reinterpret_cast<const float4*>(&b(k, j));
      } else {
        v.x = (k < K && j + 0 < N) ? b(k, j + 0) : 0.f;
        v.y = (k < K && j + 1 < N) ? b(k, j + 1) : 0.f;
        v.z = (k < K && j + 2 < N) ? b(k, j + 2) : 0.f;
        v.w = (k < K && j + 3 < N) ? b(k, j + 3) : 0.f;
      }
      *reinterpret_cast<float4*>(&Bs[kk][cc]) = v;
    }
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
#pragma unroll
      for (int t = 0; t < WMITER * TM; ++t)
#pragma unroll
        for (int u = 0; u < WNITER * TN; ++u) acc[t][u] += ra[t] * rb[u];
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
