// Step 11 — the Parray paper's SGEMM (figure 21, after Volkov & Demmel):
// thread array [[M/16][N/256]][[4][32]] (128 threads as 4 x 32), each block
// computes a 16 x 256 tile of C, each thread two columns of it (16 float2 =
// 32 accumulators, Parray's `rmem float [16][2]`). Per step of 32 in K, the
// block copies a 16 x 32 tile of A into a padded shared tile
// `smem float [32][17]` (A transposed: S[k][row]; row length 17 so the
// transposed stores of a warp hit 32 distinct banks), then streams B from
// global memory as float2, 32 FMAs per float2.
//
// Over step 10: nothing, on Hopper: this design (2009, Fermi) keeps only A in
// shared memory and reads B straight from global memory, so every block
// re-reads its 256 columns of B for every 16 rows of C; it reached CUBLAS 4.0
// on Fermi. It is here as the paper's kernel, through the layout: B's pair of
// columns is read as one float2 only when the type says they are adjacent
// (the paper's $cnt(B_1_1_1)$ test), else as two floats.
#pragma once

#include "parray/cuda/operand.cuh"
#include "parray/static_layout.hpp"

namespace parray::cuda::ladder {

template <class OpA, class OpB, class OpC>
__global__ __launch_bounds__(128) void parray_fig21(int M, int N, int K, float alpha, OpA a, OpB b, float beta,
                                                    OpC c, bool b_pairs) {
  using S = SDense<32, 17>;                                                            // smem float [32][17]
  using S0 = SNest<SResize<32, S::dim<0>>, SResize<16, S::dim<1>>>;                    // [32 #S_0][16 #S_1]
  using R = SDense<16, 2>;                                                             // rmem float [16][2]
  __shared__ float s[S::size];
  float r[R::size];
#pragma unroll
  for (int i = 0; i < R::size; ++i) r[i] = 0.f;
  const int ty = threadIdx.y, tx = threadIdx.x;        // $tid_1_0$, $tid_1_1$
  const int t = ty * 32 + tx;                          // $tid_1$: column pair within the 256
  const int m0 = blockIdx.y * 16, j0 = blockIdx.x * 256 + 2 * t;
  for (int k0 = 0; k0 < K; k0 += 32) {
    // #copy A_0_1_0 to S0_1_0: rows 4x + ty of the 16, column k0 + tx
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int i = m0 + 4 * x + ty, k = k0 + tx;
      s[S0::offset(tx, 4 * x + ty)] = (i < M && k < K) ? a(i, k) : 0.f;
    }
    __syncthreads();
    const int mend = min(32, K - k0);
    for (int m = 0; m < mend; ++m) {
      float2 b2;
      const float* b1 = &b(k0 + m, j0);
      if (b_pairs && j0 + 1 < N) {
        b2 = *reinterpret_cast<const float2*>(b1);
      } else {
        b2.x = j0 < N ? *b1 : 0.f;
        b2.y = j0 + 1 < N ? b(k0 + m, j0 + 1) : 0.f;
      }
#pragma unroll
      for (int j = 0; j < 16; ++j) {
        r[R::offset(j, 0)] += b2.x * s[S::offset(m, j)];
        r[R::offset(j, 1)] += b2.y * s[S::offset(m, j)];
      }
    }
    __syncthreads();
  }
  // #copy R to C0
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int i = m0 + j;
    if (i >= M) continue;
    if (j0 < N) store_c(c(i, j0), alpha * r[R::offset(j, 0)], beta);
    if (j0 + 1 < N) store_c(c(i, j0 + 1), alpha * r[R::offset(j, 1)], beta);
  }
}

}  // namespace parray::cuda::ladder
