// parray bench shapes: the default GEMM on random problems against the
// library a user would otherwise call for each, in the same run.
//
//   parray bench shapes [--device gpu|cpu] [--count N] [--seed S]
//                       [--precision fp32,tf32,bf16,fp16,fp64 (GPU) | fp32,fp64 (CPU)] [--max-extent E]
//                       [--max-gflop G] [--max-gib B] [--threads T] [--csv F]
//
// M, N and K are drawn log-uniform in [1, --max-extent] (65536), a problem
// drawn again while its operands exceed --max-gib or its product --max-gflop,
// so that the set covers vectors, thin and small products, long reductions
// and large squares alike. Each problem runs at every precision asked: on the
// GPU the default GEMM (gpu-auto) against cuBLAS's call for that precision
// (SGEMM, TF32, BF16, FP16 GemmEx; fp64: FP64 data against DGEMM), on the
// CPU parray-cpu against OpenBLAS (fp32: SGEMM, fp64: FP64 data against
// DGEMM). Without --precision: fp32, tf32, bf16 on the GPU, fp32 on the CPU.
// Every row is verified first. The summary: the worst ratio, the geometric
// mean and the ten worst problems, per precision and over all.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "harness/harness.hpp"
#include "parray/registry.hpp"

namespace parray {
namespace {

struct ShapesArgs {
  std::string device = "gpu", precisions, csv;  // precisions: empty for the device's own
  int count = 300, from = 1, threads = 0;
  std::uint64_t seed = 1;
  index_t max_extent = 65536;
  double max_gflop = 200, max_gib = 2;
};

struct Shape {
  index_t m, n, k;
};

// Log-uniform extents in [1, max_extent], drawn again while too large.
std::vector<Shape> draw_shapes(const ShapesArgs& a) {
  std::mt19937_64 rng(a.seed);
  std::uniform_real_distribution<double> u(0.0, std::log(double(a.max_extent) + 1.0));
  auto extent = [&] { return std::clamp<index_t>(index_t(std::exp(u(rng))), 1, a.max_extent); };
  std::vector<Shape> shapes;
  for (int tries = 0; int(shapes.size()) < a.count; ++tries) {
    if (tries > 1000 * a.count) throw Error("bench shapes: --max-gib / --max-gflop leave too few problems to draw");
    const Shape s{extent(), extent(), extent()};
    // Host operands, their device copies and the FP64 reference of C.
    const double gib = (8.0 * double(s.m * s.k + s.k * s.n) + 16.0 * double(s.m * s.n)) / double(1ull << 30);
    if (gib > a.max_gib || 2e-9 * double(s.m) * double(s.n) * double(s.k) > a.max_gflop) continue;
    shapes.push_back(s);
  }
  return shapes;
}

std::string baseline_for(const std::string& device, Precision p) {
  if (device == "cpu") return "openblas";
  switch (p) {
    case Precision::fp32: return "cublas";  // SGEMM
    case Precision::tf32: return "cublas-tf32";
    case Precision::bf16: return "cublas-bf16";
    case Precision::fp16: return "cublas-fp16";
    case Precision::fp64: return "cublas";  // DGEMM: the problem's data are doubles
  }
  throw Error("bench shapes: unknown precision");
}

struct Ratio {
  Shape s;
  Precision p;
  double pct;  // parray's speed in % of the baseline's
};

void print_summary(const std::string& what, std::vector<Ratio> r) {
  if (r.empty()) return;
  double log_sum = 0;
  for (const Ratio& x : r) log_sum += std::log(x.pct);
  std::sort(r.begin(), r.end(), [](const Ratio& a, const Ratio& b) { return a.pct < b.pct; });
  std::cout << fmt::format("{}: {} problems, worst {:.1f} %, geometric mean {:.1f} %, at or above 90 %: {}, 100 %: {}\n",
                           what, r.size(), r.front().pct, std::exp(log_sum / double(r.size())),
                           std::count_if(r.begin(), r.end(), [](const Ratio& x) { return x.pct >= 90; }),
                           std::count_if(r.begin(), r.end(), [](const Ratio& x) { return x.pct >= 100; }));
  for (std::size_t i = 0; i < std::min<std::size_t>(10, r.size()); ++i)
    std::cout << fmt::format("  {:>7.1f} %  M {} N {} K {} {}\n", r[i].pct, r[i].s.m, r[i].s.n, r[i].s.k,
                             precision_name(r[i].p));
}

int run_shapes(const ShapesArgs& a) {
  if (a.device != "gpu" && a.device != "cpu") throw Error("bench shapes: --device is gpu or cpu, not '" + a.device + "'");
  if (a.count < 1 || a.count > 100000) throw Error("bench shapes: --count must be in 1..100000");
  if (a.from < 1 || a.from > a.count) throw Error("bench shapes: --from must be in 1..--count");
  if (a.max_extent < 1) throw Error("bench shapes: --max-extent must be >= 1");
  if (!(a.max_gflop > 0) || !(a.max_gib > 0)) throw Error("bench shapes: --max-gflop and --max-gib must be positive");
  std::vector<Precision> precisions;
  const std::string asked = a.precisions.empty() ? (a.device == "gpu" ? "fp32,tf32,bf16" : "fp32") : a.precisions;
  for (const std::string& t : tools::split_list(asked, ',')) precisions.push_back(parse_precision(t));
  for (Precision p : precisions)
    if (a.device == "cpu" && p != Precision::fp32 && p != Precision::fp64)
      throw Error(std::string("bench shapes: the CPU suite runs fp32 and fp64 (parray-cpu has no ") +
                  precision_name(p) + " products)");
  const std::string ours = a.device == "gpu" ? "gpu-auto" : "parray-cpu";
  for (Precision p : precisions) registry().find(baseline_for(a.device, p));  // a clear error before any run
  registry().find(ours);

  const std::vector<Shape> shapes = draw_shapes(a);
  std::vector<BenchRow> all;
  std::vector<Ratio> ratios;
  std::map<Precision, std::vector<Ratio>> by_precision;
  for (std::size_t i = std::size_t(a.from - 1); i < shapes.size(); ++i) {
    for (Precision p : precisions) {
      const Shape& s = shapes[i];
      BenchOptions o;
      o.impls = {ours, baseline_for(a.device, p)};
      o.threads = {a.threads > 0 ? a.threads : 0};
      if (o.threads[0] == 0) o.threads = {int(std::max(1u, std::thread::hardware_concurrency()))};
      o.min_reps = 3, o.max_reps = 9, o.target_seconds = 0.05;
      o.progress = false;
      o.child_exe = "/proc/self/exe";
      GemmProblem g;
      g.m = s.m, g.n = s.n, g.k = s.k, g.seed = a.seed + i;
      // fp64: the problem's data are doubles (gpu-auto's FP64 GEMM against DGEMM).
      if (p == Precision::fp64)
        g.dtype = Dtype::f64;
      else
        g.precision = p;
      g.reference_on_device = a.device == "gpu";
      o.problems = {g};
      const std::vector<BenchRow> rows = run_gemm_bench(o);
      all.insert(all.end(), rows.begin(), rows.end());
      for (const BenchRow& r : rows) {
        if (r.impl != ours) continue;
        if (!r.ok()) {
          std::cout << fmt::format("M {} N {} K {} {}: {} {}\n", s.m, s.n, s.k, precision_name(p), outcome_name(r.outcome), r.note);
          continue;
        }
        const Ratio x{s, p, r.pct_best_baseline};
        std::cerr << fmt::format("[{}/{}] M {} N {} K {} {}: {:.1f} %\n", i + 1, shapes.size(), s.m, s.n, s.k,
                                 precision_name(p), x.pct);
        if (x.pct > 0) ratios.push_back(x), by_precision[p].push_back(x);
      }
      if (!a.csv.empty()) std::ofstream(a.csv) << bench_csv(all);
    }
  }
  for (const auto& [p, r] : by_precision) print_summary(std::string(precision_name(p)), r);
  if (by_precision.size() > 1) print_summary("all", ratios);
  const bool failed = std::any_of(all.begin(), all.end(), [](const BenchRow& r) { return r.outcome == Outcome::failed; });
  return failed ? 1 : 0;
}

std::vector<tools::CliCommand> add_shapes_commands(CLI::App&, CLI::App& bench) {
  auto a = std::make_shared<ShapesArgs>();
  CLI::App* c = bench.add_subcommand("shapes", "the default GEMM on random problems against cuBLAS (GPU) or OpenBLAS (CPU)");
  c->add_option("--device", a->device, "gpu or cpu")->capture_default_str();
  c->add_option("--count", a->count, "problems drawn")->capture_default_str();
  c->add_option("--from", a->from,
                "the first problem run (1-based; the draw is the same, so a run cut short goes on from here)")
      ->capture_default_str();
  c->add_option("--seed", a->seed, "seed of the draw and of the inputs")->capture_default_str();
  c->add_option("--precision", a->precisions,
                "comma list: fp32, tf32, bf16, fp16, fp64 on the GPU (default fp32,tf32,bf16), fp32, fp64 on the CPU "
                "(default fp32); fp64: FP64 data against DGEMM");
  c->add_option("--max-extent", a->max_extent, "M, N, K log-uniform in [1, this]")->capture_default_str();
  c->add_option("--max-gflop", a->max_gflop, "largest product, GFLOP")->capture_default_str();
  c->add_option("--max-gib", a->max_gib, "largest operands (host, device, FP64 reference), GiB")->capture_default_str();
  c->add_option("--threads", a->threads, "CPU threads (0: all)")->capture_default_str();
  tools::add_csv_option(*c, a->csv, "every row, as bench gemm writes them");
  return {{c, [a] { return run_shapes(*a); }}};
}

const tools::RegisterCommands registered_bench_shapes(&add_shapes_commands);

}  // namespace
}  // namespace parray
