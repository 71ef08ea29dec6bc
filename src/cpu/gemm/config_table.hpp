// Block sizes of parray's CPU GEMM per CPU family, in one table, as BLIS
// keeps them in its config/<family>/ folders. blocking.cpp takes the first
// row whose family this CPU belongs to; where none fits, the cache-size rule
// at the bottom derives every size from the caches the machine reports.
// `parray list` prints the row and the sizes it gives; `--tune cpu.blocking=l1`
// forces the cache-size rule, `=l2` this CPU's row (or the AVX-512 one).
//
// To add a family: a CpuFamily value, its test in blocking.cpp
// (belongs_to), a row here, measured with `--tune cpu.candidates=...` and
// `parray bench gemm --rounds N` (docs/tuning.md).
//
// Why these numbers: docs/cpu-gemm.md (block sizes) and docs/perf-notes.md.
#pragma once

#include "microkernel.hpp"

namespace parray::cpu {

enum class CpuFamily {
  // AMD family 0x19 with AVX-512 (Zen 4) or 0x1A and later (Zen 5): full-speed
  // 512-bit loads from L2 and a large L3 per core.
  amd_zen4_or_later,
  // Any other AVX-512 CPU with at least 2 MiB of L2 per core (Intel Sapphire
  // Rapids and later).
  avx512_large_l2,
};

// A row: the B micro-panel (KC x NR) lives in L2, not L1 (the "l2 rule").
// The microkernel alone runs close to the FMA peak with its B panel in L2
// (docs/perf-notes.md), and a long KC loads and stores C a few times less
// often.
struct FamilyBlocks {
  CpuFamily family;
  const char* name;
  // KC: the B micro-panel takes 3/16 of L2, at most kc_max (1024 at 8 x 48 /
  // 8 x 24 tiles in a 1 MiB L2: 192 KiB).
  index_t kc_max;
  // MC = row_tiles x MR, FP32 and FP64: the row tiles that share each B
  // micro-panel's trip from L3. FP64 on the Intel rows: 12, since its A block
  // at 16 tiles (1 MiB) crowds a 2 MiB L2 beside the current and the next B
  // micro-panel; 12 measured faster at 4096^3, level elsewhere.
  int row_tiles_f32, row_tiles_f64;
  // The direct (unpacked) path takes every product up to edge^3
  // multiply-adds, FP32 and FP64: where it measured ahead of packing.
  int direct_edge_f32, direct_edge_f64;
};

// clang-format off
inline constexpr FamilyBlocks kFamilyBlocks[] = {
  // family                        name                     KC max  MC/MR f32 f64  direct f32 f64
  {CpuFamily::amd_zen4_or_later,  "AMD Zen 4/5",           1024,   16,       16,  768,       640},
  {CpuFamily::avx512_large_l2,    "AVX-512, L2 >= 2 MiB",  1024,   16,       12,  448,       352},
};
// clang-format on

// The row `cpu.blocking=l2` takes on a CPU of no row.
inline constexpr CpuFamily kDefaultL2Family = CpuFamily::avx512_large_l2;

// Where no row fits (the "l1 rule", measured on an Ice-Lake-class Xeon with
// 48 KiB of L1d and 1.25 MiB of L2): the B micro-panel sized from L1.
struct CacheSizeRule {
  // KC: the micro-panel fills L1 and half as much again, in [64, kc_max]: the
  // half beyond L1 costs less than loading and storing C more often.
  index_t kc_max;
  // MC: an MC x KC block of A takes 1 / mc_l2_share of L2. Half of L2 had the A
  // block evicted by the B panels streaming past it; an eighth left FP64 too
  // few row tiles to share each B micro-panel's fetch.
  int mc_l2_share;
  // The direct path up to edge^3 multiply-adds.
  int direct_edge;
};
inline constexpr CacheSizeRule kCacheSizeRule{384, 4, 256};

// Every rule, rows and cache-size rule alike:
// - the direct path's K block: its B micro-panel, read from strided rows,
//   fills half of L1, in [64, 512]; its row block: A takes an eighth of L2;
// - NC: a KC x NC block of B takes a quarter of L3, at most 8192.
inline constexpr index_t kDirectKcMax = 512;
inline constexpr int kDirectMcL2Share = 8;
inline constexpr int kNcL3Share = 4;
inline constexpr index_t kNcMax = 8192;

}  // namespace parray::cpu
