// The registry of tuning keys: for each its --tune name, its environment
// variable, its backend, how its value is read and shown, and what it does.
// The defaults are those of the structs in parray/tuning.hpp.
#include "parray/tuning.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <type_traits>
#include <utility>

#include "parray/core.hpp"

namespace parray {

namespace {

struct Tunings {
  CpuTuning cpu;
  GpuTuning gpu;
  MultiGpuTuning multigpu;
};

[[noreturn]] void bad(const std::string& source, const std::string& what) { throw Error(source + ": " + what); }

// ---- how a value of each kind is read from text and shown ------------------
// Each: `type`, `static type parse(value, source)` (throws parray::Error,
// naming the source), `static std::string show(type)`.

// One of a few names (N: `type`, `what`, `names`, in the order listed).
template <class N>
struct Named {
  using type = typename N::type;
  static type parse(const std::string& v, const std::string& source) {
    std::string use;
    const std::size_t count = std::size(N::names);
    for (std::size_t i = 0; i < count; ++i) {
      if (v == N::names[i].first) return N::names[i].second;
      use += (i == 0 ? "" : i + 1 == count ? " or " : ", ") + std::string(N::names[i].first);
    }
    bad(source, "unknown " + std::string(N::what) + " '" + v + "' (use " + use + ")");
  }
  static std::string show(type x) {
    for (const auto& [name, e] : N::names)
      if (e == x) return name;
    return "?";
  }
};

struct ChoiceNames {
  using type = Choice;
  static constexpr const char* what = "choice";
  static constexpr std::pair<const char*, type> names[] = {
      {"auto", Choice::automatic}, {"0", Choice::off}, {"1", Choice::on}};
};
struct IsaNames {
  using type = CpuTuning::Isa;
  static constexpr const char* what = "instruction set";
  static constexpr std::pair<const char*, type> names[] = {
      {"auto", type::automatic}, {"portable", type::portable}, {"avx2", type::avx2}, {"avx512", type::avx512}};
};
struct BlockingNames {
  using type = CpuTuning::Blocking;
  static constexpr const char* what = "rule";
  static constexpr std::pair<const char*, type> names[] = {
      {"auto", type::automatic}, {"l1", type::l1}, {"l2", type::l2}};
};
struct OrderNames {
  using type = CpuTuning::Order;
  static constexpr const char* what = "order";
  static constexpr std::pair<const char*, type> names[] = {
      {"auto", type::automatic}, {"rows", type::rows}, {"columns", type::columns}};
};
struct SumNames {
  using type = bool;
  static constexpr const char* what = "sum";
  static constexpr std::pair<const char*, type> names[] = {{"add", true}, {"pass", false}};
};
struct DriverNames {
  using type = bool;
  static constexpr const char* what = "driver";
  static constexpr std::pair<const char*, type> names[] = {{"streams", true}, {"threads", false}};
};
struct FlagNames {
  using type = bool;
  static constexpr const char* what = "value";
  static constexpr std::pair<const char*, type> names[] = {{"0", false}, {"1", true}};
};

// A microkernel this CPU runs.
struct IsaValue : Named<IsaNames> {
  static type parse(const std::string& v, const std::string& source) {
    const type isa = Named<IsaNames>::parse(v, source);
    // The instructions each microkernel is built with (src/cpu/gemm/isa.cpp asks the same).
    const bool runs = isa == type::avx512 ? __builtin_cpu_supports("avx512f")
                      : isa == type::avx2 ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                                          : true;
    if (!runs) bad(source, "this CPU cannot run the " + v + " microkernel");
    return isa;
  }
};

long parse_integer(const std::string& v, const std::string& source, long lo, long hi, const char* or_auto) {
  long x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc{} || end != v.data() + v.size() || x < lo || x > hi)
    bad(source, "'" + v + "' is not " + or_auto + "an integer in " + std::to_string(lo) + ".." + std::to_string(hi));
  return x;
}

// An integer in Lo..Hi.
template <class T, long Lo, long Hi>
struct Integer {
  using type = T;
  static type parse(const std::string& v, const std::string& source) {
    return static_cast<T>(parse_integer(v, source, Lo, Hi, ""));
  }
  static std::string show(type x) { return std::to_string(x); }
};

// An integer in Lo..Hi, or "auto" (the library's choice), held as Auto.
template <class T, long Lo, long Hi, long Auto>
struct IntegerOrAuto {
  static_assert(Auto < Lo || Auto > Hi);
  using type = T;
  static type parse(const std::string& v, const std::string& source) {
    return static_cast<T>(v == "auto" ? Auto : parse_integer(v, source, Lo, Hi, "auto or "));
  }
  static std::string show(type x) { return x == Auto ? "auto" : std::to_string(x); }
};

// One of the integers Values.
template <class T, long... Values>
struct OneOf {
  using type = T;
  static type parse(const std::string& v, const std::string& source) {
    const long x = parse_integer(v, source, std::min({Values...}), std::max({Values...}), "");
    if (((x != Values) && ...)) {
      std::string list;
      for (long w : {Values...}) list += (list.empty() ? "" : ", ") + std::to_string(w);
      bad(source, "'" + v + "' is not one of " + list);
    }
    return static_cast<T>(x);
  }
  static std::string show(type x) { return std::to_string(x); }
};

// A rate in GB/s.
struct Rate {
  using type = double;
  static type parse(const std::string& v, const std::string& source) {
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end != 0 || !(x > 0.1 && x < 10000)) bad(source, "'" + v + "' is not a rate in GB/s");
    return x;
  }
  static std::string show(type x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
  }
};

struct Text {
  using type = std::string;
  static type parse(const std::string& v, const std::string&) { return v; }
  static std::string show(const type& x) { return x; }
};

// "KCxMC[xNC],...": KC 8..65536, MC 1..65536, NC 1..2^20.
struct Candidates {
  using type = std::vector<BlockCandidate>;
  static type parse(const std::string& list, const std::string& source) {
    type out;
    for (std::size_t pos = 0; pos <= list.size();) {
      const std::size_t end = std::min(list.find(',', pos), list.size());
      const std::string item = list.substr(pos, end - pos);
      pos = end + 1;
      long kc = 0, mc = 0, nc = 0;
      char tail = 0;
      const int fields = std::sscanf(item.c_str(), "%ldx%ldx%ld%c", &kc, &mc, &nc, &tail);
      const auto separators = std::count(item.begin(), item.end(), 'x');  // "1024x128x" is not 1024x128
      if ((fields != 2 && fields != 3) || fields != separators + 1 || kc < 8 || mc < 1 || kc > 65536 || mc > 65536 ||
          (fields == 3 && (nc < 1 || nc > 1 << 20)))
        bad(source, "'" + item + "' is not KCxMC or KCxMCxNC (e.g. 1024x128 or 1024x128x2048)");
      out.push_back({kc, mc, nc});
    }
    return out;
  }
  static std::string show(const type& list) {
    std::string s;
    for (const BlockCandidate& c : list) {
      if (!s.empty()) s += ',';
      s += std::to_string(c.kc);
      s += 'x';
      s += std::to_string(c.mc);
      if (c.nc > 0) {
        s += 'x';
        s += std::to_string(c.nc);
      }
    }
    return s;
  }
};

// ---- the registry -------------------------------------------------------------

struct Key {
  const char* name;
  const char* env;
  const char* backend;
  const char* description;
  void (*set)(Tunings&, const std::string& value, const std::string& source);
  std::string (*show)(const Tunings&);
};

template <auto Part>
constexpr const char* backend_of() {
  if constexpr (std::is_same_v<decltype(Part), CpuTuning Tunings::*>) return "cpu";
  else if constexpr (std::is_same_v<decltype(Part), GpuTuning Tunings::*>) return "gpu";
  else return "multi-gpu";
}

// The key for field Field of backend Part (Tunings::cpu, ...), read as Value.
template <auto Part, auto Field, class Value>
constexpr Key key(const char* name, const char* env, const char* description) {
  return {name, env, backend_of<Part>(), description,
          [](Tunings& t, const std::string& v, const std::string& source) {
            (t.*Part).*Field = Value::parse(v, source);
          },
          [](const Tunings& t) { return Value::show((t.*Part).*Field); }};
}

constexpr auto kCpu = &Tunings::cpu;
constexpr auto kGpu = &Tunings::gpu;
constexpr auto kMulti = &Tunings::multigpu;

const Key kKeys[] = {
    key<kCpu, &CpuTuning::isa, IsaValue>(
        "cpu.isa", "PARRAY_CPU_ISA",
        "microkernel of parray-cpu: auto (the widest this CPU runs), avx512, avx2 or portable"),
    key<kCpu, &CpuTuning::blocking, Named<BlockingNames>>(
        "cpu.blocking", "PARRAY_CPU_BLOCKING",
        "block-size rule: auto (this CPU's row of src/cpu/gemm/config_table.hpp), l1 (the cache-size rule) or l2"),
    key<kCpu, &CpuTuning::kc, Integer<long, 0, 65536>>(
        "cpu.kc", "PARRAY_CPU_KC",
        "KC of the packed and the direct path instead of the table's (0: the table's)"),
    key<kCpu, &CpuTuning::mc, Integer<long, 0, 65536>>(
        "cpu.mc", "PARRAY_CPU_MC",
        "MC of both paths instead of the table's, rounded down to MR (0: the table's)"),
    key<kCpu, &CpuTuning::direct, Named<ChoiceNames>>(
        "cpu.direct", "PARRAY_CPU_DIRECT",
        "direct (unpacked) path for strided AVX-512 operands: auto (by size), 0 never, 1 wherever it applies"),
    key<kCpu, &CpuTuning::stream, Named<ChoiceNames>>(
        "cpu.stream", "PARRAY_CPU_STREAM",
        "non-temporal stores of C on the direct path: auto (C of >= 16 MiB written once), 0 never, 1 always"),
    key<kCpu, &CpuTuning::order, Named<OrderNames>>(
        "cpu.order", "PARRAY_CPU_ORDER",
        "tile order of the packed path: auto (rows for K <= 128 and a C beyond the caches), rows or columns"),
    key<kCpu, &CpuTuning::candidates, Candidates>(
        "cpu.candidates", "PARRAY_CPU_TUNING",
        "KCxMC[xNC],...: one implementation parray-cpu-kcKC-mcMC[-ncNC] per entry, parray-cpu with those sizes"),

    key<kGpu, &GpuTuning::best_shape, IntegerOrAuto<int, 0, 21, -1>>(
        "gpu.best_shape", "PARRAY_CUDA_BEST_SHAPE",
        "cuda-12-best runs this candidate tile shape of gemm/12_best_candidates.cu (auto: the chosen shapes)"),
    key<kGpu, &GpuTuning::best_group, Integer<int, 1, 1024>>(
        "gpu.best_group", "PARRAY_CUDA_BEST_GROUP",
        "cuda-12-best's tile order: tile rows per group (1: row by row)"),
    key<kGpu, &GpuTuning::best_splits, IntegerOrAuto<int, 1, 1 << 20, 0>>(
        "gpu.best_splits", "PARRAY_CUDA_BEST_SPLITS",
        "cuda-12-best splits K into this many parts (auto: chosen from the tiles and the SMs)"),
    key<kGpu, &GpuTuning::best_streamk, IntegerOrAuto<int, 0, 1 << 20, -1>>(
        "gpu.best_streamk", "PARRAY_CUDA_BEST_STREAMK",
        "stream-K tail after the full waves: auto (planned for the GPU's slots), 0 off, n planned for n slots"),
    key<kGpu, &GpuTuning::best_wide, Named<FlagNames>>(
        "gpu.best_wide", "PARRAY_CUDA_BEST_WIDE",
        "1: cuda-12-best's 128 x 256 tile wherever A runs along k, whatever the size (0: where it fills the GPU)"),
    key<kGpu, &GpuTuning::tf32x3_small, Named<FlagNames>>(
        "gpu.3xtf32_small", "PARRAY_3XTF32_SMALL",
        "0: cuda-13-3xtf32 drops its small parts (one TF32 product; fails the FP32 check)"),
    key<kGpu, &GpuTuning::wgmma_a_registers, IntegerOrAuto<int, 0, 1, -1>>(
        "gpu.wgmma_a_registers", "PARRAY_WGMMA_A_REGISTERS",
        "cuda-15 reads A where it lies, split in registers: auto (TF32; FP32 accuracy where N <= 2048), 0 never, "
        "1 always"),
    key<kGpu, &GpuTuning::wgmma_narrow, Named<FlagNames>>(
        "gpu.wgmma_narrow", "PARRAY_WGMMA_NARROW",
        "1: cuda-15 in 128 x 64 tiles where C has at most 64 columns (0: its 128 or 256-wide tiles)"),
    key<kGpu, &GpuTuning::wgmma_read_early, Named<FlagNames>>(
        "gpu.wgmma_read_early", "PARRAY_WGMMA_READ_EARLY",
        "1: cuda-14-tf32 reads a slot before its copies land (a broken pipeline; fails the checks)"),
    key<kGpu, &GpuTuning::wgmma_cluster, IntegerOrAuto<int, 1, 2, 0>>(
        "gpu.wgmma_cluster", "PARRAY_WGMMA_CLUSTER",
        "cuda-15's blocks in clusters of this many along M, B's k-tiles multicast to the cluster by TMA: auto "
        "(2 for FP32 accuracy where M, N >= 8192), 1 or 2"),
    key<kGpu, &GpuTuning::gemv_tree_slices, IntegerOrAuto<int, 2, 65535, 0>>(
        "gpu.gemv_tree_slices", "PARRAY_GEMV_TREE_SLICES",
        "GEMV step 6's slices per group of its two-level sum: auto (one level for short chains, else 16), or "
        "2..65535 (past the slices: one level)"),
    key<kGpu, &GpuTuning::dist_rank, Named<ChoiceNames>>(
        "gpu.dist_rank", "PARRAY_DIST_RANK",
        "one query's sorted distances to <= 1024 vectors placed by rank over several blocks: auto, 1, or 0 (one "
        "block's bitonic network)"),
    key<kGpu, &GpuTuning::gemv_column_slices, IntegerOrAuto<int, 1, 8, 0>>(
        "gpu.gemv_column_slices", "PARRAY_GEMV_COLUMN_SLICES",
        "GEMV step 6's column-major slices a SM: auto (4), or 1..8"),
    key<kGpu, &GpuTuning::gemv_tall_cols, Named<ChoiceNames>>(
        "gpu.gemv_tall_cols", "PARRAY_GEMV_TALL_COLS",
        "column-major A of more than 1024 rows whose 64-row blocks are fewer than the SMs: step 5's kernels "
        "(auto, 0) or step 6's sliced one-kernel block, a ticket per row block (1)"),
    key<kGpu, &GpuTuning::dmma_tile, IntegerOrAuto<int, 1, 3, 0>>(
        "gpu.dmma_tile", "PARRAY_DMMA_TILE",
        "cuda-22-dmma-tma's tile: auto (1), 1 (128 x 128 x 32, 3 stages, a block an SM), 2 (128 x 64 x 16, 4 "
        "stages, two blocks an SM) or 3 (tile 1, slots released warp by warp on mbarriers)"),
    key<kGpu, &GpuTuning::knn_gemm, Text>(
        "gpu.knn_gemm", "PARRAY_KNN_GEMM",
        "GEMM implementation of the GPU k-NN when KnnOptions::gemm names none (empty: the default GPU GEMM "
        "asked for TF32)"),
    key<kGpu, &GpuTuning::speed_table, Text>(
        "gpu.speed_table", "PARRAY_GPU_SPEED_TABLE",
        "bench gemm CSV (parray tune) the default GPU GEMM picks its kernel from (empty: the built-in table)"),

    key<kMulti, &MultiGpuTuning::pcie_gbs, Rate>(
        "multigpu.pcie_gbs", "PARRAY_MULTIGPU_PCIE_GBS",
        "host-GPU rate in GB/s each way that the out-of-core GEMM plans its blocks with"),
    key<kMulti, &MultiGpuTuning::trace, Named<FlagNames>>(
        "multigpu.trace", "PARRAY_MULTIGPU_TRACE",
        "1: the out-of-core GEMM prints each GPU's time before, between and after its GEMMs"),
    key<kMulti, &MultiGpuTuning::ksplit_tail, Integer<int, 0, 2>>(
        "multilevel.ksplit_tail", "PARRAY_ML_KSPLIT_TAIL",
        "stream-K tail of the K split's parts: 0 none, 1 shared out whatever its size, 2 where it is small"),
    key<kMulti, &MultiGpuTuning::ksplit_at, Integer<int, 0, 2>>(
        "multilevel.ksplit_at", "PARRAY_ML_KSPLIT_AT",
        "column-major A in the K split's parts: 0 never, 1 where the wide tile fits, 2 always"),
    key<kMulti, &MultiGpuTuning::ksplit_adds, Named<SumNames>>(
        "multilevel.ksplit_sum", "PARRAY_ML_KSPLIT_SUM",
        "K split's parts summed: add (atomically into C) or pass (a deterministic summing pass)"),
    key<kMulti, &MultiGpuTuning::parts_in_turn, Named<DriverNames>>(
        "multilevel.driver", "PARRAY_ML_DRIVER",
        "parts of a split on device operands: streams (enqueued in turn by the caller) or threads (one each)"),
};

const Key& find_key(const std::string& name) {
  for (const Key& k : kKeys)
    if (name == k.name) return k;
  throw Error("--tune: unknown key '" + name + "' (parray list shows the keys)");
}

Tunings from_environment() {
  Tunings t;
  for (const Key& k : kKeys)
    if (const char* v = std::getenv(k.env); v && *v) k.set(t, v, k.env);
  return t;
}

Tunings& state() {
  static Tunings t = from_environment();
  return t;
}

}  // namespace

const CpuTuning& cpu_tuning() { return state().cpu; }
const GpuTuning& gpu_tuning() { return state().gpu; }
const MultiGpuTuning& multigpu_tuning() { return state().multigpu; }

void load_tuning() { (void)state(); }

void set_tuning(const std::string& key, const std::string& value, const std::string& source) {
  const Key& k = find_key(key);
  k.set(state(), value, source.empty() ? "--tune " + key : source);
}

void set_tuning(const std::string& key_value) {
  const std::size_t eq = key_value.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("--tune '" + key_value + "' is not key=value");
  set_tuning(key_value.substr(0, eq), key_value.substr(eq + 1));
}

std::vector<TuningKeyInfo> tuning_keys() {
  const Tunings defaults;
  std::vector<TuningKeyInfo> out;
  for (const Key& k : kKeys)
    out.push_back({k.name, k.env, k.backend, k.show(defaults), k.show(state()), k.description});
  return out;
}

}  // namespace parray
