// Run-time choices of parray's CPU GEMM (src/cpu/gemm).
#pragma once

#include <string>

namespace parray {

// The microkernel behind parray-cpu (and so behind `cpu` and gemm()'s
// default): "avx512", "avx2" or "portable". Chosen from cpuid, or from the
// environment variable PARRAY_CPU_ISA, or by set_cpu_isa() (the CLI's --isa).
std::string cpu_isa();
// Throws parray::Error for an unknown name or an instruction set this CPU lacks.
void set_cpu_isa(const std::string& name);
// The block sizes parray-cpu's packed path uses on this CPU for both types
// (the rule chosen from cpuid, KC, MC, NC), one line: `parray list` prints it.
std::string cpu_blocking();

}  // namespace parray
