// The precision API: what "meets" means between formats, and that gemm()
// refuses an implementation that delivers less than the call asks.
#include <gtest/gtest.h>

#include <vector>

#include "parray/gemm.hpp"
#include "parray/gemm_check.hpp"
#include "parray/precision.hpp"
#include "parray/registry.hpp"

using namespace parray;

TEST(Precision, MeetsIsAPartialOrderOnTheInputFormat) {
  const Precision all[] = {Precision::fp64, Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16};
  // meets[d][r]: delivered d is at least requested r.
  const bool expected[5][5] = {
      {1, 1, 1, 1, 1},  // fp64
      {0, 1, 1, 1, 1},  // fp32
      {0, 0, 1, 1, 1},  // tf32: the mantissa of fp16, the range of bf16
      {0, 0, 0, 1, 0},  // fp16: a longer mantissa than bf16 but a narrower range
      {0, 0, 0, 0, 1},  // bf16
  };
  for (int d = 0; d < 5; ++d)
    for (int r = 0; r < 5; ++r)
      EXPECT_EQ(meets(all[d], all[r]), expected[d][r]) << precision_name(all[d]) << " meets " << precision_name(all[r]);
  for (Precision p : all) EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_THROW(parse_precision("fp8"), Error);
  EXPECT_THROW(parse_precision("FP32"), Error);
}

namespace {
// A CPU implementation that says it rounds its inputs to TF32 (it does not:
// the test is about the refusal, not the rounding).
GemmImpl rounding_to(Precision p) {
  GemmImpl impl = registry().find("gold");
  impl.name = "test-rounds-inputs";
  impl.rounds_inputs = p;
  return impl;
}
}  // namespace

TEST(Precision, WhatAnImplementationDelivers) {
  const GemmImpl& full = registry().find("gold");
  EXPECT_EQ(full.delivers(Dtype::f32), Precision::fp32);
  EXPECT_EQ(full.delivers(Dtype::f64), Precision::fp64);
  const GemmImpl tf32 = rounding_to(Precision::tf32);
  EXPECT_EQ(tf32.delivers(Dtype::f32), Precision::tf32);
  EXPECT_EQ(tf32.delivers(Dtype::f64), Precision::tf32);
}

TEST(Precision, GemmRefusesLessThanAsked) {
  const index_t n = 16;
  std::vector<float> a(n * n, 0.5f), b(n * n, -0.25f), c(n * n, 0.f);
  const MatrixLayout l = MatrixLayout::row_major(n, n, n);
  const MatrixView<const float> va{a.data(), l}, vb{b.data(), l};
  const MatrixView<float> vc{c.data(), l};
  const GemmImpl tf32 = rounding_to(Precision::tf32);
  EXPECT_THROW(gemm<float>(tf32, 1.f, va, vb, 0.f, vc), Error);  // unasked: the dtype's own, fp32
  EXPECT_THROW(gemm<float>(tf32, 1.f, va, vb, 0.f, vc, 1, Precision::fp32), Error);
  try {
    gemm<float>(tf32, 1.f, va, vb, 0.f, vc, 1, Precision::fp32);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("delivers tf32 products of f32 data, the call asks for fp32"),
              std::string::npos)
        << e.what();
  }
  for (Precision ok : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    c.assign(c.size(), 0.f);
    EXPECT_NO_THROW(gemm<float>(tf32, 1.f, va, vb, 0.f, vc, 1, ok)) << precision_name(ok);
    EXPECT_FLOAT_EQ(c[0], 16 * 0.5f * -0.25f);
  }
  const GemmImpl bf16 = rounding_to(Precision::bf16);
  EXPECT_THROW(gemm<float>(bf16, 1.f, va, vb, 0.f, vc, 1, Precision::fp16), Error);  // bf16 does not meet fp16
  // Through the options: fp64 products of fp32 data exist nowhere.
  GemmOptions o;
  o.precision = Precision::fp64;
  EXPECT_THROW(gemm<float>(1.f, va, vb, 0.f, vc, o), Error);
  o.precision = Precision::fp32;
  EXPECT_NO_THROW(gemm<float>(1.f, va, vb, 0.f, vc, o));
}

// The check's tolerance follows what an implementation delivers: unchanged
// for full-precision inputs, wider by 4 v (v the format's unit roundoff) for
// rounded ones, the same at every K for that part.
TEST(Precision, ToleranceFollowsTheDeliveredPrecision) {
  for (index_t k : {1, 100, 4096}) {
    EXPECT_EQ(gemm_tolerance(Dtype::f32, k, Precision::fp32), gemm_tolerance(Dtype::f32, k));
    EXPECT_EQ(gemm_tolerance(Dtype::f64, k, Precision::fp64), gemm_tolerance(Dtype::f64, k));
    EXPECT_NEAR(gemm_tolerance(Dtype::f32, k, Precision::tf32) - gemm_tolerance(Dtype::f32, k), 4 * 0x1p-11, 1e-15);
    EXPECT_NEAR(gemm_tolerance(Dtype::f32, k, Precision::bf16) - gemm_tolerance(Dtype::f32, k), 4 * 0x1p-8, 1e-15);
    EXPECT_NEAR(gemm_element_factor(Dtype::f32, k, Precision::fp16) - gemm_element_factor(Dtype::f32, k),
                2 * 0x1p-11, 1e-15);
  }
}
