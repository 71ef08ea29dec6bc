// `parray gemm --batch B` (gemm_batched_cli.hpp): B row-major products packed
// one after another (batch strides M K, K N, M N), random inputs in [-1, 1),
// C poisoned with NaN where beta is 0; every product's FP64 reference; the
// batch run once and checked (relative Frobenius error over the stack, at the
// tolerance of the precision delivered; NaN never passes), then timed (CUDA
// events for a GPU implementation).
#include "gemm_batched_cli.hpp"

#include <fmt/format.h>
#include <omp.h>

#include <cmath>
#include <cstring>
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
  T* data() { return device ? device->data() : host.data(); }
  MatrixView<T> first() { return {data(), MatrixLayout::row_major(rows, cols, std::max<index_t>(cols, 1)),
                                   device ? Memory::device : Memory::paged}; }
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

template <class T>
int run_typed(const BatchedGemmArgs& a, const GemmImpl& impl) {
  std::mt19937_64 rng(a.seed);
  Stack<T> sa = random_stack<T>(a.batch, a.m, a.k, rng), sb = random_stack<T>(a.batch, a.k, a.n, rng);
  Stack<T> c0 = random_stack<T>(a.batch, a.m, a.n, rng);
  if (a.beta == 0) std::fill(c0.host.begin(), c0.host.end(), std::numeric_limits<T>::quiet_NaN());  // not read
  Stack<T> sc{a.batch, a.m, a.n, c0.host, nullptr};
  // FP64 reference of every product.
  std::vector<double> ref(sc.host.size());
#pragma omp parallel for schedule(static)
  for (index_t row = 0; row < a.batch * a.m; ++row) {
    const index_t q = row / std::max<index_t>(a.m, 1);
    const T* ar = sa.host.data() + row * a.k;
    const T* bq = sb.host.data() + q * a.k * a.n;
    for (index_t j = 0; j < a.n; ++j) {
      double s = 0;
      for (index_t p = 0; p < a.k; ++p) s += double(ar[p]) * double(bq[p * a.n + j]);
      const std::size_t at = std::size_t(row * a.n + j);
      ref[at] = a.alpha * s + (a.beta == 0 ? 0.0 : a.beta * double(c0.host[at]));
    }
  }
  const bool on_device = impl.operand_memory == Memory::device;
  if (on_device) sa.to_device(), sb.to_device(), sc.to_device(), c0.to_device();
  GemmOptions o;
  o.impl = impl.name, o.threads = a.threads, o.precision = a.precision;
  const Precision delivered = impl.delivers(dtype_of<T>(), a.precision);
  const double tolerance = gemm_tolerance(dtype_of<T>(), a.k, delivered);
  double rel_err = 0;
  Trial t;
  t.reset = [&] {
    if (on_device) copy_bytes(sc.data(), Memory::device, c0.data(), Memory::device, sc.bytes());
    else sc.host = c0.host;
  };
  t.run = [&] {
    gemm_batched<T>(a.batch, T(a.alpha), MatrixView<const T>(sa.first()), MatrixView<const T>(sb.first()), T(a.beta),
                    sc.first(), {sa.stride(), sb.stride(), sc.stride()}, o);
  };
#if PARRAY_HAVE_CUDA
  if (on_device) {
    t.finish = [] { cuda::synchronize(); };
    t.time_one = [run = t.run] { return cuda::event_time_ms(run); };
  }
#endif
  t.check = [&]() -> Verdict {
    std::vector<T> got(sc.host.size());
    if (on_device) copy_bytes(got.data(), Memory::paged, sc.data(), Memory::device, sc.bytes());
    else got = sc.host;
    double err2 = 0, ref2 = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(double(got[i])))
        return {Outcome::failed, INFINITY, fmt::format("element {} of the stack is {} (NaN/Inf never passes)", i,
                                                       double(got[i]))};
      const double d = double(got[i]) - ref[i];
      err2 += d * d, ref2 += ref[i] * ref[i];
    }
    rel_err = ref2 > 0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
    if (rel_err > tolerance)
      return {Outcome::failed, rel_err, fmt::format("relative error {:.3e} above tolerance {:.3e}", rel_err, tolerance)};
    return {Outcome::passed, rel_err, ""};
  };
  TimingPlan plan;
  if (a.reps > 0) plan.min_reps = plan.max_reps = a.reps;
  // As bench gemm's CPU rows: the warm-up lasts long enough for the workers to
  // wake (on a VM an idle vCPU takes milliseconds to, longer than a small batch).
  if (!on_device) plan.min_warmup_seconds = BenchOptions{}.min_warmup_seconds;
  const Measurement m = verify_then_time(t, plan);
  const int threads = a.threads > 0 ? a.threads : omp_get_max_threads();
  std::cout << fmt::format("{} ({}) {} batch of {}: C[{}x{}] = A[{}x{}] * B[{}x{}], row-major, alpha {}, beta {}, {} "
                           "thread(s)\n",
                           impl.name, on_device ? "gpu" : "cpu", dtype_name(dtype_of<T>()), a.batch, a.m, a.n, a.m, a.k,
                           a.k, a.n, a.alpha, a.beta, threads);
  if (!m.verdict.passed()) {
    std::cout << "check FAILED: " << m.verdict.note << "\n";
    return 1;
  }
  const double flops = 2.0 * double(a.batch) * double(a.m) * double(a.n) * double(a.k);
  const double ms = m.timing.median_ms;
  std::cout << fmt::format("time {:.4f} ms (median), {:.2f} GFLOP/s\n", ms, ms > 0 ? flops / (ms * 1e6) : 0.0);
  std::cout << fmt::format("check OK: rel_err {:.3e} (tolerance {:.3e})\n", rel_err, tolerance);
  return 0;
}

}  // namespace

int run_batched_gemm(const BatchedGemmArgs& a) {
  if (a.batch < 1) throw Error("--batch must be >= 1");
  const double elem = a.dtype == Dtype::f32 ? 4.0 : 8.0;
  const double per = double(a.m) * double(a.k) + double(a.k) * double(a.n) + 2.0 * double(a.m) * double(a.n);
  check_host_memory(double(a.batch) * (elem * per + 8.0 * double(a.m) * double(a.n)),
                    fmt::format("a batch of {} {}x{}x{} products", a.batch, a.m, a.k, a.n));
  const GemmImpl& impl = registry().find(a.impl);
  if (!impl.supports(a.dtype))
    throw Error("implementation '" + impl.name + "' does not support " + dtype_name(a.dtype));
  return a.dtype == Dtype::f32 ? run_typed<float>(a, impl) : run_typed<double>(a, impl);
}

}  // namespace parray::tools
