// `parray bench gemv`: every GEMV implementation verified against an FP64
// reference, then timed by the one timing helper, with the copy bandwidth of
// the same memory measured in the same run (GB/s counting bytes read + written).
//
// Verification: A and x uniform in [-1, 1), y poisoned with NaN when beta == 0
// (and A's padding too, so unwritten outputs and out-of-matrix reads show);
// passes when no NaN/Inf and ||y - y_ref||_2 / ||y_ref||_2 <= 4 u (sqrt(N) + 4).
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "parray/array.hpp"
#include "parray/config.hpp"
#include "harness/harness.hpp"
#include "harness/knn_bench.hpp"
#include "parray/named_layouts.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {

double gemv_tolerance(Dtype dtype, index_t n) {
  const double u = dtype == Dtype::f32 ? 0x1p-24 : 0x1p-53;
  return 4 * u * (std::sqrt(double(n)) + 4);
}

namespace {

template <class T>
struct GemvOperands {
  MatrixType type;
  Array<T> a_host;
  std::vector<T> x, y0;
  std::vector<double> ref;
  // device copies, made once when a GPU implementation needs them
  std::unique_ptr<Array<T>> a_dev;
  std::unique_ptr<Array<T>> x_dev, y_dev;

  GemvOperands(const std::string& layout, index_t m, index_t n, double alpha, double beta, std::uint64_t seed)
      : type(make_matrix_type(layout, m, n)), a_host(type.storage) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (index_t i = 0; i < a_host.storage_elements(); ++i) a_host[i] = std::numeric_limits<T>::quiet_NaN();
    MatrixView<T> a = a_host.view(type.view);
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) a(i, j) = T(u(rng));
    x.resize(size_t(n));
    y0.resize(size_t(m));
    for (T& v : x) v = T(u(rng));
    for (T& v : y0) v = beta == 0 ? std::numeric_limits<T>::quiet_NaN() : T(u(rng));
    ref.assign(size_t(m), 0.0);
#pragma omp parallel for schedule(static)
    for (index_t i = 0; i < m; ++i) {
      double s = 0;
      for (index_t j = 0; j < n; ++j) s += double(a(i, j)) * double(x[size_t(j)]);
      ref[size_t(i)] = alpha * s + (beta == 0 ? 0.0 : beta * double(y0[size_t(i)]));
    }
  }
  void to_device() {
    if (a_dev) return;
    a_dev = std::make_unique<Array<T>>(type.storage, Memory::device);
    copy_bytes(a_dev->data(), Memory::device, a_host.data(), Memory::paged, size_t(a_host.storage_elements()) * sizeof(T));
    x_dev = std::make_unique<Array<T>>(Layout::dense({index_t(x.size())}), Memory::device);
    y_dev = std::make_unique<Array<T>>(Layout::dense({index_t(y0.size())}), Memory::device);
    copy_bytes(x_dev->data(), Memory::device, x.data(), Memory::paged, x.size() * sizeof(T));
  }
};

void sync_if(bool gpu) {
#if PARRAY_HAVE_CUDA
  if (gpu) cuda::synchronize();
#else
  (void)gpu;
#endif
}

template <class T>
double copy_bandwidth(bool gpu, index_t elements, int threads, const GemvBenchOptions& o) {
  const std::size_t bytes = size_t(elements) * sizeof(T);
  if (gpu) {
    Array<T> s(Layout::dense({elements}), Memory::device), d(Layout::dense({elements}), Memory::device);
    const TimingStats t = time_repeated([&] { copy_bytes(d.data(), Memory::device, s.data(), Memory::device, bytes); },
                                        2, o.min_reps, o.max_reps, o.target_seconds, [] { sync_if(true); });
    return 2.0 * double(bytes) / (t.median_ms * 1e6);
  }
  std::vector<T> s(static_cast<std::size_t>(elements), T(1)), d(static_cast<std::size_t>(elements));
  const TimingStats t = time_repeated(
      [&] {
        const index_t chunk = 1 << 16;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (index_t i = 0; i < elements; i += chunk)
          std::memcpy(d.data() + i, s.data() + i, size_t(std::min(chunk, elements - i)) * sizeof(T));
      },
      1, o.min_reps, o.max_reps, o.target_seconds);
  return 2.0 * double(bytes) / (t.median_ms * 1e6);
}

// Copy bandwidths measured once per device and thread count (GB/s), the
// yardstick of a problem's rows.
template <class T>
struct CopyBandwidths {
  std::vector<std::pair<int, double>> cpu;  // threads -> GB/s
  double gpu = 0;
  double of(bool on_gpu, index_t elements, int threads, const GemvBenchOptions& o) {
    if (on_gpu) return gpu > 0 ? gpu : gpu = copy_bandwidth<T>(true, elements, 1, o);
    for (auto& [tc, bw] : cpu)
      if (tc == threads) return bw;
    cpu.emplace_back(threads, copy_bandwidth<T>(false, elements, threads, o));
    return cpu.back().second;
  }
};

// Why a row cannot run here, or "".
template <class T>
std::string gemv_skip_reason(const GemvImpl& impl, const GemvOperands<T>& ops) {
  if (!impl.supports(dtype_of<T>())) return std::string("no ") + dtype_name(dtype_of<T>());
  if (impl.operand_memory == Memory::device && !cuda_available()) return "no CUDA device";
  return impl.why_not(ops.type.view.rank() == 2 ? MatrixLayout::from(ops.type.view) : MatrixLayout{});
}

// y's relative 2-norm error against the FP64 reference; NaN/Inf never passes.
template <class T>
Verdict check_y(const std::vector<T>& y, const std::vector<double>& ref, index_t n) {
  double num = 0, den = 0;
  bool finite = true;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double v = double(y[i]);
    finite = finite && std::isfinite(v);
    num += (v - ref[i]) * (v - ref[i]);
    den += ref[i] * ref[i];
  }
  Verdict v;
  v.error = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  const double tol = gemv_tolerance(dtype_of<T>(), n);
  v.outcome = finite && v.error <= tol ? Outcome::passed : Outcome::failed;
  if (!finite) v.note = "NaN/Inf in y";
  else if (!v.passed()) v.note = fmt::format("rel_err {:.3e} > tolerance {:.3e}", v.error, tol);
  return v;
}

// One GEMV row measured: y restored, one call checked, then the timed calls
// (each restoring y first when beta != 0, which keeps it bounded).
template <class T>
void measure_gemv(const GemvImpl& impl, GemvOperands<T>& ops, const GemvBenchOptions& o, GemvBenchRow& r) {
  const bool gpu = impl.operand_memory == Memory::device;
  std::vector<T> y(ops.y0);
  MatrixView<const T> a = ops.a_host.view(ops.type.view);
  const T* x = ops.x.data();
  T* yp = y.data();
  if (gpu) {
    ops.to_device();
    a = ops.a_dev->view(ops.type.view), x = ops.x_dev->data(), yp = ops.y_dev->data();
  }
  auto reset_y = [&] {
    if (gpu) copy_bytes(yp, Memory::device, ops.y0.data(), Memory::paged, ops.y0.size() * sizeof(T));
    else std::copy(ops.y0.begin(), ops.y0.end(), y.begin());
  };
  const GemvOptions go{impl.name, r.threads};
  Trial t;
  t.reset = reset_y;
  t.run = [&] {
    if (o.beta != 0) reset_y();
    gemv<T>(T(o.alpha), a, x, T(o.beta), yp, go);
  };
  t.finish = [gpu] { sync_if(gpu); };
  t.check = [&] {
    if (gpu) copy_bytes(y.data(), Memory::paged, yp, Memory::device, y.size() * sizeof(T));
    return check_y(y, ops.ref, r.n);
  };
  TimingPlan plan;
  plan.warmup = 2, plan.min_reps = o.min_reps, plan.max_reps = o.max_reps, plan.target_seconds = o.target_seconds;
  const Measurement m = verify_then_time(t, plan);
  r.outcome = m.verdict.outcome, r.rel_err = m.verdict.error, r.note = m.verdict.note;
  r.ms = m.timing.median_ms;
}

template <class T>
void bench_problem(const GemvBenchOptions& o, const std::string& layout, index_t m, index_t n,
                   std::vector<GemvBenchRow>& rows) {
  GemvOperands<T> ops(layout, m, n, o.alpha, o.beta, 42 + std::uint64_t(m) * 7 + std::uint64_t(n));
  const double bytes = (double(m) * double(n) + double(n) + double(m) * (o.beta == 0 ? 1 : 2)) * sizeof(T);
  CopyBandwidths<T> copy;
  const std::size_t first = rows.size();
  for (const std::string& name : o.impls) {
    const GemvImpl& impl = gemv_registry().find(name);
    for (int threads : impl.threaded ? o.threads : std::vector<int>{1}) {
      GemvBenchRow r;
      r.impl = impl.name, r.device = device_name(impl.device), r.dtype = dtype_name(dtype_of<T>()), r.layout = layout;
      r.m = m, r.n = n, r.threads = threads;
      if (std::string why = gemv_skip_reason(impl, ops); !why.empty()) {
        r.outcome = Outcome::skipped, r.note = why;
      } else {
        if (o.progress)
          std::fprintf(stderr, "[gemv] %s %s %s %lldx%lld t=%d\n", r.impl.c_str(), r.dtype.c_str(), layout.c_str(),
                       (long long)m, (long long)n, threads);
        measure_gemv(impl, ops, o, r);
      }
      if (r.ok()) {
        r.gbps = bytes / (r.ms * 1e6);
        r.copy_gbps = copy.of(impl.operand_memory == Memory::device, m * n, threads, o);
        r.pct_copy = 100.0 * r.gbps / r.copy_gbps;
      }
      rows.push_back(r);
    }
  }
  // % of the best baseline of the same device and thread count
  for (std::size_t i = first; i < rows.size(); ++i) {
    double best = 0;
    for (std::size_t j = first; j < rows.size(); ++j) {
      const GemvImpl* b = gemv_registry().find_or_null(rows[j].impl);
      if (b && b->baseline && rows[j].ok() && rows[j].device == rows[i].device && rows[j].threads == rows[i].threads)
        best = std::max(best, rows[j].gbps);
    }
    if (best > 0 && rows[i].ok()) rows[i].pct_best_baseline = 100.0 * rows[i].gbps / best;
  }
}

}  // namespace

std::vector<GemvBenchRow> run_gemv_bench(const GemvBenchOptions& o) {
  std::vector<GemvBenchRow> rows;
  for (Dtype dt : o.dtypes)
    for (const auto& [m, n] : o.shapes)
      for (const std::string& l : o.layouts) {
        if (dt == Dtype::f32) bench_problem<float>(o, l, m, n, rows);
        else bench_problem<double>(o, l, m, n, rows);
      }
  return rows;
}

std::string gemv_bench_csv(const std::vector<GemvBenchRow>& rows) {
  std::string s = "impl,device,dtype,layout,m,n,threads,ms,gbps,copy_gbps,pct_copy,pct_best_baseline,rel_err,ok,note\n";
  for (const GemvBenchRow& r : rows)
    s += fmt::format("{},{},{},{},{},{},{},{:.5f},{:.2f},{:.2f},{:.1f},{:.1f},{:.3e},{},\"{}\"\n", r.impl, r.device,
                     r.dtype, r.layout, r.m, r.n, r.threads, r.ms, r.gbps, r.copy_gbps, r.pct_copy,
                     r.pct_best_baseline, r.rel_err, r.ok() ? 1 : 0, shown_note(r.outcome, r.note));
  return s;
}

std::string gemv_bench_table(const std::vector<GemvBenchRow>& rows) {
  std::string s = fmt::format("{:<18} {:<4} {:<4} {:<7} {:>13} {:>3} {:>10} {:>9} {:>7} {:>7} {:>10}  {}\n", "impl",
                              "dev", "type", "layout", "MxN", "thr", "ms", "GB/s", "%copy", "%base", "rel_err", "note");
  for (const GemvBenchRow& r : rows)
    s += fmt::format("{:<18} {:<4} {:<4} {:<7} {:>13} {:>3} {:>10.4f} {:>9.1f} {:>7.1f} {:>7.1f} {:>10.2e}  {}\n",
                     r.impl, r.device, r.dtype, r.layout, fmt::format("{}x{}", r.m, r.n), r.threads, r.ms, r.gbps,
                     r.pct_copy, r.pct_best_baseline, r.rel_err, r.ok() ? "" : shown_note(r.outcome, r.note));
  return s;
}

}  // namespace parray
