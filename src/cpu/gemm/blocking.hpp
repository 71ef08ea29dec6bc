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
};

// KC: a KC x NR micro-panel of B fills 1.5 x L1 (at most 384); MC: an MC x KC block
// of A takes a quarter of L2 (the direct path: an eighth); NC: a KC x NC block
// of B takes a quarter of L3.
// The direct path keeps K blocks whose strided B micro-panel fills half of L1.
// See docs/cpu-gemm.md.
BlockSizes block_sizes(std::size_t element_bytes, int mr, int nr, index_t m, int threads);

// Registers parray-cpu and one implementation per microkernel this CPU runs.
void register_cpu_gemm(Registry& r);

}  // namespace parray::cpu
