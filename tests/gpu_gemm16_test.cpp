// GEMM on 16-bit data (gemm16.hpp): parray's step 16 and cuBLAS over types x
// C types x the operands' major orders x shapes x alpha/beta, each against the
// FP64 reference with NaN in C (beta = 0) and in every row's padding
// (gemm16_case.hpp). Skips without a GPU; step 16 skips off a Hopper GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <tuple>

#include "parray/array.hpp"
#include "harness/gemm16_case.hpp"
#include "every_impl_check.hpp"

using namespace parray;

namespace {

struct Shape16 {
  index_t m, k, n, pad;
};

// Whole tiles; edges in M, N and K; K not a multiple of 8 and a padding of 3
// (rows not 16-byte aligned: padded copies of A and B, C written a row at a
// time); thin; more tiles than SMs (the persistent grid takes several).
const Shape16 kShapes[] = {{128, 64, 256, 0}, {300, 200, 260, 8}, {33, 17, 70, 3},
                           {1, 300, 257, 0},  {257, 64, 1, 0},    {1100, 72, 4000, 0}};

// Every implementation that runs here on the case, each against the reference.
void check_every_impl(Gemm16Case& c) {
  parray_test::expect_every_impl_passes(c, gemm16_impls(),
                                        [](const std::string& impl) { return gemm16_unsupported(impl); });
}

using Param = std::tuple<Type16, bool, bool, bool, int, bool>;  // type, C f32, trans A, trans B, shape, beta

class Gemm16 : public ::testing::TestWithParam<Param> {};

TEST_P(Gemm16, MatchesFp64Reference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const auto [type, c_f32, ta, tb, shape, with_beta] = GetParam();
  Gemm16Problem p;
  p.type = type, p.c_f32 = c_f32;
  p.trans_a = ta ? Trans::yes : Trans::no, p.trans_b = tb ? Trans::yes : Trans::no;
  p.m = kShapes[shape].m, p.k = kShapes[shape].k, p.n = kShapes[shape].n, p.pad = kShapes[shape].pad;
  p.alpha = with_beta ? 1.5f : 1.f, p.beta = with_beta ? -0.75f : 0.f;
  Gemm16Case c(p);
  check_every_impl(c);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [type, c_f32, ta, tb, shape, beta] = info.param;
  const Shape16& s = kShapes[shape];
  return fmt::format("{}_c{}_{}{}_{}x{}x{}_beta{}", type16_name(type), c_f32 ? "f32" : "16", ta ? "T" : "N",
                     tb ? "T" : "N", s.m, s.k, s.n, beta ? 1 : 0);
}

INSTANTIATE_TEST_SUITE_P(Grid, Gemm16,
                         ::testing::Combine(::testing::Values(Type16::bf16, Type16::fp16), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Bool(), ::testing::Range(0, 6),
                                            ::testing::Bool()),
                         param_name);

// Strided batches: several products in one call, every matrix against its
// own reference. Shapes: tiles that fit a matrix many times over (small
// matrices, many per SM), edges in every dimension, rows not 16-byte aligned
// (the batch then runs matrix by matrix); B broadcast; batch 1.
struct Batch16 {
  index_t batch, m, k, n, pad;
  bool broadcast_b;
};
const Batch16 kBatches[] = {{37, 32, 32, 32, 0, false}, {5, 130, 70, 300, 0, false}, {6, 33, 17, 70, 3, false},
                            {9, 64, 64, 64, 0, true},   {1, 100, 40, 90, 0, false}};

using BatchParam = std::tuple<Type16, bool, bool, bool, int>;  // type, C f32, trans A, trans B, batch shape

class Gemm16Batched : public ::testing::TestWithParam<BatchParam> {};

TEST_P(Gemm16Batched, EveryMatrixMatchesItsReference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const auto [type, c_f32, ta, tb, shape] = GetParam();
  const Batch16& b = kBatches[shape];
  Gemm16Problem p;
  p.type = type, p.c_f32 = c_f32;
  p.trans_a = ta ? Trans::yes : Trans::no, p.trans_b = tb ? Trans::yes : Trans::no;
  p.m = b.m, p.k = b.k, p.n = b.n, p.pad = b.pad, p.batch = b.batch, p.broadcast_b = b.broadcast_b;
  p.alpha = 0.5f, p.beta = shape % 2 ? 0.25f : 0.f;
  Gemm16Case c(p);
  check_every_impl(c);
}

std::string batch_param_name(const ::testing::TestParamInfo<BatchParam>& info) {
  const auto [type, c_f32, ta, tb, shape] = info.param;
  const Batch16& b = kBatches[shape];
  return fmt::format("{}_c{}_{}{}_{}x{}x{}x{}{}", type16_name(type), c_f32 ? "f32" : "16", ta ? "T" : "N",
                     tb ? "T" : "N", b.batch, b.m, b.k, b.n, b.broadcast_b ? "_bcastB" : "");
}

INSTANTIATE_TEST_SUITE_P(Grid, Gemm16Batched,
                         ::testing::Combine(::testing::Values(Type16::bf16, Type16::fp16), ::testing::Bool(),
                                            ::testing::Bool(), ::testing::Bool(), ::testing::Range(0, 5)),
                         batch_param_name);

// A batch stride of C shorter than one C would write products over each
// other: refused before anything runs.
TEST(Gemm16Batched, OverlappingCRefused) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  Gemm16Problem p;
  p.m = 40, p.k = 16, p.n = 24, p.batch = 3;
  Gemm16Case c(p);
  Gemm16Args g = c.args();
  g.stride_c = 40 * 24 - 1;
  EXPECT_THROW(gemm16(g, "cuda-16"), Error);
  g.stride_c = 40 * 24;
  g.batch = -1;
  EXPECT_THROW(gemm16(g, "cublas"), Error);
}

// The check catches a product that leaves out one value of K: the verifier
// can fail.
TEST(Gemm16Check, CatchesAMissingK) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  Gemm16Problem p;
  p.m = 200, p.k = 96, p.n = 300;
  Gemm16Case c(p);
  c.run("cublas");
  ASSERT_TRUE(c.check().passed);
  Gemm16Args short_k = c.args();
  short_k.k -= 1;  // A and B's strides unchanged: the last value of K left out
  gemm16(short_k, "cublas");
  EXPECT_FALSE(c.check().passed);
}

TEST(Gemm16Args, BadArgumentsThrow) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  Gemm16Args g;
  g.m = 4, g.n = 4, g.k = 4, g.lda = 3, g.ldb = 4, g.ldc = 4;
  EXPECT_THROW(gemm16(g, "cublas"), Error);  // lda < K
  g.lda = 4, g.m = -1;
  EXPECT_THROW(gemm16(g, "cublas"), Error);
  EXPECT_THROW(gemm16(g, "no-such-impl"), Error);
}

}  // namespace
