// Cache blocking of parray's CPU GEMM: the block sizes of each path, from the
// per-family table (config_table.hpp) or the cache-size rule.
#pragma once

#include <cstddef>

#include "config_table.hpp"
#include "microkernel.hpp"

namespace parray::cpu {

struct BlockSizes {
  index_t kc, mc, nc;
  index_t kc_direct, mc_direct;  // the direct (unpacked) path's K block (and K limit) and row block
  double direct_work;            // M N K up to which the direct path is taken whatever K
  double l2_bytes;               // this core's L2 (the along-rows tile order sizes NC from it)
};

// The row of kFamilyBlocks in force (cpuid, or cpu.blocking); nullptr: the
// cache-size rule.
const FamilyBlocks* blocking_row();

// The sizes for a microkernel tile of mr x nr elements of element_bytes, with
// MC capped by M (rounded up to MR).
BlockSizes block_sizes(std::size_t element_bytes, int mr, int nr, index_t m);

// Whether a C of m x n elements of element_bytes stays in the caches from
// one call to the next: from 32 MiB on it did not (a Sapphire-Rapids-class
// VM: 32 MiB still behaved as cached, 64 MiB not), so its writes go to
// memory on every call.
inline bool c_outlives_caches(index_t m, index_t n, std::size_t element_bytes) {
  constexpr double kLargeCBytes = 32.0 * (1 << 20);
  return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(element_bytes) >= kLargeCBytes;
}

// KC, MC and NC of the packed path for the calls this thread makes while it
// is set (0: the rule's), so that block sizes can be timed against each
// other in one process (cpu.candidates, register.cpp).
struct BlockOverride {
  index_t kc = 0, mc = 0, nc = 0;  // 0: the rule's size
};
class ScopedBlockOverride {
 public:
  explicit ScopedBlockOverride(BlockOverride o);
  ~ScopedBlockOverride();
  ScopedBlockOverride(const ScopedBlockOverride&) = delete;
  ScopedBlockOverride& operator=(const ScopedBlockOverride&) = delete;

 private:
  BlockOverride saved_;
};

}  // namespace parray::cpu
