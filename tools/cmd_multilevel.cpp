// `parray multilevel table2|table3`: the CUDA lab report's task 2 tables, reproduced and
// verified (include/parray/multilevel.hpp).
//
//   parray multilevel table2 [--sizes LIST] [--threads LIST] [--csv F]
//       split by rows of A; table3: split by K. End-to-end time (ms) by thread
//       count x size for the lab report's way (seed-split-*), done right on host
//       operands (ml-split-*), and the same split on device operands
//       (ml-dev-split-*) beside the single kernel (cuda-12-best), with each
//       device-resident split's time as a % of the single kernel's.
#include <iostream>

#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/config.hpp"
#include "harness/harness.hpp"
#include "parray/multilevel.hpp"

namespace {

using namespace parray;

struct MultilevelArgs {
  std::string sizes = "512,1024,2048,4096,8192", threads = "1,2,4,8", csv;
  int reps = 0;
};

int table(const MultilevelArgs& a, const std::string& split) {
  const std::string cmd = split == "rows" ? "table2" : "table3";
#if PARRAY_HAVE_CUDA
  if (!cuda_available()) throw Error("multilevel " + cmd + ": needs a GPU, and none is present");
  const std::vector<index_t> sizes = tools::whole_list(a.sizes, "--sizes", 1, index_t{1} << 16);
  const std::vector<index_t> threads = tools::whole_list(a.threads, "--threads", 1, 8);
  BenchOptions o;
  if (a.reps > 0) o.min_reps = o.max_reps = a.reps;
  std::vector<std::string> rows_order;
  for (const char* family : {"seed", "ml", "ml-dev"})
    for (index_t t : threads) {
      const std::string n = multilevel::impl_name(family, split, int(t));
      o.impls.push_back(registry().find(n).name);
      rows_order.push_back(n);
    }
  o.impls.push_back("cuda-12-best");
  rows_order.push_back("cuda-12-best");
  for (index_t n : sizes) {
    GemmProblem p;
    p.m = p.n = p.k = n;
    o.problems.push_back(p);
  }
  const std::vector<BenchRow> rows = run_gemm_bench(o);
  auto find = [&](const std::string& impl, index_t n) -> const BenchRow* {
    for (const BenchRow& r : rows)
      if (r.impl == impl && r.m == n) return &r;
    return nullptr;
  };
  std::string head = fmt::format("{:<22}", "implementation");
  for (index_t n : sizes) head += fmt::format(" {:>17}", n);
  std::cout << "The CUDA lab report " << (split == "rows" ? "table 2: split by rows of A" : "table 3: split by K")
            << ", end-to-end ms (ml-dev: % of the single kernel cuda-12-best)\n"
            << head << "\n";
  std::string csv = "impl,split,threads,size,ms,gflops,pct_of_single_kernel,rel_err,ok\n";
  int status = 0;
  for (const std::string& name : rows_order) {
    std::string line = fmt::format("{:<22}", name);
    for (index_t n : sizes) {
      const BenchRow* r = find(name, n);
      const BenchRow* single = find("cuda-12-best", n);
      if (!r) {
        line += fmt::format(" {:>17}", "-");
        continue;
      }
      if (!r->ok()) status = 1;
      const double pct = single && single->ok() && r->ms > 0 ? 100.0 * r->ms / single->ms : 0.0;
      if (!r->ok()) line += fmt::format(" {:>17}", "FAILED");
      else if (name.rfind("ml-dev", 0) == 0) line += fmt::format(" {:>9.3f} ({:>4.0f}%)", r->ms, pct);
      else line += fmt::format(" {:>17.3f}", r->ms);
      const auto tpos = name.rfind("-t");
      const std::string t = tpos == std::string::npos || name == "cuda-12-best" ? "1" : name.substr(tpos + 2);
      csv += fmt::format("{},{},{},{},{:.4f},{:.2f},{:.1f},{:.3e},{}\n", name, split, t, n, r->ms, r->gflops, pct,
                         r->rel_err, r->ok() ? 1 : 0);
      if (!r->ok()) std::cerr << "multilevel: " << name << " " << n << " failed: " << r->note << "\n";
    }
    std::cout << line << "\n";
  }
  tools::write_output(a.csv, csv, "multilevel");
  return status;
#else
  (void)a;
  throw Error("multilevel " + cmd + ": needs a GPU, and parray was built without CUDA");
#endif
}

std::vector<tools::CliCommand> add_multilevel_commands(CLI::App& app, CLI::App&) {
  static MultilevelArgs args;
  CLI::App* ml = app.add_subcommand("multilevel", "task 2 of the CUDA lab report: CPU threads driving the GPU (tables 2 and 3)");
  ml->require_subcommand(1);
  std::vector<tools::CliCommand> out;
  for (const char* which : {"table2", "table3"}) {
    const std::string split = std::string(which) == "table2" ? "rows" : "k";
    CLI::App* t = ml->add_subcommand(which, split == "rows" ? "split by rows of A, ms by threads x size"
                                                            : "split by K, ms by threads x size");
    t->add_option("--sizes", args.sizes, "square sizes")->capture_default_str();
    t->add_option("--threads", args.threads, "thread counts (1..8)")->capture_default_str();
    t->add_option("--csv", args.csv, "write the table as CSV");
    t->add_option("--reps", args.reps, "timed repeats (default: adaptive)");
    out.push_back({t, [split] { return table(args, split); }});
  }
  return out;
}

const parray::tools::RegisterCommands registered_multilevel(&add_multilevel_commands);

}  // namespace
