// Step 15 — step 14's kernel made persistent, with a K split for grids that
// leave SMs idle (Hopper, sm_90a).
//
// What it adds over step 14: one block per SM walks a list of work units —
// a tile of C, or one of a tile's K ranges — gridDim.x apart, in step 14's
// grouped order. The ring's position runs on from one unit to the next, so
// the producer loads the next unit's first k-tiles while the consumers are
// still writing the previous one's C: a tile's start (the first copies'
// latency) and its epilogue no longer leave the tensor cores idle in between,
// which is what a grid of short units (thin K, or a wave's worth of tiles)
// is made of. When the tiles are fewer than the SMs would take, K is split
// (WgmmaWork, chosen on the host by plan_wgmma_work): each part writes its
// partial product into a slice of a workspace and a second kernel
// (sum_k_parts) adds the slices in part order and applies alpha and beta, so
// that the result does not depend on the order the parts finish in (atomic
// adds into C would). An unsplit tile
// of a row-major C leaves through shared memory (wgmma_staged_c.cuh, the
// epilogue of step 16) as whole lines: by TMA stores that run while the next
// tile starts where C's rows are 16-byte aligned, a row per warp store
// otherwise; a column-major C is stored by each thread. A row- or
// column-major A can stay where it lies (From): TMA copies its tiles
// unrounded and the consumers split them into TF32 parts as they load them
// into registers, wgmma's A operand (multiply_k_tiles_a_in_registers); only
// B goes through the pass. A row-major A whose rows TMA cannot address (not
// 16 bytes apart) is copied into the same tiles by the producer warpgroup's
// 128 threads (load_k_tiles_a_by_threads) where that costs less than the
// pass (a_threads_pay).
//
// The paper's blocked layouts without a copy: C is a grid of strided blocks
// (BlockedOperand; a strided C is one block). Where the blocks hold whole
// tiles (figs 17 / 17x4 / 18 at sizes the tiles divide) each unit writes its
// tile into the block that holds it (TileInBlock), the staged boxes through a
// rank-4 tensor map of the blocks; A stored so is read by TMA through such a
// map too (WgmmaMaps), and B by the split pass block by block.
//
// A strided batch is one launch: the work list runs over the products'
// tiles, a product's after the one before (WgmmaWork::batch, never split in
// K: the products fill the SMs), the producer reads product z's boxes at
// block row z of rank-4 maps whose block rows are the products (block row 0
// for a broadcast operand), and a unit's C lies z strides of C on. A matrix
// smaller than a tile costs the whole tile's products, which the tensor
// cores' rate leaves far below the batch's DRAM time except on the smallest
// matrices (step 18's).
//
// Clusters (Cfg::kCluster > 1): the blocks of a cluster take the tiles
// (tm, tn) of one work unit that differ in tm only, in lock step; each block
// copies its share of B's k-tile and multicasts it to all (load_b), so B
// leaves L2 once per cluster, and a slot is empty when every consumer of the
// cluster has released it (release_slot). The work is planned in units of
// kCluster tiles down M.
#pragma once

#include "14_wgmma_tma.cuh"
#include "wgmma_staged_c.cuh"
#include "parray/cuda/wgmma_plan.hpp"

namespace parray::cuda::ladder {

using cuda::WgmmaWork;

// Unit u: product z of the batch, its tile (tm, tn) and its k-tiles [kt0,
// kt1). A product's units are consecutive, and a tile's parts, so they run at
// once on neighbouring SMs. In a cluster a unit is kCluster tiles down M
// (tiles_m counts those), one per block.
template <class Cfg>
__device__ __forceinline__ void work_unit(const WgmmaWork& w, int u, int& z, int& tm, int& tn, int& kt0, int& kt1) {
  const int per_product = w.tiles_m * w.tiles_n * w.splits;
  z = w.batch > 1 ? u / per_product : 0;
  u -= z * per_product;
  grouped_tile(u / w.splits, w.tiles_m, w.tiles_n, tm, tn);
#ifdef PARRAY_HOPPER_MMA
  if constexpr (Cfg::kCluster > 1) tm = tm * Cfg::kCluster + int(hopper::cluster_rank());
#endif
  kt0 = u % w.splits * w.k_per;
  kt1 = min(w.k_tiles, kt0 + w.k_per);
}

// The block's dynamic shared memory: the ring, its barriers and C's staging.
template <class Cfg>
constexpr int kPersistentSmem = StagedC::smem_bytes(Cfg::Stages * Cfg::kStageBytes);

// How an unsplit tile leaves: each thread's results stored where they belong,
// or staged in shared memory and written by TMA (c_map: boxes of 64 rows x
// 32 columns) or a row at a time (a row-major C whose rows are not aligned).
enum class CStores { per_thread, staged_rows, staged_tma };

// Tile (tm, tn) of C as the block of C that holds it sees it (C a grid of
// blocks whose extents are multiples of the tile's, or one block): the block
// as a strided operand, its place (bi, bj), its size and the tile's place in
// it. 32-bit arithmetic (M, N < 2^31): a 64-bit division is a subroutine
// call in the consumers' code.
template <class Cfg>
struct TileInBlock {
  StridedOperand<float> c;
  int bi, bj, M, N, tm, tn;
  __device__ __forceinline__ TileInBlock(const BlockedOperand<float>& all, int tm_, int tn_, int M_, int N_) {
    const unsigned rows = unsigned(all.block_rows), cols = unsigned(all.block_cols);
    bi = int(unsigned(tm_) * Cfg::BM / rows);
    bj = int(unsigned(tn_) * Cfg::BN / cols);
    c = all.block(bi, bj);
    M = min(int(rows), M_ - bi * int(rows));
    N = min(int(cols), N_ - bj * int(cols));
    tm = tm_ - bi * int(rows / Cfg::BM);
    tn = tn_ - bj * int(cols / Cfg::BN);
  }
};

// From: where A's tiles come from, a kernel each (in one kernel the register
// variants' code cost the copy variant's epilogue spills).
template <class Cfg, AOperand From = AOperand::copy>
__global__ __launch_bounds__(Cfg::kThreads, 1) void gemm_wgmma_persistent(const __grid_constant__ WgmmaMaps maps,
                                                                          const __grid_constant__ CUtensorMap c_map,
                                                                          CStores c_stores, int M, int N, float alpha,
                                                                          float beta, BlockedOperand<float> c,
                                                                          int promote_every, WgmmaWork work,
                                                                          int keep_small) {
#ifdef PARRAY_HOPPER_MMA
  extern __shared__ std::uint8_t smem_raw[];
  const WgmmaRing<Cfg> ring(smem_raw);
  constexpr int kCluster = Cfg::kCluster;
  // A by the producer's threads: each of the 128 arrives on a full slot too.
  static_assert(From != AOperand::threads || kCluster == 1, "the threads copy A for one block's ring");
  init_ring(ring, From == AOperand::threads ? 1 + 128 : 1);
  const int units = static_cast<int>(work.units());
  int z, tm, tn, kt0, kt1, it = 0;
  if (threadIdx.x / 128 == 0) {  // producer
    hopper::release_registers<hopper::kProducerRegisters>();
    if constexpr (From == AOperand::threads) {
      for (int u = blockIdx.x; u < units; u += gridDim.x) {
        work_unit<Cfg>(work, u, z, tm, tn, kt0, kt1);
        load_k_tiles_a_by_threads(maps, ring, tm, tn, kt0, kt1, it);
      }
      return;
    }
    if (threadIdx.x != 0) return;
    for (int u = blockIdx.x / kCluster; u < units; u += gridDim.x / kCluster) {
      work_unit<Cfg>(work, u, z, tm, tn, kt0, kt1);
      load_k_tiles(maps, ring, tm, tn, kt0, kt1, it, From, z);
    }
    if constexpr (kCluster > 1) drain_ring(ring, it);
    return;
  }
  hopper::claim_registers<hopper::kConsumerRegisters>();
  const std::uint32_t rows_off = (threadIdx.x / 128 - 1) * 64 * Cfg::kRowBytes;
  std::uint8_t* staging = StagedC::buffer(ring.base, Cfg::Stages * Cfg::kStageBytes, threadIdx.x / 128 - 1);
  WgmmaAccumulators<Cfg> r;
  for (int u = blockIdx.x / kCluster; u < units; u += gridDim.x / kCluster) {
    work_unit<Cfg>(work, u, z, tm, tn, kt0, kt1);
    if constexpr (From == AOperand::copy)
      multiply_k_tiles(ring, r, kt1 - kt0, promote_every, rows_off, it);
    else
      multiply_k_tiles_a_in_registers<Cfg, From>(ring, r, kt1 - kt0, promote_every, rows_off, keep_small != 0, it);
    if (kCluster > 1 && tm * Cfg::BM >= M) continue;  // a cluster's block past C's last rows
    BlockedOperand<float> cz = c;  // product z's C (one block where batched)
    cz.p += z * work.c_stride;
    const TileInBlock<Cfg> t(cz, tm, tn, M, N);
    if (work.splits > 1) {  // c is the workspace: this part's slice of it, summed later in part order
      StridedOperand<float> part = t.c;
      part.p += static_cast<long long>(kt0 / work.k_per) * work.slice;
      store_tile<Cfg, false>(part, r, t.tm, t.tn, t.M, t.N, 1.f, 0.f);
    } else if (c_stores == CStores::per_thread) {
      store_tile<Cfg, false>(t.c, r, t.tm, t.tn, t.M, t.N, alpha, beta);
    } else {
      const auto value = [&](float acc, int i, int j) {
        return beta == 0.f || i >= t.M || j >= t.N ? alpha * acc : alpha * acc + beta * t.c(i, j);
      };
      // A batch's C map has the products as its block rows.
      const StagedTarget<float> to{c_stores == CStores::staged_tma ? &c_map : nullptr, &t.c(0, 0), t.c.rs, t.M, t.N,
                                   t.bi + z, t.bj};
      store_staged<Cfg, float>(to, r, staging, t.tm, t.tn, value);
    }
  }
  if (threadIdx.x % 128 == 0) hopper::bulk_wait<0>();  // C's last stores complete before the block ends
#else
  __trap();  // built without sm_90a: the launcher refuses before this
#endif
}

}  // namespace parray::cuda::ladder
