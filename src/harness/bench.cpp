// The GEMM benchmark table: every implementation verified before it is timed,
// baselines timed in the same run by the same helper, ratios per shape.
#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "parray/config.hpp"
#include "parray/harness.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {

namespace {

TimingStats measure(GemmCase& gcase, const GemmImpl& impl, int threads, const BenchOptions& o) {
  auto run = [&] { gcase.run(impl, threads); };
#if PARRAY_HAVE_CUDA
  if (impl.device == Device::gpu) {
    // GPU time from CUDA events around each call; median of the repeats.
    for (int w = 0; w < o.warmup; ++w) run();
    cuda::synchronize();
    std::vector<double> ms;
    double total = 0;
    while (static_cast<int>(ms.size()) < o.max_reps &&
           (static_cast<int>(ms.size()) < o.min_reps || total < o.target_seconds * 1e3)) {
      ms.push_back(cuda::event_time_ms(run));
      total += ms.back();
    }
    std::sort(ms.begin(), ms.end());
    TimingStats s;
    s.reps = static_cast<int>(ms.size());
    s.min_ms = ms.front();
    s.max_ms = ms.back();
    s.median_ms = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    return s;
  }
#endif
  // The verified run just before served as one warm-up already.
  return time_repeated(run, std::max(0, o.warmup - 1), o.min_reps, o.max_reps, o.target_seconds);
}

double peak_gflops(const GemmImpl& impl, Dtype dtype, int threads) {
  if (impl.device == Device::cpu) return measured_cpu_peak_gflops(dtype, threads);
#if PARRAY_HAVE_CUDA
  if (dtype == Dtype::f32) return cuda::fp32_peak_gflops();
#endif
  return 0;
}

}  // namespace

std::vector<BenchRow> run_gemm_bench(const BenchOptions& o) {
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
  std::size_t step = 0;
  const std::size_t steps = o.problems.size() * impls.size() * o.threads.size();
  for (const GemmProblem& p : o.problems) {
    const std::size_t first_row = rows.size();
    if (o.progress)
      std::fprintf(stderr, "[bench] %s %lldx%lldx%lld %s: computing the FP64 reference\n", dtype_name(p.dtype),
                   static_cast<long long>(p.m), static_cast<long long>(p.k), static_cast<long long>(p.n),
                   p.layouts().c_str());
    GemmProblem problem = p;
    problem.reference_on_device = std::all_of(impls.begin(), impls.end(),
                                              [](const GemmImpl* i) { return i->device == Device::gpu; });
    GemmCase gcase(problem);
    for (const GemmImpl* impl : impls) {
      for (int threads : o.threads) {
        ++step;
        BenchRow row;
        row.impl = impl->name;
        row.device = device_name(impl->device);
        row.dtype = dtype_name(p.dtype);
        row.layout = p.layouts();
        row.m = p.m, row.n = p.n, row.k = p.k;
        row.threads = impl->device == Device::cpu ? threads : 1;
        // Single-threaded and GPU implementations run once, not once per thread count.
        if ((!impl->threaded || impl->device == Device::gpu) && threads != o.threads.front()) continue;
        if (!impl->threaded && impl->device == Device::cpu) row.threads = 1;
        if (std::string why = gcase.why_not(*impl); !why.empty()) {
          row.note = "skipped: " + why;
          rows.push_back(row);
          continue;
        }
        const bool in_child = impl->own_process && impl->device == Device::cpu && !o.child_exe.empty();
        if (o.progress)
          std::fprintf(stderr, "[bench %zu/%zu] %s, %d thread(s)%s\n", step, steps, impl->name.c_str(), row.threads,
                       in_child ? " (in a child process)" : "");
        if (in_child) {
          // Verified here against this case's reference, timed there.
          time_in_child(gcase, *impl, row.threads, o, row);
          if (!row.ok) {
            rows.push_back(row);
            continue;
          }
        } else {
          const CheckResult check = gcase.run_and_check(*impl, row.threads);
          row.ok = check.ok;
          row.rel_err = check.rel_err;
          row.max_abs_err = check.max_abs_err;
          if (!check.ok) {
            row.note = "FAILED: " + check.reason;  // never timed: a wrong answer has no speed
            rows.push_back(row);
            continue;
          }
          // OpenMP's worker threads spin for a while after a parallel
          // region; let those of the previous implementation go idle first.
          if (impl->device == Device::cpu) std::this_thread::sleep_for(std::chrono::milliseconds(150));
          row.ms = reported_ms(measure(gcase, *impl, row.threads, o), o);
        }
        row.gflops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) /
                     (row.ms * 1e-3) * 1e-9;
        const double peak = peak_gflops(*impl, p.dtype, row.threads);
        row.pct_peak = peak > 0 ? 100.0 * row.gflops / peak : 0;
        rows.push_back(row);
      }
    }
    // % of the best baseline on the same device and thread count, same shape.
    std::map<std::pair<std::string, int>, double> best;
    for (std::size_t r = first_row; r < rows.size(); ++r) {
      const GemmImpl* impl = registry().find_or_null(rows[r].impl);
      if (impl && impl->baseline && rows[r].ok) {
        double& b = best[{rows[r].device, rows[r].threads}];
        b = std::max(b, rows[r].gflops);
      }
    }
    for (std::size_t r = first_row; r < rows.size(); ++r) {
      auto it = best.find({rows[r].device, rows[r].threads});
      if (it != best.end() && it->second > 0 && rows[r].ok) rows[r].pct_best_baseline = 100.0 * rows[r].gflops / it->second;
    }
  }
  return rows;
}

std::string bench_csv(const std::vector<BenchRow>& rows) {
  std::string s = "impl,device,dtype,m,n,k,layout,threads,ms,gflops,pct_peak,pct_best_baseline,rel_err,max_abs_err,ok,note\n";
  for (const BenchRow& r : rows)
    s += fmt::format("{},{},{},{},{},{},{},{},{:.4f},{:.2f},{:.1f},{:.1f},{:.3e},{:.3e},{},\"{}\"\n", r.impl, r.device,
                     r.dtype, r.m, r.n, r.k, r.layout, r.threads, r.ms, r.gflops, r.pct_peak, r.pct_best_baseline,
                     r.rel_err, r.max_abs_err, r.ok ? 1 : 0, r.note);
  return s;
}

std::string bench_json(const std::vector<BenchRow>& rows) {
  std::string s = "[\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const BenchRow& r = rows[i];
    std::string note;
    for (char ch : r.note) note += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
    s += fmt::format(
        "  {{\"impl\": \"{}\", \"device\": \"{}\", \"dtype\": \"{}\", \"m\": {}, \"n\": {}, \"k\": {}, "
        "\"layout\": \"{}\", \"threads\": {}, \"ms\": {:.4f}, \"gflops\": {:.2f}, \"pct_peak\": {:.1f}, "
        "\"pct_best_baseline\": {:.1f}, \"rel_err\": {:.3e}, \"max_abs_err\": {:.3e}, \"ok\": {}, \"note\": \"{}\"}}{}\n",
        r.impl, r.device, r.dtype, r.m, r.n, r.k, r.layout, r.threads, r.ms, r.gflops, r.pct_peak,
        r.pct_best_baseline, r.rel_err, r.max_abs_err, r.ok ? "true" : "false", note, i + 1 < rows.size() ? "," : "");
  }
  return s + "]\n";
}

std::string bench_table(const std::vector<BenchRow>& rows) {
  std::string s = fmt::format("{:<18} {:<4} {:<4} {:>17} {:<22} {:>3} {:>10} {:>9} {:>6} {:>7} {:>9}  {}\n", "impl",
                              "dev", "type", "MxKxN", "layout", "thr", "ms", "GFLOP/s", "%peak", "%best", "rel_err",
                              "check");
  for (const BenchRow& r : rows) {
    const std::string shape = fmt::format("{}x{}x{}", r.m, r.k, r.n);
    if (!r.note.empty() && !r.ok) {
      s += fmt::format("{:<18} {:<4} {:<4} {:>17} {:<22} {:>3} {}\n", r.impl, r.device, r.dtype, shape, r.layout,
                       r.threads, r.note);
      continue;
    }
    s += fmt::format("{:<18} {:<4} {:<4} {:>17} {:<22} {:>3} {:>10.3f} {:>9.2f} {:>6.1f} {:>7} {:>9.2e}  {}\n", r.impl,
                     r.device, r.dtype, shape, r.layout, r.threads, r.ms, r.gflops, r.pct_peak,
                     r.pct_best_baseline > 0 ? fmt::format("{:.1f}", r.pct_best_baseline) : "-", r.rel_err,
                     r.ok ? "OK" : "FAIL");
  }
  return s;
}

}  // namespace parray
