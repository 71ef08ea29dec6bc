// parray's CPU GEMM: the BLIS/Goto algorithm over any layout, with a direct
// path for small strided products (direct.hpp), the packed path for the rest
// (blocked.hpp) and a plain loop for tiny ones. Block sizes: blocking.hpp;
// the microkernel: isa.hpp; tuning: parray/tuning.hpp (cpu.*).
#pragma once

#include "microkernel.hpp"
#include "parray/registry.hpp"

namespace parray::cpu {

// C = alpha A B + beta C with the microkernels of `isa`.
template <class T>
void cpu_gemm(const GemmCall<T>& call, Isa isa);

extern template void cpu_gemm<float>(const GemmCall<float>&, Isa);
extern template void cpu_gemm<double>(const GemmCall<double>&, Isa);

// Registers parray-cpu, one implementation per microkernel this CPU runs, and
// one per cpu.candidates entry.
void register_cpu_gemm(Registry& r);

}  // namespace parray::cpu
