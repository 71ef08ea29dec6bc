// GEMM step 17: a short K (K <= 32). C = alpha A B + beta C where each
// element of C is at most 32 multiply-adds: the product costs C's traffic,
// not its arithmetic, and the tile kernels, built to overlap copies of long
// K panels with the products, spend most of their time on a pipeline that
// never fills and on an epilogue that writes C scalar by scalar.
//
//  * one block a 64 x 128 tile of C, 256 threads of 8 x 4 results: a warp
//    writes 8 of the tile's rows, each as 32 lanes x 16 bytes (one 512-byte
//    coalesced store per row) where C's rows are contiguous and aligned,
//    else as four stores of 32 consecutive floats;
//  * A's 64 x K and B's K x 128 panels copied once into shared memory
//    (A transposed, padded by 4 floats: the lanes of a warp read one
//    A value, a broadcast, and 4 consecutive B values, conflict-free), along
//    whichever of each operand's strides is 1, so any strided layout reads
//    coalesced;
//  * beta == 0 never reads C; otherwise C's old values are loaded before
//    the products, all of a thread's rows at once.
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::ladder {

struct ShortK {
  static constexpr int kMax = 32, BM = 64, BN = 128, NT = 256, TM = 8, TN = 4;
  static constexpr int kApad = BM + 4;
};

struct ShortKOperands {
  const float* a;
  index_t rsa, csa;
  const float* b;
  index_t rsb, csb;
  float* c;
  index_t rsc, csc;
};

// kVecC: C's rows are along its unit stride, 16-byte aligned (float4 stores).
template <bool kVecC>
__global__ void __launch_bounds__(ShortK::NT) short_k_gemm(index_t m, index_t n, int k, float alpha, float beta,
                                                           ShortKOperands o, index_t tiles_n) {
  using S = ShortK;
  __shared__ __align__(16) float as[S::kMax][S::kApad];  // as[kk][i] = A(i0 + i, kk)
  __shared__ __align__(16) float bs[S::kMax][S::BN];     // bs[kk][j] = B(kk, j0 + j)
  const index_t i0 = index_t(blockIdx.x) / tiles_n * S::BM, j0 = index_t(blockIdx.x) % tiles_n * S::BN;
  const bool a_along_k = o.csa == 1 && o.rsa != 1, b_along_k = o.rsb == 1 && o.csb != 1;
  for (int e = threadIdx.x; e < S::BM * k; e += S::NT) {
    const int i = a_along_k ? e / k : e % S::BM, kk = a_along_k ? e % k : e / S::BM;
    as[kk][i] = i0 + i < m ? __ldg(o.a + (i0 + i) * o.rsa + kk * o.csa) : 0.f;
  }
  for (int e = threadIdx.x; e < S::BN * k; e += S::NT) {
    const int j = b_along_k ? e / k : e % S::BN, kk = b_along_k ? e % k : e / S::BN;
    bs[kk][j] = j0 + j < n ? __ldg(o.b + kk * o.rsb + (j0 + j) * o.csb) : 0.f;
  }
  const int ty = threadIdx.x / 32, tx = threadIdx.x % 32;
  // A thread's TN columns: consecutive where C's rows take 16-byte stores,
  // else a warp-width apart, so that each scalar store of a warp is 32
  // consecutive floats (4 consecutive per lane would touch each 128 bytes
  // of C four times, once per store).
  auto col = [&](int q) { return kVecC ? tx * S::TN + q : q * 32 + tx; };
  const index_t jv = j0 + tx * S::TN;  // the vector path's first column
  // beta != 0: C's old values are loaded before the products, all of a
  // thread's loads in flight at once (loaded row by row after them, each
  // store would wait for its row's load).
  float old[S::TM][S::TN] = {};
  if (beta != 0.f)
#pragma unroll
    for (int r = 0; r < S::TM; ++r) {
      const index_t i = i0 + ty * S::TM + r;
      if (i >= m) break;
      const float* row = o.c + i * o.rsc;
      if (kVecC && jv + S::TN <= n) {
        const float4 v = *reinterpret_cast<const float4*>(row + jv);
        old[r][0] = v.x, old[r][1] = v.y, old[r][2] = v.z, old[r][3] = v.w;
      } else {
#pragma unroll
        for (int q = 0; q < S::TN; ++q)
          if (j0 + col(q) < n) old[r][q] = row[(j0 + col(q)) * o.csc];
      }
    }
  __syncthreads();
  float acc[S::TM][S::TN] = {};
#pragma unroll 4
  for (int kk = 0; kk < k; ++kk) {
    const float4 a0 = *reinterpret_cast<const float4*>(&as[kk][ty * S::TM]);
    const float4 a1 = *reinterpret_cast<const float4*>(&as[kk][ty * S::TM + 4]);
    const float av[S::TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
    float bw[S::TN];
    if constexpr (kVecC) {
      const float4 bv = *reinterpret_cast<const float4*>(&bs[kk][tx * S::TN]);
      bw[0] = bv.x, bw[1] = bv.y, bw[2] = bv.z, bw[3] = bv.w;
    } else {
#pragma unroll
      for (int q = 0; q < S::TN; ++q) bw[q] = bs[kk][col(q)];
    }
#pragma unroll
    for (int r = 0; r < S::TM; ++r)
#pragma unroll
      for (int q = 0; q < S::TN; ++q) acc[r][q] += av[r] * bw[q];
  }
#pragma unroll
  for (int r = 0; r < S::TM; ++r) {
    const index_t i = i0 + ty * S::TM + r;
    if (i >= m) break;
    float* row = o.c + i * o.rsc;
    if (kVecC && jv + S::TN <= n) {
      float4 v{alpha * acc[r][0], alpha * acc[r][1], alpha * acc[r][2], alpha * acc[r][3]};
      if (beta != 0.f) v.x += beta * old[r][0], v.y += beta * old[r][1], v.z += beta * old[r][2], v.w += beta * old[r][3];
      *reinterpret_cast<float4*>(row + jv) = v;
    } else {
#pragma unroll
      for (int q = 0; q < S::TN; ++q) {
        const index_t j = j0 + col(q);
        if (j < n) row[j * o.csc] = beta == 0.f ? alpha * acc[r][q] : alpha * acc[r][q] + beta * old[r][q];
      }
    }
  }
}

}  // namespace parray::cuda::ladder
