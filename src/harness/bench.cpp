// The GEMM benchmark table: every implementation verified before it is timed,
// baselines timed in the same run by the same helper, ratios per shape.
#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "parray/config.hpp"
#include "harness/harness.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {

namespace {

TimingPlan timing_plan(const BenchOptions& o, Device device) {
  TimingPlan plan;
  plan.warmup = o.warmup, plan.min_reps = o.min_reps, plan.max_reps = o.max_reps;
  plan.target_seconds = o.target_seconds;
  // Warmed up after run_round's pause (which lets the workers sleep), for at
  // least min_warmup_seconds: the first runs after it wait for the workers.
  if (device == Device::cpu) plan.min_warmup_seconds = o.min_warmup_seconds;
  return plan;
}

double peak_gflops(const GemmImpl& impl, Dtype dtype, int threads) {
  if (impl.device == Device::cpu) return measured_cpu_peak_gflops(dtype, threads);
#if PARRAY_HAVE_CUDA
  if (dtype == Dtype::f32) return cuda::fp32_peak_gflops();
#endif
  return 0;
}


double gflops_of(const GemmProblem& p, double ms) {
  return 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) / (ms * 1e-3) * 1e-9;
}

// One (implementation, thread count) of a problem: its row, and the time it
// reported in each round it ran.
struct BenchCell {
  const GemmImpl* impl = nullptr;
  BenchRow row;
  bool timed = false;  // false: skipped, or failed its check in some round
  std::vector<double> round_ms;
};

// Baselines with their own thread pools (OpenBLAS, BLIS) are timed in a child process.
bool timed_in_child(const GemmImpl& impl, const BenchOptions& o) {
  return impl.own_process && impl.device == Device::cpu && !o.child_exe.empty();
}

// Verifies the cell's implementation against the case's reference and times
// it once (one round); on a failed check the row says why and stops timing.
void run_round(GemmCase& gcase, BenchCell& cell, const BenchOptions& o) {
  const GemmImpl& impl = *cell.impl;
  BenchRow& row = cell.row;
  // One-thread CPU rows on one CPU, the baselines' children too (they inherit
  // the pin): parray and the baselines then meet the same vCPU.
  const ScopedCpuPin pin(impl.device == Device::cpu && row.threads == 1 ? o.single_thread_cpu : -1);
  if (timed_in_child(impl, o)) {
    // Verified here against this case's reference, timed there.
    time_in_child(gcase, impl, row.threads, o, row);
    cell.timed = row.ok();
    if (row.ok()) cell.round_ms.push_back(row.ms);
    return;
  }
  CheckResult check;
  Trial trial = gcase.trial(impl, row.threads, &check);
  // OpenMP's worker threads spin for a while after a parallel region; let
  // those of the previous implementation go idle first.
  if (impl.device == Device::cpu) trial.before_timing = [] { std::this_thread::sleep_for(std::chrono::milliseconds(150)); };
  const Measurement m = verify_then_time(trial, timing_plan(o, impl.device));
  row.outcome = m.verdict.outcome;
  row.rel_err = std::max(row.rel_err, check.rel_err);
  row.max_abs_err = std::max(row.max_abs_err, check.max_abs_err);
  if (!m.verdict.passed()) {
    row.note = m.verdict.note;  // never timed: a wrong answer has no speed
    cell.timed = false;
    return;
  }
  cell.round_ms.push_back(reported_ms(m.timing, o));
}

}  // namespace

namespace {

// One problem of the table: its case (operands, reference) and its cells.
struct ProblemRun {
  GemmProblem problem;
  std::unique_ptr<GemmCase> gcase;
  std::vector<BenchCell> cells;  // in the table's order: implementation, then thread count

  std::vector<BenchCell*> group(int threads) {
    std::vector<BenchCell*> g;
    for (BenchCell& c : cells)
      if (c.row.threads == threads) g.push_back(&c);
    return g;
  }
  bool has_cpu_cell(int threads) {
    const auto g = group(threads);
    return std::any_of(g.begin(), g.end(), [](const BenchCell* c) { return c->impl->device == Device::cpu; });
  }
};

// Counts the table's steps for the progress lines.
struct Progress {
  std::size_t step = 0, steps = 0;
};

ProblemRun prepare_problem(const GemmProblem& p, const std::vector<const GemmImpl*>& impls, const BenchOptions& o,
                           Progress& progress) {
  if (o.progress)
    std::fprintf(stderr, "[bench] %s %lldx%lldx%lld %s: computing the FP64 reference\n", dtype_name(p.dtype),
                 static_cast<long long>(p.m), static_cast<long long>(p.k), static_cast<long long>(p.n),
                 p.layouts().c_str());
  ProblemRun run;
  run.problem = p;
  GemmProblem problem = p;
  problem.reference_on_device =
      std::all_of(impls.begin(), impls.end(), [](const GemmImpl* i) { return i->device == Device::gpu; });
  run.gcase = std::make_unique<GemmCase>(problem);
  if (o.on_case) o.on_case(*run.gcase);
  for (const GemmImpl* impl : impls) {
    for (int threads : o.threads) {
      // Single-threaded and GPU implementations run once, not once per thread count.
      if ((!impl->threaded || impl->device == Device::gpu) && threads != o.threads.front()) {
        progress.step += static_cast<std::size_t>(o.rounds);
        continue;
      }
      BenchCell cell;
      cell.impl = impl;
      BenchRow& row = cell.row;
      row.impl = impl->name;
      row.device = device_name(impl->device);
      row.dtype = dtype_name(p.dtype);
      row.layout = p.layouts();
      row.m = p.m, row.n = p.n, row.k = p.k;
      row.threads = impl->device == Device::cpu && impl->threaded ? threads : 1;
      cell.timed = true;
      if (std::string why = run.gcase->why_not(*impl); !why.empty()) {
        row.outcome = Outcome::skipped, row.note = why;
        cell.timed = false;
      }
      run.cells.push_back(std::move(cell));
    }
  }
  return run;
}

// The thread counts of the cells, in the order they first appear.
std::vector<int> thread_counts_of(const std::vector<BenchCell>& cells, std::vector<int> counts = {}) {
  for (const BenchCell& c : cells)
    if (std::find(counts.begin(), counts.end(), c.row.threads) == counts.end()) counts.push_back(c.row.threads);
  return counts;
}

// One round of a problem at one thread count: every cell once, the order
// reversed every other round, so that a slow spell of a shared machine falls
// on all of them alike rather than on whichever ran then.
void time_round(ProblemRun& run, int threads, int round, const BenchOptions& o, Progress& progress) {
  std::vector<BenchCell*> group = run.group(threads);
  for (std::size_t i = 0; i < group.size(); ++i) {
    BenchCell& cell = *group[round % 2 ? group.size() - 1 - i : i];
    ++progress.step;
    if (!cell.timed) continue;
    if (o.progress)
      std::fprintf(stderr, "[bench %zu/%zu] %s, %d thread(s)%s%s%s%s\n", progress.step, progress.steps,
                   cell.impl->name.c_str(), threads, timed_in_child(*cell.impl, o) ? " (in a child process)" : "",
                   cell.impl->device == Device::cpu && threads == 1 && o.single_thread_cpu >= 0
                       ? fmt::format(" on CPU {}", o.single_thread_cpu).c_str()
                       : "",
                   o.interleave_problems ? fmt::format(", {} {}x{}x{} {}", dtype_name(run.problem.dtype), run.problem.m,
                                                       run.problem.k, run.problem.n, run.problem.layouts())
                                               .c_str()
                                         : "",
                   o.rounds > 1 ? fmt::format(", round {}/{}", round + 1, o.rounds).c_str() : "");
    run_round(*run.gcase, cell, o);
  }
}

// Each round's ratio to that round's best baseline on the same device.
void round_ratios(ProblemRun& run, int threads, const BenchOptions& o) {
  std::vector<BenchCell*> group = run.group(threads);
  std::vector<std::map<std::string, double>> best_in_round(static_cast<std::size_t>(o.rounds));
  for (BenchCell* c : group)
    if (c->timed && c->impl->baseline)
      for (std::size_t r = 0; r < c->round_ms.size(); ++r) {
        double& b = best_in_round[r][c->row.device];
        b = std::max(b, gflops_of(run.problem, c->round_ms[r]));
      }
  for (BenchCell* c : group) {
    if (!c->timed) continue;
    std::vector<double> pct;
    for (std::size_t r = 0; r < c->round_ms.size(); ++r)
      if (auto it = best_in_round[r].find(c->row.device); it != best_in_round[r].end() && it->second > 0)
        pct.push_back(100.0 * gflops_of(run.problem, c->round_ms[r]) / it->second);
    if (o.rounds > 1 && !pct.empty()) {
      c->row.round_pct_min = *std::min_element(pct.begin(), pct.end());
      c->row.round_pct_max = *std::max_element(pct.begin(), pct.end());
      c->row.round_pct_median = timing_stats(pct).median_ms;
    }
  }
}

// The problem's rows, appended to the table.
void finish_rows(ProblemRun& run, const BenchOptions& o, std::vector<BenchRow>& rows) {
  const GemmProblem& p = run.problem;
  const std::size_t first_row = rows.size();
  for (BenchCell& c : run.cells) {
    BenchRow& row = c.row;
    if (c.timed) {
      row.rounds = static_cast<int>(c.round_ms.size());
      // Over the rounds, the same statistic as within one: the fastest
      // (--stat min) or the median.
      row.ms = reported_ms(timing_stats(c.round_ms), o);
      row.gflops = gflops_of(p, row.ms);
      double peak = peak_gflops(*c.impl, p.dtype, row.threads);
      if (c.impl->device == Device::cpu && row.gflops > peak) peak = cpu_peak_at_least(p.dtype, row.threads, row.gflops);
      row.pct_peak = peak > 0 ? 100.0 * row.gflops / peak : 0;
    }
    rows.push_back(row);
  }
  // % of the best baseline on the same device and thread count, same shape.
  std::map<std::pair<std::string, int>, double> best;
  for (std::size_t r = first_row; r < rows.size(); ++r) {
    const GemmImpl* impl = registry().find_or_null(rows[r].impl);
    if (impl && impl->baseline && rows[r].ok()) {
      double& b = best[{rows[r].device, rows[r].threads}];
      b = std::max(b, rows[r].gflops);
    }
  }
  for (std::size_t r = first_row; r < rows.size(); ++r) {
    auto it = best.find({rows[r].device, rows[r].threads});
    if (it != best.end() && it->second > 0 && rows[r].ok()) rows[r].pct_best_baseline = 100.0 * rows[r].gflops / it->second;
  }
}

}  // namespace

std::vector<BenchRow> run_gemm_bench(const BenchOptions& options) {
  if (options.rounds < 1) throw Error("bench: rounds must be at least 1");
  BenchOptions o = options;
  if (o.single_thread_cpu == -2) o.single_thread_cpu = default_single_thread_cpu();
  { const ScopedCpuPin check(o.single_thread_cpu); }  // a CPU this process may not use: an error before any row
  std::vector<BenchRow> rows;
  std::vector<const GemmImpl*> impls;
  for (const std::string& name : o.impls) impls.push_back(&registry().find(name));
  // Measure the CPU peaks first, before any BLAS library has started worker
  // threads that keep spinning for a while after each call and would steal
  // cycles from the measurement.
  for (const GemmProblem& p : o.problems)
    for (const GemmImpl* impl : impls)
      if (impl->device == Device::cpu)
        for (int threads : o.threads) measured_cpu_peak_gflops(p.dtype, impl->threaded ? threads : 1);
  Progress progress;
  progress.steps = o.problems.size() * impls.size() * o.threads.size() * static_cast<std::size_t>(o.rounds);
  if (!o.interleave_problems) {
    // One problem at a time: its rounds, then its rows; only one case in memory.
    for (const GemmProblem& p : o.problems) {
      ProblemRun run = prepare_problem(p, impls, o, progress);
      for (int threads : thread_counts_of(run.cells)) {
        for (int round = 0; round < o.rounds; ++round) {
          time_round(run, threads, round, o, progress);
          // The peak again, between rounds, in the same minutes as the GEMMs
          // it divides; the highest seen counts.
          if (o.rounds > 1 && run.has_cpu_cell(threads)) remeasured_cpu_peak_gflops(p.dtype, threads);
        }
        round_ratios(run, threads, o);
      }
      finish_rows(run, o, rows);
      if (o.on_rows) o.on_rows(rows);
    }
    return rows;
  }
  // Interleaved: every round goes over all the problems (the order reversed
  // every other round), so that ratios between problems — one shape in several
  // layouts — are measured in the same minutes. All cases stay in memory.
  std::vector<ProblemRun> runs;
  for (const GemmProblem& p : o.problems) runs.push_back(prepare_problem(p, impls, o, progress));
  std::vector<int> thread_counts;
  for (const ProblemRun& run : runs) thread_counts = thread_counts_of(run.cells, thread_counts);
  for (int threads : thread_counts) {
    for (int round = 0; round < o.rounds; ++round) {
      for (std::size_t i = 0; i < runs.size(); ++i)
        time_round(runs[round % 2 ? runs.size() - 1 - i : i], threads, round, o, progress);
      if (o.rounds > 1) {
        std::vector<Dtype> remeasured;
        for (ProblemRun& run : runs)
          if (run.has_cpu_cell(threads) &&
              std::find(remeasured.begin(), remeasured.end(), run.problem.dtype) == remeasured.end()) {
            remeasured_cpu_peak_gflops(run.problem.dtype, threads);
            remeasured.push_back(run.problem.dtype);
          }
      }
    }
    for (ProblemRun& run : runs) round_ratios(run, threads, o);
  }
  for (ProblemRun& run : runs) finish_rows(run, o, rows);
  if (o.on_rows) o.on_rows(rows);
  return rows;
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  std::string s =
      "impl,device,dtype,m,n,k,layout,threads,ms,gflops,pct_peak,pct_best_baseline,rounds,pct_best_round_min,"
      "pct_best_round_median,pct_best_round_max,rel_err,max_abs_err,ok,note\n";
  for (const BenchRow& r : rows)
    s += fmt::format("{},{},{},{},{},{},{},{},{:.4f},{:.2f},{:.1f},{:.1f},{},{:.1f},{:.1f},{:.1f},{:.3e},{:.3e},{},"
                     "\"{}\"\n",
                     r.impl, r.device, r.dtype, r.m, r.n, r.k, r.layout, r.threads, r.ms, r.gflops, r.pct_peak,
                     r.pct_best_baseline, r.rounds, r.round_pct_min, r.round_pct_median, r.round_pct_max, r.rel_err,
                     r.max_abs_err, r.ok() ? 1 : 0, shown_note(r.outcome, r.note));
  return s;
}

std::string bench_json(const std::vector<BenchRow>& rows) {
  std::string s = "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    std::string note;
    for (char ch : shown_note(r.outcome, r.note))
      note += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
    s += fmt::format(
        "  {{\"impl\": \"{}\", \"device\": \"{}\", \"dtype\": \"{}\", \"m\": {}, \"n\": {}, \"k\": {}, "
        "\"layout\": \"{}\", \"threads\": {}, \"ms\": {:.4f}, \"gflops\": {:.2f}, \"pct_peak\": {:.1f}, "
        "\"pct_best_baseline\": {:.1f}, \"rounds\": {}, \"pct_best_round_min\": {:.1f}, "
        "\"pct_best_round_median\": {:.1f}, \"pct_best_round_max\": {:.1f}, \"rel_err\": {:.3e}, "
        "\"max_abs_err\": {:.3e}, \"ok\": {}, \"note\": \"{}\"}}{}\n",
        r.impl, r.device, r.dtype, r.m, r.n, r.k, r.layout, r.threads, r.ms, r.gflops, r.pct_peak,
        r.pct_best_baseline, r.rounds, r.round_pct_min, r.round_pct_median, r.round_pct_max, r.rel_err,
        r.max_abs_err, r.ok() ? "true" : "false", note, i + 1 < rows.size() ? "," : "");
  }
  return s + "]\n";
}

std::string bench_table(const std::vector<BenchRow>& rows) {
  // With rounds, a last column: the ratio to the best baseline, round by
  // round, as least .. greatest (median).
  const bool rounds = std::any_of(rows.begin(), rows.end(), [](const BenchRow& r) { return r.rounds > 1; });
  std::string s = fmt::format("{:<18} {:<4} {:<4} {:>17} {:<22} {:>3} {:>10} {:>9} {:>6} {:>7} {:>9}  {}{}\n", "impl",
                              "dev", "type", "MxKxN", "layout", "thr", "ms", "GFLOP/s", "%peak", "%best", "rel_err",
                              "check", rounds ? "  %best by round" : "");
  for (const BenchRow& r : rows) {
    const std::string shape = fmt::format("{}x{}x{}", r.m, r.k, r.n);
    if (!r.note.empty() && !r.ok()) {
      s += fmt::format("{:<18} {:<4} {:<4} {:>17} {:<22} {:>3} {}\n", r.impl, r.device, r.dtype, shape, r.layout,
                       r.threads, shown_note(r.outcome, r.note));
      continue;
    }
    const std::string by_round =
        r.rounds > 1 && r.round_pct_median > 0
            ? fmt::format("     {:.1f} .. {:.1f} ({:.1f})", r.round_pct_min, r.round_pct_max, r.round_pct_median)
            : "";
    s += fmt::format("{:<18} {:<4} {:<4} {:>17} {:<22} {:>3} {:>10.3f} {:>9.2f} {:>6.1f} {:>7} {:>9.2e}  {}{}{}\n",
                     r.impl, r.device, r.dtype, shape, r.layout, r.threads, r.ms, r.gflops, r.pct_peak,
                     r.pct_best_baseline > 0 ? fmt::format("{:.1f}", r.pct_best_baseline) : "-", r.rel_err,
                     r.ok() ? "OK" : "FAIL", by_round, r.note.empty() ? "" : "  " + r.note);
  }
  return s;
}

}  // namespace parray
