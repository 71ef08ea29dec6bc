// Strided batches of GEMMs on the GPU (include/parray/gemm_batched.hpp): the
// batch entries of the default (gpu-auto), of ladder steps 18 and 15 (one
// persistent launch over the products' tiles, each tensor-core format) and
// of cuBLAS, every product checked against an FP64 reference on random data
// with C poisoned (NaN) before the run; layouts (row- and column-major A, a
// padded C), broadcasts, alpha and beta, edges of step 18's tiles, batch 1.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "parray/array.hpp"
#include "parray/gemm_batched.hpp"
#include "random_values.hpp"
#include "parray/registry.hpp"

namespace parray {
namespace {

struct BatchShape {
  index_t batch, m, n, k;
  bool a_col, broadcast_a, broadcast_b;
  index_t c_pad;  // extra elements per row of C (a strided C, rows not 16-byte aligned for 3)
};

// Step 18's two tiles (32 and 64), partial tiles in every dimension, K past
// one k-tile; a matrix larger than one tile; broadcasts; a batch of one.
const BatchShape kShapes[] = {
    {64, 32, 32, 32, false, false, false, 0}, {37, 17, 13, 29, false, false, false, 3},
    {20, 64, 64, 64, true, false, false, 0},  {9, 70, 130, 75, false, true, false, 0},
    {11, 45, 33, 100, true, false, true, 0},  {1, 50, 40, 30, false, false, false, 0},
    {3, 150, 170, 260, false, false, false, 0}};

struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(const std::vector<float>& host) {
    p = static_cast<float*>(allocate_bytes(Memory::device, host.size() * sizeof(float)));
    copy_bytes(p, Memory::device, host.data(), Memory::paged, host.size() * sizeof(float));
  }
  ~DeviceFloats() { free_bytes(Memory::device, p); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
};

using testing::random_values;

// The error bound of docs/verification.md for the precision `impl` delivers:
// the inputs' rounding (TF32: 2^-11 each) and FP32 sums of K terms.
double bound_per_unit(const GemmImpl& impl, index_t k) {
  const Precision p = impl.delivers(Dtype::f32);
  const double inputs = p == Precision::tf32 || p == Precision::fp16 ? 2.0 * 0x1p-11
                        : p == Precision::bf16                      ? 2.0 * 0x1p-8
                                                                    : 0.0;
  return inputs + 2.0 * double(k + 4) * 0x1p-24;
}

using Param = std::tuple<std::string, int, bool>;  // implementation, shape, beta

class GpuGemmBatched : public ::testing::TestWithParam<Param> {};

TEST_P(GpuGemmBatched, EveryProductMatchesFp64) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  const auto [name, shape, with_beta] = GetParam();
  const BatchShape& s = kShapes[shape];
  const GemmImpl& impl = registry().find(name);
  const index_t ldc = s.n + s.c_pad;
  const index_t sa = s.broadcast_a ? 0 : s.m * s.k, sb = s.broadcast_b ? 0 : s.k * s.n, sc = s.m * ldc;
  const std::vector<float> a = random_values(std::size_t(s.broadcast_a ? 1 : s.batch) * s.m * s.k, 1);
  const std::vector<float> b = random_values(std::size_t(s.broadcast_b ? 1 : s.batch) * s.k * s.n, 2);
  std::vector<float> c0 = random_values(std::size_t(s.batch) * sc, 3);
  const float alpha = 0.75f, beta = with_beta ? -0.5f : 0.f;
  if (!with_beta) c0.assign(c0.size(), std::numeric_limits<float>::quiet_NaN());  // C must not be read
  DeviceFloats da(a), db(b), dc(c0);
  const MatrixLayout la = s.a_col ? MatrixLayout::col_major(s.m, s.k, s.m) : MatrixLayout::row_major(s.m, s.k, s.k);
  GemmOptions o;
  o.impl = name;
  o.precision = impl.delivers(Dtype::f32);  // cublas-tf32 is asked for TF32
  gemm_batched<float>(s.batch, alpha, MatrixView<const float>{da.p, la, Memory::device},
                      MatrixView<const float>{db.p, MatrixLayout::row_major(s.k, s.n, s.n), Memory::device}, beta,
                      MatrixView<float>{dc.p, MatrixLayout::row_major(s.m, s.n, ldc), Memory::device}, {sa, sb, sc}, o);
  std::vector<float> c(c0.size());
  copy_bytes(c.data(), Memory::paged, dc.p, Memory::device, c.size() * sizeof(float));
  const double unit = bound_per_unit(impl, s.k);
  for (index_t q = 0; q < s.batch; ++q)
    for (index_t i = 0; i < s.m; ++i)
      for (index_t j = 0; j < ldc; ++j) {
        const std::size_t at = std::size_t(q * sc + i * ldc + j);
        if (j >= s.n) {  // C's padding: never written
          ASSERT_TRUE(with_beta ? c[at] == c0[at] : std::isnan(c[at])) << "padding written in matrix " << q;
          continue;
        }
        double sum = 0, magnitude = 0;
        for (index_t p = 0; p < s.k; ++p) {
          const double x = a[std::size_t(q * sa + (s.a_col ? i + p * s.m : i * s.k + p))];
          const double y = b[std::size_t(q * sb + p * s.n + j)];
          sum += x * y, magnitude += std::abs(x * y);
        }
        const double want = alpha * sum + (with_beta ? beta * double(c0[at]) : 0.0);
        const double bound = unit * (std::abs(alpha) * magnitude + (with_beta ? std::abs(beta * c0[at]) : 0.0));
        ASSERT_FALSE(std::isnan(c[at])) << "NaN at (" << i << ", " << j << ") of matrix " << q;
        ASSERT_LE(std::abs(c[at] - want), bound) << "(" << i << ", " << j << ") of matrix " << q;
      }
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [name, shape, beta] = info.param;
  const BatchShape& s = kShapes[shape];
  std::string id = name;
  for (char& ch : id)
    if (ch == '-') ch = '_';
  return fmt::format("{}_{}x{}x{}x{}{}{}{}_beta{}", id, s.batch, s.m, s.k, s.n, s.a_col ? "_Acol" : "",
                     s.broadcast_a ? "_bcastA" : "", s.broadcast_b ? "_bcastB" : "", beta ? 1 : 0);
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuGemmBatched,
                         ::testing::Combine(::testing::Values("gpu-auto", "cuda-18-batched-small", "cuda-15-tf32",
                                                              "cuda-15-bf16", "cuda-15-fp16", "cuda-15-3xtf32",
                                                              "cublas", "cublas-tf32"),
                                            ::testing::Range(0, 7), ::testing::Bool()),
                         param_name);

// The verifier can fail: a product computed with one value of K left out
// (K - 1 through the same call) is caught.
TEST(GpuGemmBatchedCheck, CatchesAMissingK) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  const index_t batch = 8, m = 32, n = 32, k = 32;
  const std::vector<float> a = random_values(std::size_t(batch * m * k), 1), b = random_values(std::size_t(batch * k * n), 2);
  DeviceFloats da(a), db(b), dc(std::vector<float>(std::size_t(batch * m * n), 0.f));
  GemmOptions o;
  o.impl = "cuda-18-batched-small";
  // A's view is K - 1 columns wide within rows of K: the last term is missing.
  gemm_batched<float>(batch, 1.f, MatrixView<const float>{da.p, MatrixLayout::row_major(m, k - 1, k), Memory::device},
                      MatrixView<const float>{db.p, MatrixLayout::row_major(k - 1, n, n), Memory::device}, 0.f,
                      MatrixView<float>{dc.p, MatrixLayout::row_major(m, n, n), Memory::device},
                      {m * k, k * n, m * n}, o);
  std::vector<float> c(std::size_t(batch * m * n));
  copy_bytes(c.data(), Memory::paged, dc.p, Memory::device, c.size() * sizeof(float));
  int far = 0;
  for (index_t q = 0; q < batch; ++q)
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double sum = 0;
        for (index_t p = 0; p < k; ++p) sum += double(a[std::size_t(q * m * k + i * k + p)]) * b[std::size_t(q * k * n + p * n + j)];
        far += std::abs(c[std::size_t(q * m * n + i * n + j)] - sum) > 2.0 * double(k + 4) * 0x1p-24 * double(k);
      }
  EXPECT_GT(far, 0);
}

}  // namespace
}  // namespace parray

namespace parray {
namespace {

// FP64 batches: step 19 (through the default) and cuBLAS's
// cublasDgemmStridedBatched, each product against a sum in long double; the
// bound is an FP64 sum's (K + 4) 2^-53 per unit of |A| |B|.
class GpuGemmBatchedF64 : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuGemmBatchedF64, EveryProductMatchesTheReference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  const GemmImpl& impl = registry().find(GetParam());
  if (std::string why = impl.why_not(MatrixLayout::row_major(1, 1, 1), MatrixLayout::row_major(1, 1, 1),
                                     MatrixLayout::row_major(1, 1, 1));
      !why.empty())
    GTEST_SKIP() << impl.name << ": " << why;
  for (const auto& [batch, m, k, n, col_a] : {std::tuple{5, 130, 70, 150, false}, std::tuple{3, 37, 129, 41, true}}) {
    const std::vector<float> af = testing::random_values(std::size_t(batch * m * k), 7);
    const std::vector<float> bf = testing::random_values(std::size_t(batch * k * n), 8);
    std::vector<double> a(af.begin(), af.end()), b(bf.begin(), bf.end());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] += 1e-9 * double(i % 7);  // more than FP32's digits
    std::vector<double> c(std::size_t(batch * m * n), std::numeric_limits<double>::quiet_NaN());
    double *da = static_cast<double*>(allocate_bytes(Memory::device, a.size() * 8)),
           *db = static_cast<double*>(allocate_bytes(Memory::device, b.size() * 8)),
           *dc = static_cast<double*>(allocate_bytes(Memory::device, c.size() * 8));
    copy_bytes(da, Memory::device, a.data(), Memory::paged, a.size() * 8);
    copy_bytes(db, Memory::device, b.data(), Memory::paged, b.size() * 8);
    copy_bytes(dc, Memory::device, c.data(), Memory::paged, c.size() * 8);
    GemmOptions o;
    o.impl = impl.name;
    const MatrixLayout la = col_a ? MatrixLayout::col_major(m, k, m) : MatrixLayout::row_major(m, k, k);
    gemm_batched<double>(batch, 1.0, MatrixView<const double>{da, la, Memory::device},
                         MatrixView<const double>{db, MatrixLayout::row_major(k, n, n), Memory::device}, 0.0,
                         MatrixView<double>{dc, MatrixLayout::row_major(m, n, n), Memory::device},
                         {m * k, k * n, m * n}, o);
    copy_bytes(c.data(), Memory::paged, dc, Memory::device, c.size() * 8);
    for (double* p : {da, db, dc}) free_bytes(Memory::device, p);
    for (int q = 0; q < batch; ++q)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          long double sum = 0, magnitude = 0;
          for (int p = 0; p < k; ++p) {
            const long double x = a[std::size_t(q * m * k + (col_a ? i + p * m : i * k + p))];
            const long double y = b[std::size_t(q * k * n + p * n + j)];
            sum += x * y, magnitude += std::abs(x * y);
          }
          const double got = c[std::size_t(q * m * n + i * n + j)];
          ASSERT_FALSE(std::isnan(got)) << "NaN at (" << i << ", " << j << ") of matrix " << q;
          ASSERT_LE(std::abs((long double)got - sum), double(k + 4) * 0x1p-53 * magnitude)
              << "(" << i << ", " << j << ") of matrix " << q << ", " << impl.name;
        }
  }
}

INSTANTIATE_TEST_SUITE_P(Impls, GpuGemmBatchedF64, ::testing::Values("gpu-auto", "cuda-19-dmma", "cuda-22-dmma-tma", "cublas"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string id = info.param;
                           for (char& ch : id)
                             if (ch == '-') ch = '_';
                           return id;
                         });

}  // namespace
}  // namespace parray
