// C written through shared memory by TMA, for the wgmma kernels' consumer
// warpgroups (steps 15 and 16; Hopper, sm_90a).
//
// Each consumer warpgroup owns a staging buffer of two boxes of 64 rows x 128
// bytes, 128-byte swizzled as TMA expects (the 16-byte chunk c of row r at
// chunk c ^ (r % 8)), which also puts the 8 rows of one store instruction in 8
// different bank groups. It writes its 64 rows of the tile two boxes (128
// columns of a 16-bit C, 64 of an FP32 one) at a time, and its first thread
// hands the boxes to the copy engine: whole lines of C instead of each
// thread's pairs of columns, and the last boxes' stores run while the
// warpgroup starts its next tile. A C whose rows TMA cannot address (not
// 16-byte aligned) is written from the buffer a row at a time instead. The
// buffers follow the ring's slots and barriers in shared memory.
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "14_wgmma_tma.cuh"
#include "element16.cuh"

namespace parray::cuda::ladder {

struct StagedC {
  static constexpr int kRowBytes = 128, kBox = 64 * kRowBytes;
  static constexpr int kPerWarpgroup = 2 * kBox;
  static constexpr int kBarrierBytes = 1024;  // the ring's barriers, padded to keep the buffers aligned
  // A block's dynamic shared memory: the ring's slots (ring_bytes), its
  // barriers, two buffers, and 1024 bytes for aligning the whole by hand.
  static constexpr int smem_bytes(int ring_bytes) { return ring_bytes + kBarrierBytes + 2 * kPerWarpgroup + 1024; }
  static __device__ __forceinline__ std::uint8_t* buffer(std::uint8_t* ring_base, int ring_bytes, int warpgroup) {
    return ring_base + ring_bytes + kBarrierBytes + warpgroup * kPerWarpgroup;
  }
  // Columns of C in one box.
  template <class Out>
  static constexpr int kCols = kRowBytes / int(sizeof(Out));
};

// C = beta C in C's element type, C not read when beta = 0 (NaN there must
// not propagate): the whole product where K = 0 or alpha = 0 (step 16's
// entry).
template <class OpC>
__global__ void scale_c(OpC c, int M, int N, float beta) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       e < static_cast<long long>(M) * N; e += static_cast<long long>(gridDim.x) * blockDim.x) {
    auto& x = c(static_cast<int>(e / N), static_cast<int>(e % N));
    put(&x, beta == 0.f ? 0.f : beta * as_float(x));
  }
}

// C = alpha * (the sum of a K split's parts) + beta * C, C not read when
// beta = 0. The parts (row-major M x N slices, `slice` floats apart) are
// added in part order, so the result does not depend on which part's blocks
// finished first (step 15's K split).
template <class OpC>
__global__ __launch_bounds__(256) void sum_k_parts(OpC c, int M, int N, int parts, const float* ws, long long slice,
                                                   float alpha, float beta) {
  for (long long e = blockIdx.x * 256ll + threadIdx.x; e < static_cast<long long>(M) * N;
       e += static_cast<long long>(gridDim.x) * 256) {
    float s = 0.f;
    for (int p = 0; p < parts; ++p) s += ws[p * slice + e];
    auto& x = c(static_cast<int>(e / N), static_cast<int>(e % N));
    put(&x, beta == 0.f ? alpha * s : alpha * s + beta * as_float(x));
  }
}

#ifdef PARRAY_HOPPER_MMA

// Where a staged C goes: C's tensor map (tensor_map_blocked: C as a grid of
// blocks, boxes of 64 rows x StagedC::kCols<Out> in block (block_i,
// block_j)) when its rows are 16-byte aligned, else the block itself (data,
// M x N, rows ld apart), written a row at a time by each warp (whole lines of
// 128 bytes per store instruction, where each thread's pairs of columns
// would touch 8 lines at once). Rows and columns count from the block's corner.
template <class Out>
struct StagedTarget {
  const CUtensorMap* map;  // null: rows
  Out* data;
  long long ld;
  int M, N;
  int block_i, block_j;
};

// Warp w of the warpgroup writes rows 16 w .. 16 w + 15 of a staged chunk of
// kChunk columns, one element per lane and store.
template <class Out, int kChunk>
__device__ __forceinline__ void store_staged_rows(const StagedTarget<Out>& t, const std::uint8_t* staging, int row0,
                                                  int col0) {
  constexpr int kCols = StagedC::kCols<Out>;
  const int w = threadIdx.x % 128 / 32, l = threadIdx.x % 32;
  for (int row = 16 * w; row < 16 * w + 16; ++row) {
    if (row0 + row >= t.M) break;
#pragma unroll
    for (int col = l; col < kChunk; col += 32) {
      if (col0 + col >= t.N) break;
      const int byte = col % kCols * int(sizeof(Out));
      const int swizzled = ((byte / 16) ^ (row % 8)) * 16 + byte % 16;
      t.data[static_cast<long long>(row0 + row) * t.ld + col0 + col] = *reinterpret_cast<const Out*>(
          staging + col / kCols * StagedC::kBox + row * StagedC::kRowBytes + swizzled);
    }
  }
}

// The consumer warpgroup's 64 rows of tile (tm, tn) into t, each value
// value(acc, i, j) for result acc at (i, j) of C. Nothing is written past M
// and N (TMA drops it; the rows test it).
template <class Cfg, class Out, class Value>
__device__ __forceinline__ void store_staged(const StagedTarget<Out>& t, const WgmmaAccumulators<Cfg>& r,
                                             std::uint8_t* staging, int tm, int tn, Value&& value) {
  using namespace hopper;
  constexpr int kCols = StagedC::kCols<Out>, kChunk = 2 * kCols;
  const int wg = threadIdx.x / 128 - 1, w = threadIdx.x % 128 / 32, l = threadIdx.x % 32;
  const bool lead = threadIdx.x % 128 == 0;
  const int row0 = tm * Cfg::BM + 64 * wg, col0 = tn * Cfg::BN;
  // Rows or chunks wholly past C's edge (a small matrix of a batch, an edge
  // tile) hold nothing to write: the warpgroup skips them together.
  if (row0 >= t.M) return;
#pragma unroll
  for (int c0 = 0; c0 < Cfg::BN; c0 += kChunk) {
    if (col0 + c0 >= t.N) break;
    if (lead) bulk_wait_read<0>();  // the previous boxes have left the buffer
    named_barrier(1 + wg, 128);
#pragma unroll
    for (int jj = 0; jj < kChunk / 8; ++jj)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = 16 * w + l / 4 + 8 * h, col = 8 * jj + 2 * (l % 4), a = 4 * (c0 / 8 + jj) + 2 * h;
        const float v0 = value(r.acc[a], row0 + row, col0 + c0 + col);
        const float v1 = value(r.acc[a + 1], row0 + row, col0 + c0 + col + 1);
        const int byte = col % kCols * int(sizeof(Out));
        const int swizzled = ((byte / 16) ^ (row % 8)) * 16 + byte % 16;
        put_pair(reinterpret_cast<Out*>(staging + col / kCols * StagedC::kBox + row * StagedC::kRowBytes + swizzled),
                 v0, v1);
      }
    if (t.map) {
      fence_async_shared();
      named_barrier(1 + wg, 128);
      if (lead) {
        tma_store_4d(t.map, staging, col0 + c0, row0, t.block_j, t.block_i);
        tma_store_4d(t.map, staging + StagedC::kBox, col0 + c0 + kCols, row0, t.block_j, t.block_i);
        bulk_commit();
      }
    } else {
      named_barrier(1 + wg, 128);
      store_staged_rows<Out, kChunk>(t, staging, row0, col0 + c0);
    }
  }
}

#endif  // PARRAY_HOPPER_MMA

}  // namespace parray::cuda::ladder
