#include "blocking.hpp"

#include <cpuid.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "isa.hpp"
#include "parray/cpu.hpp"
#include "parray/tuning.hpp"

namespace parray::cpu {

namespace {

long cache_bytes(int name, long fallback) {
  const long v = sysconf(name);
  return v > 0 ? v : fallback;
}

index_t round_down(index_t x, index_t m) { return std::max<index_t>(m, x / m * m); }
index_t round_up(index_t x, index_t m) { return (x + m - 1) / m * m; }

bool vendor_is(const char* want) {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4), std::memcpy(vendor + 4, &edx, 4), std::memcpy(vendor + 8, &ecx, 4);
  return std::strcmp(vendor, want) == 0;
}

bool amd_zen4_or_later() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!vendor_is("AuthenticAMD") || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned base = (eax >> 8) & 0xf, family = base == 0xf ? base + ((eax >> 20) & 0xff) : base;
  return family >= 0x1a || (family == 0x19 && __builtin_cpu_supports("avx512f"));
}

bool belongs_to(CpuFamily f) {
  switch (f) {
    case CpuFamily::amd_zen4_or_later: return amd_zen4_or_later();
    case CpuFamily::avx512_large_l2:
      return __builtin_cpu_supports("avx512f") && cache_bytes(_SC_LEVEL2_CACHE_SIZE, 0) >= (2L << 20);
  }
  return false;
}

const FamilyBlocks& row_of(CpuFamily f) {
  for (const FamilyBlocks& r : kFamilyBlocks)
    if (r.family == f) return r;
  return kFamilyBlocks[0];
}

// The first row this CPU belongs to, or nullptr.
const FamilyBlocks* this_cpus_row() {
  static const FamilyBlocks* row = []() -> const FamilyBlocks* {
    for (const FamilyBlocks& r : kFamilyBlocks)
      if (belongs_to(r.family)) return &r;
    return nullptr;
  }();
  return row;
}

// The block sizes before M caps MC: they depend only on the element size, the
// tile, the cache sizes and the tuning, all fixed for the process.
BlockSizes unbounded_block_sizes(std::size_t element_bytes, int mr, int nr) {
  // sysconf reads /sys on every call: ask once.
  static const long l1 = cache_bytes(_SC_LEVEL1_DCACHE_SIZE, 32 << 10);
  static const long l2 = cache_bytes(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
  static const long l3 = cache_bytes(_SC_LEVEL3_CACHE_SIZE, 8 << 20);
  const CpuTuning& tuning = cpu_tuning();
  const FamilyBlocks* row = blocking_row();
  const auto e = static_cast<index_t>(element_bytes);
  BlockSizes b;
  b.kc = std::clamp<index_t>(round_down(l1 * 3 / 2 / (nr * e), 8), 64, kCacheSizeRule.kc_max);
  b.kc_direct = std::clamp<index_t>(round_down(l1 / 2 / (nr * e), 8), 64, kDirectKcMax);
  if (tuning.kc > 0) b.kc = b.kc_direct = tuning.kc;
  // cpu.mc (rounded to MR) replaces every MC, the direct path's too.
  auto mc_for = [&](index_t kc, long a_block_bytes) {
    if (tuning.mc > 0) return round_down(tuning.mc, mr);
    return std::max<index_t>(mr, round_down(a_block_bytes / (kc * e), mr));
  };
  b.mc = mc_for(b.kc, l2 / kCacheSizeRule.mc_l2_share);
  // A row of the table sizes KC and MC, unless cpu.kc does.
  if (row && tuning.kc <= 0) {
    b.kc = std::clamp<index_t>(round_down(l2 * 3 / 16 / (nr * e), 8), 64, row->kc_max);
    const index_t row_tiles = e == 8 ? row->row_tiles_f64 : row->row_tiles_f32;
    b.mc = tuning.mc > 0 ? round_down(tuning.mc, mr) : row_tiles * index_t(mr);
  }
  b.mc_direct = mc_for(b.kc_direct, l2 / kDirectMcL2Share);
  b.nc = std::clamp<index_t>(round_down(l3 / kNcL3Share / (b.kc * e), nr), nr, kNcMax);
  b.l2_bytes = static_cast<double>(l2);
  const double edge = !row ? kCacheSizeRule.direct_edge : e == 4 ? row->direct_edge_f32 : row->direct_edge_f64;
  b.direct_work = edge * edge * edge;
  return b;
}

thread_local BlockOverride block_override;

}  // namespace

const FamilyBlocks* blocking_row() {
  switch (cpu_tuning().blocking) {
    case CpuTuning::Blocking::l1: return nullptr;
    case CpuTuning::Blocking::l2: return this_cpus_row() ? this_cpus_row() : &row_of(kDefaultL2Family);
    case CpuTuning::Blocking::automatic: break;
  }
  return this_cpus_row();
}

ScopedBlockOverride::ScopedBlockOverride(BlockOverride o) : saved_(block_override) { block_override = o; }
ScopedBlockOverride::~ScopedBlockOverride() { block_override = saved_; }

BlockSizes block_sizes(std::size_t element_bytes, int mr, int nr, index_t m) {
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
  // The packed path splits M among the threads itself (a contiguous share
  // each, walked in blocks of at most MC rows), so MC is only capped by M here.
  const index_t m_rows = round_up(std::max<index_t>(m, 1), mr);
  b.mc = std::min(b.mc, m_rows);
  b.mc_direct = std::min(b.mc_direct, m_rows);
  return b;
}

}  // namespace parray::cpu

namespace parray {

std::string cpu_blocking() {
  using namespace cpu;
  const Isa isa = selected_isa();
  const MicroKernel<float>& f = microkernel<float>(isa);
  const MicroKernel<double>& d = microkernel<double>(isa);
  const index_t large_m = index_t(1) << 30;  // does not cap MC
  const BlockSizes bf = block_sizes(sizeof(float), f.mr, f.nr, large_m);
  const BlockSizes bd = block_sizes(sizeof(double), d.mr, d.nr, large_m);
  const FamilyBlocks* row = blocking_row();
  return std::string(row ? "l2 rule (" : "l1 rule (") + (row ? row->name : "cache sizes") + "); FP32 " + f.name +
         ": KC " + std::to_string(bf.kc) + ", MC " + std::to_string(bf.mc) + ", NC " + std::to_string(bf.nc) +
         "; FP64 " + d.name + ": KC " + std::to_string(bd.kc) + ", MC " + std::to_string(bd.mc) + ", NC " +
         std::to_string(bd.nc);
}

}  // namespace parray
