// Run-time choices of parray's CPU GEMM (src/cpu/gemm).
#pragma once

#include <string>

namespace parray {

// The microkernel behind parray-cpu (and so behind `cpu` and gemm()'s
// default): "avx512", "avx2" or "portable". Chosen from cpuid, or by the
// tuning key cpu.isa (parray/tuning.hpp).
std::string cpu_isa();
// Sets cpu.isa (the CLI's --isa). Throws parray::Error for an unknown name or
// an instruction set this CPU lacks.
void set_cpu_isa(const std::string& name);
// The block sizes parray-cpu's packed path uses on this CPU for both types
// (the row of the block-size table, KC, MC, NC), one line: `parray list` prints it.
std::string cpu_blocking();

}  // namespace parray
