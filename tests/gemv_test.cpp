// Every registered CPU GEMV (parray's and OpenBLAS) over shapes x layouts x
// alpha/beta x dtypes against the FP64 reference (run_gemv_bench verifies
// before it times), plus the BLAS corner cases and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gemv_check.hpp"
#include "harness/knn_bench.hpp"

using namespace parray;

TEST(Gemv, EveryCpuImplementationAgreesWithFp64) {
  register_gemv_baselines(gemv_registry());
  GemvBenchOptions o;
  for (const GemvImpl& i : gemv_registry().all())
    if (i.device == Device::cpu) o.impls.push_back(i.name);
  ASSERT_FALSE(o.impls.empty());
  o.shapes = {{1, 1}, {1, 37}, {37, 1}, {3, 5}, {67, 129}, {4097, 33}, {33, 2051}, {5, 8}};
  o.layouts = {"row", "col", "row-pad", "fig17", "fig18"};
  o.dtypes = {Dtype::f32, Dtype::f64};
  o.threads = {1, 2};
  parray_test::expect_every_gemv_passes(o, 100);
}

TEST(Gemv, BlasCornerCases) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {nan, nan, nan, nan}, x = {nan, nan}, y = {nan, 3.0f};
  MatrixView<const float> av{a.data(), MatrixLayout::row_major(2, 2, 2)};
  gemv<float>(0.0f, av, x.data(), 0.0f, y.data());  // alpha = 0: A, x not read; beta = 0: y not read
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  y = {1.0f, 2.0f};
  gemv<float>(0.0f, av, x.data(), 2.0f, y.data());
  EXPECT_EQ(y[1], 4.0f);
  // N = 0: y = beta y
  MatrixView<const float> empty{nullptr, MatrixLayout::row_major(2, 0, 1)};
  gemv<float>(1.0f, empty, nullptr, 0.0f, y.data());
  EXPECT_EQ(y[0], 0.0f);
  // M = 0: nothing is touched
  gemv<float>(1.0f, MatrixView<const float>{nullptr, MatrixLayout::row_major(0, 5, 5)}, nullptr, 0.0f, nullptr);
}

TEST(Gemv, BadArgumentsThrow) {
  std::vector<float> a(4, 1.0f), x(2, 1.0f), y(2);
  MatrixView<const float> av{a.data(), MatrixLayout::row_major(2, 2, 2)};
  EXPECT_THROW(gemv<float>(1.0f, av, x.data(), 0.0f, y.data(), {"nosuch", 1}), Error);
  EXPECT_THROW(gemv<float>(1.0f, av, nullptr, 0.0f, y.data()), Error);
  EXPECT_THROW(gemv<float>(1.0f, av, x.data(), 0.0f, nullptr), Error);
  EXPECT_THROW(gemv<float>(1.0f, av, x.data(), 0.0f, y.data(), {"cpu", -1}), Error);
  if (gemv_registry().find_or_null("gpu")) {
    EXPECT_THROW(gemv<float>(1.0f, av, x.data(), 0.0f, y.data(), {"gpu", 1}), Error);  // host operands
  }
}
