// The library API's contract: BLAS semantics and clear errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "parray/array.hpp"
#include "parray/gemm.hpp"
#include "parray/registry.hpp"

using namespace parray;

namespace {
const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(GemmApi, CblasShapedEntryAllTransposeCases) {
  const index_t m = 5, n = 4, k = 3;
  std::vector<double> a(m * k), b(k * n);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.5 + static_cast<double>(i);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 1.0 - 0.25 * static_cast<double>(i);
  auto A = [&](index_t i, index_t l) { return a[static_cast<std::size_t>(i * k + l)]; };  // row-major M x K
  auto B = [&](index_t l, index_t j) { return b[static_cast<std::size_t>(l * n + j)]; };
  for (Order order : {Order::row_major, Order::col_major})
    for (Trans ta : {Trans::no, Trans::yes})
      for (Trans tb : {Trans::no, Trans::yes}) {
        // Store op(A) and op(B) as the call describes them.
        const bool row = order == Order::row_major;
        std::vector<double> sa(a.size()), sb(b.size()), c(static_cast<std::size_t>(m * n), 7.0);
        const index_t ar = ta == Trans::no ? m : k, ac = ta == Trans::no ? k : m;
        const index_t br = tb == Trans::no ? k : n, bc = tb == Trans::no ? n : k;
        for (index_t i = 0; i < ar; ++i)
          for (index_t j = 0; j < ac; ++j)
            sa[static_cast<std::size_t>(row ? i * ac + j : j * ar + i)] = ta == Trans::no ? A(i, j) : A(j, i);
        for (index_t i = 0; i < br; ++i)
          for (index_t j = 0; j < bc; ++j)
            sb[static_cast<std::size_t>(row ? i * bc + j : j * br + i)] = tb == Trans::no ? B(i, j) : B(j, i);
        gemm<double>(order, ta, tb, m, n, k, 2.0, sa.data(), row ? ac : ar, sb.data(), row ? bc : br, 0.5, c.data(),
                     row ? n : m, {"gold", 1});
        for (index_t i = 0; i < m; ++i)
          for (index_t j = 0; j < n; ++j) {
            double want = 0;
            for (index_t l = 0; l < k; ++l) want += A(i, l) * B(l, j);
            want = 2.0 * want + 0.5 * 7.0;
            EXPECT_NEAR(c[static_cast<std::size_t>(row ? i * n + j : j * m + i)], want, 1e-12);
          }
      }
}

TEST(GemmApi, BetaZeroDoesNotReadC) {
  std::vector<float> a(6, 1.0f), b(6, 2.0f), c(4, kNaN);
  for (const GemmImpl& impl : registry().all()) {
    if (impl.device != Device::cpu || !impl.supports(Dtype::f32)) continue;
    std::fill(c.begin(), c.end(), kNaN);
    gemm<float>(Order::row_major, Trans::no, Trans::no, 2, 2, 3, 1.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2,
                {impl.name, 1});
    for (float x : c) EXPECT_EQ(x, 6.0f) << impl.name;
  }
}

TEST(GemmApi, AlphaZeroDoesNotReadAOrB) {
  std::vector<float> a(6, kNaN), b(6, kNaN), c(4, 3.0f);
  gemm<float>(Order::row_major, Trans::no, Trans::no, 2, 2, 3, 0.0f, a.data(), 3, b.data(), 2, 0.5f, c.data(), 2);
  for (float x : c) EXPECT_EQ(x, 1.5f);
  std::fill(c.begin(), c.end(), kNaN);
  gemm<float>(Order::row_major, Trans::no, Trans::no, 2, 2, 3, 0.0f, a.data(), 3, b.data(), 2, 0.0f, c.data(), 2);
  for (float x : c) EXPECT_EQ(x, 0.0f);
}

TEST(GemmApi, ZeroSizesAreValid) {
  std::vector<float> c(4, 3.0f);
  // K == 0: C = beta C, A and B may be null.
  gemm<float>(Order::row_major, Trans::no, Trans::no, 2, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 2.0f, c.data(), 2);
  for (float x : c) EXPECT_EQ(x, 6.0f);
  // M == 0 or N == 0: nothing happens, null pointers are fine.
  gemm<float>(Order::row_major, Trans::no, Trans::no, 0, 2, 3, 1.0f, nullptr, 3, nullptr, 2, 0.0f, nullptr, 2);
  gemm<float>(Order::col_major, Trans::no, Trans::no, 2, 0, 3, 1.0f, nullptr, 2, nullptr, 3, 0.0f, nullptr, 2);
}

TEST(GemmApi, BadInputGetsAClearError) {
  std::vector<float> a(100, 1.0f), b(100, 1.0f), c(100, 0.0f);
  auto call = [&](index_t m, index_t n, index_t k, index_t lda, index_t ldb, index_t ldc, const float* pa,
                  const float* pb, float* pc, const std::string& impl = "cpu") {
    return error_of([&] {
      gemm<float>(Order::row_major, Trans::no, Trans::no, m, n, k, 1.0f, pa, lda, pb, ldb, 0.0f, pc, ldc, {impl, 1});
    });
  };
  EXPECT_NE(call(-1, 2, 2, 2, 2, 2, a.data(), b.data(), c.data()).find("negative"), std::string::npos);
  EXPECT_NE(call(2, 2, 3, 2, 2, 2, a.data(), b.data(), c.data()).find("lda=2 is smaller than the row length 3"),
            std::string::npos);
  EXPECT_NE(call(2, 3, 2, 2, 2, 3, a.data(), b.data(), c.data()).find("ldb"), std::string::npos);
  EXPECT_NE(call(3, 3, 2, 2, 3, 2, a.data(), b.data(), c.data()).find("ldc"), std::string::npos);
  EXPECT_NE(call(2, 2, 2, 2, 2, 2, nullptr, b.data(), c.data()).find("null"), std::string::npos);
  EXPECT_NE(call(2, 2, 2, 2, 2, 2, a.data(), b.data(), nullptr).find("null"), std::string::npos);
  EXPECT_NE(call(2, 2, 2, 2, 2, 2, a.data(), b.data(), c.data(), "nosuch").find("unknown implementation"),
            std::string::npos);

  // Views of mismatched shapes.
  MatrixView<const float> va{a.data(), MatrixLayout::row_major(4, 5, 5)};
  MatrixView<const float> vb{b.data(), MatrixLayout::row_major(6, 3, 3)};
  MatrixView<float> vc{c.data(), MatrixLayout::row_major(4, 3, 3)};
  EXPECT_NE(error_of([&] { gemm(1.0f, va, vb, 0.0f, vc); }).find("dimensions do not match"), std::string::npos);
  // A C whose rows overlap would be a silent wrong answer.
  MatrixView<const float> vb5{b.data(), MatrixLayout::row_major(5, 3, 3)};
  MatrixView<float> overlapping{c.data(), MatrixLayout::row_major(4, 3, 2)};
  EXPECT_NE(error_of([&] { gemm(1.0f, va, vb5, 0.0f, overlapping); }).find("same address"), std::string::npos);
  // Operands in the wrong memory space for the implementation.
  MatrixView<float> on_device{c.data(), MatrixLayout::row_major(4, 3, 3), Memory::device};
  EXPECT_NE(error_of([&] { gemm(1.0f, va, vb5, 0.0f, on_device, {"gold", 1}); }).find("memory"), std::string::npos);
  EXPECT_NE(error_of([&] { gemm(1.0f, va, vb5, 0.0f, vc, {"gold", -3}); }).find("negative"), std::string::npos);
}

TEST(Registry, EveryImplementationIsDescribed) {
  const Registry& r = registry();
  ASSERT_GE(r.all().size(), 7u);
  for (const GemmImpl& i : r.all()) {
    EXPECT_FALSE(i.description.empty()) << i.name;
    EXPECT_FALSE(i.preconditions.empty()) << i.name;
    EXPECT_FALSE(i.dtypes().empty()) << i.name;
  }
  EXPECT_EQ(&r.find("cpu"), &r.find(r.default_name(Device::cpu)));
  EXPECT_THROW(r.find("no-such-implementation"), Error);
}

TEST(GemmApi, ReadmeExampleFigure17) {
  // The README's example, at a size that runs quickly: [2][64][32] seen as 64x64.
  Layout::Symbols s;
  s["S"] = Layout::parse("[2][64][32]");
  const Layout M = Layout::parse("[#S_1][[#S_0][#S_2]]", s);
  Array<float> a(s["S"]), b(s["S"]), c(s["S"]);
  for (index_t i = 0; i < 64 * 64; ++i) {
    a[i] = static_cast<float>(i % 7) - 3.0f;
    b[i] = static_cast<float>(i % 5) - 2.0f;
  }
  gemm(1.0f, a.view(M), b.view(M), 0.0f, c.view(M));
  auto va = a.view(M), vb = b.view(M), vc = c.view(M);
  for (index_t i = 0; i < 64; i += 9)
    for (index_t j = 0; j < 64; j += 5) {
      float want = 0;
      for (index_t l = 0; l < 64; ++l) want += va(i, l) * vb(l, j);
      EXPECT_EQ(vc(i, j), want);  // small integers: exact
    }
}
