// Step 12 — the best FP32 CUDA-core SGEMM here, for Hopper (no tensor cores,
// no TF32).
//
// Over step 10 (its cp.async pipeline and warp-tiled inner product):
//  * tile shape as a type (BestShape, 12_best_tiles.cuh), chosen by measuring
//    (src/cuda/gemm/12_best.cu, docs/perf-notes.md): by default 128 x 128 x 16
//    with 256 threads (8 warps of 64 x 32, 8 x 8 results per thread as 2 x 2
//    sub-tiles of 4 x 4 so that a warp's fragment reads are 128 contiguous
//    bytes) and at most 128 registers, so two blocks — 16 warps — share an SM;
//    128 x 256 with 8 x 16 per thread for row-major A and B, its k-loop body
//    8 of the 16 k-steps (the instruction cache: docs/perf-notes.md,
//    bench/results/h100-2026-11-21-ncu-stalls.txt);
//  * operands contiguous along k (row-major A, column-major B) loaded with
//    16-byte loads into registers and stored transposed (KContigStage), not
//    with 4-byte cp.async, which was far slower for them
//    (docs/perf-notes.md);
//  * tiles addressed once per tile (AxisRun): the four transpose cases, row
//    padding and the figure-17/18 layouts all run the strided copy, and
//    unaligned leading dimensions fall back to 4-byte copies tile by tile;
//  * a grouped tile order (`group` tile rows walked before moving right) so
//    that concurrently running blocks share A and B panels in L2;
//  * split-K for shapes with too few tiles for the SMs (1037 x 1031 is 81
//    tiles of 128 x 128 for 132 SMs): blockIdx.z takes a slice of the k-tiles
//    and writes raw partial sums through the same epilogue into a workspace,
//    and splitk_sum adds the slices in a fixed order (deterministic) and
//    applies alpha and beta; the slice count weighs the summing pass's bytes
//    (choose_splits: 3 slices there);
//  * a stream-K tail where the last wave is partly empty (8192^2 in 128 x
//    256 tiles: 15.5 waves of 132 SMs): the full waves run whole tiles, the
//    rest is cut in equal k-runs over all SMs, one block per piece of a run,
//    the last piece of a tile summing it (best_sgemm_piece;
//    parray/cuda/streamk_plan.hpp; docs/perf-notes.md).
#pragma once

#include "12_best_tiles.cuh"
#include "parray/cuda/streamk_plan.hpp"

namespace parray::cuda::ladder {

// alpha acc (+ beta C) into the (BM, BN) tile at (m0, n0), or added into C
// atomically for an AddOperand: as a strided tile (16-byte stores where C's
// rows allow) when C's runs are strided, else element by element through C's
// layout.
template <class S, class OpC>
__device__ __forceinline__ void best_epilogue(const OpC& c, int M, int N, int m0, int n0, float alpha, float beta,
                                              float (&acc)[S::WMITER * S::TM][S::WNITER * S::TN]) {
  const int mlen = min(S::BM, M - m0), nlen = min(S::BN, N - n0);
  const AxisRun rr = c.row_run(m0, mlen), cr = c.col_run(n0, nlen);
  if (rr.ok && cr.ok) {
    const StridedOperand<float> t{c.p + rr.base + cr.base, rr.step, cr.step};  // (mlen, nlen) tile of C
    const bool cvec = cr.step == 1 && rr.step % 4 == 0 && (reinterpret_cast<std::uintptr_t>(t.p) & 15u) == 0;
    epilogue<S::BM, S::BN, S::WM, S::WN, S::WNITER, S::TM, S::TN, AddsInto<OpC>>(t, mlen, nlen, 0, 0, alpha, beta, cvec,
                                                                                acc);
  } else {
    epilogue<S::BM, S::BN, S::WM, S::WN, S::WNITER, S::TM, S::TN, AddsInto<OpC>>(c, M, N, m0, n0, alpha, beta, false,
                                                                                acc);
  }
}

// Element offsets of the products of one launch (blockIdx.y): products of
// the same shape and strides that differ only in where their operands start
// — the independent blocks of C of a blocked layout (gemm/strided_blocks.hpp) —
// run as one grid, so that together they fill the GPU.
constexpr int kMaxBatch = 8;
struct BatchOffsets {
  index_t a[kMaxBatch] = {}, b[kMaxBatch] = {}, c[kMaxBatch] = {};
};

// The tile (tm, tn) at position pid of the tile order: with group > 1 down
// `group` tile rows, then right (concurrently running blocks share panels of
// A and B in L2); else row by row.
__device__ __forceinline__ void tile_coords(int pid, int tiles_m, int tiles_n, int group, int& tm, int& tn) {
  if (group > 1) {
    const int per_group = group * tiles_n, first_m = (pid / per_group) * group;
    const int gsz = min(tiles_m - first_m, group);
    tm = first_m + (pid % per_group) % gsz, tn = (pid % per_group) / gsz;
  } else {
    tm = pid / tiles_n, tn = pid % tiles_n;
  }
}

// blockIdx.x: linear tile index; blockIdx.y: product of the batch;
// blockIdx.z: K slice of kt_per_split k-tiles, whose results go to C + z *
// split_stride (split-K: C is the workspace, alpha = 1, beta = 0).
template <class S, bool AK, bool BKc, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(S::NT, S::MINB) void best_sgemm(int M, int N, int K, float alpha, OpA a, OpB b,
                                                             float beta, OpC c, int group, int kt_per_split,
                                                             index_t split_stride, BatchOffsets batch) {
  extern __shared__ __align__(16) float smem[];
  // Batches come only from blocked layouts, whose blocks run along k in A and
  // along n in B (gemm/12_best.cu runs other parts one by one). Offsetting the
  // pointers per block costs registers: in the 128 x 128 tile with both
  // operands staged through registers it pushed the kernel over its 128 and
  // spilled 164 bytes, a large loss (docs/perf-notes.md).
  if constexpr (AK && !BKc) {
    a.p += batch.a[blockIdx.y];
    b.p += batch.b[blockIdx.y];
    c.p += batch.c[blockIdx.y];
  }
  int tm, tn;
  tile_coords(int(blockIdx.x), (M + S::BM - 1) / S::BM, (N + S::BN - 1) / S::BN, group, tm, tn);
  const int m0 = tm * S::BM, n0 = tn * S::BN;
  const int kts = (K + S::BK - 1) / S::BK, kt0 = blockIdx.z * kt_per_split;
  const int kt1 = min(kts, kt0 + kt_per_split);
  float acc[S::WMITER * S::TM][S::WNITER * S::TN] = {};
  best_mainloop<S, AK, BKc>(smem, XKRuns<OpA, false>{{a}}, XKRuns<OpB, true>{{b}}, M, N, K, m0, n0, kt0, kt1, acc);
  OpC cz = c;
  cz.p += blockIdx.z * split_stride;
  best_epilogue<S>(cz, M, N, m0, n0, alpha, beta, acc);
}

// The stream-K tail (parray/cuda/streamk_plan.hpp): the last `tiles` tiles of
// the tile order (from dp_tiles), whose k-tiles, tile after tile, are cut
// into equal runs, one per SM slot, and the runs into pieces at tile
// boundaries (streamk_pieces). One block per piece: pieces[blockIdx.x] =
// (tile in the tile order, first and end k-tile, slot); the block writes the
// raw partial sums of its piece into slot c + slot * slot_stride
// (segments_per_tile slots of BM x BN per tail tile), and the last piece to
// finish a tile sums its slots, in slot order (deterministic), into C with
// alpha and beta — told it is last by a per-tile counter, incremented after
// a fence and reset by the last. No fixup launch: the sums overlap the other
// pieces' FMAs, and a fixup kernel after the tail was no faster
// (docs/perf-notes.md).
//
// Why a tail: with one 128 x 256 tile per SM, 8192^2 is 2048 tiles for 132
// SMs, 15.5 waves run as 16 — 3 % of the SMs' time idle in the last wave, for
// cuBLAS's kernel of the same tile too. The full waves run as best_sgemm, a
// launch of their own, and this kernel spreads the rest evenly over all the
// SMs. Why this shape: it is best_sgemm with a piece looked up instead of
// (tile, K slice) from the block index — the same parameters first, the same
// epilogue (c: the slots, alpha = 1, beta = 0), the sum out of line — so that
// ptxas gives its k-loop best_sgemm's register assignment. Kernels that
// looped over a run's pieces, wrote C for whole pieces in a second epilogue,
// read the pieces from a kernel parameter or summed inline ran the k-loop
// slower or had FFMAs reading three sources from one register bank
// (best_sgemm and this kernel: none for the wide tile; docs/perf-notes.md).
template <class OpC>
struct StreamKFixup {
  StreamKPlan plan;
  int kts;
  unsigned* counters;  // one per tail tile, zero between launches
  float alpha, beta;
  OpC c;
};

// C's tile (m0, n0) = alpha (the sum of its `parts` slots at w, BM x BN
// apart) + beta C. Eight 16-byte loads per slot in flight per thread: one
// SM sums the tile, so it needs many loads in flight (a sum of this kind in
// the K split's parts, with one load per slice in flight, lost to a separate
// summing pass). Not inlined: the kernel's
// k-loop keeps best_sgemm's register assignment.
template <class S, class OpC>
__device__ __noinline__ void streamk_sum_tile(const StreamKFixup<OpC>& f, const float* w, int parts, int M, int N,
                                              int m0, int n0) {
  __threadfence();  // the other pieces' slots, fenced before their counts
  constexpr int U = 8, STEP = S::NT * 4;
  const int mlen = min(S::BM, M - m0), nlen = min(S::BN, N - n0);
  for (int e0 = threadIdx.x * 4; e0 < S::BM * S::BN; e0 += STEP * U) {
    float4 s[U];
#pragma unroll
    for (int u = 0; u < U; ++u) s[u] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int q = 0; q < parts; ++q) {
      float4 v[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (e0 + u * STEP < S::BM * S::BN)
          v[u] = __ldcg(reinterpret_cast<const float4*>(w + q * (S::BM * S::BN) + e0 + u * STEP));
#pragma unroll
      for (int u = 0; u < U; ++u) s[u].x += v[u].x, s[u].y += v[u].y, s[u].z += v[u].z, s[u].w += v[u].w;
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int e = e0 + u * STEP, i = e / S::BN, j = e % S::BN;
      if (e >= S::BM * S::BN || i >= mlen) continue;
      const float v[4] = {s[u].x, s[u].y, s[u].z, s[u].w};
#pragma unroll
      for (int t = 0; t < 4; ++t)
        if (j + t < nlen) store_c(f.c(m0 + i, n0 + j + t), f.alpha * v[t], f.beta);
    }
  }
}

// A piece's partial product into acc: tile p.x in the tile order, k-tiles
// [p.y, p.z). Returns the tile's first row and column.
template <class S, bool AK, bool BKc, class OpA, class OpB>
__device__ __forceinline__ int2 piece_product(float* smem, const OpA& a, const OpB& b, int M, int N, int K, int group,
                                              int4 p, float (&acc)[S::WMITER * S::TM][S::WNITER * S::TN]) {
  int tm, tn;
  tile_coords(p.x, (M + S::BM - 1) / S::BM, (N + S::BN - 1) / S::BN, group, tm, tn);
  const int m0 = tm * S::BM, n0 = tn * S::BN;
  best_mainloop<S, AK, BKc>(smem, XKRuns<OpA, false>{{a}}, XKRuns<OpB, true>{{b}}, M, N, K, m0, n0, p.y, p.z, acc);
  return {m0, n0};
}

template <class S, bool AK, bool BKc, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(S::NT, S::MINB) void best_sgemm_piece(int M, int N, int K, float alpha, OpA a, OpB b,
                                                                   float beta, StridedOperand<float> c, int group,
                                                                   const int4* __restrict__ pieces,
                                                                   index_t slot_stride, StreamKFixup<OpC> f) {
  extern __shared__ __align__(16) float smem[];
  __shared__ bool last;
  const int4 p = pieces[blockIdx.x];
  float acc[S::WMITER * S::TM][S::WNITER * S::TN] = {};
  const auto [m0, n0] = piece_product<S, AK, BKc>(smem, a, b, M, N, K, group, p, acc);
  StridedOperand<float> slot = c;
  slot.p += p.w * slot_stride;
  best_epilogue<S>(slot, min(S::BM, M - m0), min(S::BN, N - n0), 0, 0, alpha, beta, acc);
  __syncthreads();  // the whole slot is written
  const int lt = p.x - int(f.plan.dp_tiles), parts = f.plan.blocks_on(lt, f.kts);
  if (threadIdx.x == 0) {
    __threadfence();  // ... and visible to the block that sums the tile
    last = atomicAdd(f.counters + lt, 1u) == unsigned(parts - 1);
  }
  __syncthreads();
  if (!last) return;
  streamk_sum_tile<S>(f, c.p + static_cast<long long>(lt) * f.plan.segments_per_tile * slot_stride, parts, M, N, m0,
                      n0);
  if (threadIdx.x == 0) f.counters[lt] = 0;  // every piece has counted: ready for the next product
}

// The tail of a K split's part, planned for all parts together
// (plan_parts_tail; src/cuda/multilevel/): one block per piece (tile in the
// tile order, k-tiles [k0, k1)) of the part's last tiles, adding alpha times
// its partial product into C (an AddOperand): the parts' additions already
// sum every tile, so a piece needs no slot, counter or fixup. Shaped like
// best_sgemm for its k-loop's register assignment.
template <class S, bool AK, bool BKc, class OpA, class OpB, class OpC>
__global__ __launch_bounds__(S::NT, S::MINB) void best_sgemm_add_piece(int M, int N, int K, float alpha, OpA a, OpB b,
                                                                       float beta, OpC c, int group,
                                                                       const int4* __restrict__ pieces) {
  static_assert(AddsInto<OpC>, "pieces of a tile add into C");
  extern __shared__ __align__(16) float smem[];
  const int4 p = pieces[blockIdx.x];
  float acc[S::WMITER * S::TM][S::WNITER * S::TN] = {};
  const auto [m0, n0] = piece_product<S, AK, BKc>(smem, a, b, M, N, K, group, p, acc);
  best_epilogue<S>(c, M, N, m0, n0, alpha, beta, acc);
}

// The sum over `parts` slices (`slice` floats apart) of the 4 floats at w
// (16-byte aligned), in slice order. The loads of four slices are issued
// before any is added: a loop that added each load before issuing the next
// kept one 4-byte load in flight per thread, too few to keep the memory
// busy.
__device__ __forceinline__ float4 sum_slices4(const float* w, index_t slice, int parts) {
  float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
  auto add = [&s](const float4& v) { s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w; };
  int z = 0;
  for (; z + 4 <= parts; z += 4) {
    float4 v[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) v[u] = __ldg(reinterpret_cast<const float4*>(w + (z + u) * slice));
#pragma unroll
    for (int u = 0; u < 4; ++u) add(v[u]);
  }
  for (; z < parts; ++z) add(__ldg(reinterpret_cast<const float4*>(w + z * slice)));
  return s;
}

// C = alpha * (sum of the slices, in order) + beta * C; slice z of the
// workspace is row-major M x N with row length ldw (a multiple of 4: each
// thread reads 4 columns of every slice with one 16-byte load).
template <class OpC>
__global__ __launch_bounds__(256) void splitk_sum(int M, int N, int splits, const float* ws, index_t ldw,
                                                  index_t slice, float alpha, float beta, OpC c) {
  for (int i = blockIdx.y; i < M; i += gridDim.y)
    for (int j = (blockIdx.x * 256 + threadIdx.x) * 4; j < N; j += gridDim.x * 256 * 4) {
      const float4 s = sum_slices4(ws + i * ldw + j, slice, splits);
      const float v[4] = {s.x, s.y, s.z, s.w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (j + e < N) store_c(c(i, j + e), alpha * v[e], beta);
    }
}

}  // namespace parray::cuda::ladder
