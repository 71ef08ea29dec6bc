// The split of a GEMM on blocked layouts into strided sub-products
// (src/cuda/gemm/strided_blocks.hpp, used by cuda-12-best): host-only, so it is
// checked here on the CPU, where CI runs it. Integer-valued inputs make every
// sum exact, so the split product must equal the direct one bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../src/cuda/gemm/strided_blocks.hpp"
#include "parray/named_layouts.hpp"

using namespace parray;
using parray::cuda::for_each_strided_part;

namespace {

struct Operand {
  std::vector<double> data;
  MatrixView<double> view;
};

Operand make_operand(const std::string& layout, index_t r, index_t c, int seed) {
  const MatrixType t = make_matrix_type(layout, r, c);
  Operand o;
  o.data.assign(static_cast<std::size_t>(t.storage.size()), -1e300);  // padding poisoned
  o.view = {o.data.data(), MatrixLayout::from(t.view)};
  for (index_t i = 0; i < r; ++i)
    for (index_t j = 0; j < c; ++j) o.view(i, j) = double((i * 7 + j * 3 + seed) % 11) - 5.0;
  return o;
}

// C = alpha A B + beta C, through the layouts; beta == 0 does not read C.
void naive_gemm(const GemmCall<double>& g) {
  for (index_t i = 0; i < g.c.rows(); ++i)
    for (index_t j = 0; j < g.c.cols(); ++j) {
      double s = 0;
      for (index_t p = 0; p < g.a.cols(); ++p) s += g.a(i, p) * g.b(p, j);
      g.c(i, j) = g.beta == 0 ? g.alpha * s : g.alpha * s + g.beta * g.c(i, j);
    }
}

void expect_split_equals_direct(const std::string& la, const std::string& lb, const std::string& lc, index_t m,
                                index_t k, index_t n, std::size_t expected_parts) {
  SCOPED_TRACE(la + "/" + lb + "/" + lc + " " + std::to_string(m) + "x" + std::to_string(k) + "x" +
               std::to_string(n));
  Operand a = make_operand(la, m, k, 1), b = make_operand(lb, k, n, 2);
  Operand c_split = make_operand(lc, m, n, 3), c_direct = make_operand(lc, m, n, 3);
  GemmCall<double> call{2.0, a.view, b.view, -0.5, c_split.view, 1};
  std::size_t parts = 0;
  const bool split = for_each_strided_part(call, 64, 16, [&](const GemmCall<double>& part) {
    EXPECT_TRUE(part.a.layout.is_strided() && part.b.layout.is_strided() && part.c.layout.is_strided());
    naive_gemm(part);
    ++parts;
  });
  ASSERT_TRUE(split);
  EXPECT_EQ(parts, expected_parts);
  call.c = c_direct.view;
  naive_gemm(call);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) ASSERT_EQ(c_split.view(i, j), c_direct.view(i, j)) << i << "," << j;
  EXPECT_EQ(c_split.data, c_direct.data);  // padding untouched too
}

}  // namespace

TEST(StridedBlocks, Figure17SplitsK) { expect_split_equals_direct("fig17", "row", "row", 37, 50, 29, 2); }
TEST(StridedBlocks, Figure18SplitsEveryAxis) { expect_split_equals_direct("fig18", "fig18", "fig18", 40, 34, 36, 8); }
TEST(StridedBlocks, OddSizesAndMixedLayouts) {
  expect_split_equals_direct("fig17x4", "col", "fig18", 41, 67, 39, 4 * 2 * 2);
  expect_split_equals_direct("row", "fig17", "fig17", 33, 35, 37, 2);
}
TEST(StridedBlocks, DeclinesSmallBlocksTooManyPartsAndEmptyProducts) {
  Operand a = make_operand("fig18", 20, 20, 1), b = make_operand("fig18", 20, 20, 2), c = make_operand("fig18", 20, 20, 3);
  GemmCall<double> call{1.0, a.view, b.view, 0.0, c.view, 1};
  int calls = 0;
  auto count = [&](const GemmCall<double>&) { ++calls; };
  EXPECT_FALSE(for_each_strided_part(call, 64, 16, count));  // blocks of 10 < 16
  EXPECT_FALSE(for_each_strided_part(call, 4, 1, count));    // 8 parts > 4
  EXPECT_TRUE(for_each_strided_part(call, 8, 1, count));
  EXPECT_EQ(calls, 8);
  Operand e = make_operand("fig18", 20, 0, 1), f = make_operand("fig18", 0, 20, 2);
  EXPECT_FALSE(for_each_strided_part(GemmCall<double>{1.0, e.view, f.view, 0.0, c.view, 1}, 64, 1, count));
}
