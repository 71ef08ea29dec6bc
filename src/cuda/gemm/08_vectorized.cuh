// Step 8 — 128-bit vector loads: A and B are read from global memory as
// float4 (one 16-byte load instead of four), A is stored transposed in shared
// memory (AsT[k][m]) so that the TM values of A a thread needs are 2 float4
// shared loads, and B's TN values are 2 float4 shared loads.
//
// Over step 7: 4x fewer load instructions from global and shared memory.
// Vec = false is the fallback for operands that are not row-major with
// 16-byte aligned rows (same kernel, scalar loads through the layout); Vec
// kernels also fall back to scalar loads for the vectors that cross an edge.
#pragma once

#include "gemm/07_blocktile_2d.cuh"  // outer_product_add, store_thread_tile
#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

// One k-tile of A (stored transposed, AsT[k][m]) and of B into shared
// memory, 4 consecutive values a load; values past the matrix's edges are 0.
template <bool Vec, int BM, int BN, int BK, int NT, class OpA, class OpB>
__device__ void load_tiles_float4(const OpA& a, const OpB& b, float (&AsT)[BK][BM], float (&Bs)[BK][BN], int M,
                                  int N, int K, int m0, int n0, int k0) {
  for (int e = threadIdx.x; e < BM * BK / 4; e += NT) {  // 4 consecutive k of one row of A
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
  for (int e = threadIdx.x; e < BK * BN / 4; e += NT) {  // 4 consecutive columns of one row of B
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
}

template <bool Vec, int BM, int BN, int BK, int TM, int TN, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(BM* BN / (TM * TN)) void vectorized(int M, int N, int K, float alpha, OpA a,
                                                               OpB b, float beta, OpC c) {
  constexpr int NT = BM * BN / (TM * TN);
  __shared__ __align__(16) float AsT[BK][BM];  // (BK, BM): A transposed
  __shared__ __align__(16) float Bs[BK][BN];   // (BK, BN)
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  const int tcol = threadIdx.x % (BN / TN), trow = threadIdx.x / (BN / TN);
  float acc[TM][TN] = {};
  float ra[TM], rb[TN];
  for (int k0 = 0; k0 < K; k0 += BK) {
    load_tiles_float4<Vec, BM, BN, BK, NT>(a, b, AsT, Bs, M, N, K, m0, n0, k0);
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int t = 0; t < TM; t += 4) {
        const float4 x = *reinterpret_cast<const float4*>(&AsT[kk][trow * TM + t]);
        ra[t] = x.x, ra[t + 1] = x.y, ra[t + 2] = x.z, ra[t + 3] = x.w;
      }
#pragma unroll
      for (int u = 0; u < TN; u += 4) {
        const float4 x = *reinterpret_cast<const float4*>(&Bs[kk][tcol * TN + u]);
        rb[u] = x.x, rb[u + 1] = x.y, rb[u + 2] = x.z, rb[u + 3] = x.w;
      }
      outer_product_add(acc, ra, rb);
    }
    __syncthreads();
  }
  store_thread_tile(c, acc, m0 + trow * TM, n0 + tcol * TN, M, N, alpha, beta);
}

}  // namespace parray::cuda::ladder
