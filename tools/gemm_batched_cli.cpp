// `parray gemm --batch B` (gemm_batched_cli.hpp): B row-major products packed
// one after another (batch strides M K, K N, M N; with --broadcast-b one B,
// stride 0), random inputs in [-1, 1),
// C poisoned with NaN where beta is 0; every product's FP64 reference; the
// batch run once and checked (relative Frobenius error over the stack, at the
// tolerance of the precision delivered; NaN never passes), then timed (CUDA
// events for a GPU implementation).
#include "gemm_batched_cli.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "cli_util.hpp"
#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/gemm_batched.hpp"
#include "parray/gemm_check.hpp"
#include "harness/harness.hpp"
#include "parray/measure.hpp"
#include "parray/registry.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray::tools {

namespace {

template <class T>
struct Stack {
  index_t batch, rows, cols;
  std::vector<T> host;
  std::unique_ptr<Array<T>> device;  // the same elements in device memory, for a GPU implementation
  index_t stride() const { return rows * cols; }
  std::size_t bytes() const { return host.size() * sizeof(T); }
  void to_device() {
    device = std::make_unique<Array<T>>(Layout::dense({std::max<index_t>(batch * rows, 1), std::max<index_t>(cols, 1)}),
                                        Memory::device);
    copy_bytes(device->data(), Memory::device, host.data(), Memory::paged, bytes());
  }
};

template <class T>
Stack<T> random_stack(index_t batch, index_t rows, index_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Stack<T> s{batch, rows, cols, std::vector<T>(std::size_t(batch * rows * cols)), nullptr};
  for (T& x : s.host) x = T(u(rng));
  return s;
}

// One problem's stacks and the FP64 reference of every product, shared by
// every implementation measured on it (device copies made on first need).
template <class T>
struct BatchData {
  BatchedGemmArgs args;
  Stack<T> a, b, c0, c;
  std::vector<double> ref;

  explicit BatchData(const BatchedGemmArgs& x) : args(x) {
    std::mt19937_64 rng(x.seed);
    a = random_stack<T>(x.batch, x.m, x.k, rng), b = random_stack<T>(x.broadcast_b ? 1 : x.batch, x.k, x.n, rng);
    c0 = random_stack<T>(x.batch, x.m, x.n, rng);
    if (x.beta == 0) std::fill(c0.host.begin(), c0.host.end(), std::numeric_limits<T>::quiet_NaN());  // not read
    c = Stack<T>{x.batch, x.m, x.n, c0.host, nullptr};
    ref.resize(c.host.size());
#pragma omp parallel for schedule(static)
    for (index_t row = 0; row < x.batch * x.m; ++row) {
      const index_t q = row / std::max<index_t>(x.m, 1);
      const T* ar = a.host.data() + row * x.k;
      const T* bq = b.host.data() + (x.broadcast_b ? 0 : q * x.k * x.n);
      for (index_t j = 0; j < x.n; ++j) {
        double s = 0;
        for (index_t p = 0; p < x.k; ++p) s += double(ar[p]) * double(bq[p * x.n + j]);
        const std::size_t at = std::size_t(row * x.n + j);
        ref[at] = x.alpha * s + (x.beta == 0 ? 0.0 : x.beta * double(c0.host[at]));
      }
    }
  }
  void to_device() {
    if (!a.device) a.to_device(), b.to_device(), c.to_device(), c0.to_device();
  }
};

struct BatchResult {
  Measurement m;
  Precision delivered = Precision::fp32;
  double rel_err = 0, tolerance = 0;
};

// The batch through `impl`: run once and checked (NaN never passes), then
// timed (CUDA events on the GPU).
template <class T>
BatchResult measure_batch(BatchData<T>& d, const GemmImpl& impl, int threads, int reps) {
  const BatchedGemmArgs& a = d.args;
  const bool on_device = impl.operand_memory == Memory::device;
  if (on_device) d.to_device();
  GemmOptions o;
  o.impl = impl.name, o.threads = threads, o.precision = a.precision;
  BatchResult r;
  r.delivered = impl.delivers(dtype_of<T>(), a.precision);
  r.tolerance = gemm_tolerance(dtype_of<T>(), a.k, r.delivered);
  Stack<T>& sc = d.c;
  const auto data = [on_device](Stack<T>& s) { return on_device ? s.device->data() : s.host.data(); };
  const auto view = [&](Stack<T>& s) {
    return MatrixView<T>{data(s), MatrixLayout::row_major(s.rows, s.cols, std::max<index_t>(s.cols, 1)),
                         on_device ? Memory::device : Memory::paged};
  };
  Trial t;
  t.reset = [&] {
    if (on_device) copy_bytes(data(sc), Memory::device, data(d.c0), Memory::device, sc.bytes());
    else sc.host = d.c0.host;
  };
  t.run = [&] {
    gemm_batched<T>(a.batch, T(a.alpha), MatrixView<const T>(view(d.a)), MatrixView<const T>(view(d.b)), T(a.beta),
                    view(sc), {d.a.stride(), a.broadcast_b ? 0 : d.b.stride(), sc.stride()}, o);
  };
#if PARRAY_HAVE_CUDA
  if (on_device) {
    t.finish = [] { cuda::synchronize(); };
    t.time_one = [run = t.run] { return cuda::event_time_ms(run); };
  }
#endif
  t.check = [&]() -> Verdict {
    std::vector<T> got(sc.host.size());
    if (on_device) copy_bytes(got.data(), Memory::paged, data(sc), Memory::device, sc.bytes());
    else got = sc.host;
    double err2 = 0, ref2 = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(double(got[i])))
        return {Outcome::failed, INFINITY, fmt::format("element {} of the stack is {} (NaN/Inf never passes)", i,
                                                       double(got[i]))};
      const double diff = double(got[i]) - d.ref[i];
      err2 += diff * diff, ref2 += d.ref[i] * d.ref[i];
    }
    r.rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    if (r.rel_err > r.tolerance)
      return {Outcome::failed, r.rel_err,
              fmt::format("relative error {:.3e} above tolerance {:.3e}", r.rel_err, r.tolerance)};
    return {Outcome::passed, r.rel_err, ""};
  };
  TimingPlan plan;
  if (reps > 0) plan.min_reps = plan.max_reps = reps;
  // As bench gemm's CPU rows: the warm-up lasts long enough for the workers to
  // wake (on a VM an idle vCPU takes milliseconds to, longer than a small batch).
  if (!on_device) plan.min_warmup_seconds = BenchOptions{}.min_warmup_seconds;
  r.m = verify_then_time(t, plan);
  return r;
}

void check_room(const BatchedGemmArgs& a) {
  if (a.batch < 1) throw Error("--batch must be >= 1");
  const double elem = a.dtype == Dtype::f32 ? 4.0 : 8.0;
  const double per = double(a.m) * double(a.k) + double(a.k) * double(a.n) + 2.0 * double(a.m) * double(a.n);
  check_host_memory(double(a.batch) * (elem * per + 8.0 * double(a.m) * double(a.n)),
                    fmt::format("a batch of {} {}x{}x{} products", a.batch, a.m, a.k, a.n));
}

template <class T>
int run_typed(const BatchedGemmArgs& a, const GemmImpl& impl) {
  BatchData<T> d(a);
  const BatchResult r = measure_batch(d, impl, a.threads, a.reps);
  const bool on_device = impl.operand_memory == Memory::device;
  const int threads = a.threads > 0 ? a.threads : omp_get_max_threads();
  std::cout << fmt::format("{} ({}) {} batch of {}: C[{}x{}] = A[{}x{}] * B[{}x{}]{}, row-major, alpha {}, beta {}, "
                           "{} thread(s)\n",
                           impl.name, on_device ? "gpu" : "cpu", dtype_name(dtype_of<T>()), a.batch, a.m, a.n, a.m, a.k,
                           a.k, a.n, a.broadcast_b ? " (one B)" : "", a.alpha, a.beta, threads);
  if (!r.m.verdict.passed()) {
    std::cout << "check FAILED: " << r.m.verdict.note << "\n";
    return 1;
  }
  const double flops = 2.0 * double(a.batch) * double(a.m) * double(a.n) * double(a.k);
  const double ms = r.m.timing.median_ms;
  std::cout << fmt::format("time {:.4f} ms (median), {:.2f} GFLOP/s\n", ms, ms > 0 ? flops / (ms * 1e6) : 0.0);
  std::cout << fmt::format("check OK: rel_err {:.3e} (tolerance {:.3e})\n", r.rel_err, r.tolerance);
  return 0;
}

// The rows of one problem: every implementation in turn on the same stacks,
// each against the fastest baseline that passed.
template <class T>
bool bench_typed(const BatchedBenchArgs& b, const BatchedGemmArgs& a, std::string& csv) {
  BatchData<T> d(a);
  struct Row {
    const GemmImpl* impl = nullptr;
    BatchResult r;
    std::string note;  // why it did not run, or its failed check
  };
  std::vector<Row> rows;
  double best_baseline_ms = 0;
  for (const std::string& name : b.impls) {
    const GemmImpl& impl = registry().find(name);
    Row row;
    row.impl = &impl;
    row.note = precision_shortfall(impl, dtype_of<T>(), a.precision);
    if (row.note.empty() && !impl.supports(dtype_of<T>())) row.note = "no " + std::string(dtype_name(dtype_of<T>()));
    if (row.note.empty() && impl.operand_memory == Memory::device && !cuda_available()) row.note = "no CUDA device";
    // Its thread pool would share this process with parray's (bench gemm
    // without --batch runs it in a child process).
    if (row.note.empty() && impl.own_process) row.note = "timed only in a process of its own: not with --batch";
    if (row.note.empty()) {
      row.r = measure_batch(d, impl, b.threads, b.reps);
      if (!row.r.m.verdict.passed()) row.note = "check FAILED: " + row.r.m.verdict.note;
      else if (impl.baseline && (best_baseline_ms == 0 || row.r.m.timing.median_ms < best_baseline_ms))
        best_baseline_ms = row.r.m.timing.median_ms;
    }
    rows.push_back(row);
  }
  bool all_passed = true;
  const double flops = 2.0 * double(a.batch) * double(a.m) * double(a.n) * double(a.k);
  for (const Row& row : rows) {
    const bool ran = row.note.empty();
    all_passed = all_passed && (ran || row.note.rfind("check FAILED", 0) != 0);
    const double ms = ran ? row.r.m.timing.median_ms : 0;
    csv += fmt::format("{},{},{},{},{},{},{},{},{},{:.5f},{:.1f},{:.1f},{:.2e},{},\"{}\"\n", dtype_name(dtype_of<T>()),
                       a.precision ? precision_name(*a.precision) : "default", a.batch, a.broadcast_b ? 1 : 0, a.m, a.k,
                       a.n, row.impl->name,
                       precision_name(row.r.delivered), ms, ms > 0 ? flops / (ms * 1e6) : 0.0,
                       ms > 0 && best_baseline_ms > 0 ? 100.0 * best_baseline_ms / ms : 0.0, row.r.rel_err,
                       ran ? 1 : 0, row.note);
  }
  return all_passed;
}

}  // namespace

int run_batched_gemm(const BatchedGemmArgs& a) {
  check_room(a);
  const GemmImpl& impl = registry().find(a.impl);
  if (!impl.supports(a.dtype))
    throw Error("implementation '" + impl.name + "' does not support " + dtype_name(a.dtype));
  return a.dtype == Dtype::f32 ? run_typed<float>(a, impl) : run_typed<double>(a, impl);
}

int run_batched_bench(const BatchedBenchArgs& b) {
  if (b.impls.empty()) throw Error("bench gemm --batch: no implementation to run");
  for (const std::string& name : b.impls) registry().find(name);  // an unknown name fails before any work
  std::string csv =
      "dtype,precision,batch,broadcast_b,m,k,n,impl,delivers,ms,gflops,pct_best_baseline,rel_err,ok,note\n";
  bool all_passed = true;
  for (const BatchedGemmArgs& a : b.problems) {
    check_room(a);
    all_passed = (a.dtype == Dtype::f32 ? bench_typed<float>(b, a, csv) : bench_typed<double>(b, a, csv)) && all_passed;
    if (!b.csv.empty()) std::ofstream(b.csv) << csv;  // a run cut short keeps the problems it finished
  }
  std::cout << csv;
  return all_passed ? 0 : 1;
}

}  // namespace parray::tools
