// parray bench calls: the host time of one default GPU GEMM call — what a
// call costs the calling thread before its kernels run: the dispatcher's
// checks, the plan's look-up, the launches — and, with --timeline, whether
// the calls of several host threads overlap on the GPU.
//
//   parray bench calls [-m 64] [-n 64] [-k 1] [--calls 2000] [--precision P] [--impl gpu]
//   parray bench calls --timeline FILE.csv [--threads 8] -m 1024 -n 1024 -k 1024 [--calls 10]
//
// Host time: each thread queues --calls products on a stream of its own and
// the time of the loop, without waiting for the GPU, is divided by the calls;
// median of five loops after a warm-up. Measured from the main thread alone,
// then from two threads at once (each its own stream): a second thread must
// not wait on the first (no lock on the call's path). The time until the GPU
// has finished is printed beside it: where it equals the host time the GPU,
// not the host, set the pace (the launch queue was full). --impl times
// another implementation's calls the same way (cublas: cuBLAS's own host
// time on this machine). A launch of an empty kernel, timed the same way, is
// the floor under any call's host time on the machine.
//
// Timeline: --threads host threads each queue --calls products on their own
// stream, an event before and after each; every event is timed from one
// origin, so the CSV (thread, call, start and end in ms) is the GPU's
// timeline of the calls, and the summary says how much of it ran at once.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/cuda_runtime.hpp"
#include "parray/gemm.hpp"
#include "parray/registry.hpp"

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
  std::string impl = "gpu";
  std::string timeline;  // a CSV: the calls of --threads threads on the GPU's clock
  int threads = 8;
};

#if PARRAY_HAVE_CUDA
struct Operands {
  Array<float> a, b, c;
  GemmOptions o;
  Operands(const CallsArgs& x, GpuStream stream)
      : a(Layout::dense({x.m, x.k}), Memory::device),
        b(Layout::dense({x.k, x.n}), Memory::device),
        c(Layout::dense({x.m, x.n}), Memory::device) {
    o.impl = x.impl;
    o.stream = stream;
    o.precision = parse_precision(x.precision);
  }
  void call() { gemm(1.0f, a.view(), b.view(), 0.0f, c.view(), o); }
};

struct PerCall {
  double host_us, done_us;  // queued; finished on the GPU
};

// Median microseconds per call of `calls` calls of `call` queued on `stream`.
template <class Call>
PerCall us_per_call(int calls, GpuStream stream, Call&& call) {
  auto loop = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto t1 = std::chrono::steady_clock::now();
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto t2 = std::chrono::steady_clock::now();
    return PerCall{std::chrono::duration<double, std::micro>(t1 - t0).count() / calls,
                   std::chrono::duration<double, std::micro>(t2 - t0).count() / calls};
  };
  loop();  // warm-up: the plan, the workspaces, the module's first launches
  std::vector<PerCall> us;
  for (int r = 0; r < 5; ++r) us.push_back(loop());
  std::sort(us.begin(), us.end(), [](const PerCall& p, const PerCall& q) { return p.host_us < q.host_us; });
  return us[us.size() / 2];
}

PerCall us_per_gemm(const CallsArgs& a, GpuStream stream) {
  Operands x(a, stream);
  return us_per_call(a.calls, stream, [&] { x.call(); });
}

cudaStream_t new_stream() {
  cudaStream_t s = nullptr;
  PARRAY_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return s;
}

int run_host_time(const CallsArgs& a) {
  cudaStream_t s0 = new_stream(), s1 = new_stream();
  const PerCall alone = us_per_gemm(a, s0);
  PerCall first{}, second{};
  std::thread other([&] { second = us_per_gemm(a, s1); });
  first = us_per_gemm(a, s0);
  other.join();
  const PerCall bare = us_per_call(a.calls, s0, [&] { cuda::launch_empty_kernel(s0); });
  std::cout << fmt::format("host time per {} call, {}x{}x{} {} ({} calls, median of 5 loops; finished on the GPU):\n",
                           a.impl, a.m, a.k, a.n, a.precision, a.calls);
  std::cout << fmt::format("  one thread       {:.2f} us ({:.2f} us)\n", alone.host_us, alone.done_us);
  std::cout << fmt::format("  two threads      {:.2f} us and {:.2f} us ({:.2f} and {:.2f} us)\n", first.host_us,
                           second.host_us, first.done_us, second.done_us);
  std::cout << fmt::format("  empty kernel     {:.2f} us ({:.2f} us): one bare launch, the floor of any call here\n",
                           bare.host_us, bare.done_us);
  PARRAY_CUDA_CHECK(cudaStreamDestroy(s0));
  PARRAY_CUDA_CHECK(cudaStreamDestroy(s1));
  return 0;
}

// Each thread's calls between events; all timed from `origin`.
int run_timeline(const CallsArgs& a) {
  std::ofstream csv(a.timeline);
  if (!csv) throw Error("bench calls: cannot write " + a.timeline);
  cudaEvent_t origin = nullptr;
  PARRAY_CUDA_CHECK(cudaEventCreate(&origin));
  struct Lane {
    cudaStream_t stream;
    std::unique_ptr<Operands> x;
    std::vector<cudaEvent_t> marks;  // before call i, after call i
  };
  std::vector<Lane> lanes(std::size_t(a.threads));
  for (Lane& l : lanes) {
    l.stream = new_stream();
    l.x = std::make_unique<Operands>(a, l.stream);
    l.x->call();  // warm-up: plans, workspaces, first launches
    l.marks.resize(2 * std::size_t(a.calls));
    for (cudaEvent_t& e : l.marks) PARRAY_CUDA_CHECK(cudaEventCreate(&e));
  }
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  PARRAY_CUDA_CHECK(cudaEventRecord(origin, lanes[0].stream));
  for (Lane& l : lanes) PARRAY_CUDA_CHECK(cudaStreamWaitEvent(l.stream, origin, 0));
  std::vector<std::thread> threads;
  for (Lane& l : lanes)
    threads.emplace_back([&a, &l] {
      for (int i = 0; i < a.calls; ++i) {
        PARRAY_CUDA_CHECK(cudaEventRecord(l.marks[2 * std::size_t(i)], l.stream));
        l.x->call();
        PARRAY_CUDA_CHECK(cudaEventRecord(l.marks[2 * std::size_t(i) + 1], l.stream));
      }
    });
  for (std::thread& t : threads) t.join();
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  csv << "thread,call,start_ms,end_ms\n";
  double busy = 0, span = 0, lone = 1e30;
  for (std::size_t t = 0; t < lanes.size(); ++t)
    for (int i = 0; i < a.calls; ++i) {
      float t0 = 0, t1 = 0;
      PARRAY_CUDA_CHECK(cudaEventElapsedTime(&t0, origin, lanes[t].marks[2 * std::size_t(i)]));
      PARRAY_CUDA_CHECK(cudaEventElapsedTime(&t1, origin, lanes[t].marks[2 * std::size_t(i) + 1]));
      csv << fmt::format("{},{},{:.4f},{:.4f}\n", t, i, t0, t1);
      busy += t1 - t0, span = std::max(span, double(t1)), lone = std::min(lone, double(t1 - t0));
    }
  std::cout << fmt::format("timeline of {} threads x {} calls, {}x{}x{} {} ({}): {:.3f} ms from the first call to the "
                           "last; the calls' own times add up to {:.3f} ms ({:.1f} calls at once on average); "
                           "the shortest call {:.3f} ms\n",
                           a.threads, a.calls, a.m, a.k, a.n, a.precision, a.timeline, span, busy, busy / span, lone);
  for (Lane& l : lanes) {
    for (cudaEvent_t e : l.marks) PARRAY_CUDA_CHECK(cudaEventDestroy(e));
    l.x.reset();
    PARRAY_CUDA_CHECK(cudaStreamDestroy(l.stream));
  }
  PARRAY_CUDA_CHECK(cudaEventDestroy(origin));
  return 0;
}
#endif

int run_calls(const CallsArgs& a) {
  if (a.m < 1 || a.n < 1 || a.k < 0) throw Error("bench calls: -m and -n must be >= 1, -k >= 0");
  if (a.calls < 1 || a.calls > 1000000) throw Error("bench calls: --calls must be in 1..1000000");
  if (a.threads < 1 || a.threads > 256) throw Error("bench calls: --threads must be in 1..256");
  registry().find(a.impl);  // a clear error for an unknown name
  parse_precision(a.precision);
#if PARRAY_HAVE_CUDA
  if (!cuda_available()) throw Error("bench calls: no CUDA device");
  return a.timeline.empty() ? run_host_time(a) : run_timeline(a);
#else
  throw Error("bench calls: parray was built without CUDA");
#endif
}

std::vector<tools::CliCommand> add_calls_commands(CLI::App&, CLI::App& bench) {
  auto a = std::make_shared<CallsArgs>();
  CLI::App* c = bench.add_subcommand("calls", "host time of one default GPU GEMM call, from one thread and from two");
  tools::add_gemm_extents(*c, a->m, a->n, a->k).show_defaults();
  c->add_option("--calls", a->calls, "calls per timed loop")->capture_default_str();
  tools::add_gpu_precision(*c, a->precision);
  c->add_option("--impl", a->impl, "the implementation called (cublas: the baseline's own host time)")
      ->capture_default_str();
  c->add_option("--timeline", a->timeline, "CSV of every call's start and end on the GPU, --threads threads at once");
  c->add_option("--threads", a->threads, "host threads of --timeline, each on a stream of its own")
      ->capture_default_str();
  return {{c, [a] { return run_calls(*a); }}};
}

const tools::RegisterCommands registered_bench_calls(&add_calls_commands);

}  // namespace
}  // namespace parray
