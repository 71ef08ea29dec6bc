// Step 15's work list (parray/cuda/wgmma_plan.hpp): a K split only where the
// tiles leave SMs idle, every k-tile in exactly one part, no empty part.
#include <gtest/gtest.h>

#include <random>

#include "parray/cuda/wgmma_plan.hpp"

namespace {

using parray::cuda::plan_wgmma_work;
using parray::cuda::WgmmaWork;

constexpr int kSms = 132;          // an H100 SXM / H200
constexpr double kStepUs = 0.85;   // 3xTF32's 128 x 128 x 32 k-tile at 3.7 TFLOP/s per SM

void expect_covers(const WgmmaWork& w, long long M, long long N, long long K, int bm, int bn, int bk) {
  EXPECT_EQ(w.tiles_m, (M + bm - 1) / bm);
  EXPECT_EQ(w.tiles_n, (N + bn - 1) / bn);
  EXPECT_EQ(w.k_tiles, (K + bk - 1) / bk);
  ASSERT_GE(w.splits, 1);
  ASSERT_GE(w.k_per, 1);
  EXPECT_GE(static_cast<long long>(w.splits) * w.k_per, w.k_tiles) << "a k-tile in no part";
  EXPECT_LT(static_cast<long long>(w.splits - 1) * w.k_per, w.k_tiles) << "an empty last part";
}

TEST(WgmmaPlan, FullWavesOfTilesAreNotSplit) {
  for (long long n : {2048, 4096, 8192}) {
    const WgmmaWork w = plan_wgmma_work(n, n, n, 128, 128, 32, kSms, kStepUs);
    expect_covers(w, n, n, n, 128, 128, 32);
    EXPECT_EQ(w.splits, 1) << n;
    EXPECT_EQ(w.k_per, w.k_tiles);
  }
}

TEST(WgmmaPlan, FewTilesWithALongKAreSplit) {
  // 4096 x 4096 x 64: 32 tiles of 128 k-tiles on 132 SMs.
  const WgmmaWork w = plan_wgmma_work(4096, 64, 4096, 128, 128, 32, kSms, kStepUs);
  expect_covers(w, 4096, 64, 4096, 128, 128, 32);
  EXPECT_GE(w.splits, 3);
  EXPECT_LE(w.units(), 2LL * kSms) << "at most two waves of parts";
  EXPECT_GE(w.k_per, 4);
}

TEST(WgmmaPlan, OneTileOfALongKSpreadsOverTheGpu) {
  // 35 x 351 x 28828 as step 15 runs it (C^T, 3 tiles of 128 x 256): 901
  // k-tiles; past 16 parts the tiles' parts still fill more SMs.
  const WgmmaWork w = plan_wgmma_work(351, 35, 28828, 128, 256, 32, kSms, kStepUs);
  expect_covers(w, 351, 35, 28828, 128, 256, 32);
  EXPECT_GT(w.splits, 16);
  EXPECT_LE(w.units(), static_cast<long long>(kSms));
}

// A's rows off TMA's grid: the producer threads' copies where they cost less
// than the pass over A. A long K over few waves of tiles (each SM's k-tiles
// few against A's size) takes them; a square TF32 product, whose k-tiles the
// copies would slow on every SM, takes the pass; FP32 accuracy's longer
// k-steps hide more of the copies than TF32's.
TEST(WgmmaPlan, ThreadsCopyAWhereThatCostsLessThanThePass) {
  const double tf32_step = parray::cuda::wgmma_step_us(4, 128, 256, 32, 1);
  const double fp32_step = parray::cuda::wgmma_step_us(4, 128, 128, 32, 3);
  constexpr double kBw = 3.0e6;  // bytes per microsecond
  const auto pays = [&](long long M, long long N, long long K, int bn, double step, double pass_bytes) {
    const WgmmaWork w = plan_wgmma_work(M, N, K, 128, bn, 32, kSms, step);
    return parray::cuda::a_threads_pay(w, kSms, step, M, K, pass_bytes, kBw);
  };
  EXPECT_TRUE(pays(52184, 90, 2126, 256, tf32_step, 8));
  EXPECT_TRUE(pays(497, 115, 60297, 256, tf32_step, 8));
  EXPECT_FALSE(pays(4095, 4095, 4095, 256, tf32_step, 8));
  EXPECT_GT(parray::cuda::a_threads_extra_us(plan_wgmma_work(4095, 4095, 4095, 128, 256, 32, kSms, tf32_step), kSms,
                                             tf32_step),
            parray::cuda::a_threads_extra_us(plan_wgmma_work(4095, 4095, 4095, 128, 128, 32, kSms, fp32_step), kSms,
                                             fp32_step));
}

TEST(WgmmaPlan, AShortKIsNotSplit) {
  // 8191 x 17 x 8193 has K in one k-tile; 64 x 100 x 64 one tile of 4.
  EXPECT_EQ(plan_wgmma_work(8191, 8193, 17, 128, 128, 32, kSms, kStepUs).splits, 1);
  EXPECT_EQ(plan_wgmma_work(64, 64, 100, 128, 256, 32, kSms, kStepUs).splits, 1);
}

TEST(WgmmaPlan, EveryPlanCoversK) {
  std::mt19937_64 rng(29);
  std::uniform_int_distribution<long long> extent(1, 20000);
  for (int trial = 0; trial < 2000; ++trial) {
    const long long M = extent(rng), N = extent(rng), K = extent(rng);
    const int bn = trial % 2 ? 256 : 128, bk = trial % 3 ? 32 : 64;
    const WgmmaWork w = plan_wgmma_work(M, N, K, 128, bn, bk, kSms, kStepUs);
    expect_covers(w, M, N, K, 128, bn, bk);
    EXPECT_LE(w.splits, kSms) << "more parts than SMs";
    if (w.splits > 1) {
      EXPECT_LT(static_cast<long long>(w.tiles_m) * w.tiles_n, kSms) << "split with the SMs already full";
      EXPECT_GE(w.k_per, 4) << "parts of fewer than 4 k-tiles";
    }
    if (HasFailure()) {
      ADD_FAILURE() << M << " x " << N << " x " << K << ", 128 x " << bn << " x " << bk;
      break;
    }
  }
}

}  // namespace
