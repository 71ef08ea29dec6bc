// The parray command-line tool.
//
//   parray list [--format csv]
//   parray gemm --impl NAME -m M -n N -k K [--dtype f32|f64] [--layout-a/-b/-c L] ...
//   parray bench gemm --impl LIST|all --sizes LIST | --shapes MxKxN,... [--threads LIST] [--csv F] [--json F]
//
// Bad input: one line on stderr and exit status 2. A result that fails
// verification: exit status 1.
#include <omp.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "parray/config.hpp"
#include "parray/cpu.hpp"
#include "harness/harness.hpp"
#include "harness/knn_bench.hpp"
#include "parray/tuning.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#include "gemm_batched_cli.hpp"
#include "parrayc/translate.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

using namespace parray;
using tools::parse_dtype;
using tools::split_list;
using tools::whole;
using tools::check_host_memory;
using tools::check_writable;

namespace {

void check_layout_name(const std::string& s) {
  if (is_layout_type_text(s)) return;  // a Parray type: checked against its operand's size when the case is built
  for (const std::string& n : matrix_layout_names())
    if (n == s) return;
  make_matrix_type(s, 1, 1);  // throws the message listing the known names
}

// --storage-X S with --layout-X VIEW: one type text "{S}VIEW" (named_layouts.hpp).
std::string with_storage(const std::string& layout, const std::string& storage, const char* which) {
  if (storage.empty()) return layout;
  if (!is_layout_type_text(layout) || layout.front() == '{')
    throw Error(std::string("--storage-") + which + " needs --layout-" + which +
                " to be a Parray type over S, e.g. [#S_1][#S_0]");
  return "{" + storage + "}" + layout;
}

// Refuses problems whose operands (plus the FP64 reference the check needs)
// would not fit in this machine's memory, before trying to allocate them.
void check_fits(const GemmProblem& p) {
  const double elem = p.dtype == Dtype::f32 ? 4.0 : 8.0;
  const double m = static_cast<double>(p.m), n = static_cast<double>(p.n), k = static_cast<double>(p.k);
  // A, B, C and C's initial copy in the dtype (padded layouts need a little
  // more), plus the FP64 reference of C and FP64 copies of A and B (twice).
  const double need = elem * (m * k + k * n + 2 * m * n) * 1.05 + 8.0 * (m * n + 3 * (m * k + k * n));
  check_host_memory(need, fmt::format("a {}x{}x{} {} problem", p.m, p.k, p.n, dtype_name(p.dtype)));
}

// The implementations carrying tag `tag` (GemmImpl::tags) that can run here:
// GPU ones only with a GPU, as for "all".
std::vector<std::string> tagged_impls(const std::string& tag) {
  std::vector<std::string> names;
  int left_out = 0;
  for (const GemmImpl& i : registry().all()) {
    if (!i.has_tag(tag)) continue;
    if (i.device == Device::gpu && !cuda_available()) ++left_out;
    else names.push_back(i.name);
  }
  if (left_out > 0)
    std::fprintf(stderr, "[bench] no GPU here: %d GPU implementations tagged '%s' left out\n", left_out, tag.c_str());
  if (names.empty() && left_out > 0) throw Error("--impl " + tag + ": every implementation tagged so needs a GPU");
  return names;
}

std::vector<std::string> expand_impls(const std::string& list) {
  std::vector<std::string> names;
  for (const std::string& item : split_list(list, ',')) {
    if (item == "all") {
      // Without a GPU, "all" means every implementation that can run here.
      const bool gpu = cuda_available();
      int left_out = 0;
      for (const GemmImpl& i : registry().all()) {
        if (i.device == Device::gpu && !gpu) ++left_out;
        else names.push_back(i.name);
      }
      if (left_out > 0)
        std::fprintf(stderr, "[bench] no GPU here: %d GPU implementations left out of 'all'\n", left_out);
    } else if (item == "baselines") {
      for (const GemmImpl& i : registry().all())
        if (i.baseline) names.push_back(i.name);
    } else if (const std::vector<std::string> tagged = tagged_impls(item); !tagged.empty()) {
      names.insert(names.end(), tagged.begin(), tagged.end());
    } else {
      names.push_back(registry().find(item).name);  // throws for unknown names
    }
  }
  if (names.empty()) throw Error("--impl names no implementation");
  return names;
}

// The options every command takes: --tune KEY=VALUE (repeatable) and --isa.
struct TuningOptions {
  std::string isa;
  std::vector<std::string> tunes;

  void add_to(CLI::App& app) {
    app.add_option("--isa", isa, "microkernel of parray-cpu: avx512, avx2 or portable (the same as --tune cpu.isa=...)");
    app.add_option("--tune", tunes, "set a tuning key, KEY=VALUE, after the environment (repeatable; parray list "
                                    "shows the keys, docs/tuning.md explains them)")
        ->expected(1)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    app.fallthrough();  // --isa and --tune after the command's name too
  }
  void apply() const {
    load_tuning();  // a bad PARRAY_* value is bad input before any work
    for (const std::string& t : tunes) set_tuning(t);
    if (!isa.empty()) set_cpu_isa(isa);
  }
};

// Every tuning key with its value now (and its default where that differs).
void print_tuning() {
  std::cout << "tuning (--tune KEY=VALUE, or the environment variable; docs/tuning.md):\n";
  for (const TuningKeyInfo& k : tuning_keys()) {
    const auto shown = [](const std::string& v) { return v.empty() ? std::string("-") : v; };
    std::cout << fmt::format("  {:<23} {:<8} {:<25} {}{}\n", k.key, shown(k.value), k.env, k.description,
                             k.value == k.default_value ? "" : " [default " + shown(k.default_value) + "]");
  }
}

// The GEMV and k-NN registries in brief (bench gemv --list, bench knn --list show them in full).
template <class Impl>
void print_other_registry(const char* title, const ImplRegistry<Impl>& r) {
  std::cout << "\n" << title << ":\n";
  for (const Impl& i : r.all())
    std::cout << fmt::format("  {:<22} {:<4} {}{}\n", i.name, device_name(i.device), i.baseline ? "[baseline] " : "",
                             i.description);
  for (const MissingPart& m : r.missing()) std::cout << fmt::format("  missing: {}: {}\n", m.name, m.reason);
}

// What an implementation does to its inputs: "full" precision of the dtype,
// or rounded to a narrower format (precision.hpp).
std::string inputs_of(const GemmImpl& i) {
  return i.rounds_inputs ? std::string("rounded to ") + precision_name(*i.rounds_inputs) : "full";
}

int cmd_list(const std::string& format) {
  const Registry& r = registry();
  if (format == "csv") {
    std::cout << "name,device,dtypes,baseline,tags,description,preconditions,inputs\n";
    for (const GemmImpl& i : r.all())
      std::cout << fmt::format("{},{},\"{}\",{},\"{}\",\"{}\",\"{}\",{}\n", i.name, device_name(i.device), i.dtypes(),
                               i.baseline ? 1 : 0, fmt::join(i.tags, " "), i.description, i.preconditions,
                               inputs_of(i));
    for (const MissingPart& m : r.missing()) std::cout << fmt::format("# missing {}: {}\n", m.name, m.reason);
    return 0;
  }
  if (format != "table") throw Error("unknown format '" + format + "' (use table or csv)");
  std::cout << fmt::format("{:<20} {:<4} {:<8} {}\n", "implementation", "dev", "dtypes", "description");
  for (const GemmImpl& i : r.all())
    std::cout << fmt::format("{:<20} {:<4} {:<8} {}{}\n{:<34}  ({}){}; inputs {}\n", i.name, device_name(i.device),
                             i.dtypes(), i.baseline ? "[baseline] " : "", i.description, "", i.preconditions,
                             i.tags.empty() ? "" : fmt::format(" [{}]", fmt::join(i.tags, ", ")), inputs_of(i));
  std::cout << fmt::format("\ndefaults: cpu -> {}, gpu -> {}\n", r.default_name(Device::cpu),
                           r.default_name(Device::gpu).empty() ? "(none)" : r.default_name(Device::gpu));
  std::cout << fmt::format("cpu: {} vector unit; parray-cpu uses the {} microkernel\n", cpu_vector_isa(), cpu_isa());
  std::cout << fmt::format("cpu blocking: {}\n", cpu_blocking());
  print_tuning();
#if PARRAY_HAVE_CUDA
  if (cuda_available()) std::cout << "gpu: " << cuda::device_description() << "\n";
  else std::cout << "gpu: built with CUDA, but no GPU is present\n";
#endif
  if (r.missing().empty()) std::cout << "optional parts: all present\n";
  for (const MissingPart& m : r.missing()) std::cout << fmt::format("missing: {}: {}\n", m.name, m.reason);
  register_gemv_baselines(gemv_registry());
  print_other_registry("GEMV implementations (parray bench gemv)", gemv_registry());
  print_other_registry("k-NN implementations (parray knn, parray bench knn)", knn_registry());
  return 0;
}

struct GemmArgs {
  std::string impl = "cpu", dtype = "f32", layout_a = "row", layout_b = "row", layout_c = "row";
  std::string storage_a, storage_b, storage_c;
  std::string m, n, k;
  double alpha = 1.0, beta = 0.0;
  std::uint64_t seed = 42;
  int reps = 0, threads = 0;
  long long batch = 0;
  bool broadcast_b = false;
  bool print = false, int_inputs = false;
  std::string precision;
};

// --batch B: B products packed one after another, row-major.
int cmd_gemm_batch(const GemmArgs& g) {
  if (g.batch < 1) throw Error("--batch " + std::to_string(g.batch) + " must be >= 1");
  for (const std::string* l : {&g.layout_a, &g.layout_b, &g.layout_c})
    if (*l != "row") throw Error("--batch takes row-major operands (--layout-a/-b/-c row), not '" + *l + "'");
  if (g.print || !g.storage_a.empty() || !g.storage_b.empty() || !g.storage_c.empty())
    throw Error("--batch takes neither --print nor --storage-*");
  if (g.threads < 0) throw Error("--threads " + std::to_string(g.threads) + " is negative");
  if (g.reps < 0) throw Error("--reps " + std::to_string(g.reps) + " is negative");
  tools::BatchedGemmArgs a;
  a.impl = g.impl, a.dtype = parse_dtype(g.dtype), a.batch = g.batch, a.broadcast_b = g.broadcast_b;
  a.m = whole(g.m, "-m"), a.n = whole(g.n, "-n"), a.k = whole(g.k, "-k");
  a.alpha = g.alpha, a.beta = g.beta, a.seed = g.seed, a.threads = g.threads, a.reps = g.reps;
  if (!g.precision.empty()) a.precision = parse_precision(g.precision);
  return tools::run_batched_gemm(a);
}

int cmd_gemm(const GemmArgs& g) {
  if (g.batch != 0) return cmd_gemm_batch(g);
  if (g.broadcast_b) throw Error("--broadcast-b needs --batch");
  GemmProblem p;
  p.dtype = parse_dtype(g.dtype);
  p.m = whole(g.m, "-m");
  p.n = whole(g.n, "-n");
  p.k = whole(g.k, "-k");
  p.layout_a = with_storage(g.layout_a, g.storage_a, "a");
  p.layout_b = with_storage(g.layout_b, g.storage_b, "b");
  p.layout_c = with_storage(g.layout_c, g.storage_c, "c");
  for (const std::string* l : {&p.layout_a, &p.layout_b, &p.layout_c}) check_layout_name(*l);
  p.alpha = g.alpha, p.beta = g.beta, p.seed = g.seed, p.int_inputs = g.int_inputs || g.print;
  if (!g.precision.empty()) p.precision = parse_precision(g.precision);
  if (g.threads < 0) throw Error("--threads " + std::to_string(g.threads) + " is negative");
  if (g.reps < 0) throw Error("--reps " + std::to_string(g.reps) + " is negative");
  if (g.print && p.m * p.n + p.m * p.k + p.k * p.n > 3 * 64 * 64)
    throw Error("--print is for small matrices (at most 64x64)");
  check_fits(p);
  const GemmImpl& impl = registry().find(g.impl);
  BenchOptions o;
  o.impls = {impl.name};
  o.problems = {p};
  o.threads = {g.threads > 0 ? g.threads : 0};
  if (g.reps > 0) o.min_reps = o.max_reps = g.reps;
  o.progress = false;
  // The table's own case, built once: refuse what the implementation cannot
  // run before anything is timed; with --print, show one verified product.
  bool print_failed = false;
  o.on_case = [&](GemmCase& gcase) {
    if (std::string why = gcase.why_not(impl); !why.empty())
      throw Error("implementation '" + impl.name + "' cannot run this problem: " + why);
    if (!g.print) return;
    const CheckResult c = gcase.run_and_check(impl, g.threads > 0 ? g.threads : 1);
    std::cout << gcase.print();
    std::cout << fmt::format("check {}: rel_err {:.3e}, sum_abs_err {:.3e}{}\n", c.ok ? "OK" : "FAILED", c.rel_err,
                             c.sum_abs_err, c.ok ? "" : " (" + c.reason + ")");
    print_failed = !c.ok;
  };
  if (o.threads.front() == 0) o.threads = {omp_get_max_threads()};
  o.child_exe = "/proc/self/exe";  // baselines run in a child process of their own
  const std::vector<BenchRow> rows = run_gemm_bench(o);
  if (print_failed) return 1;
  const BenchRow& r = rows.front();
  std::cout << fmt::format("{} ({}) {} C[{}x{}] = A[{}x{}] * B[{}x{}], layouts {}, alpha {}, beta {}, {} thread(s)\n",
                           r.impl, r.device, r.dtype, p.m, p.n, p.m, p.k, p.k, p.n, r.layout, p.alpha, p.beta,
                           r.threads);
  if (!r.ok()) {
    std::cout << "check FAILED: " << r.note << "\n";
    return 1;
  }
  std::cout << fmt::format("time {:.4f} ms (median), {:.2f} GFLOP/s, {:.1f}% of peak\n", r.ms, r.gflops, r.pct_peak);
  // The tolerance the check applied: that of the precision the implementation delivers.
  const Precision delivered = registry().find(r.impl).delivers(p.dtype, p.precision);
  std::cout << fmt::format("check OK: rel_err {:.3e} (tolerance {:.3e}), max_abs_err {:.3e}\n", r.rel_err,
                           gemm_tolerance(p.dtype, p.k, delivered), r.max_abs_err);
  return 0;
}

struct BenchArgs {
  std::string impls = "all", sizes, shapes, dtypes = "f32", layouts = "row", threads = "1", csv, json;
  std::string layout_a, layout_b, layout_c, storage_a, storage_b, storage_c;
  double alpha = 1.0, beta = 0.0;
  int reps = 0, rounds = 1;
  bool interleave = false;
  std::string pin_cpu = "auto";
  std::uint64_t seed = 42;
  std::string stat = "median";
  std::string precision;
  long long batch = 0;
  bool broadcast_b = false;
};

// --sizes (N: N^3) and --shapes (MxKxN) as (M, K, N) triples.
std::vector<std::array<index_t, 3>> bench_shapes(const BenchArgs& b) {
  std::vector<std::array<index_t, 3>> shapes;
  for (const std::string& s : split_list(b.sizes, ',')) {
    const index_t v = whole(s, "--sizes");
    shapes.push_back({v, v, v});
  }
  for (const std::string& s : split_list(b.shapes, ',')) {
    const std::vector<std::string> parts = split_list(s, 'x');
    if (parts.size() != 3) throw Error("--shapes '" + s + "' is not MxKxN");
    shapes.push_back({whole(parts[0], "M"), whole(parts[1], "K"), whole(parts[2], "N")});
  }
  return shapes;
}

// --batch B: strided batches of B row-major products per shape. Default
// implementations: the GPU default, step 18, and cuBLAS's strided-batched
// call at the precision asked.
int cmd_bench_gemm_batch(const BenchArgs& b) {
  if (b.batch < 1) throw Error("--batch " + std::to_string(b.batch) + " must be >= 1");
  if (b.layouts != "row" || !b.layout_a.empty() || !b.layout_b.empty() || !b.layout_c.empty() ||
      !b.storage_a.empty() || !b.storage_b.empty() || !b.storage_c.empty())
    throw Error("--batch takes row-major operands only (no --layout*, --storage-*)");
  if (b.rounds != 1 || b.interleave || !b.json.empty() || b.stat != "median")
    throw Error("--batch takes none of --rounds, --interleave, --json, --stat");
  if (b.reps < 0) throw Error("--reps " + std::to_string(b.reps) + " is negative");
  tools::BatchedBenchArgs a;
  a.threads = int(whole(b.threads, "--threads", 0, 1024)), a.reps = b.reps, a.csv = b.csv;
  std::optional<Precision> precision;
  if (!b.precision.empty()) precision = parse_precision(b.precision);
  if (b.impls == "all") {
    const std::string p = precision ? precision_name(*precision) : "fp32";
    a.impls = {"gpu-auto", "cuda-18-batched-small", p == "fp32" || p == "fp64" ? "cublas" : "cublas-" + p};
  } else {
    a.impls = split_list(b.impls, ',');
  }
  const std::vector<std::array<index_t, 3>> shapes = bench_shapes(b);
  if (shapes.empty()) throw Error("--batch needs --sizes or --shapes");
  for (const std::string& d : split_list(b.dtypes, ','))
    for (const auto& [m, k, n] : shapes) {
      tools::BatchedGemmArgs p;
      p.dtype = parse_dtype(d), p.batch = b.batch, p.broadcast_b = b.broadcast_b, p.m = m, p.k = k, p.n = n;
      p.alpha = b.alpha, p.beta = b.beta, p.seed = b.seed, p.precision = precision;
      a.problems.push_back(p);
    }
  return tools::run_batched_bench(a);
}

int cmd_bench_gemm(const BenchArgs& b) {
  if (b.batch != 0) return cmd_bench_gemm_batch(b);
  if (b.broadcast_b) throw Error("--broadcast-b needs --batch");
  BenchOptions o;
  o.impls = expand_impls(b.impls);
  o.threads.clear();
  for (const std::string& t : split_list(b.threads, ',')) {  // 0: OMP_NUM_THREADS or all cores, as in `gemm`
    const index_t v = whole(t, "--threads");
    if (v < 0 || v > 1024) throw Error("--threads " + t + " is out of range 0..1024 (0: all cores)");
    o.threads.push_back(v == 0 ? omp_get_max_threads() : static_cast<int>(v));
  }
  if (o.threads.empty()) throw Error("--threads is empty");
  if (b.reps > 0) o.min_reps = o.max_reps = b.reps;
  if (b.stat != "median" && b.stat != "min") throw Error("--stat " + b.stat + ": use median or min");
  o.best_of = b.stat == "min";
  if (b.rounds < 1 || b.rounds > 1000) throw Error("--rounds " + std::to_string(b.rounds) + " is out of range 1..1000");
  o.rounds = b.rounds;
  o.interleave_problems = b.interleave;
  if (b.pin_cpu == "off") {
    o.single_thread_cpu = -1;
  } else if (b.pin_cpu != "auto") {
    o.single_thread_cpu = static_cast<int>(whole(b.pin_cpu, "--pin-cpu (auto, off or a CPU)", 0, 4095));
  }
  const std::vector<std::array<index_t, 3>> shapes = bench_shapes(b);
  if (shapes.empty()) throw Error("give --sizes or --shapes");
  // OpenBLAS and BLIS run in a child process of their own, one per row, with
  // the row's thread count in the environment; this process never loads them.
  o.child_exe = "/proc/self/exe";
  if (const char* t = std::getenv("PARRAY_BENCH_CHILD_TIMEOUT"); t && std::atof(t) > 0) o.child_timeout_seconds = std::atof(t);
  std::vector<std::string> layouts = split_list(b.layouts, ',');
  for (const std::string& l : layouts) check_layout_name(l);
  for (const std::string& d : split_list(b.dtypes, ',')) {
    for (const auto& [m, k, n] : shapes) {
      for (const std::string& l : layouts) {
        GemmProblem p;
        p.dtype = parse_dtype(d);
        p.m = m, p.k = k, p.n = n;
        p.layout_a = with_storage(b.layout_a.empty() ? l : b.layout_a, b.storage_a, "a");
        p.layout_b = with_storage(b.layout_b.empty() ? l : b.layout_b, b.storage_b, "b");
        p.layout_c = with_storage(b.layout_c.empty() ? l : b.layout_c, b.storage_c, "c");
        for (const std::string* x : {&p.layout_a, &p.layout_b, &p.layout_c}) check_layout_name(*x);
        p.alpha = b.alpha, p.beta = b.beta, p.seed = b.seed;
        if (!b.precision.empty()) p.precision = parse_precision(b.precision);
        check_fits(p);
        o.problems.push_back(p);
      }
    }
  }
  auto write = [](const std::string& path, const std::string& text) {
    std::ofstream f(path);
    if (!f) throw Error("cannot write " + path);
    f << text;
  };
  // The CSV so far after each problem: a run stopped by a time limit keeps
  // what it finished. The last call has every row (run_gemm_bench).
  if (!b.csv.empty()) o.on_rows = [&](const std::vector<BenchRow>& done) { write(b.csv, bench_csv(done)); };
  const std::vector<BenchRow> rows = run_gemm_bench(o);
  std::cout << bench_table(rows);
  if (!b.json.empty()) write(b.json, bench_json(rows));
  for (const std::string* path : {&b.csv, &b.json})
    if (!path->empty()) std::fprintf(stderr, "[bench] wrote %s\n", path->c_str());
  for (const BenchRow& r : rows)
    if (r.outcome == Outcome::failed) return 1;
  return 0;
}

}  // namespace

// The output files named on the command line (--csv, --json, --time-csv of
// any command), checked before any work: a run's results are not lost at its end.
void check_output_files(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const char* name : {"--csv", "--json", "--time-csv"})
      if (const CLI::Option* o = sub->get_option_no_throw(name); o && o->count() > 0)
        check_writable(o->as<std::string>(), name);
    check_output_files(*sub);
  }
}

// The commands under `level`, as "a, b, c".
std::string command_names(CLI::App& level) {
  std::string names;
  for (const CLI::App* s : level.get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + s->get_name();
  return names;
}

// Where a command is expected but argv names an unknown one or none: "unknown
// command 'X' (commands: ...)" or "'bench' needs a command (commands: ...)";
// "" when every word is known and no command is missing (CLI11 would say only
// that a subcommand is required). Options' values are stepped over.
std::string unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("-", 0) == 0) {
      const CLI::Option* o = level->get_option_no_throw(word.substr(0, word.find('=')));
      if (o && o->get_items_expected_min() > 0 && word.find('=') == std::string::npos) ++i;
      continue;
    }
    const std::vector<CLI::App*> subs = level->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";  // a leaf command's positional argument
    const auto named = std::find_if(subs.begin(), subs.end(), [&](CLI::App* s) { return s->check_name(word); });
    if (named != subs.end()) {
      level = *named;
      continue;
    }
    return "unknown command '" + word + "'" + (level == &app ? "" : " of '" + level->get_name() + "'") +
           " (commands: " + command_names(*level) + ")";
  }
  if (level->get_require_subcommand_min() > 0)  // stopped where a command must follow
    return (level == &app ? std::string("a command is needed") : "'" + level->get_name() + "' needs a command") +
           " (commands: " + command_names(*level) + ")";
  return "";
}

// The argument parser's own messages, said in the project's words.
std::string in_own_words(const CLI::ParseError& e, const std::string& what) {
  const std::size_t colon = what.find(": ");
  const std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
  if (dynamic_cast<const CLI::ExtrasError*>(&e)) {  // "The following argument(s) was/were not expected: X ..."
    const std::string first = detail.substr(0, detail.find(' '));
    return (first.rfind("-", 0) == 0 ? "unknown option '" : "unexpected argument '") + first + "' (--help lists them)";
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e))  // "--k: 1 required TEXT missing"
    return what.substr(0, what.find(':')) + " needs a value";
  if (dynamic_cast<const CLI::ConversionError*>(&e)) {  // "Could not convert: --reps = x"
    const std::size_t eq = detail.find(" = ");
    if (eq != std::string::npos)
      return detail.substr(0, eq) + " '" + detail.substr(eq + 3) + "' is not a value it takes";
  }
  return what;
}

namespace {

// parray gemm: one GEMM verified and timed.
CLI::App* add_gemm_command(CLI::App& app, GemmArgs& g) {
  CLI::App* gemm = app.add_subcommand("gemm", "Verify and time one GEMM C = alpha A B + beta C");
  gemm->add_option("--impl", g.impl, "implementation name, or cpu / gpu for the device's default");
  tools::add_gemm_extents(*gemm, g.m, g.n, g.k).required();
  tools::add_dtype(*gemm, g.dtype);
  gemm->add_option("--layout-a", g.layout_a,
                   "layout of A: row, col, row-pad, fig17, fig17x4, fig18, or a Parray type ([64][48], or a view "
                   "such as [#S_1][#S_0] over --storage-a)");
  gemm->add_option("--layout-b", g.layout_b, "layout of B");
  gemm->add_option("--layout-c", g.layout_c, "layout of C");
  gemm->add_option("--storage-a", g.storage_a, "A's dense storage type S, e.g. [2][64][24], for a --layout-a over it");
  gemm->add_option("--storage-b", g.storage_b, "B's storage type S");
  gemm->add_option("--storage-c", g.storage_c, "C's storage type S");
  tools::add_alpha_beta(*gemm, g.alpha, g.beta);
  gemm->add_option("--seed", g.seed, "random seed of the inputs");
  gemm->add_option("--reps", g.reps, "timed repeats (default: adaptive)");
  gemm->add_option("--batch", g.batch,
                   "a strided batch of this many products, row-major, one call of parray::gemm_batched");
  gemm->add_flag("--broadcast-b", g.broadcast_b, "with --batch: one B for every product (batch stride 0)");
  tools::add_cpu_threads(*gemm, g.threads);
  gemm->add_flag("--print", g.print, "print A, B and C (small integer inputs 0..8, checkable by hand)");
  gemm->add_flag("--int-inputs", g.int_inputs, "small integer inputs 0..8");
  gemm->add_option("--precision", g.precision,
                   "the least accuracy of the products: fp64, fp32, tf32, fp16, bf16 (default: the dtype's own); "
                   "an implementation that delivers less is refused");
  return gemm;
}

// parray bench gemm: implementations side by side over problems.
CLI::App* add_bench_gemm_command(CLI::App& bench, BenchArgs& b) {
  CLI::App* bench_gemm = bench.add_subcommand("gemm", "Verify and time implementations side by side");
  bench_gemm->add_option("--impl", b.impls, "comma list of names, or all, baselines, cpu, gpu");
  bench_gemm->add_option("--sizes", b.sizes, "square sizes, comma list");
  bench_gemm->add_option("--shapes", b.shapes, "MxKxN shapes, comma list");
  tools::add_dtype_list(*bench_gemm, b.dtypes);
  bench_gemm->add_option("--layout", b.layouts, "layouts of all three operands, comma list");
  bench_gemm->add_option("--layout-a", b.layout_a);
  bench_gemm->add_option("--layout-b", b.layout_b);
  bench_gemm->add_option("--layout-c", b.layout_c);
  bench_gemm->add_option("--storage-a", b.storage_a, "A's storage type S for a --layout-a over it");
  bench_gemm->add_option("--storage-b", b.storage_b);
  bench_gemm->add_option("--storage-c", b.storage_c);
  bench_gemm->add_option("--threads", b.threads, "thread counts, comma list (0: OMP_NUM_THREADS or all cores)");
  tools::add_alpha_beta(*bench_gemm, b.alpha, b.beta);
  bench_gemm->add_option("--reps", b.reps, "timed repeats (default: adaptive)");
  bench_gemm->add_option("--rounds", b.rounds,
                         "time every implementation of a problem this many times in turn; rows report --stat over "
                         "the rounds and the per-round ratios to the best baseline");
  bench_gemm->add_flag("--interleave", b.interleave,
                       "each round goes over all the problems (sizes, shapes, layouts) in turn, so that ratios "
                       "between problems come from the same minutes; every problem stays in memory");
  bench_gemm->add_option("--pin-cpu", b.pin_cpu,
                         "one-thread CPU rows (parray and the baselines' children) run on this CPU: auto (default: "
                         "the highest this process may use), off, or a CPU number");
  bench_gemm->add_option("--seed", b.seed);
  bench_gemm->add_option("--precision", b.precision,
                         "the least accuracy of the products (default: the dtype's own); implementations that "
                         "deliver less are not run, their rows say why");
  bench_gemm->add_option("--stat", b.stat, "the time a row reports: median (default) or min of the timed repeats");
  tools::add_csv_option(*bench_gemm, b.csv,
                        "write the table as CSV (rewritten after each problem, so a run cut short keeps those it "
                        "finished)");
  bench_gemm->add_option("--batch", b.batch,
                         "strided batches of this many row-major products per shape (parray::gemm_batched), "
                         "cuBLAS's strided-batched call beside them");
  bench_gemm->add_flag("--broadcast-b", b.broadcast_b, "with --batch: one B for every product (batch stride 0)");
  bench_gemm->add_option("--json", b.json, "write the table as JSON");
  return bench_gemm;
}

// parray tune: the speed table of the default GPU GEMM for this GPU, a
// bench gemm table of its candidates over shapes from thin to large.
CLI::App* add_tune_command(CLI::App& app, BenchArgs& tune_args) {
  // Steps 14 and 15's rows say why off a Hopper GPU.
  tune_args.impls = "cuda-12-best,cuda-13-3xtf32,cuda-14-3xtf32,cuda-15-3xtf32";
  tune_args.shapes =
      "256x256x256,512x512x512,1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,1037x1055x1031,"
      "4097x4095x4099,4096x512x4096,4096x4096x64,64x4096x4096,8191x17x8193";
  CLI::App* tune = app.add_subcommand(
      "tune", "Measure the default GPU GEMM's candidates on this GPU and write its speed table (gpu.speed_table)");
  tune->add_option("--out", tune_args.csv, "the CSV to write")->required();
  tune->add_option("--shapes", tune_args.shapes, "MxKxN shapes, comma list");
  tune->add_option("--rounds", tune_args.rounds, "rounds over the candidates (default 1)");
  return tune;
}

}  // namespace

int main(int argc, char** argv) {
  // The hidden child of `bench gemm` that times one baseline (src/harness/bench_child.cpp).
  if (argc > 1 && std::string(argv[1]) == "__bench-child") return bench_child_main(argc, argv);
  CLI::App app{"parray: GEMM on layout-typed arrays, from the lab report's triple loop to BLAS speed"};
  app.require_subcommand(1);
  app.set_version_flag("--version", PARRAY_VERSION);

  TuningOptions tuning;
  tuning.add_to(app);
  std::string list_format = "table";
  CLI::App* list = app.add_subcommand("list", "List every implementation and the optional parts that are missing");
  list->add_option("--format", list_format, "table or csv");

  GemmArgs g;
  CLI::App* gemm = add_gemm_command(app, g);
  CLI::App* bench = app.add_subcommand("bench", "Benchmark tables");
  bench->require_subcommand(1);
  BenchArgs b;
  CLI::App* bench_gemm = add_bench_gemm_command(*bench, b);
  BenchArgs tune_args;
  CLI::App* tune = add_tune_command(app, tune_args);

  std::vector<tools::CliCommand> extra;
  for (tools::CommandAdder adder : tools::command_adders())
    for (tools::CliCommand& c : adder(app, *bench)) extra.push_back(std::move(c));

  try {
    app.parse(argc, argv);
    check_output_files(app);
    tuning.apply();
    register_baselines(registry());
    if (list->parsed()) return cmd_list(list_format);
    if (gemm->parsed()) return cmd_gemm(g);
    if (bench_gemm->parsed()) return cmd_bench_gemm(b);
    if (tune->parsed()) {
      if (!cuda_available()) throw Error("parray tune measures GPU kernels: no CUDA device");
      return cmd_bench_gemm(tune_args);
    }
    for (const tools::CliCommand& c : extra)
      if (c.command->parsed()) return c.run();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (const std::string unknown = unknown_command(app, argc, argv); !unknown.empty()) what = unknown;
    else what = in_own_words(e, what);
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::fprintf(stderr, "parray: error: %s\n", what.c_str());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "parray: error: out of memory\n");
    return 2;
  } catch (const std::exception& e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    if (pa::is_located_error(what))
      std::fprintf(stderr, "%s\n", what.c_str());  // a translation error: FILE:LINE:COLUMN: error: WHAT
    else
      std::fprintf(stderr, "parray: error: %s\n", what.c_str());
    return 2;
  }
  return 2;
}
