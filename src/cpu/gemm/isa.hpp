// Which microkernel parray's CPU GEMM runs: the widest this CPU supports, or
// the one cpu.isa names (parray/tuning.hpp).
#pragma once

#include <type_traits>

#include "microkernel.hpp"

namespace parray::cpu {

bool cpu_supports(Isa isa);
const char* isa_name(Isa isa);
// cpu.isa's microkernel, else the widest this CPU runs.
Isa selected_isa();

template <class T>
const MicroKernel<T>& microkernel(Isa isa) {
  if constexpr (std::is_same_v<T, float>) {
    return isa == Isa::avx512 ? microkernel_avx512_f32() : isa == Isa::avx2 ? microkernel_avx2_f32() : microkernel_portable_f32();
  } else {
    return isa == Isa::avx512 ? microkernel_avx512_f64() : isa == Isa::avx2 ? microkernel_avx2_f64() : microkernel_portable_f64();
  }
}

template <class T>
const DirectKernel<T>& direct_kernel_avx512() {
  if constexpr (std::is_same_v<T, float>) return direct_avx512_f32();
  else return direct_avx512_f64();
}

}  // namespace parray::cpu
