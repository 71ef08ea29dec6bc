// parray bench calls: the host time of one default GPU GEMM call — what a
// call costs the calling thread before its kernels run: the dispatcher's
// checks, the plan's look-up, the launches.
//
//   parray bench calls [-m 64] [-n 64] [-k 1] [--calls 2000] [--precision P]
//
// Each thread queues --calls products on a stream of its own and the time of
// the loop, without waiting for the GPU, is divided by the calls; median of
// five loops after a warm-up. Measured from the main thread alone, then from
// two threads at once (each its own stream): a second thread must not wait
// on the first (no lock on the call's path).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/gemm.hpp"

#if PARRAY_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "parray/cuda/check.hpp"
#endif

namespace parray {
namespace {

struct CallsArgs {
  index_t m = 64, n = 64, k = 1;
  int calls = 2000;
  std::string precision = "fp32";
};

#if PARRAY_HAVE_CUDA
// Median host microseconds per call of `calls` calls queued on `stream`.
double host_us_per_call(const CallsArgs& a, GpuStream stream) {
  Array<float> da(Layout::dense({a.m, a.k}), Memory::device), db(Layout::dense({a.k, a.n}), Memory::device),
      dc(Layout::dense({a.m, a.n}), Memory::device);
  GemmOptions o;
  o.impl = "gpu";
  o.stream = stream;
  o.precision = parse_precision(a.precision);
  auto loop = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < a.calls; ++i) gemm(1.0f, da.view(), db.view(), 0.0f, dc.view(), o);
    const auto t1 = std::chrono::steady_clock::now();
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(stream));
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / a.calls;
  };
  loop();  // warm-up: the plan, the workspaces, the module's first launches
  std::vector<double> us;
  for (int r = 0; r < 5; ++r) us.push_back(loop());
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  PARRAY_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}
#endif

int run_calls(const CallsArgs& a) {
  if (a.m < 1 || a.n < 1 || a.k < 0) throw Error("bench calls: -m and -n must be >= 1, -k >= 0");
  if (a.calls < 1 || a.calls > 1000000) throw Error("bench calls: --calls must be in 1..1000000");
#if PARRAY_HAVE_CUDA
  if (!cuda_available()) throw Error("bench calls: no CUDA device");
  cudaStream_t s0 = new_stream(), s1 = new_stream();
  const double alone = host_us_per_call(a, s0);
  double first = 0, second = 0;
  std::thread other([&] { second = host_us_per_call(a, s1); });
  first = host_us_per_call(a, s0);
  other.join();
  std::cout << fmt::format("host time per default call, {}x{}x{} {} ({} calls, median of 5 loops):\n", a.m, a.k, a.n,
                           a.precision, a.calls);
  std::cout << fmt::format("  one thread       {:.2f} us\n  two threads      {:.2f} us and {:.2f} us\n", alone, first,
                           second);
  PARRAY_CUDA_CHECK(cudaStreamDestroy(s0));
  PARRAY_CUDA_CHECK(cudaStreamDestroy(s1));
  return 0;
#else
  throw Error("bench calls: parray was built without CUDA");
#endif
}

std::vector<tools::CliCommand> add_calls_commands(CLI::App&, CLI::App& bench) {
  auto a = std::make_shared<CallsArgs>();
  CLI::App* c = bench.add_subcommand("calls", "host time of one default GPU GEMM call, from one thread and from two");
  c->add_option("-m", a->m, "rows of A and C")->capture_default_str();
  c->add_option("-n", a->n, "columns of B and C")->capture_default_str();
  c->add_option("-k", a->k, "columns of A, rows of B")->capture_default_str();
  c->add_option("--calls", a->calls, "calls per timed loop")->capture_default_str();
  c->add_option("--precision", a->precision, "fp32, tf32, bf16 or fp16")->capture_default_str();
  return {{c, [a] { return run_calls(*a); }}};
}

const tools::RegisterCommands registered(&add_calls_commands);

}  // namespace
}  // namespace parray
