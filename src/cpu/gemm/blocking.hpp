// Instruction-set selection and cache blocking for parray's CPU GEMM.
#pragma once

#include <cstddef>

#include "microkernel.hpp"

namespace parray {
class Registry;
}

namespace parray::cpu {

bool cpu_supports(Isa isa);
// The widest microkernel this CPU runs, unless PARRAY_CPU_ISA (portable, avx2,
// avx512) or set_isa_override() says otherwise.
Isa selected_isa();
const char* isa_name(Isa isa);
// Throws parray::Error for an unknown name or an ISA this CPU lacks.
void set_isa_override(const char* name);

struct BlockSizes {
  index_t kc, mc, nc;
  index_t kc_direct, mc_direct;  // the direct (unpacked) path's K block (and K limit) and row block
  double direct_work;            // M N K up to which the direct path is taken whatever K
  double l2_bytes;               // this core's L2 (the along-rows tile order sizes NC from it)
};

// Which rule derives the block sizes from the caches (BLIS keeps one set of
// block sizes per CPU configuration): l1_panel — the B micro-panel sized
// from L1 (measured on an Ice-Lake-class Xeon, 1.25 MiB L2); l2_panel — AMD
// Zen 4 and later, and AVX-512 CPUs with >= 2 MiB of L2 per core, the panel
// sized from L2. Chosen from cpuid and the cache sizes;
// PARRAY_CPU_BLOCKING=l1|l2 overrides.
enum class BlockingRule { l1_panel, l2_panel };
BlockingRule blocking_rule();
const char* blocking_rule_name(BlockingRule r);

// KC: a KC x NR micro-panel of B fills 1.5 x L1 (at most 384); MC: an MC x KC block
// of A takes a quarter of L2 (the direct path: an eighth); NC: a KC x NC block
// of B takes a quarter of L3.
// Under the L2 rule: KC such that the micro-panel takes 3/16 of L2 (at most 1024),
// MC = 16 MR. The direct path keeps K blocks whose strided B micro-panel fills half of L1.
// See docs/cpu-gemm.md.
BlockSizes block_sizes(std::size_t element_bytes, int mr, int nr, index_t m, int threads);

// Tuning: KC and MC of the packed path for the calls this thread makes while
// it is set (0: the rule's), so that block sizes can be timed against each
// other in one process, in turn (`PARRAY_CPU_TUNING`, driver.cpp).
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

// Registers parray-cpu and one implementation per microkernel this CPU runs.
void register_cpu_gemm(Registry& r);

}  // namespace parray::cpu
