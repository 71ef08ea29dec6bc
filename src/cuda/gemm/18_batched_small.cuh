// Step 18 — a strided batch of small products in one launch, on the CUDA
// cores.
//
// What it adds: where every matrix of a batch is a few tiles or less (32 x 32,
// 64 x 64), a product is too small to fill an SM and a launch per product
// costs more than the product; the tensor-core kernels' 128 x 256 tile would
// compute a 32 x 32 matrix 32 times over. Here a block takes one T x T tile
// (T = 32 or 64) of one matrix of the batch, blocks numbered matrix after
// matrix, and many blocks share an SM (64 or 256 threads, 9 or 17 KB of
// shared memory), so that one block's loads overlap the others' arithmetic:
// the batch streams through at DRAM speed, which is what bounds it — a
// 32 x 32 x 32 product is 64 K FLOP against 12 KB of FP32 operands.
//
// Any strided operand of each matrix (row- or column-major, any leading
// dimension, a broadcast operand at batch stride 0), FP32, BF16 or FP16
// inputs, products and sums in FP32 (as exact as an FP32 GEMM, whatever
// precision was asked). A k-tile of 32 is read along the operand's
// contiguous direction (coalesced), stored transposed where needed so that
// each thread reads its 4 rows of A and 4 columns of B as one 16-byte load
// per k; each thread computes a 4 x 4 block of C.
#pragma once

#include <cstdint>

#include "element16.cuh"
#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <int T_>
struct SmallTile {
  static constexpr int T = T_, BK = 32, TM = 4;
  static constexpr int kThreads = (T / TM) * (T / TM);
  static constexpr int kLd = T + 4;  // a k row of the shared tiles: 16-byte aligned, banks shifted by 4
  static_assert(T % 32 == 0, "a warp reads a k-tile row of 32");
};

// The batch: matrix z of A at a.p + z * stride_a (likewise B, C); stride 0
// broadcasts. c_vec: C's rows 16-byte aligned and contiguous, so a thread
// writes its 4 columns at once.
template <class In, class Out>
struct SmallBatchParams {
  StridedOperand<const In> a, b;
  StridedOperand<Out> c;
  long long stride_a, stride_b, stride_c;
  int M, N, K, tiles_m, tiles_n;
  float alpha, beta;
  int c_vec;
};

// T rows (or columns) x BK values of K of an operand into shared memory as
// tile[k][row], zeros past the matrix. along_k: the operand's k direction is
// its contiguous one (a warp reads 32 consecutive values of K).
template <class Tile, class In>
__device__ __forceinline__ void load_small_tile(float (*tile)[Tile::kLd], const In* p, long long stride_row,
                                                long long stride_k, int rows, int K, int row0, int k0, bool along_k) {
  constexpr int T = Tile::T, BK = Tile::BK;
  for (int e = threadIdx.x; e < T * BK; e += Tile::kThreads) {
    const int r = along_k ? e / BK : e % T, kk = along_k ? e % BK : e / T;
    const int row = row0 + r, k = k0 + kk;
    tile[kk][r] = row < rows && k < K ? as_float(p[row * stride_row + k * stride_k]) : 0.f;
  }
}

template <class Tile, class In, class Out>
__global__ __launch_bounds__(Tile::kThreads) void gemm_batched_small(const SmallBatchParams<In, Out> p) {
  constexpr int T = Tile::T, BK = Tile::BK, TM = Tile::TM;
  __shared__ __align__(16) float as[BK][Tile::kLd];  // A's k-tile, as[k][row]
  __shared__ __align__(16) float bs[BK][Tile::kLd];  // B's k-tile, bs[k][column]
  const int per_matrix = p.tiles_m * p.tiles_n, u = int(blockIdx.x);
  const int z = u / per_matrix, t = u - z * per_matrix;
  const int m0 = t / p.tiles_n * T, n0 = t % p.tiles_n * T;
  const In* a = p.a.p + z * p.stride_a;
  const In* b = p.b.p + z * p.stride_b;
  const int tx = int(threadIdx.x) % (T / TM), ty = int(threadIdx.x) / (T / TM);
  float acc[TM][TM] = {};
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    load_small_tile<Tile>(as, a, p.a.rs, p.a.cs, p.M, p.K, m0, k0, p.a.cs == 1);
    load_small_tile<Tile>(bs, b, p.b.cs, p.b.rs, p.N, p.K, n0, k0, p.b.rs == 1);
    __syncthreads();
#pragma unroll 8
    for (int kk = 0; kk < BK; ++kk) {
      const float4 av = *reinterpret_cast<const float4*>(&as[kk][ty * TM]);
      const float4 bv = *reinterpret_cast<const float4*>(&bs[kk][tx * TM]);
      const float ar[TM] = {av.x, av.y, av.z, av.w}, br[TM] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TM; ++j) acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
    }
    __syncthreads();
  }
  Out* c = p.c.p + z * p.stride_c;
  const int col = n0 + tx * TM;
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = m0 + ty * TM + i;
    if (row >= p.M) break;
    float v[TM];
#pragma unroll
    for (int j = 0; j < TM; ++j) {
      v[j] = p.alpha * acc[i][j];
      if (p.beta != 0.f && col + j < p.N) v[j] += p.beta * as_float(c[row * p.c.rs + (col + j) * p.c.cs]);
    }
    if (p.c_vec && col + TM <= p.N) {
      Out* out = c + row * p.c.rs + col;
      put_pair(out, v[0], v[1]);
      put_pair(out + 2, v[2], v[3]);
    } else {
#pragma unroll
      for (int j = 0; j < TM; ++j)
        if (col + j < p.N) put(&c[row * p.c.rs + (col + j) * p.c.cs], v[j]);
    }
  }
}

}  // namespace parray::cuda::ladder
