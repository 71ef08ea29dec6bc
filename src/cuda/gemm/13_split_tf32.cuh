// Step 13 — FP32 on the tensor cores at FP32's accuracy ("3xTF32").
//
// What it adds over step 12: the multiply-adds leave the CUDA cores. An FP32
// x is split into two TF32 numbers (10 explicit mantissa bits each), big =
// tf32(x) and small = tf32(x - big), which together keep ~22 of its 24 bits;
// then A B = Ab Bb + Ab Bs + As Bb + As Bs, and the last product (~2^-22 of
// the others) is dropped. The three that remain are one TF32 GEMM over three
// times K: [Ab Ab As] (M x 3K) times [Bb; Bs; Bb] (3K x N), accumulated in
// FP32 by the tensor cores. TF32 products of TF32 inputs are exact in FP32, so
// the error left is the split's (~2^-22 relative per element) plus FP32
// accumulation — except that the tensor cores accumulate by truncation
// (round toward zero), so one GEMM's error grows with its K: over K = 4096
// (3K = 12288) the relative error was 4.2e-5, K = 8192 8.4e-5, linear in K
// and 2.7-5x the FP32 tolerance (H100, bench/results/h100-2026-11-22-3xtf32-chunks.csv; cuBLAS's FP32 kernel
// 1.2e-6 / 1.6e-6). Hence chunks: one GEMM per kc of K, each adding into C
// through cuBLAS's epilogue (FP32 on the CUDA cores, rounded to nearest), so
// the truncation error stays that of 3 kc terms whatever K. One TF32 GEMM
// (error ~2^-11, anchors.md: 2.6e-4) fails every check.
//
// This file is the split: the operands read through their layouts (any
// layout, as every step of the ladder; the GEMMs that follow see only the
// split copies) and written K-contiguous, the layout tensor cores read best
// (cuBLAS's "TN"), chunk by chunk (split_store). The GEMMs are cuBLAS's TF32
// kernels (gemm/13_split_tf32.cu): wgmma and TMA, which step 12's CUDA-core kernel
// has no counterpart of. Its error and speed per kc: docs/tensor-cores.md,
// step 13.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

// x rounded to TF32 (round to nearest, ties away: cvt.rna), as an FP32 number
// whose 13 low mantissa bits are zero.
__device__ __forceinline__ float to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}

// The small part of x beside its big part to_tf32(x): none for inf or NaN
// (inf - inf would make one NaN where C is inf), nor where keep_small is off.
__device__ __forceinline__ float tf32_small(float x, float big, bool keep_small) {
  return keep_small && isfinite(big) ? to_tf32(x - big) : 0.f;
}

// Where element k of a row of the split copy goes. K is cut into chunks of
// kc (the last one shorter); chunk c of length len occupies [3 c kc, 3 c kc
// + 3 len) of the row as [first | second | third], so that the GEMM over one
// chunk reads a contiguous range (gemm/13_split_tf32.cu runs one per chunk).
// A: [big, big, small]; B: [big, small, big].
// keep_small = false drops the small parts: one TF32 product's accuracy
// (only to show that the checks reject it, PARRAY_3XTF32_SMALL=0).
template <bool IsB>
__device__ __forceinline__ void split_store(float* out_row, index_t k, index_t K, index_t kc, float x,
                                            bool keep_small) {
  const float big = to_tf32(x);
  const float small = tf32_small(x, big, keep_small);
  const index_t c = k / kc, first = c * kc, len = min(kc, K - first);
  float* chunk = out_row + 3 * first + (k - first);
  chunk[0] = big;
  chunk[len] = IsB ? small : big;
  chunk[2 * len] = IsB ? big : small;
}

// Step 13's destination of the split: each row of out as chunks of K.
struct ChunkedSplit {
  float* out;
  index_t ldo, K, kc;
  bool keep_small;
  template <bool IsB>
  __device__ __forceinline__ void put(index_t x, index_t k, float v) const {
    split_store<IsB>(out + x * ldo, k, K, kc, v, keep_small);
  }
};

// The big and small parts in two X x K arrays (rows ld apart), as step 14's
// TMA copies read them; small == nullptr keeps only the big part (TF32).
struct PairedSplit {
  float* big;
  float* small;
  index_t ld;
  bool keep_small;
  template <bool IsB>
  __device__ __forceinline__ void put(index_t x, index_t k, float v) const {
    const float b = to_tf32(v);
    big[x * ld + k] = b;
    if (small) small[x * ld + k] = tf32_small(v, b, keep_small);
  }
  // The same `floats` further on (the next copy of a batch).
  __device__ __forceinline__ PairedSplit moved(long long floats) const {
    return {big + floats, small ? small + floats : nullptr, ld, keep_small};
  }
};

// A 16-bit copy (Half: __nv_bfloat16 or __half), each value rounded to
// nearest, as step 14's BF16 and FP16 kernels read it: X x K, rows ld apart.
template <class Half>
struct RoundedCopy {
  Half* out;
  index_t ld;
  template <bool IsB>
  __device__ __forceinline__ void put(index_t x, index_t k, float v) const {
    if constexpr (std::is_same_v<Half, __nv_bfloat16>) out[x * ld + k] = __float2bfloat16_rn(v);
    else out[x * ld + k] = __float2half_rn(v);
  }
  __device__ __forceinline__ RoundedCopy moved(long long values) const { return {out + values, ld}; }
};

// The operand as (x, k) — A(x, k), or B(k, x) for IsB — split into `out`
// (ChunkedSplit, PairedSplit or RoundedCopy), the 32 x 32 tile at (x0, k0),
// through shared memory so that both the reads (along the operand's
// contiguous axis when ReadAlongK says which) and the K-contiguous writes
// are coalesced; 32 x 8 threads.
template <bool IsB, bool ReadAlongK, class Op, class Out>
__device__ __forceinline__ void split_tile(const Op& op, int X, int K, const Out& out, int x0, int k0,
                                           float (&tile)[32][33]) {  // [x][k]; 33: no bank conflicts either way
  auto at = [&](int x, int k) -> float { return IsB ? op(k, x) : op(x, k); };
  for (int r = threadIdx.y; r < 32; r += 8) {
    // Lanes along k or along x, whichever the operand keeps contiguous.
    const int x = ReadAlongK ? x0 + r : x0 + threadIdx.x, k = ReadAlongK ? k0 + threadIdx.x : k0 + r;
    if (x < X && k < K) {
      if (ReadAlongK) tile[r][threadIdx.x] = at(x, k);
      else tile[threadIdx.x][r] = at(x, k);
    }
  }
  __syncthreads();
  for (int r = threadIdx.y; r < 32; r += 8) {
    const int x = x0 + r, k = k0 + threadIdx.x;
    if (x < X && k < K) out.template put<IsB>(x, k, tile[r][threadIdx.x]);
  }
}

// One operand split, a tile per block.
template <bool IsB, bool ReadAlongK, class Op, class Out>
__global__ __launch_bounds__(256) void split_tf32(Op op, int X, int K, Out out) {
  __shared__ float tile[32][33];
  split_tile<IsB, ReadAlongK>(op, X, K, out, blockIdx.y * 32, blockIdx.x * 32, tile);
}

// A strided batch's operands split by one launch, product z0 + blockIdx.z
// read `in_stride` elements after the one before (0: one operand broadcast,
// split once) and split `out_stride` copy elements after its copy.
template <bool IsB, bool ReadAlongK, class Out>
__global__ __launch_bounds__(256) void split_batch(StridedOperand<const float> op, long long in_stride, int X, int K,
                                                   Out out, long long out_stride, int z0) {
  __shared__ float tile[32][33];
  const long long z = z0 + static_cast<long long>(blockIdx.z);
  op.p += z * in_stride;
  split_tile<IsB, ReadAlongK>(op, X, K, out.moved(z * out_stride), blockIdx.y * 32, blockIdx.x * 32, tile);
}

// One side of split_pair: an operand, whether it is contiguous along k, its
// rows (of A) or columns (of B), and where its split goes.
template <class Op, class Out>
struct SplitSide {
  Op op;
  bool along_k;
  int X;
  Out out;
};

// A and B split by one launch: block rows [0, ceil(M / 32)) take A, the rest
// B. At a small K each pass is a few microseconds, most of it the launch.
template <class Op, class Out>
__global__ __launch_bounds__(256) void split_pair(SplitSide<Op, Out> a, SplitSide<Op, Out> b, int K) {
  __shared__ float tile[32][33];
  const int a_rows = (a.X + 31) / 32, k0 = blockIdx.x * 32;
  if (int(blockIdx.y) < a_rows) {
    const int x0 = blockIdx.y * 32;
    if (a.along_k) split_tile<false, true>(a.op, a.X, K, a.out, x0, k0, tile);
    else split_tile<false, false>(a.op, a.X, K, a.out, x0, k0, tile);
  } else {
    const int x0 = (blockIdx.y - a_rows) * 32;
    if (b.along_k) split_tile<true, true>(b.op, b.X, K, b.out, x0, k0, tile);
    else split_tile<true, false>(b.op, b.X, K, b.out, x0, k0, tile);
  }
}

// C = alpha * W + beta * C through C's layout (W row-major M x N): for a C
// that cuBLAS cannot write (the figure-17/18 layouts).
template <class Op>
__global__ __launch_bounds__(256) void scatter_c(int M, int N, const float* w, float alpha, float beta, Op c) {
  for (int i = blockIdx.y; i < M; i += gridDim.y)
    for (int j = blockIdx.x * 256 + threadIdx.x; j < N; j += gridDim.x * 256)
      store_c(c(i, j), alpha * w[index_t(i) * N + j], beta);
}

}  // namespace parray::cuda::ladder
