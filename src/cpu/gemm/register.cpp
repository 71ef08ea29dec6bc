// The CPU GEMM's entries in the registry: parray-cpu (cpuid's or cpu.isa's
// microkernel), one per microkernel this CPU runs, and one per block-size
// candidate of cpu.candidates.
#include <string>

#include "blocking.hpp"
#include "gemm.hpp"
#include "isa.hpp"
#include "parray/tuning.hpp"

namespace parray::cpu {

namespace {

GemmImpl cpu_impl(const std::string& name, const std::string& description) {
  GemmImpl impl;
  impl.name = name;
  impl.description = description;
  impl.device = Device::cpu;
  impl.threaded = true;
  impl.preconditions = "any layout, any M, N, K";
  return impl;
}

// isa is a plain function (not a std::function): called on every product,
// behind the registry's own std::function.
void add(Registry& r, const std::string& name, const std::string& what, Isa (*isa)()) {
  GemmImpl impl = cpu_impl(
      name, "BLIS-style: packed panels, cache blocking from the cache sizes, " + what + ", OpenMP over row blocks");
  impl.run_f32 = [isa](const GemmCall<float>& c) { cpu_gemm(c, isa()); };
  impl.run_f64 = [isa](const GemmCall<double>& c) { cpu_gemm(c, isa()); };
  r.add(std::move(impl));
}

// The ISA of an implementation bound to one microkernel.
template <Isa kIsa>
Isa always() {
  return kIsa;
}

// parray-cpu with the packed path's block sizes of one cpu.candidates entry:
// parray-cpu-kc1024-mc128, with NC parray-cpu-kc1024-mc128-nc2048.
void add_candidate(Registry& r, const BlockCandidate& c) {
  const std::string kc = std::to_string(c.kc), mc = std::to_string(c.mc), nc = std::to_string(c.nc);
  GemmImpl impl = cpu_impl("parray-cpu-kc" + kc + "-mc" + mc + (c.nc > 0 ? "-nc" + nc : ""),
                           "parray-cpu with KC " + kc + ", MC " + mc + (c.nc > 0 ? " and NC " + nc : "") +
                               " on the packed path (cpu.candidates)");
  const BlockOverride o{c.kc, c.mc, c.nc};
  impl.run_f32 = [o](const GemmCall<float>& call) {
    ScopedBlockOverride scope(o);
    cpu_gemm(call, selected_isa());
  };
  impl.run_f64 = [o](const GemmCall<double>& call) {
    ScopedBlockOverride scope(o);
    cpu_gemm(call, selected_isa());
  };
  r.add(std::move(impl));
}

}  // namespace

void register_cpu_gemm(Registry& r) {
  add(r, "parray-cpu", "the widest microkernel this CPU runs (or cpu.isa's)", &selected_isa);
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::portable}) {
    const std::string name = std::string("parray-") + isa_name(isa);
    if (!cpu_supports(isa)) {
      r.add_missing({name, std::string("this CPU lacks ") + isa_name(isa)});
      continue;
    }
    Isa (*const fixed)() = isa == Isa::avx512 ? &always<Isa::avx512>
                           : isa == Isa::avx2 ? &always<Isa::avx2>
                                              : &always<Isa::portable>;
    add(r, name, std::string("the ") + isa_name(isa) + " microkernel", fixed);
  }
  r.set_default(Device::cpu, "parray-cpu");
  // Block sizes timed against each other and the baselines in turn, in one
  // process (bench gemm --rounds), when tuning them for a new CPU.
  for (const BlockCandidate& c : cpu_tuning().candidates) add_candidate(r, c);
}

}  // namespace parray::cpu
