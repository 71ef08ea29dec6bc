// The strided and grouped batches of GEMMs on the CPU (include/parray/gemm_batched.hpp):
// every product checked against an FP64 reference on random data with C
// poisoned first; broadcasts, batch 0 and 1, empty matrices, alpha and beta,
// layouts, small products spread over threads and large ones not; bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <limits>
#include <random>
#include <vector>

#include "parray/gemm_batched.hpp"
#include "random_values.hpp"

namespace parray {
namespace {

struct Stack {
  std::vector<float> a, b, c;
};

using testing::random_values;

// C_i = alpha A_i B_i + beta C_i in FP64, A_i row-major M x K at i * sa (or
// column-major where a_col), B_i row-major K x N at i * sb, C_i row-major at i * sc.
std::vector<double> reference(index_t batch, index_t m, index_t n, index_t k, double alpha, const std::vector<float>& a,
                              index_t sa, bool a_col, const std::vector<float>& b, index_t sb, double beta,
                              const std::vector<float>& c, index_t sc) {
  std::vector<double> out(c.begin(), c.end());
  for (index_t q = 0; q < batch; ++q)
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double s = 0;
        for (index_t p = 0; p < k; ++p)
          s += double(a[std::size_t(q * sa + (a_col ? i + p * m : i * k + p))]) * double(b[std::size_t(q * sb + p * n + j)]);
        const std::size_t at = std::size_t(q * sc + i * n + j);
        out[at] = alpha * s + (beta == 0 ? 0.0 : beta * double(c[at]));
      }
  return out;
}

void check_batch(index_t batch, index_t m, index_t n, index_t k, bool broadcast_a, bool broadcast_b, bool a_col,
                 float alpha, float beta, int threads) {
  const index_t sa = broadcast_a ? 0 : m * k, sb = broadcast_b ? 0 : k * n, sc = m * n;
  const std::size_t na = std::size_t(broadcast_a ? m * k : batch * m * k);
  const std::size_t nb = std::size_t(broadcast_b ? k * n : batch * k * n);
  std::vector<float> a = random_values(na, 1), b = random_values(nb, 2), c = random_values(std::size_t(batch * sc), 3);
  const std::vector<double> want = reference(batch, m, n, k, alpha, a, sa, a_col, b, sb, beta, c, sc);
  if (beta == 0) std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());  // not read
  const MatrixLayout la = a_col ? MatrixLayout::col_major(m, k, m) : MatrixLayout::row_major(m, k, k);
  GemmOptions o;
  o.threads = threads;
  gemm_batched<float>(batch, alpha, MatrixView<const float>{a.data(), la}, {b.data(), MatrixLayout::row_major(k, n, n)},
                      beta, MatrixView<float>{c.data(), MatrixLayout::row_major(m, n, n)}, {sa, sb, sc}, o);
  // FP32 products of K terms of magnitude <= 1: the error grows with K.
  const double tolerance = 4.0 * std::numeric_limits<float>::epsilon() * double(k + 2);
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_FALSE(std::isnan(c[i])) << "element " << i;
    ASSERT_NEAR(c[i], want[i], tolerance * (1.0 + std::abs(want[i]))) << "element " << i << " of batch " << batch;
  }
}

TEST(GemmBatched, SmallProductsSpreadOverThreads) {
  check_batch(37, 17, 13, 29, false, false, false, 1.f, 0.f, 2);
  check_batch(64, 64, 64, 64, false, false, true, -1.5f, 0.5f, 2);
}

TEST(GemmBatched, LargeProductsOneAtATime) { check_batch(3, 150, 170, 260, false, false, false, 0.75f, 0.25f, 2); }

TEST(GemmBatched, BroadcastsAndEdges) {
  check_batch(9, 20, 30, 40, true, false, false, 1.f, 1.f, 2);  // one A for every product
  check_batch(9, 20, 30, 40, false, true, true, 1.f, 0.f, 2);   // one B
  check_batch(1, 33, 1, 70, false, false, false, 2.f, 0.f, 1);  // a batch of one, a GEMV
  check_batch(5, 7, 9, 0, false, false, false, 1.f, 0.5f, 2);   // K = 0: C = beta C
  check_batch(0, 7, 9, 11, false, false, false, 1.f, 0.f, 2);   // nothing to do
  check_batch(4, 0, 9, 11, false, false, false, 1.f, 0.f, 2);   // empty C
}

// A broadcast operand with the other and C stacked evenly: one product of
// the whole stack (B broadcast: A's and C's rows; A broadcast: B's and C's
// columns), the same results as the products in turn.
TEST(GemmBatched, BroadcastOverAStackIsOneProduct) {
  check_batch(7, 20, 30, 40, false, true, false, 1.f, 0.5f, 2);  // row-major A and C stacked by rows
  check_batch(5, 1, 30, 40, false, true, false, -2.f, 0.f, 1);   // a stack of row vectors
  // A broadcast, column-major B_i (K x N) and C_i (M x N) stacked by columns.
  const index_t batch = 6, m = 23, n = 17, k = 31;
  const std::vector<float> a = random_values(std::size_t(m * k), 4), b = random_values(std::size_t(batch * k * n), 5);
  std::vector<float> c = random_values(std::size_t(batch * m * n), 6);
  const std::vector<float> c0 = c;
  GemmOptions o;
  o.threads = 2;
  gemm_batched<float>(batch, 1.5f, MatrixView<const float>{a.data(), MatrixLayout::row_major(m, k, k)},
                      {b.data(), MatrixLayout::col_major(k, n, k)}, -0.5f,
                      MatrixView<float>{c.data(), MatrixLayout::col_major(m, n, m)}, {0, k * n, m * n}, o);
  const double tolerance = 4.0 * std::numeric_limits<float>::epsilon() * double(k + 2);
  for (index_t q = 0; q < batch; ++q)
    for (index_t i = 0; i < m; ++i)
      for (index_t j = 0; j < n; ++j) {
        double sum = 0;
        for (index_t p = 0; p < k; ++p) sum += double(a[std::size_t(i * k + p)]) * double(b[std::size_t(q * k * n + j * k + p)]);
        const std::size_t at = std::size_t(q * m * n + j * m + i);
        const double want = 1.5 * sum - 0.5 * double(c0[at]);
        ASSERT_NEAR(c[at], want, tolerance * (1.0 + std::abs(want))) << "product " << q << " (" << i << ", " << j << ")";
      }
}

TEST(GemmBatched, BadInput) {
  std::vector<float> a(64, 1.f), b(64, 1.f), c(64, 0.f);
  const MatrixView<const float> va{a.data(), MatrixLayout::row_major(4, 4, 4)}, vb{b.data(), MatrixLayout::row_major(4, 4, 4)};
  const MatrixView<float> vc{c.data(), MatrixLayout::row_major(4, 4, 4)};
  EXPECT_THROW(gemm_batched<float>(-1, 1.f, va, vb, 0.f, vc, {16, 16, 16}), Error);
  EXPECT_THROW(gemm_batched<float>(2, 1.f, va, vb, 0.f, vc, {16, 16, 8}), Error);   // the C's overlap
  EXPECT_THROW(gemm_batched<float>(2, 1.f, va, vb, 0.f, vc, {16, -16, 16}), Error);  // a negative stride
  const MatrixView<const float> wrong{b.data(), MatrixLayout::row_major(3, 4, 4)};
  EXPECT_THROW(gemm_batched<float>(0, 1.f, va, wrong, 0.f, vc, {16, 16, 16}), Error);  // checked for batch 0 too
  try {
    gemm_batched<float>(2, 1.f, va, vb, 0.f, vc, {16, 16, 0});
    FAIL() << "C's stride 0 with a batch of two was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
}

// A group of products of different shapes and layouts (row- and
// column-major, a transposed view), each its own alpha and beta, spread over
// threads (small) and in turn (one large product among them).
TEST(GemmGrouped, DifferentShapesAndLayouts) {
  struct Shape {
    index_t m, n, k;
    bool col;
    float alpha, beta;
  };
  for (const bool with_large : {false, true}) {
    std::vector<Shape> shapes = {{5, 7, 3, false, 1.f, 0.f},  {17, 1, 40, true, -1.f, 0.5f}, {33, 29, 31, false, 2.f, 1.f},
                                 {1, 64, 9, true, 1.f, 0.f},  {0, 5, 5, false, 1.f, 0.f},   {12, 12, 0, false, 1.f, 0.5f}};
    if (with_large) shapes.push_back({160, 150, 170, true, 0.5f, 0.25f});
    std::vector<std::vector<float>> as, bs, cs;
    std::vector<std::vector<double>> want;
    std::vector<GroupedGemm<float>> group;
    for (std::size_t q = 0; q < shapes.size(); ++q) {
      const Shape& s = shapes[q];
      as.push_back(random_values(std::size_t(s.m * s.k), 10 + q));
      bs.push_back(random_values(std::size_t(s.k * s.n), 20 + q));
      cs.push_back(random_values(std::size_t(s.m * s.n), 30 + q));
      // A row-major or column-major; B read as the transpose of an N x K row-major matrix; C row-major.
      std::vector<double> w(std::size_t(s.m * s.n));
      for (index_t i = 0; i < s.m; ++i)
        for (index_t j = 0; j < s.n; ++j) {
          double sum = 0;
          for (index_t p = 0; p < s.k; ++p)
            sum += double(as[q][std::size_t(s.col ? i + p * s.m : i * s.k + p)]) * double(bs[q][std::size_t(j * s.k + p)]);
          w[std::size_t(i * s.n + j)] = s.alpha * sum + (s.beta == 0 ? 0.0 : s.beta * double(cs[q][std::size_t(i * s.n + j)]));
        }
      want.push_back(std::move(w));
      if (s.beta == 0) std::fill(cs[q].begin(), cs[q].end(), std::numeric_limits<float>::quiet_NaN());
    }
    for (std::size_t q = 0; q < shapes.size(); ++q) {
      const Shape& s = shapes[q];
      const MatrixLayout la = s.col ? MatrixLayout::col_major(s.m, s.k, std::max<index_t>(1, s.m))
                                    : MatrixLayout::row_major(s.m, s.k, std::max<index_t>(1, s.k));
      const MatrixView<const float> bt{bs[q].data(), MatrixLayout::row_major(s.n, s.k, std::max<index_t>(1, s.k))};
      group.push_back({s.alpha, {as[q].data(), la}, bt.t(), s.beta,
                       {cs[q].data(), MatrixLayout::row_major(s.m, s.n, std::max<index_t>(1, s.n))}});
    }
    GemmOptions o;
    o.threads = 2;
    gemm_grouped<float>(group, o);
    for (std::size_t q = 0; q < shapes.size(); ++q)
      for (std::size_t i = 0; i < want[q].size(); ++i) {
        ASSERT_FALSE(std::isnan(cs[q][i])) << "product " << q << " element " << i;
        const double tolerance = 4.0 * std::numeric_limits<float>::epsilon() * double(shapes[q].k + 2);
        ASSERT_NEAR(cs[q][i], want[q][i], tolerance * (1.0 + std::abs(want[q][i]))) << "product " << q;
      }
  }
}

TEST(GemmGrouped, EmptyGroupAndBadInput) {
  gemm_grouped<float>(std::span<const GroupedGemm<float>>{});
  std::vector<float> a(64, 1.f), b(64, 1.f), c(64, 0.f);
  const MatrixView<const float> va{a.data(), MatrixLayout::row_major(4, 4, 4)}, vb{b.data(), MatrixLayout::row_major(4, 4, 4)};
  const std::vector<GroupedGemm<float>> overlapping = {{1.f, va, vb, 0.f, {c.data(), MatrixLayout::row_major(4, 4, 4)}},
                                                       {1.f, va, vb, 0.f, {c.data() + 8, MatrixLayout::row_major(4, 4, 4)}}};
  try {
    gemm_grouped<float>(overlapping);
    FAIL() << "overlapping C's were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlap"), std::string::npos) << e.what();
  }
  const std::vector<GroupedGemm<float>> mismatched = {
      {1.f, va, {b.data(), MatrixLayout::row_major(3, 4, 4)}, 0.f, {c.data(), MatrixLayout::row_major(4, 4, 4)}}};
  try {
    gemm_grouped<float>(mismatched);
    FAIL() << "mismatched dimensions were accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("product 0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace parray
