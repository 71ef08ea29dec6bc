#include "isa.hpp"

#include "parray/cpu.hpp"
#include "parray/tuning.hpp"

namespace parray::cpu {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::portable: return "portable";
  }
  return "?";
}

bool cpu_supports(Isa isa) {
  switch (isa) {
    case Isa::avx512: return __builtin_cpu_supports("avx512f");
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::portable: return true;
  }
  return false;
}

Isa selected_isa() {
  switch (cpu_tuning().isa) {
    case CpuTuning::Isa::avx512: return Isa::avx512;
    case CpuTuning::Isa::avx2: return Isa::avx2;
    case CpuTuning::Isa::portable: return Isa::portable;
    case CpuTuning::Isa::automatic: break;
  }
  static const Isa widest = cpu_supports(Isa::avx512) ? Isa::avx512
                            : cpu_supports(Isa::avx2) ? Isa::avx2
                                                      : Isa::portable;
  return widest;
}

}  // namespace parray::cpu

namespace parray {

std::string cpu_isa() { return cpu::isa_name(cpu::selected_isa()); }
void set_cpu_isa(const std::string& name) { set_tuning("cpu.isa", name, "--isa"); }

}  // namespace parray
