// GEMM on FP8 data (gemm8.hpp): parray's step 20 and cuBLASLt over the FP8
// type pairs x C's types x the two scalings x shapes x alpha/beta, each
// against the FP64 product of the dequantised inputs with NaN in C (beta = 0)
// and in every row's padding (gemm8_case.hpp); the argument checks. Skips
// without a GPU; step 20 skips off a Hopper GPU, cuBLASLt where it has no
// such matmul (blockwise scales, E5M2 x E5M2).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <tuple>

#include "harness/gemm8_case.hpp"
#include "every_impl_check.hpp"
#include "parray/array.hpp"
#include "parray/cuda_runtime.hpp"

using namespace parray;

namespace {

struct Shape8 {
  index_t m, k, n, pad;
};

// Whole tiles; edges in M, N and K (K not a multiple of 128: the last k-tile
// and scale block are partial); padded rows (C then written a row at a time
// where its rows lose 16-byte alignment: N + pad odd); a single row and
// column; more tiles than SMs; a long K (many promotions).
const Shape8 kShapes[] = {{128, 128, 128, 0}, {300, 200, 260, 16}, {33, 48, 70, 0},
                          {1, 384, 257, 0},   {257, 64, 1, 16},    {1100, 160, 4000, 0}, {64, 4096, 96, 0}};

void check_every_impl(Gemm8Case& c) {
  parray_test::expect_every_impl_passes(c, gemm8_impls(),
                                        [&](const std::string& impl) { return gemm8_unsupported(impl, c.args()); });
}

// type pair (0: e4m3 x e4m3, 1: e4m3 x e5m2, 2: e5m2 x e5m2), C's type, blockwise, shape, beta
using Param = std::tuple<int, Fp8Out, bool, int, bool>;

class Gemm8 : public ::testing::TestWithParam<Param> {};

TEST_P(Gemm8, MatchesFp64ReferenceOfDequantisedInputs) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const auto [pair, out, blockwise, shape, with_beta] = GetParam();
  Gemm8Problem p;
  p.type_a = pair == 2 ? Fp8::e5m2 : Fp8::e4m3;
  p.type_b = pair == 0 ? Fp8::e4m3 : Fp8::e5m2;
  p.out = out;
  p.scaling = blockwise ? Fp8Scaling::blockwise : Fp8Scaling::per_tensor;
  p.m = kShapes[shape].m, p.k = kShapes[shape].k, p.n = kShapes[shape].n, p.pad = kShapes[shape].pad;
  p.alpha = with_beta ? 1.5f : 1.f, p.beta = with_beta ? -0.75f : 0.f;
  Gemm8Case c(p);
  check_every_impl(c);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto [pair, out, blockwise, shape, with_beta] = info.param;
  static const char* pairs[] = {"e4m3e4m3", "e4m3e5m2", "e5m2e5m2"};
  return fmt::format("{}_{}_{}_{}x{}x{}{}", pairs[pair], fp8_out_name(out), blockwise ? "blockwise" : "tensor",
                     kShapes[shape].m, kShapes[shape].k, kShapes[shape].n, with_beta ? "_beta" : "");
}

INSTANTIATE_TEST_SUITE_P(Grid, Gemm8,
                         ::testing::Combine(::testing::Values(0, 1, 2),
                                            ::testing::Values(Fp8Out::bf16, Fp8Out::fp16, Fp8Out::f32),
                                            ::testing::Bool(), ::testing::Range(0, int(std::size(kShapes))),
                                            ::testing::Bool()),
                         param_name);

// The shapes' corner cases through the API: K = 0 and alpha = 0 scale C by
// beta without reading A or B, M = 0 writes nothing.
TEST(Gemm8Api, EmptyProductsScaleC) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  Gemm8Problem p;
  p.m = 40, p.k = 32, p.n = 24, p.beta = 0.5f, p.out = Fp8Out::f32;
  Gemm8Case c(p);
  for (const std::string impl : {"gpu", "cublaslt"}) {
    Gemm8Args g = c.args();
    if (!gemm8_unsupported(impl, g).empty()) continue;
    g.alpha = 0.f;
    EXPECT_NO_THROW(gemm8(g, impl)) << impl;
    g.alpha = 1.f, g.k = 0, g.a = nullptr, g.b = nullptr;
    EXPECT_NO_THROW(gemm8(g, impl)) << impl;
    g.m = 0;
    EXPECT_NO_THROW(gemm8(g, impl)) << impl;
  }
  cuda::synchronize();
}

// The check itself: a blockwise case multiplied with one scale per tensor
// (its first of A and of B) must fail, by its Frobenius error.
TEST(Gemm8Case, CatchesWrongScales) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  Gemm8Problem p;
  p.m = 200, p.k = 512, p.n = 136, p.scaling = Fp8Scaling::blockwise;
  Gemm8Case c(p);
  Gemm8Args wrong = c.args();
  wrong.scaling = Fp8Scaling::per_tensor;
  if (!gemm8_unsupported("gpu", wrong).empty()) GTEST_SKIP() << gemm8_unsupported("gpu", wrong);
  c.run("gpu", wrong);
  EXPECT_FALSE(c.check().passed);
  c.run("gpu");
  EXPECT_TRUE(c.check().passed) << c.check().note;
}

// Bad arguments: a message naming what is wrong, before any launch.
TEST(Gemm8Api, RefusesBadArguments) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  Gemm8Problem p;
  p.m = 64, p.k = 64, p.n = 64;
  Gemm8Case c(p);
  const auto refused = [](Gemm8Args g, const std::string& words) {
    try {
      gemm8(g, "gpu");
    } catch (const Error& e) {
      return std::string(e.what()).find(words) != std::string::npos ? ::testing::AssertionSuccess()
                                                                     : ::testing::AssertionFailure() << e.what();
    }
    return ::testing::AssertionFailure() << "not refused";
  };
  if (!gemm8_unsupported("gpu", c.args()).empty()) GTEST_SKIP() << gemm8_unsupported("gpu", c.args());
  Gemm8Args g = c.args();
  g.lda = 40;
  EXPECT_TRUE(refused(g, "lda 40 < K"));
  g = c.args(), g.lda = 72;
  EXPECT_TRUE(refused(g, "16-byte aligned"));
  g = c.args(), g.ldb = 8;
  EXPECT_TRUE(refused(g, "B is stored N x K"));
  g = c.args(), g.scale_b = nullptr;
  EXPECT_TRUE(refused(g, "scale_a or scale_b is null"));
  g = c.args(), g.a = static_cast<const char*>(g.a) + 1;
  EXPECT_TRUE(refused(g, "16-byte aligned"));
  g = c.args(), g.m = -1;
  EXPECT_TRUE(refused(g, "negative dimension"));
  g = c.args();
  g.scaling = Fp8Scaling::blockwise;
  EXPECT_NE(gemm8_unsupported("cublaslt", g), "");
  EXPECT_NE(gemm8_unsupported("cuda-99", g).find("unknown FP8 GEMM"), std::string::npos);
}

}  // namespace
