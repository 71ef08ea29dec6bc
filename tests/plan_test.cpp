// The default GPU GEMM's planner (include/parray/plan.hpp), checked on the
// host: the class of kernel each class of shape gets, the precision rules,
// and the K split's bounds. No GPU needed: the planner runs on a model.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "parray/plan.hpp"

namespace parray {
namespace {

PlanProblem problem(index_t m, index_t n, index_t k, Precision p = Precision::fp32) {
  PlanProblem x;
  x.m = m, x.n = n, x.k = k, x.precision = p;
  return x;
}

PlanKernel chosen(const GpuModel& g, const PlanProblem& p) { return plan_gemm(g, p).chosen.kernel; }

bool tensor(PlanKernel k) {
  return k == PlanKernel::tc_3xtf32 || k == PlanKernel::tc_tf32 || k == PlanKernel::tc_bf16 || k == PlanKernel::tc_fp16;
}

class PlanOnGpu : public ::testing::TestWithParam<int> {
 protected:
  GpuModel gpu() const { return GetParam() == 0 ? GpuModel::h100() : GpuModel::h200(); }
};

TEST_P(PlanOnGpu, VectorShapesGoToTheGemv) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    EXPECT_EQ(chosen(gpu(), problem(1, 4096, 4096, p)), PlanKernel::gemv);
    EXPECT_EQ(chosen(gpu(), problem(4096, 1, 4096, p)), PlanKernel::gemv);
    EXPECT_EQ(chosen(gpu(), problem(1, 100000, 32, p)), PlanKernel::gemv);
    EXPECT_EQ(chosen(gpu(), problem(32, 1, 100000, p)), PlanKernel::gemv);
    EXPECT_EQ(chosen(gpu(), problem(4841, 1, 14942, p)), PlanKernel::gemv);  // not a 16-wide thin tile
  }
  PlanProblem strided = problem(1, 4096, 4096);
  strided.gemv_ok = false;  // a vector with a stride: a tile kernel takes it
  EXPECT_NE(chosen(gpu(), strided), PlanKernel::gemv);
  EXPECT_NE(chosen(gpu(), problem(2, 4096, 4096)), PlanKernel::gemv);
}

TEST_P(PlanOnGpu, SmallProductsTakeTheSmallTile) {
  for (index_t s : {64, 100, 128, 256})
    EXPECT_EQ(chosen(gpu(), problem(s, s, s)), PlanKernel::cuda_small) << s;
  PlanProblem blocked = problem(64, 64, 64);
  blocked.a_unit_stride = false;  // the 64 x 64 tile reads row- or column-major operands only
  EXPECT_NE(chosen(gpu(), blocked), PlanKernel::cuda_small);
}

TEST_P(PlanOnGpu, FewColumnsOrRowsTakeGemvStep7) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    EXPECT_EQ(chosen(gpu(), problem(4192, 3, 2493, p)), PlanKernel::few_vectors);
    EXPECT_EQ(chosen(gpu(), problem(3, 13, 2374, p)), PlanKernel::few_vectors);
    EXPECT_EQ(chosen(gpu(), problem(8, 4096, 4096, p)), PlanKernel::few_vectors);
  }
  PlanProblem blocked = problem(4192, 3, 2493);
  blocked.few_ok = false;
  EXPECT_NE(chosen(gpu(), blocked), PlanKernel::few_vectors);
  EXPECT_NE(chosen(gpu(), problem(9, 4096, 4096)), PlanKernel::few_vectors);
}

// C of 9-64 columns or rows with a long other side: a tile as narrow as C
// (thin_tile), not a 128-wide one that computes mostly padding.
TEST_P(PlanOnGpu, ThinCTakesTheThinTiles) {
  EXPECT_EQ(chosen(gpu(), problem(58187, 12, 2279)), PlanKernel::cuda_thin);
  EXPECT_EQ(chosen(gpu(), problem(14, 50017, 848)), PlanKernel::cuda_thin);
  EXPECT_NE(chosen(gpu(), problem(65, 50017, 848)), PlanKernel::cuda_thin);  // past 64: not thin
  for (index_t few : {1, 5, 8})  // the GEMV kernels read the long operand once
    EXPECT_NE(chosen(gpu(), problem(20000, few, 15000)), PlanKernel::cuda_thin) << few;
  PlanProblem blocked = problem(58187, 12, 2279);
  blocked.b_unit_stride = false;  // the thin tiles read row- or column-major operands only
  EXPECT_NE(chosen(gpu(), blocked), PlanKernel::cuda_thin);
}

TEST(ThinTile, AsNarrowAsCAlongItsThinSide) {
  EXPECT_EQ(thin_tile(58187, 12).bm, 256);
  EXPECT_EQ(thin_tile(58187, 12).bn, 16);
  EXPECT_EQ(thin_tile(58187, 17).bn, 32);
  EXPECT_EQ(thin_tile(58187, 64).bn, 64);
  EXPECT_EQ(thin_tile(14, 50017).bm, 16);
  EXPECT_EQ(thin_tile(14, 50017).bn, 256);
  EXPECT_EQ(thin_tile(33, 50017).bm, 64);
}

// K <= 32 with a C of any size: the product is C's traffic (step 17), at
// every precision (FP32 products are at least as accurate as asked).
TEST_P(PlanOnGpu, ShortKTakesStep17) {
  for (const auto& [m, n, k] : {std::array<index_t, 3>{7445, 3671, 5}, {177, 20731, 2}, {28488, 203, 9},
                                {4096, 4096, 32}, {403, 4842, 5}, {40, 40, 16}}) {
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16})
      EXPECT_EQ(chosen(gpu(), problem(m, n, k, p)), PlanKernel::short_k) << m << "x" << n << "x" << k;
  }
  EXPECT_NE(chosen(gpu(), problem(4096, 4096, 33)), PlanKernel::short_k);
  PlanProblem blocked = problem(4096, 4096, 8);
  blocked.all_strided = false;  // step 17 reads strided layouts only
  EXPECT_NE(chosen(gpu(), blocked), PlanKernel::short_k);
}

TEST_P(PlanOnGpu, SmallCWithLongKIsSplit) {
  for (const auto& [m, n, k] : {std::array<index_t, 3>{96, 96, 12288}, {256, 256, 65536}, {64, 512, 30000}}) {
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
      EXPECT_GT(plan_gemm(gpu(), problem(m, n, k, p)).chosen.splits, 1) << m << "x" << n << "x" << k;
  }
}

TEST_P(PlanOnGpu, LargeProductsTakeTheTensorCoresAtTheAskedPrecision) {
  for (index_t s : {2048, 4096, 8192}) {
    EXPECT_EQ(chosen(gpu(), problem(s, s, s, Precision::fp32)), PlanKernel::tc_3xtf32) << s;
    EXPECT_EQ(chosen(gpu(), problem(s, s, s, Precision::tf32)), PlanKernel::tc_tf32) << s;
    EXPECT_EQ(chosen(gpu(), problem(s, s, s, Precision::bf16)), PlanKernel::tc_bf16) << s;
    EXPECT_EQ(chosen(gpu(), problem(s, s, s, Precision::fp16)), PlanKernel::tc_fp16) << s;
  }
}

// An A step 15 cannot read in place (a column-major A with columns an odd
// number of floats apart) goes through its pass: the tensor kernels'
// predictions grow by that pass, the CUDA cores' do not.
TEST_P(PlanOnGpu, ATheCopyEngineCannotReadCostsItsPass) {
  for (Precision p : {Precision::fp32, Precision::tf32}) {
    PlanProblem aligned = problem(8192, 2048, 4095, p), loose = aligned;
    loose.a_in_place = false;
    const auto predicted = [&](const PlanProblem& x, PlanKernel k) {
      for (const PlanOption& o : plan_gemm(gpu(), x).options)
        if (o.kernel == k) return o.predicted_us;
      return 0.0;
    };
    const PlanKernel tensor_kernel = p == Precision::tf32 ? PlanKernel::tc_tf32 : PlanKernel::tc_3xtf32;
    // A's pass: 8192 x 4095 elements read and written (8 or 12 bytes each).
    const double pass_us = 8.0 * 8192.0 * 4095.0 / (gpu().dram_gbs * 1e3);
    EXPECT_GT(predicted(loose, tensor_kernel), predicted(aligned, tensor_kernel) + 0.9 * pass_us);
    EXPECT_EQ(predicted(loose, PlanKernel::cuda_best), predicted(aligned, PlanKernel::cuda_best));
  }
}

// Over random shapes and every precision: the plan never delivers less than
// asked, never a kernel that cannot run, and is the fastest of those that can.
TEST_P(PlanOnGpu, NeverLessAccuracyNeverASlowerKernel) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> log_extent(0.0, std::log(65536.0));
  for (int i = 0; i < 2000; ++i) {
    const auto draw = [&] { return index_t(std::exp(log_extent(rng))); };
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16}) {
      const GemmPlan plan = plan_gemm(gpu(), problem(std::max<index_t>(1, draw()), std::max<index_t>(1, draw()),
                                                     std::max<index_t>(1, draw()), p));
      ASSERT_TRUE(meets(plan.chosen.delivers, p));
      ASSERT_TRUE(plan.chosen.note.empty());
      ASSERT_GT(plan.chosen.predicted_us, 0.0);
      for (const PlanOption& o : plan.options) {
        if (o.note.empty()) {
          ASSERT_LE(plan.chosen.predicted_us, o.predicted_us);
        }
        if (!meets(o.delivers, p)) {
          ASSERT_FALSE(o.note.empty()) << o.impl;
        }
      }
    }
  }
}

TEST_P(PlanOnGpu, Bf16IsNeverServedByFp16) {
  for (index_t s : {256, 4096})
    for (const PlanOption& o : plan_gemm(gpu(), problem(s, s, s, Precision::bf16)).options)
      if (o.kernel == PlanKernel::tc_fp16) {
        EXPECT_FALSE(o.note.empty());
      }
}

// Batches: step 18 (one launch on the CUDA cores) for stacks of small
// matrices, step 16's 128 x 256 tensor-core tiles once a matrix fills them;
// for FP32 data step 18 beats the products in turn wherever each product is
// small (a call's host time dominates it).
BatchProblem batch(index_t count, index_t m, index_t n, index_t k, int in_bytes) {
  BatchProblem b;
  b.batch = count, b.m = m, b.n = n, b.k = k, b.in_bytes = in_bytes, b.out_bytes = in_bytes;
  return b;
}

TEST_P(PlanOnGpu, BatchesOfSmallMatricesTakeStep18) {
  for (index_t s : {8, 24, 32})
    EXPECT_LT(plan_batched_small(gpu(), batch(4096, s, s, s, 2)).predicted_us,
              predict_batched_16bit_us(gpu(), batch(4096, s, s, s, 2)))
        << s;
  for (index_t s : {256, 512, 2048})
    EXPECT_GT(plan_batched_small(gpu(), batch(64, s, s, s, 2)).predicted_us,
              predict_batched_16bit_us(gpu(), batch(64, s, s, s, 2)))
        << s;
  EXPECT_EQ(plan_batched_small(gpu(), batch(10, 32, 30, 500, 4)).tile, 32);
  EXPECT_EQ(plan_batched_small(gpu(), batch(10, 33, 30, 500, 4)).tile, 64);
  // FP32: a stack of 64^3 in one launch against 1024 calls in turn.
  const double in_turn = 1024 * kHostUsPerCall;
  EXPECT_LT(plan_batched_small(gpu(), batch(1024, 64, 64, 64, 4)).predicted_us, in_turn);
}

// FP32 data: step 15's batch on the tensor cores once a matrix fills its
// tiles, at any precision asked (3xTF32 for FP32); step 18 for the smallest.
TEST_P(PlanOnGpu, LargeFp32BatchesTakeStep15) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
    for (index_t s : {256, 512, 2048})
      EXPECT_LT(predict_batched_tensor_us(gpu(), batch(64, s, s, s, 4), p),
                plan_batched_small(gpu(), batch(64, s, s, s, 4)).predicted_us)
          << s << " " << precision_name(p);
  EXPECT_LT(plan_batched_small(gpu(), batch(4096, 8, 8, 8, 4)).predicted_us,
            predict_batched_tensor_us(gpu(), batch(4096, 8, 8, 8, 4), Precision::fp32));
  // The 16-bit formats pass A too; 3xTF32 runs three products.
  const BatchProblem big = batch(64, 1024, 1024, 1024, 4);
  EXPECT_LT(predict_batched_tensor_us(gpu(), big, Precision::tf32),
            predict_batched_tensor_us(gpu(), big, Precision::fp32));
}

TEST_P(PlanOnGpu, BatchTimeGrowsWithTheBatch) {
  for (index_t s : {16, 64, 300}) {
    const double one = plan_batched_small(gpu(), batch(100, s, s, s, 4)).predicted_us;
    const double four = plan_batched_small(gpu(), batch(400, s, s, s, 4)).predicted_us;
    EXPECT_GT(four, one) << s;
    EXPECT_GT(predict_batched_tensor_us(gpu(), batch(400, s, s, s, 4), Precision::tf32),
              predict_batched_tensor_us(gpu(), batch(100, s, s, s, 4), Precision::tf32))
        << s;
    EXPECT_GE(predict_batched_16bit_us(gpu(), batch(400, s, s, s, 2)),
              predict_batched_16bit_us(gpu(), batch(100, s, s, s, 2)))
        << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, PlanOnGpu, ::testing::Values(0, 1),
                         [](const auto& info) { return info.param == 0 ? "H100" : "H200"; });

TEST(Plan, WithoutTensorKernelsEverythingRunsOnTheCudaCores) {
  GpuModel g = GpuModel::h100();
  g.tensor_kernels = false;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
    EXPECT_FALSE(tensor(chosen(g, problem(4096, 4096, 4096, p))));
}

TEST(Plan, KSplitBounds) {
  EXPECT_EQ(plan_k_splits(1000, 256, 264, 4096, 4096, 1.0, 3e6, 2.0), 1);  // tiles fill the slots
  EXPECT_EQ(plan_k_splits(4, 7, 264, 256, 256, 1.0, 3e6, 2.0) * 4 <= 8, true);  // each part >= 4 k-steps
  EXPECT_EQ(plan_k_splits(4, 6, 264, 256, 256, 1.0, 3e6, 2.0), 1);              // too few k-steps to split
  const int s = plan_k_splits(1, 768, 264, 96, 96, 1.0, 3e6, 2.0);
  EXPECT_GT(s, 1);
  EXPECT_LE(s, 16);
  EXPECT_GE((768 + s - 1) / s, 4);
  // A cap past 16 (step 22's FP64 parts): one tile of a long K spread over the slots.
  const int wide = plan_k_splits(1, 1032, 132, 6, 61, 0.45, 1.6e6, 5.0, 132);
  EXPECT_GT(wide, 16);
  EXPECT_LE(wide, 132);
  EXPECT_GE((1032 + wide - 1) / wide, 4);
}

TEST(Plan, BadInputThrows) {
  EXPECT_THROW(plan_gemm(GpuModel::h100(), problem(0, 4, 4)), Error);
  GpuModel empty;
  EXPECT_THROW(plan_gemm(empty, problem(4, 4, 4)), Error);
}

}  // namespace
}  // namespace parray
