#include "blocking.hpp"

#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "parray/core.hpp"
#include "parray/cpu.hpp"

namespace parray::cpu {

namespace {

long cache_bytes(int name, long fallback) {
  const long v = sysconf(name);
  return v > 0 ? v : fallback;
}

Isa& override_slot() {
  static Isa isa = [] {
    if (const char* env = std::getenv("PARRAY_CPU_ISA"); env && *env) {
      for (Isa i : {Isa::portable, Isa::avx2, Isa::avx512})
        if (std::strcmp(env, isa_name(i)) == 0 && cpu_supports(i)) return i;
    }
    if (cpu_supports(Isa::avx512)) return Isa::avx512;
    if (cpu_supports(Isa::avx2)) return Isa::avx2;
    return Isa::portable;
  }();
  return isa;
}

index_t round_down(index_t x, index_t m) { return std::max<index_t>(m, x / m * m); }
index_t round_up(index_t x, index_t m) { return (x + m - 1) / m * m; }

}  // namespace

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

Isa selected_isa() { return override_slot(); }

void set_isa_override(const char* name) {
  for (Isa i : {Isa::portable, Isa::avx2, Isa::avx512}) {
    if (std::strcmp(name, isa_name(i)) == 0) {
      if (!cpu_supports(i)) throw Error(std::string("this CPU cannot run the ") + name + " microkernel");
      override_slot() = i;
      return;
    }
  }
  throw Error(std::string("unknown instruction set '") + name + "' (use portable, avx2 or avx512)");
}

namespace {

bool vendor_is(const char* want) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4), std::memcpy(vendor + 4, &edx, 4), std::memcpy(vendor + 8, &ecx, 4);
  return std::strcmp(vendor, want) == 0;
}

// AMD Zen 4 or later (family 0x19 with AVX-512, 0x1A): full-speed 512-bit
// loads from L2 and a large L3 per core change which K block pays.
bool amd_zen4_or_later() {
  static const bool zen = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!vendor_is("AuthenticAMD") || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const unsigned base = (eax >> 8) & 0xf, family = base == 0xf ? base + ((eax >> 20) & 0xff) : base;
    return family >= 0x1a || (family == 0x19 && __builtin_cpu_supports("avx512f"));
  }();
  return zen;
}

// Other AVX-512 CPUs with at least 2 MiB of L2 per core (Intel Sapphire
// Rapids and later; the Xeon the L1 rule was measured on had 1.25 MiB).
bool large_l2_avx512() {
  return __builtin_cpu_supports("avx512f") && cache_bytes(_SC_LEVEL2_CACHE_SIZE, 0) >= (2L << 20);
}

}  // namespace

BlockingRule blocking_rule() {
  static const BlockingRule rule = [] {
    if (const char* env = std::getenv("PARRAY_CPU_BLOCKING"); env && *env) {
      if (std::strcmp(env, "l2") == 0) return BlockingRule::l2_panel;
      if (std::strcmp(env, "l1") == 0) return BlockingRule::l1_panel;
      throw Error(std::string("PARRAY_CPU_BLOCKING: unknown rule '") + env + "' (use l1 or l2)");
    }
    return amd_zen4_or_later() || large_l2_avx512() ? BlockingRule::l2_panel : BlockingRule::l1_panel;
  }();
  return rule;
}

const char* blocking_rule_name(BlockingRule r) { return r == BlockingRule::l2_panel ? "l2" : "l1"; }

namespace {

// The block sizes before M caps MC: they depend only on the element size, the
// tile, the cache sizes and the environment, all fixed for the process.
BlockSizes unbounded_block_sizes(std::size_t element_bytes, int mr, int nr) {
  // sysconf reads /sys on every call: ask once.
  static const long l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
  static const long l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
  static const long l3 = cache_bytes(_SC_LEVEL3_CACHE_SIZE, 8 << 20);
  static const char* kc_override = std::getenv("PARRAY_CPU_KC");
  static const char* mc_override = std::getenv("PARRAY_CPU_MC");
  const auto e = static_cast<index_t>(element_bytes);
  BlockSizes b;
  // The packed B micro-panel fills L1 and half as much again, at most KC 384
  // (it was half of L1 until run 4: KC 384 against 192 gained 10-20 % at
  // FP32/FP64 2048^3 on one and two threads, C being loaded and stored half as
  // often; docs/perf-notes.md, change C). The half beyond L1 matters for the
  // AVX-512 8 x 24 / 8 x 48 tiles (192 bytes of B per k step): KC 384 (a 72 KiB
  // panel) was 3-7 % faster than 256 (48 KiB) at FP64 1024^3-2048^3 in
  // alternating runs, C's loads and stores per flop outweighing the part of B
  // read from L2.
  b.kc = std::clamp<index_t>(round_down(l1 * 3 / 2 / (nr * e), 8), 64, 384);
  // The direct path reads B's micro-panel from strided rows (a page per row
  // for wide B): it keeps the half-L1 K block it was measured with.
  b.kc_direct = std::clamp<index_t>(round_down(l1 / 2 / (nr * e), 8), 64, 512);
  // PARRAY_CPU_KC overrides KC, for tuning on a new machine (docs/cpu-gemm.md).
  if (kc_override && std::atol(kc_override) > 0) b.kc = b.kc_direct = std::atol(kc_override);
  // A quarter of L2 for the packed path (an eighth until run 5), not the
  // textbook half: on the development VM an A block of half the reported L2 was
  // evicted by the B panels streaming past it and the microkernel lost a third
  // of its speed (docs/perf-notes.md, CPU section). Each B micro-panel is
  // fetched from L3 (or memory) once per row block, so MC sets how many row
  // tiles share that fetch: at KC 384 an eighth of L2 left FP64 only 4 (MC 48).
  // The direct path keeps the eighth it was measured with.
  // PARRAY_CPU_MC overrides MC (rounded to MR), for tuning like PARRAY_CPU_KC.
  auto mc_for = [&](index_t kc, long a_block_bytes) {
    index_t mc_max = std::max<index_t>(mr, round_down(a_block_bytes / (kc * e), mr));
    if (mc_override && std::atol(mc_override) > 0) mc_max = round_down(std::atol(mc_override), mr);
    return mc_max;
  };
  b.mc = mc_for(b.kc, l2 / 4);
  // The L2 rule (AMD Zen 4/5, and AVX-512 CPUs with >= 2 MiB of L2 per core;
  // docs/cpu-gemm.md, sessions 11-12): the B micro-panel lives in L2, not
  // L1 — KC such that it takes 3/16 of L2 (at most 1024: 192 KiB for the
  // AVX-512 tiles), and MC = 16 row tiles, the number that share each B
  // micro-panel's trip from L3. On a Zen 5 VM, timed in turn in one process
  // (4 rounds), FP32 2048^3 on two threads rose from 77.6 to 83.6 % of the
  // FMA peak (KC 384 -> 1024), FP32 +2-8 % and FP64 +1-10 % on two threads
  // elsewhere; the kernel alone runs at 96-99 % with B from L2, so the panel
  // no longer needs L1. MC 64 (FP64) was slower, 256 (FP32) no faster. On a
  // Sapphire-Rapids-class Xeon VM (2 MiB L2, 3 rounds) FP32 2048^3 / 4096^3
  // gained 7-11 % on one and two threads; FP64 within +-3 %.
  // FP64 on those Intel hosts takes 12 row tiles (MC 96): its A block at 16
  // tiles is 1 MiB, half of L2, and with the current and the next B
  // micro-panel (2 x 192 KiB) and C's lines passing through it crowds L2; at
  // 12 tiles it is 768 KiB, the bytes of FP32's block plus half. Session 18,
  // in one process, medians of five rounds (two runs): FP64 4096^3 +4.8 / +4.8 %
  // on one thread, +2.8 / +3.4 % on two, 2048^3 +0.8 to +3.4 %; 14 tiles level
  // with 16, 10 level, 8 slower at 4096^3; up to 1037^3 within +-3 %.
  if (blocking_rule() == BlockingRule::l2_panel && !(kc_override && std::atol(kc_override) > 0)) {
    b.kc = std::clamp<index_t>(round_down(l2 * 3 / 16 / (nr * e), 8), 64, 1024);
    const index_t row_tiles = e == 8 && !amd_zen4_or_later() ? 12 : 16;
    b.mc = mc_override && std::atol(mc_override) > 0 ? round_down(std::atol(mc_override), mr) : row_tiles * index_t(mr);
  }
  b.mc_direct = mc_for(b.kc_direct, l2 / 8);
  b.nc = std::clamp<index_t>(round_down(l3 / 4 / (b.kc * e), nr), nr, 8192);
  // Problems up to this many multiply-adds skip packing (driver.cpp,
  // prefer_direct): 256^3 as measured on the Xeon. On Zen 5 the direct
  // kernels, which read B's rows where they lie, stay ahead of packing up to
  // 768^3 FP32 (+6-15 % on one thread, +8-35 % on two) and 640^3 FP64 (+5-15 %),
  // level at 768^3 FP64, mixed at 1024^3 (docs/cpu-gemm.md, session 11). On
  // the Sapphire-Rapids-class VM under the L2 rule, session 12 put FP32 at
  // 512^3; session 18 measured again, after the packed path had gained (A's
  // AVX-512 transposing pack, the column-run B pack), six alternating
  // processes, packed / direct: FP32 384^3 0.95 / 0.86 (one / two threads),
  // 448^3 0.98 / 1.00, 512^3 1.04 / 1.05; FP64 256^3 0.91 / 0.86, 320^3
  // 0.97 / 0.82, 352^3 0.97 / 0.92, 384^3 1.05 / 0.89, 448^3 1.07 / 1.07 — so
  // 448^3 FP32 and 352^3 FP64 there.
  b.l2_bytes = static_cast<double>(l2);
  b.direct_work = 256.0 * 256 * 256;
  if (blocking_rule() == BlockingRule::l2_panel) {
    if (amd_zen4_or_later()) b.direct_work = e == 4 ? 768.0 * 768 * 768 : 640.0 * 640 * 640;
    else b.direct_work = e == 4 ? 448.0 * 448 * 448 : 352.0 * 352 * 352;
  }
  return b;
}

}  // namespace

namespace {
thread_local BlockOverride block_override;
}

ScopedBlockOverride::ScopedBlockOverride(BlockOverride o) : saved_(block_override) { block_override = o; }
ScopedBlockOverride::~ScopedBlockOverride() { block_override = saved_; }

BlockSizes block_sizes(std::size_t element_bytes, int mr, int nr, index_t m, int threads) {
  // The sizes above take a dozen 64-bit divisions, ~50 ns: a percent of a
  // 64^3 product. Each thread keeps those of the last few tiles asked for.
  struct Entry {
    std::size_t element_bytes;
    int mr, nr;
    BlockSizes sizes;
  };
  constexpr int kEntries = 4;
  thread_local Entry cache[kEntries];
  thread_local int filled = 0, next = 0;
  BlockSizes b{};
  bool found = false;
  for (int i = 0; i < filled && !found; ++i) {
    const Entry& c = cache[i];
    if (c.element_bytes == element_bytes && c.mr == mr && c.nr == nr) b = c.sizes, found = true;
  }
  if (!found) {
    b = unbounded_block_sizes(element_bytes, mr, nr);
    cache[next] = {element_bytes, mr, nr, b};
    next = (next + 1) % kEntries;
    filled = std::max(filled, next == 0 ? kEntries : next);
  }
  if (block_override.kc > 0) b.kc = block_override.kc;
  if (block_override.mc > 0) b.mc = round_down(block_override.mc, mr);
  if (block_override.nc > 0) b.nc = std::max<index_t>(nr, round_down(block_override.nc, nr));
  // The driver splits M among the threads itself (a contiguous share each,
  // walked in blocks of at most MC rows), so MC is only capped by M here.
  (void)threads;
  const index_t m_rows = round_up(std::max<index_t>(m, 1), mr);
  b.mc = std::min(b.mc, m_rows);
  b.mc_direct = std::min(b.mc_direct, m_rows);
  return b;
}

}  // namespace parray::cpu

namespace parray {

std::string cpu_isa() { return cpu::isa_name(cpu::selected_isa()); }
void set_cpu_isa(const std::string& name) { cpu::set_isa_override(name.c_str()); }


}  // namespace parray
