// Every GPU entry queues its work on the caller's stream: host threads with
// streams of their own run GEMMs at once, each result checked in FP64 after a
// synchronisation of its own stream only; a GEMM or GEMV on a stream that is
// held back (behind a slow kernel, or waiting on an event of another stream)
// reads its inputs only once they are written; a problem larger than the GPU
// is refused with its size named, and the next call runs. Skips without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/gemm.hpp"
#include "parray/gemm_check.hpp"
#include "parray/gemv.hpp"
#include "parray/registry.hpp"

#if PARRAY_HAVE_CUDA
#include <cuda_runtime.h>

namespace parray::test {
cudaError_t launch_late_fill_on(cudaStream_t stream, float* c, long long n, float value,
                                unsigned long long ns);  // gpu_late_fill.cu
}

namespace {

using namespace parray;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// A non-blocking stream (it does not wait for the legacy default stream),
// destroyed at the end of its scope.
struct OwnStream {
  cudaStream_t s = nullptr;
  OwnStream() { check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~OwnStream() { (void)cudaStreamDestroy(s); }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
};

struct OwnEvent {
  cudaEvent_t e = nullptr;
  OwnEvent() { check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags"); }
  ~OwnEvent() { (void)cudaEventDestroy(e); }
  OwnEvent(const OwnEvent&) = delete;
  OwnEvent& operator=(const OwnEvent&) = delete;
};

std::vector<float> uniform(index_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = dist(rng);
  return v;
}

// Small integers: every product below is exact in FP32 and in the narrower
// formats the tensor-core implementations round their inputs to.
std::vector<float> integers(index_t count, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> dist(0, 8);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = float(dist(rng));
  return v;
}

MatrixView<const float> host_view(const std::vector<float>& v, index_t rows, index_t cols) {
  return {v.data(), MatrixLayout::row_major(rows, cols, cols), Memory::paged};
}

Array<float> device_copy(const std::vector<float>& h, index_t rows, index_t cols, cudaStream_t s) {
  Array<float> d(Layout::dense({rows, cols}), Memory::device);
  copy_bytes(d.data(), Memory::device, h.data(), Memory::paged, h.size() * sizeof(float), s);
  return d;
}

std::vector<float> host_copy(const Array<float>& d, cudaStream_t s) {
  std::vector<float> h(static_cast<std::size_t>(d.storage_elements()));
  copy_bytes(h.data(), Memory::paged, d.data(), Memory::device, h.size() * sizeof(float), s);
  return h;
}

struct Product {
  index_t m, k, n;
  float alpha, beta;
};

// Thread t's products on a stream of its own, each result read after
// synchronising that stream alone and checked against the FP64 product;
// what failed, as text.
std::vector<std::string> products_on_own_stream(int t, const std::vector<Product>& products, int repeats) {
  std::vector<std::string> failures;
  try {
    OwnStream own;
    for (int r = 0; r < repeats; ++r)
      for (const Product& p : products) {
        const std::uint64_t seed = std::uint64_t(1000 * t + 10 * r) + std::uint64_t(p.m);
        const std::vector<float> a = uniform(p.m * p.k, seed), b = uniform(p.k * p.n, seed + 1),
                                 c0 = uniform(p.m * p.n, seed + 2);
        Array<float> da = device_copy(a, p.m, p.k, own.s), db = device_copy(b, p.k, p.n, own.s),
                     dc = device_copy(c0, p.m, p.n, own.s);
        gemm<float>(p.alpha, MatrixView<const float>(da.view()), MatrixView<const float>(db.view()), p.beta,
                    dc.view(), GemmOptions{.impl = "gpu", .stream = own.s});
        check(cudaStreamSynchronize(own.s), "cudaStreamSynchronize");
        const std::vector<float> c = host_copy(dc, own.s);
        const MatrixView<const float> c0v = host_view(c0, p.m, p.n);
        const GemmCheck k = check_gemm<float>(p.alpha, host_view(a, p.m, p.k), host_view(b, p.k, p.n), p.beta,
                                              &c0v, host_view(c, p.m, p.n));
        if (!k.ok)
          failures.push_back("thread " + std::to_string(t) + ", " + std::to_string(p.m) + "x" + std::to_string(p.k) +
                             "x" + std::to_string(p.n) + ": " + k.reason + " (" + k.method + ")");
      }
  } catch (const std::exception& e) {
    failures.push_back("thread " + std::to_string(t) + ": " + e.what());
  }
  return failures;
}

TEST(GpuStreams, EightThreadsEachOnItsOwnStream) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  // A small product, one that takes split-K or the stream-K tail, one whose
  // kernels run long enough to overlap the other threads', with and without
  // beta.
  const std::vector<Product> products = {
      {300, 100, 200, 1.f, 0.f}, {65, 2100, 70, -1.5f, 0.5f}, {2048, 2048, 2048, 1.f, 0.f}, {513, 1031, 257, -1.5f, 0.5f}};
  constexpr int kThreads = 8, kRepeats = 2;
  std::vector<std::vector<std::string>> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { failures[std::size_t(t)] = products_on_own_stream(t, products, kRepeats); });
  for (std::thread& th : threads) th.join();
  for (const auto& f : failures)
    for (const std::string& why : f) ADD_FAILURE() << why;
}

constexpr unsigned long long kHoldNs = 10'000'000;  // 10 ms: far longer than any product below

// A (rows x cols floats, device) NaN, then, after kHoldNs, all ones, on
// `writer`; returns once that is queued, long before it has run.
void ones_late(float* a, index_t count, cudaStream_t writer) {
  check(cudaMemsetAsync(a, 0xff, std::size_t(count) * sizeof(float), writer), "cudaMemsetAsync");  // NaN
  check(test::launch_late_fill_on(writer, a, count, 1.f, kHoldNs), "late fill");
}

// How the stream a call goes on is held back until A is written: A written
// on that stream itself, or on another one that it waits for (an event).
enum class Hold { same_stream, event };
const char* hold_name(Hold h) { return h == Hold::same_stream ? "same stream" : "event"; }

void hold_until_written(Hold h, float* a, index_t count, cudaStream_t s, cudaStream_t other, cudaEvent_t written) {
  if (h == Hold::same_stream) return ones_late(a, count, s);
  ones_late(a, count, other);
  check(cudaEventRecord(written, other), "cudaEventRecord");
  check(cudaStreamWaitEvent(s, written, 0), "cudaStreamWaitEvent");
}

bool reads_device_row_major(const GemmImpl& impl, index_t m, index_t k, index_t n) {
  return impl.device == Device::gpu && impl.supports(Dtype::f32) && impl.operand_memory == Memory::device &&
         impl.why_not(MatrixLayout::row_major(m, k, k), MatrixLayout::row_major(k, n, n), MatrixLayout::row_major(m, n, n))
             .empty();
}

// C = ones(M x K) B: every element of row i is column j's sum of B. A K of
// 100 and one of 8 (the kernels made for a short K).
TEST(GpuStreams, EveryGemmWaitsForWorkQueuedBeforeIt) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  constexpr index_t m = 300, n = 200;
  OwnStream s, other;
  OwnEvent written;
  int ran = 0;
  for (const index_t k : {index_t(100), index_t(8)}) {
    const std::vector<float> b = integers(k * n, 5);
    std::vector<float> col_sum(n, 0.f);
    for (index_t p = 0; p < k; ++p)
      for (index_t j = 0; j < n; ++j) col_sum[std::size_t(j)] += b[std::size_t(p * n + j)];
    Array<float> da(Layout::dense({m, k}), Memory::device), dc(Layout::dense({m, n}), Memory::device);
    Array<float> db = device_copy(b, k, n, s.s);
    for (const GemmImpl& impl : registry().all()) {
      if (!reads_device_row_major(impl, m, k, n)) continue;
      for (Hold h : {Hold::same_stream, Hold::event}) {
        check(cudaMemsetAsync(dc.data(), 0xff, std::size_t(m * n) * sizeof(float), s.s), "poison C");
        hold_until_written(h, da.data(), m * k, s.s, other.s, written.e);
        gemm<float>(impl, 1.f, MatrixView<const float>(da.view()), MatrixView<const float>(db.view()), 0.f,
                    dc.view(), 1, impl.delivers(Dtype::f32), s.s);
        check(cudaStreamSynchronize(s.s), "cudaStreamSynchronize");
        const std::vector<float> c = host_copy(dc, s.s);
        index_t wrong = 0;
        for (index_t i = 0; i < m; ++i)
          for (index_t j = 0; j < n; ++j) wrong += c[std::size_t(i * n + j)] != col_sum[std::size_t(j)];
        EXPECT_EQ(wrong, 0) << impl.name << " K " << k << " (" << hold_name(h)
                            << "): elements of C computed before A was written";
      }
      ++ran;
    }
    check(cudaStreamSynchronize(other.s), "cudaStreamSynchronize");
  }
  EXPECT_GE(ran, 2);
}

// y = ones(M x N) x: every element is the sum of x.
TEST(GpuStreams, EveryGemvWaitsForWorkQueuedBeforeIt) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  constexpr index_t m = 3000, n = 500;
  const std::vector<float> x = integers(n, 9);
  float sum = 0.f;
  for (float v : x) sum += v;
  OwnStream s, other;
  OwnEvent written;
  Array<float> da(Layout::dense({m, n}), Memory::device), dx = device_copy(x, n, 1, s.s),
      dy(Layout::dense({m, 1}), Memory::device);
  int ran = 0;
  for (const GemvImpl& impl : gemv_registry().all()) {
    if (impl.device != Device::gpu || !impl.supports(Dtype::f32) || impl.operand_memory != Memory::device) continue;
    // All ones: the same matrix whichever way it is stored.
    MatrixLayout layout = MatrixLayout::row_major(m, n, n);
    if (!impl.why_not(layout).empty()) layout = MatrixLayout::col_major(m, n, m);
    if (!impl.why_not(layout).empty()) continue;
    for (Hold h : {Hold::same_stream, Hold::event}) {
      check(cudaMemsetAsync(dy.data(), 0xff, std::size_t(m) * sizeof(float), s.s), "poison y");
      hold_until_written(h, da.data(), m * n, s.s, other.s, written.e);
      gemv<float>(1.f, MatrixView<const float>{da.data(), layout, Memory::device}, dx.data(), 0.f, dy.data(),
                  GemvOptions{.impl = impl.name, .stream = s.s});
      check(cudaStreamSynchronize(s.s), "cudaStreamSynchronize");
      const std::vector<float> y = host_copy(dy, s.s);
      index_t wrong = 0;
      for (float v : y) wrong += v != sum;
      EXPECT_EQ(wrong, 0) << impl.name << " (" << hold_name(h) << "): elements of y computed before A was written";
    }
    ++ran;
  }
  check(cudaStreamSynchronize(other.s), "cudaStreamSynchronize");
  EXPECT_GE(ran, 1);
}

// The tuned GEMV's column-major path keeps partial sums in a workspace that
// calls on two streams take in turn: each result must be its own.
TEST(GpuStreams, GemvWorkspaceSharedByTwoStreams) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  constexpr index_t m = 1000, n = 4000;  // few row blocks: the split-column path
  OwnStream s[2];
  const std::vector<float> a = uniform(m * n, 11);
  Array<float> da = device_copy(a, n, m, s[0].s);  // column-major A: n columns of m
  const MatrixView<const float> va{da.data(), MatrixLayout::col_major(m, n, m), Memory::device};
  std::vector<std::vector<float>> x(2);
  std::vector<Array<float>> dx, dy;
  for (int i = 0; i < 2; ++i) {
    x[std::size_t(i)] = uniform(n, 20 + std::uint64_t(i));
    dx.push_back(device_copy(x[std::size_t(i)], n, 1, s[i].s));
    dy.emplace_back(Layout::dense({m, 1}), Memory::device);
  }
  for (int round = 0; round < 4; ++round)
    for (int i = 0; i < 2; ++i)
      gemv<float>(1.f, va, dx[std::size_t(i)].data(), 0.f, dy[std::size_t(i)].data(),
                  GemvOptions{.impl = "gemv-gpu-tuned", .stream = s[i].s});
  for (int i = 0; i < 2; ++i) {
    check(cudaStreamSynchronize(s[i].s), "cudaStreamSynchronize");
    const std::vector<float> y = host_copy(dy[std::size_t(i)], s[i].s);
    double worst = 0;
    for (index_t r = 0; r < m; ++r) {
      double ref = 0;
      for (index_t j = 0; j < n; ++j)
        ref += double(a[std::size_t(j * m + r)]) * double(x[std::size_t(i)][std::size_t(j)]);
      worst = std::max(worst, std::abs(double(y[std::size_t(r)]) - ref));
    }
    EXPECT_LT(worst, 1e-3) << "stream " << i;  // |y| ~ sqrt(4000); FP32 over N = 4000
  }
}

TEST(GpuStreams, TooLargeForTheGpuIsRefusedAndNothingLeaks) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  std::size_t free_before = 0, total = 0;
  check(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");
  const index_t rows = index_t(1) << 20, cols = index_t(total / sizeof(float) / std::size_t(rows)) * 2 + 1;
  const std::string bytes = std::to_string(rows * cols * index_t(sizeof(float)));
  try {
    Array<float> huge(Layout::dense({rows, cols}), Memory::device);
    ADD_FAILURE() << "an array of " << bytes << " bytes on a GPU of " << total << " was allocated";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(bytes), std::string::npos) << what;
    EXPECT_NE(what.find("device"), std::string::npos) << what;
  }
  std::size_t free_after = 0;
  check(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
  EXPECT_LE(free_before, free_after + (std::size_t(4) << 20)) << "device memory lost to the refused allocation";
  const std::vector<std::string> failures = products_on_own_stream(0, {{300, 100, 200, 1.f, 0.f}}, 1);
  for (const std::string& why : failures) ADD_FAILURE() << "after the refusal: " << why;
}

}  // namespace
#endif
