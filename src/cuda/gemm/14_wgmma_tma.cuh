// Step 14 — our own tensor-core GEMM: TMA, wgmma, an mbarrier pipeline and
// warp specialisation (Hopper, sm_90a).
//
// What it adds over step 13: the tensor-core kernel is parray's, not cuBLAS's.
// A block of 3 warpgroups computes a 128 x BN tile of C:
//   - warpgroup 0 is the producer: one thread issues TMA copies of the A and B
//     tiles (128 x 32 and BN x 32, K-major, 128-byte swizzled) into a ring of
//     Stages shared-memory slots; each slot has a "full" mbarrier that the copy
//     engine completes by byte count and an "empty" one the consumers release.
//     It keeps 24 registers (setmaxnreg) and gives the rest to
//   - warpgroups 1 and 2, the consumers: each owns 64 rows of the tile and
//     issues wgmma m64nBNk8 on the slot's tiles straight from shared memory,
//     keeping one k-tile of wgmma in flight while it waits for the next slot.
// The operands are the split pass's K-contiguous copies (as in step 13: read
// through any layout, A as M x K and B as N x K rows, which is the only form
// TF32 wgmma reads); TMA's out-of-bounds fill gives zeros past M, N and K, so
// no edge handling is needed before the epilogue.
//
// Format: the operands' copies are TF32 (Tf32Format), BF16 or FP16
// (Bf16Format, Fp16Format: the pass rounds to nearest into 16-bit copies, a
// k-tile holds 64 values of K and wgmma k16 reads them; half the bytes of
// TF32 per product and twice its tensor-core rate).
//
// Products = 1: C from the big parts alone (TF32, BF16, FP16). Products = 3: FP32
// accuracy — As Bb + Ab Bs + Ab Bb per k-tile into a partial accumulator that
// is added into an FP32 one (rounded to nearest, on the CUDA cores) every
// `promote_every` k-tiles: the tensor cores accumulate by truncation, and this
// keeps their error that of a short sum whatever K (step 13 did the same with
// one cuBLAS call per chunk of K).
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "13_split_tf32.cuh"  // to_tf32, tf32_small
#include "hopper.cuh"
#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

// The operands' format in shared memory and the wgmma that reads it. A k-tile
// is one 128-byte swizzled row per row of A and of B whatever the format (32
// TF32 or 64 BF16/FP16 values of K), and each wgmma takes 32 bytes of it.
enum class MmaInput { tf32, bf16, f16 };
template <MmaInput In>
struct WgmmaFormat {
  static constexpr int kBytes = In == MmaInput::tf32 ? 4 : 2;
  // TransA, TransB: 1 for an MN-major tile (16-bit formats only).
  template <int N, int TransA = 0, int TransB = 0, class Acc>
  static __device__ __forceinline__ void mma(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {
#ifdef PARRAY_HOPPER_MMA
    static_assert(In != MmaInput::tf32 || (TransA == 0 && TransB == 0), "TF32 wgmma reads K-major tiles only");
    if constexpr (In == MmaInput::tf32) hopper::Wgmma<N>::tf32(d, a, b, scale_d);
    else if constexpr (In == MmaInput::bf16) hopper::Wgmma<N>::template bf16<TransA, TransB>(d, a, b, scale_d);
    else hopper::Wgmma<N>::template f16<TransA, TransB>(d, a, b, scale_d);
#endif
  }
};
using Tf32Format = WgmmaFormat<MmaInput::tf32>;
using Bf16Format = WgmmaFormat<MmaInput::bf16>;
using Fp16Format = WgmmaFormat<MmaInput::f16>;

// Cluster_ > 1 (step 15): blocks in clusters of that many along M, each
// tile of B copied once per cluster and multicast to all of its blocks.
// Promote_: the tensor cores' sums go into a partial accumulator that joins
// the FP32 one every promote_every k-tiles (FP32 accuracy: the split's three
// products, or step 21's one TF32 product of TF32 values); else they
// accumulate over all of K.
template <int BN_, int Stages_, int Products_, class Format_ = Tf32Format, int Cluster_ = 1,
          bool Promote_ = (Products_ == 3)>
struct WgmmaTiles {
  using Format = Format_;
  static constexpr int kRowBytes = 128;  // of a k-tile, per row of A or B: one swizzle span
  static constexpr int BM = 128, BN = BN_, BK = kRowBytes / Format::kBytes, Stages = Stages_, Products = Products_;
  static constexpr int kCluster = Cluster_;
  static constexpr bool kPromote = Promote_;
  static_assert(Products_ == 1 || Promote_, "the split's products are promoted");
  // B's box per block: each block of a cluster copies its share of B's tile
  // (a multiple of the 8-row swizzle atom, so the shares tile the slot).
  static constexpr int kBoxB = BN / kCluster;
  static_assert(kBoxB % 8 == 0, "B's share a whole number of swizzle atoms");
  static constexpr int kThreads = 384;  // producer + 2 consumer warpgroups
  static constexpr int kTileA = BM * kRowBytes, kTileB = BN * kRowBytes;  // bytes
  static constexpr int kSteps = kRowBytes / 32;                           // wgmma per k-tile, 32 bytes each
  static constexpr int kParts = Products == 1 ? 1 : 2;                    // big (and small) copies
  static constexpr int kStageBytes = kParts * (kTileA + kTileB);
  // Slots, then the barriers; +1024: the slots are aligned by hand (swizzle atoms).
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Stages * 8 + 1024;
  static constexpr int kAccum = BN / 2;  // results per consumer thread
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one block");
  static_assert(Products == 1 || Format::kBytes == 4, "the split (3 products) is of TF32 parts");
  // wgmma's operands for K slice `step` of a k-tile: the descriptors of A's
  // tile (from the warpgroup's rows, rows_off bytes in) and B's, both K-major.
  static __device__ __forceinline__ std::uint64_t desc_a(const std::uint8_t* tile, std::uint32_t rows_off, int step) {
#ifdef PARRAY_HOPPER_MMA
    return hopper::sw128_desc(tile, rows_off + step * 32);
#else
    return 0;
#endif
  }
  static __device__ __forceinline__ std::uint64_t desc_b(const std::uint8_t* tile, int step) {
#ifdef PARRAY_HOPPER_MMA
    return hopper::sw128_desc(tile, step * 32);
#else
    return 0;
#endif
  }
  template <class Acc>
  static __device__ __forceinline__ void mma(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {
    Format::template mma<BN>(d, a, b, scale_d);
  }
};

// Tile (tm, tn) of block `id`: groups of 8 tile rows walked column by column,
// so that the blocks resident together share A and B panels in L2.
__device__ __forceinline__ void grouped_tile(int id, int tiles_m, int tiles_n, int& tm, int& tn) {
  constexpr int kGroup = 8;
  const int per_group = kGroup * tiles_n, first = id / per_group * kGroup;
  const int rows = min(tiles_m - first, kGroup), in_group = id % per_group;
  tm = first + in_group % rows;
  tn = in_group / rows;
}

// The four operand maps: big and small parts of A (M x K) and B (N x K).
// A read where it lies with its rows in K-major tiles (AOperand::rows) and
// stored in several blocks (figs 17 / 18) is a grid of blocks of
// a_block_rows x a_block_k, multiples of the tile's (tensor_map_blocked);
// a_block_rows = 0: one block, a rank-2 map (the rank-4 map and its
// coordinates slow the row-major TF32 GEMM; docs/perf-notes.md).
// A strided batch (step 15, batched): every map is rank 4 with the batch's
// products as its block rows (one block row where the operand is broadcast:
// a_batched / b_batched 0), read at block row z.
// a_lines (AOperand::threads: step 15, one product, no cluster): a
// row-major A whose rows the copy engine cannot address (not 16 bytes
// apart), M x a_k with rows a_ld floats apart; the producer warpgroup's
// threads copy its tiles (load_k_tiles_a_by_threads) and a_big is unused.
struct WgmmaMaps {
  CUtensorMap a_big, a_small, b_big, b_small;
  int a_block_rows, a_block_k;
  int batched, a_batched, b_batched;
  const float* a_lines;
  long long a_ld;
  int a_rows, a_k;
};

// Where A's tiles come from: the split pass's copies (read by wgmma from
// shared memory), or A itself, unsplit, row-major or blocked (K-major tiles)
// or column-major (tiles of 4 boxes of 32 rows x 32 k, M-major), split in
// registers by the consumers (step 15; a_big then maps A); or a row-major A
// whose rows TMA cannot address, copied into the same K-major tiles by the
// producer's threads (threads: WgmmaMaps::a_lines).
enum class AOperand { copy, rows, columns, threads };

// The ring of shared-memory slots and its barriers, carved from the dynamic
// shared memory (aligned by hand to 1024 bytes: the swizzle atoms). A slot is
// `full` when its copies have landed, `empty` when the consumers are done
// with it.
template <class Cfg>
struct WgmmaRing {
  std::uint8_t* base;
  std::uint64_t *full, *empty;
  __device__ __forceinline__ explicit WgmmaRing(std::uint8_t* raw) {
#ifdef PARRAY_HOPPER_MMA
    base = raw + ((1024 - hopper::smem_addr(raw) % 1024) % 1024);
#else
    base = raw;
#endif
    full = reinterpret_cast<std::uint64_t*>(base + Cfg::Stages * Cfg::kStageBytes);
    empty = full + Cfg::Stages;
  }
  __device__ __forceinline__ std::uint8_t* slot(int s, int part, bool b) const {
    return base + s * Cfg::kStageBytes + part * (Cfg::kTileA + Cfg::kTileB) + (b ? Cfg::kTileA : 0);
  }
};

#ifdef PARRAY_HOPPER_MMA

// Thread 0 initialises the barriers; the block (the cluster) waits for it.
// A slot is empty once every consumer warp of the cluster has released it:
// each block's copies of B land in all the cluster's blocks.
// A slot is full after `full_arrivals`: the producer's announcement of the
// copy engine's bytes, and where its threads copy A, each thread's copies.
template <class Cfg>
__device__ __forceinline__ void init_ring(const WgmmaRing<Cfg>& ring, int full_arrivals = 1) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::Stages; ++s) {
      hopper::mbar_init(&ring.full[s], full_arrivals);
      hopper::mbar_init(&ring.empty[s], 8 * Cfg::kCluster);  // one arrival per consumer warp
    }
    hopper::fence_barrier_init();
  }
  __syncthreads();
  if constexpr (Cfg::kCluster > 1) hopper::cluster_sync();
}

// B's tile (tn) of k-tile k0 into its slot: in a cluster, this block's share
// of its rows, multicast to every block of the cluster.
template <class Cfg>
__device__ __forceinline__ void load_b(std::uint8_t* slot, const CUtensorMap* map, std::uint64_t* full, int k0,
                                       int tn) {
  if constexpr (Cfg::kCluster == 1) {
    hopper::tma_load_2d(slot, map, full, k0, tn * Cfg::BN);
  } else {
    const int share = int(hopper::cluster_rank()) * Cfg::kBoxB;
    hopper::tma_load_2d_multicast(slot + share * Cfg::kRowBytes, map, full, k0, tn * Cfg::BN + share,
                                  (1u << Cfg::kCluster) - 1);
  }
}

// A batch's k-tile k0 of tile (tm, tn) of product z into slot s (Cfg::kCluster
// is 1 there): each operand's box at block row z, or 0 where it is broadcast.
template <class Cfg>
__device__ __forceinline__ void load_batch_k_tile(const WgmmaMaps& maps, const WgmmaRing<Cfg>& ring, int s, int tm,
                                                  int tn, int k0, AOperand a, int z) {
  using namespace hopper;
  const int za = maps.a_batched ? z : 0, zb = maps.b_batched ? z : 0;
  if (a == AOperand::columns) {
    for (int box = 0; box < Cfg::BM / 32; ++box)
      tma_load_4d(ring.slot(s, 0, false) + box * 32 * Cfg::kRowBytes, &maps.a_big, &ring.full[s],
                  tm * Cfg::BM + 32 * box, k0, 0, za);
  } else {
    tma_load_4d(ring.slot(s, 0, false), &maps.a_big, &ring.full[s], k0, tm * Cfg::BM, 0, za);
  }
  tma_load_4d(ring.slot(s, 0, true), &maps.b_big, &ring.full[s], k0, tn * Cfg::BN, 0, zb);
  if constexpr (Cfg::Products == 3) {
    if (a == AOperand::copy) tma_load_4d(ring.slot(s, 1, false), &maps.a_small, &ring.full[s], k0, tm * Cfg::BM, 0, za);
    tma_load_4d(ring.slot(s, 1, true), &maps.b_small, &ring.full[s], k0, tn * Cfg::BN, 0, zb);
  }
}

// Producer (one thread): TMA copies of k-tiles [kt0, kt1) of tile (tm, tn)
// (of product z of a batch) into the ring. `it` is the ring's position: the
// k-tiles this block has loaded so far, whose count picks the slot and the
// barriers' phase.
template <class Cfg>
__device__ __forceinline__ void load_k_tiles(const WgmmaMaps& maps, const WgmmaRing<Cfg>& ring, int tm, int tn,
                                             int kt0, int kt1, int& it, AOperand a = AOperand::copy, int z = 0) {
  using namespace hopper;
  const int bytes = Cfg::kStageBytes - (Cfg::Products == 3 && a != AOperand::copy ? Cfg::kTileA : 0);
  for (int kt = kt0; kt < kt1; ++kt, ++it) {
    const int s = it % Cfg::Stages;
    mbar_wait(&ring.empty[s], ((it / Cfg::Stages) & 1) ^ 1);
    mbar_arrive_expect_bytes(&ring.full[s], bytes);
    const int k0 = kt * Cfg::BK;
    if (Cfg::kCluster == 1 && maps.batched) {
      load_batch_k_tile(maps, ring, s, tm, tn, k0, a, z);
      continue;
    }
    if (a == AOperand::columns) {
      for (int box = 0; box < Cfg::BM / 32; ++box)
        tma_load_2d(ring.slot(s, 0, false) + box * 32 * Cfg::kRowBytes, &maps.a_big, &ring.full[s],
                    tm * Cfg::BM + 32 * box, k0);
    } else if (a == AOperand::rows && maps.a_block_rows > 0) {
      const int m0 = tm * Cfg::BM;
      tma_load_4d(ring.slot(s, 0, false), &maps.a_big, &ring.full[s], k0 % maps.a_block_k, m0 % maps.a_block_rows,
                  k0 / maps.a_block_k, m0 / maps.a_block_rows);
    } else {
      tma_load_2d(ring.slot(s, 0, false), &maps.a_big, &ring.full[s], k0, tm * Cfg::BM);
    }
    load_b<Cfg>(ring.slot(s, 0, true), &maps.b_big, &ring.full[s], k0, tn);
    if constexpr (Cfg::Products == 3) {
      if (a == AOperand::copy) tma_load_2d(ring.slot(s, 1, false), &maps.a_small, &ring.full[s], k0, tm * Cfg::BM);
      load_b<Cfg>(ring.slot(s, 1, true), &maps.b_small, &ring.full[s], k0, tn);
    }
  }
}

// Producer warpgroup (all 128 threads), A by its threads: k-tiles [kt0, kt1)
// of tile (tm, tn) into the ring, B by TMA as load_k_tiles (thread 0), A's
// 128 rows x 32 floats of each k-tile by 4-byte cp.async, a warp a row at a
// time (its 32 lanes one 128-byte run of the row, coalesced wherever the row
// starts), into the same 128-byte swizzled lines TMA writes (float c of row r
// in chunk (c / 4) ^ (r % 8)); zeros past A's edges. Each thread's copies
// arrive on the slot's full barrier when they land (no increment: the
// barrier counts 1 + 128 arrivals). For one product without a cluster.
template <class Cfg>
__device__ __forceinline__ void load_k_tiles_a_by_threads(const WgmmaMaps& maps, const WgmmaRing<Cfg>& ring, int tm,
                                                          int tn, int kt0, int kt1, int& it) {
  using namespace hopper;
  static_assert(Cfg::kCluster == 1 && Cfg::BK == 32, "a warp copies one 32-float line of A at a time");
  // A's TF32 tile (and no small part: A in place is split in registers) is the threads'.
  constexpr int kBytes = Cfg::kStageBytes - Cfg::kParts * Cfg::kTileA;
  const int w = threadIdx.x / 32, l = threadIdx.x % 32;
  const int row0 = tm * Cfg::BM + w;
  for (int kt = kt0; kt < kt1; ++kt, ++it) {
    const int s = it % Cfg::Stages, k = kt * Cfg::BK + l;
    mbar_wait(&ring.empty[s], ((it / Cfg::Stages) & 1) ^ 1);
    if (threadIdx.x == 0) {
      mbar_arrive_expect_bytes(&ring.full[s], kBytes);
      load_b<Cfg>(ring.slot(s, 0, true), &maps.b_big, &ring.full[s], kt * Cfg::BK, tn);
      if constexpr (Cfg::Products == 3) load_b<Cfg>(ring.slot(s, 1, true), &maps.b_small, &ring.full[s], kt * Cfg::BK, tn);
    }
    const std::uint32_t tile = smem_addr(ring.slot(s, 0, false));
    const float* src = maps.a_lines + static_cast<long long>(row0) * maps.a_ld + k;
#pragma unroll 4
    for (int r = w; r < Cfg::BM; r += 4, src += 4 * maps.a_ld) {
      const bool in = row0 - w + r < maps.a_rows && k < maps.a_k;
      const std::uint32_t dst = tile + r * Cfg::kRowBytes + (((l / 4) ^ (r % 8)) * 16) + l % 4 * 4;
      asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(dst), "l"(in ? src : maps.a_lines),
                   "r"(in ? 4 : 0)
                   : "memory");
    }
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(&ring.full[s])) : "memory");
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

// Producer of a cluster's block, after its last copies: waits until every
// consumer of the cluster has released each slot, so that no block leaves
// while another may still copy into its slots or arrive on its barriers.
template <class Cfg>
__device__ __forceinline__ void drain_ring(const WgmmaRing<Cfg>& ring, int it) {
  for (int i = it; i < it + Cfg::Stages; ++i)
    hopper::mbar_wait(&ring.empty[i % Cfg::Stages], ((i / Cfg::Stages) & 1) ^ 1);
}

// A consumer warpgroup's registers: its 64 rows of the tile in `acc` (and
// the partial sums of the split products in `part`).
template <class Cfg>
struct WgmmaAccumulators {
  float acc[Cfg::kAccum], part[Cfg::kPromote ? Cfg::kAccum : 1];
};

// A consumer warp gives slot s back to the producer (s < 0: none).
// In a cluster it gives it back to every block's producer (whose copies of
// B landed in it too).
template <class Cfg>
__device__ __forceinline__ void release_slot(const WgmmaRing<Cfg>& ring, int s) {
  if (s < 0 || threadIdx.x % 32 != 0) return;
  if constexpr (Cfg::kCluster == 1) {
    hopper::mbar_arrive(&ring.empty[s]);
  } else {
#pragma unroll
    for (int rank = 0; rank < Cfg::kCluster; ++rank) hopper::mbar_arrive_in(&ring.empty[s], rank);
  }
}

// Consumers, once k-tile k's wgmma (of n, from slot s) are issued: commit
// them; with FP32 accuracy at the end of a chunk of promote_every k-tiles (or
// of the n) wait for them and add the partial sums into acc, else leave them
// in flight and wait for the k-tile before. Slots whose wgmma have completed
// go back to the producer; `pending` is the one that may still be read.
template <class Cfg>
__device__ __forceinline__ void commit_k_tile(const WgmmaRing<Cfg>& ring, WgmmaAccumulators<Cfg>& r, int k, int n,
                                              int promote_every, int s, int& pending) {
  using namespace hopper;
  wgmma_commit();
  if constexpr (!Cfg::kPromote) fence_registers(r.acc);
  if (Cfg::kPromote && ((k + 1) % promote_every == 0 || k + 1 == n)) {
    wgmma_wait<0>();
    fence_registers(r.part);
#pragma unroll
    for (int i = 0; i < Cfg::kAccum; ++i) r.acc[i] += r.part[i];
    release_slot(ring, pending);
    release_slot(ring, s);
    pending = -1;
  } else {
    wgmma_wait<1>();
    release_slot(ring, pending);
    pending = s;
  }
}

// Consumers, after the last k-tile: its wgmma complete, its slot released.
template <class Cfg>
__device__ __forceinline__ void finish_k_tiles(const WgmmaRing<Cfg>& ring, WgmmaAccumulators<Cfg>& r, int pending) {
  hopper::wgmma_wait<0>();
  hopper::fence_registers(r.acc);
  release_slot(ring, pending);
}

// Consumers: acc = the product over the next n k-tiles of the ring (n >= 1),
// each slot released once its wgmma has finished. rows_off: the warpgroup's
// 64 rows in the A tile, in bytes. ReadEarly breaks the pipeline on purpose
// (gpu.wgmma_read_early, for the tests): each slot's wgmma are issued before
// its copies are waited for, and read what the slot held before.
template <class Cfg, bool ReadEarly = false>
__device__ __forceinline__ void multiply_k_tiles(const WgmmaRing<Cfg>& ring, WgmmaAccumulators<Cfg>& r, int n,
                                                 int promote_every, std::uint32_t rows_off, int& it) {
  using namespace hopper;
  // Unpromoted sums accumulate in acc, its first wgmma overwriting it
  // (scale_d = 0): zeroing it first would put ordinary writes of the
  // accumulators inside the wgmma pipeline, and ptxas then serialises the
  // wgmma (warning C7515). Promoted ones start in part the same way.
  if constexpr (Cfg::kPromote) {
#pragma unroll
    for (int i = 0; i < Cfg::kAccum; ++i) r.acc[i] = 0.f;
  }
  int pending = -1;  // the slot whose wgmma may still be running
  for (int k = 0; k < n; ++k, ++it) {
    const int s = it % Cfg::Stages;
    if constexpr (!ReadEarly) mbar_wait(&ring.full[s], (it / Cfg::Stages) & 1);
    const bool chunk_start = Cfg::kPromote ? k % promote_every == 0 : k == 0;
    if constexpr (!Cfg::kPromote) fence_registers(r.acc);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < Cfg::kSteps; ++step) {
      const std::uint64_t ab = Cfg::desc_a(ring.slot(s, 0, false), rows_off, step);
      const std::uint64_t bb = Cfg::desc_b(ring.slot(s, 0, true), step);
      const int scale = chunk_start && step == 0 ? 0 : 1;
      if constexpr (Cfg::Products == 3) {
        // Small products first: they are the smaller terms of the sum.
        const std::uint64_t as = Cfg::desc_a(ring.slot(s, 1, false), rows_off, step);
        const std::uint64_t bs = Cfg::desc_b(ring.slot(s, 1, true), step);
        Cfg::mma(r.part, as, bb, scale);
        Cfg::mma(r.part, ab, bs, 1);
        Cfg::mma(r.part, ab, bb, 1);
      } else if constexpr (Cfg::kPromote) {
        Cfg::mma(r.part, ab, bb, scale);
      } else {
        Cfg::mma(r.acc, ab, bb, scale);
      }
    }
    if constexpr (ReadEarly) mbar_wait(&ring.full[s], (it / Cfg::Stages) & 1);  // each phase still waited for, in order
    commit_k_tile(ring, r, k, n, promote_every, s, pending);
  }
  finish_k_tiles(ring, r, pending);
}

// A's values of one k-tile in a consumer thread's registers, wgmma's A
// operand: the TF32 big parts and, for FP32 accuracy, the small ones. Thread
// (warp w, lane l) holds rows 16 w + l / 4 (+ 8) and columns 8 step + l % 4
// (+ 4) of its warpgroup's 64 x 32 slice of the k-tile.
template <class Cfg>
struct RegisterA {
  std::uint32_t big[Cfg::kSteps][4], small[Cfg::Products == 3 ? Cfg::kSteps : 1][4];
};

// Reads a thread's A values from the 128-byte swizzled lines TMA wrote
// (16-byte chunk c of line r lies at c ^ (r % 8)) and splits them as the
// split pass does. K-major tiles (a line per row): a warp's 32 reads fall in
// 32 banks; M-major (a line per k of a 32-row box): in 16. `rows` is the
// warpgroup's 64 rows, 64 x 128 bytes in (and from) the slot in either form.
template <class Cfg, AOperand From>
__device__ __forceinline__ void load_register_a(RegisterA<Cfg>& a, const std::uint8_t* rows, bool keep_small) {
  static_assert(From != AOperand::copy, "A from registers is A as TMA copied it");
  const int w = threadIdx.x % 128 / 32, l = threadIdx.x % 32;
#pragma unroll
  for (int step = 0; step < Cfg::kSteps; ++step)
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int row = 16 * w + l / 4 + 8 * (q & 1), col = 8 * step + l % 4 + 4 * (q >> 1);
      const int at = From != AOperand::columns
                         ? row * Cfg::kRowBytes + ((col / 4) ^ (row % 8)) * 16 + col % 4 * 4
                         : row / 32 * 32 * Cfg::kRowBytes + col * Cfg::kRowBytes + ((row % 32 / 4) ^ (col % 8)) * 16 +
                               row % 4 * 4;
      const float x = *reinterpret_cast<const float*>(rows + at);
      const float big = to_tf32(x);
      a.big[step][q] = __float_as_uint(big);
      if constexpr (Cfg::Products == 3)
        a.small[step][q] = __float_as_uint(tf32_small(x, big, keep_small));
    }
}

// Consumers with A in registers (A copied by TMA straight from the operand,
// unrounded): as multiply_k_tiles, the split made here. Two register
// sets in turn: k-tile k + 1's values are loaded once k-tile k's wgmma are
// issued and k - 1's have completed (the set they read); loading them before
// that wait makes ptxas serialise the wgmma (C7513), and a third set does not
// fit beside FP32 accuracy's two accumulators.
template <class Cfg, AOperand From>
__device__ __forceinline__ void multiply_k_tiles_a_in_registers(const WgmmaRing<Cfg>& ring,
                                                                WgmmaAccumulators<Cfg>& r, int n, int promote_every,
                                                                std::uint32_t rows_off, bool keep_small, int& it) {
  using namespace hopper;
  if constexpr (Cfg::kPromote) {
#pragma unroll
    for (int i = 0; i < Cfg::kAccum; ++i) r.acc[i] = 0.f;
  }
  auto load = [&](RegisterA<Cfg>& a, int k) {  // k-tile k (ring position it + k)
    const int s = (it + k) % Cfg::Stages;
    mbar_wait(&ring.full[s], ((it + k) / Cfg::Stages) & 1);
    load_register_a<Cfg, From>(a, ring.slot(s, 0, false) + rows_off, keep_small);
  };
  int pending = -1;  // the slot whose wgmma may still be running
  auto k_tile = [&](const RegisterA<Cfg>& a, RegisterA<Cfg>& next, int k) {
    const int s = (it + k) % Cfg::Stages;
    const bool chunk_start = Cfg::kPromote ? k % promote_every == 0 : k == 0;
    if constexpr (!Cfg::kPromote) fence_registers(r.acc);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < Cfg::kSteps; ++step) {
      const std::uint64_t bb = Cfg::desc_b(ring.slot(s, 0, true), step);
      const int scale = chunk_start && step == 0 ? 0 : 1;
      if constexpr (Cfg::Products == 3) {
        WgmmaRegA<Cfg::BN>::tf32(r.part, a.small[step], bb, scale);
        WgmmaRegA<Cfg::BN>::tf32(r.part, a.big[step], Cfg::desc_b(ring.slot(s, 1, true), step), 1);
        WgmmaRegA<Cfg::BN>::tf32(r.part, a.big[step], bb, 1);
      } else if constexpr (Cfg::kPromote) {
        WgmmaRegA<Cfg::BN>::tf32(r.part, a.big[step], bb, scale);
      } else {
        WgmmaRegA<Cfg::BN>::tf32(r.acc, a.big[step], bb, scale);
      }
    }
    commit_k_tile(ring, r, k, n, promote_every, s, pending);
    if (k + 1 < n) load(next, k + 1);
  };
  RegisterA<Cfg> set0, set1;
  load(set0, 0);
  for (int k = 0; k < n; k += 2) {
    k_tile(set0, set1, k);
    if (k + 1 < n) k_tile(set1, set0, k + 1);
  }
  it += n;
  finish_k_tiles(ring, r, pending);
}

// Calls f(i, j, a) for each of a consumer thread's results: a its index in
// WgmmaAccumulators::acc, (i, j) its place in C (maybe past M or N). Thread
// (warp w, lane l) of consumer warpgroup g holds rows 64 (g - 1) + 16 w + l / 4
// (+ 8) and columns 8 j + 2 (l % 4) (+ 1) of the tile.
template <class Cfg, class F>
__device__ __forceinline__ void for_each_result(int tm, int tn, F&& f) {
  const int warpgroup = threadIdx.x / 128, w = (threadIdx.x % 128) / 32, l = threadIdx.x % 32;
  const int row0 = tm * Cfg::BM + (warpgroup - 1) * 64 + 16 * w + l / 4, col0 = tn * Cfg::BN + 2 * (l % 4);
#pragma unroll
  for (int j = 0; j < Cfg::BN / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) f(row0 + 8 * h, col0 + 8 * j + e, 4 * j + 2 * h + e);
}

// Epilogue: C(tile) = alpha acc + beta C, or, with Add (a K split's part),
// alpha acc added into C atomically.
template <class Cfg, bool Add, class OpC>
__device__ __forceinline__ void store_tile(const OpC& c, const WgmmaAccumulators<Cfg>& r, int tm, int tn, int M,
                                           int N, float alpha, float beta) {
  for_each_result<Cfg>(tm, tn, [&](int i, int j, int a) {
    if (i >= M || j >= N) return;
    const float v = alpha * r.acc[a];
    if constexpr (Add) atomicAdd(&c(i, j), v);
    else store_c(c(i, j), v, beta);
  });
}

#endif  // PARRAY_HOPPER_MMA

template <class Cfg, class OpC, bool ReadEarly = false>
__global__ __launch_bounds__(Cfg::kThreads, 1) void gemm_wgmma_tma(const __grid_constant__ WgmmaMaps maps, int M, int N,
                                                                   int K, float alpha, float beta, OpC c,
                                                                   int promote_every) {
#ifdef PARRAY_HOPPER_MMA
  extern __shared__ std::uint8_t smem_raw[];
  const WgmmaRing<Cfg> ring(smem_raw);
  init_ring(ring);
  const int k_tiles = (K + Cfg::BK - 1) / Cfg::BK;
  int tm, tn, it = 0;
  grouped_tile(blockIdx.x, (M + Cfg::BM - 1) / Cfg::BM, (N + Cfg::BN - 1) / Cfg::BN, tm, tn);
  if (threadIdx.x / 128 == 0) {  // producer
    hopper::release_registers<hopper::kProducerRegisters>();
    if (threadIdx.x == 0) load_k_tiles(maps, ring, tm, tn, 0, k_tiles, it);
    return;
  }
  // Consumers: warpgroup 1 rows 0-63 of the tile, warpgroup 2 rows 64-127.
  hopper::claim_registers<hopper::kConsumerRegisters>();
  const std::uint32_t rows_off = (threadIdx.x / 128 - 1) * 64 * Cfg::kRowBytes;
  WgmmaAccumulators<Cfg> r;
  multiply_k_tiles<Cfg, ReadEarly>(ring, r, k_tiles, promote_every, rows_off, it);
  store_tile<Cfg, false>(c, r, tm, tn, M, N, alpha, beta);
#else
  __trap();  // built without sm_90a: the launcher refuses before this
#endif
}

}  // namespace parray::cuda::ladder
