// The one-GPU splits on the caller's device operands run on non-blocking
// streams of their own; they must still come after the caller's work on the
// legacy default stream. Here a kernel on that stream first waits ~20 ms and
// then fills C with NaN; the split, called right after it without any
// synchronisation, must run after it and overwrite C (beta = 0). A split that
// started at once would finish first and leave the NaN (the race this
// guards against: a pageable cudaMemcpy of the harness's poison still landing while a
// 1024^3 K split added into C).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "parray/config.hpp"
#include "parray/cuda_runtime.hpp"
#include "parray/gemm.hpp"
#include "harness/harness.hpp"
#include "parray/multilevel.hpp"

#if PARRAY_HAVE_CUDA
#include <cuda_runtime.h>

namespace parray::test {
cudaError_t launch_late_fill(float* c, long long n, float value, unsigned long long ns);  // gpu_late_fill.cu
}

namespace {

using namespace parray;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

TEST(GpuSplitsStreamOrder, ComeAfterTheCallersDefaultStreamWork) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  constexpr index_t n = 256;
  std::vector<float> a(n * n), b(n * n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  std::vector<double> ref(n * n, 0.0);
  for (index_t i = 0; i < n; ++i)
    for (index_t p = 0; p < n; ++p)
      for (index_t j = 0; j < n; ++j) ref[i * n + j] += double(a[i * n + p]) * double(b[p * n + j]);
  float *da = nullptr, *db = nullptr, *dc = nullptr;
  const size_t bytes = size_t(n * n) * sizeof(float);
  check(cudaMalloc(&da, bytes), "cudaMalloc A");
  check(cudaMalloc(&db, bytes), "cudaMalloc B");
  check(cudaMalloc(&dc, bytes), "cudaMalloc C");
  check(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice), "copy A");
  check(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice), "copy B");
  const unsigned long long wait_ns = 20'000'000;  // 20 ms: far longer than a 256^3 split
  const MatrixLayout rm = MatrixLayout::row_major(n, n, n);
  const MatrixView<const float> va{da, rm, Memory::device}, vb{db, rm, Memory::device};
  const MatrixView<float> vc{dc, rm, Memory::device};
  std::vector<float> c(n * n);
  for (const char* split : {"rows", "k"})
    for (int t : {2, 4}) {
      const std::string name = multilevel::impl_name("ml-dev", split, t);
      check(test::launch_late_fill(dc, n * n, std::nanf(""), wait_ns), "late fill");  // legacy default stream
      gemm<float>(1.f, va, vb, 0.f, vc, GemmOptions{name, 1});
      check(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost), "copy C back");
      index_t bad = 0;
      double worst = 0;
      for (index_t i = 0; i < n * n; ++i) {
        if (!std::isfinite(c[i])) {
          ++bad;
          continue;
        }
        worst = std::max(worst, std::abs(double(c[i]) - ref[i]));
      }
      EXPECT_EQ(bad, 0) << name << ": elements of C left as the earlier fill wrote them";
      EXPECT_LT(worst, 1e-3) << name;  // |C| ~ sqrt(256); FP32 over K = 256
    }
  check(cudaFree(da), "free A");
  check(cudaFree(db), "free B");
  check(cudaFree(dc), "free C");
}

}  // namespace
#endif
