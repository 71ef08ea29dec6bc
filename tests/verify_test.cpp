// The verifier must catch every kind of wrong answer: these deliberately
// broken implementations (registered only in this test binary) must fail.
#include <gtest/gtest.h>

#include "harness/harness.hpp"

using namespace parray;

namespace {

template <class T>
void correct(const GemmCall<T>& c, bool read_c_always, index_t skip_i, index_t skip_j, double nudge,
             bool read_padding) {
  for (index_t i = 0; i < c.c.rows(); ++i)
    for (index_t j = 0; j < c.c.cols(); ++j) {
      if (i == skip_i && j == skip_j) continue;
      T acc = 0;
      for (index_t l = 0; l < c.a.cols(); ++l) acc += c.a(i, l) * c.b(l, j);
      if (read_padding && i == 0 && j == 0) acc += c.a.data[c.a.layout.offset(0, c.a.cols() - 1) + 1];
      T out = c.alpha * acc;
      if (read_c_always || c.beta != T(0)) out += c.beta * c.c(i, j);
      if (i == c.c.rows() - 1 && j == 0) out += static_cast<T>(nudge);  // one element off
      c.c(i, j) = out;
    }
}

GemmImpl broken(const std::string& name, bool read_c, index_t si, index_t sj, double nudge, bool pad) {
  GemmImpl impl;
  impl.name = name;
  impl.description = "deliberately wrong: " + name;
  impl.preconditions = "test only";
  impl.run_f32 = [=](const GemmCall<float>& c) { correct(c, read_c, si, sj, nudge, pad); };
  impl.run_f64 = [=](const GemmCall<double>& c) { correct(c, read_c, si, sj, nudge, pad); };
  return impl;
}

class Verifier : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    Registry& r = registry();
    if (r.find_or_null("test-correct")) return;
    r.add(broken("test-correct", false, -1, -1, 0.0, false));
    r.add(broken("test-reads-c", true, -1, -1, 0.0, false));
    r.add(broken("test-skips-one", false, 3, 2, 0.0, false));
    r.add(broken("test-small-error", false, -1, -1, 3e-4, false));
    r.add(broken("test-reads-padding", false, -1, -1, 0.0, true));
  }
  static CheckResult check(const std::string& impl, GemmProblem p) {
    GemmCase gcase(p);
    return gcase.run_and_check(registry().find(impl), 1);
  }
  static GemmProblem problem(const char* layout = "row") {
    GemmProblem p;
    p.m = 40, p.k = 30, p.n = 20;
    p.layout_a = p.layout_b = p.layout_c = layout;
    return p;
  }
};

}  // namespace

TEST_F(Verifier, AcceptsACorrectImplementation) {
  for (const char* l : {"row", "fig17", "row-pad"}) EXPECT_TRUE(check("test-correct", problem(l)).ok) << l;
}

TEST_F(Verifier, CatchesReadingCWhenBetaIsZero) {
  const CheckResult r = check("test-reads-c", problem());
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("NaN"), std::string::npos) << r.reason;
}

TEST_F(Verifier, CatchesAnUnwrittenElement) {
  GemmProblem p = problem();
  EXPECT_FALSE(check("test-skips-one", p).ok);
  p.beta = 0.5;  // even when C starts with finite values
  EXPECT_FALSE(check("test-skips-one", p).ok);
}

TEST_F(Verifier, CatchesOneSlightlyWrongElement) {
  // 3e-4 in one of 40000 FP32 elements passes the Frobenius test (relative
  // 1e-6 against a tolerance of 2.3e-6) but not the element-wise bound
  // (at most 2 (K+4) u |A||B| <= 1.2e-4 for K = 30 and inputs in [-1, 1)).
  GemmProblem p = problem();
  p.m = p.n = 200;
  const CheckResult r = check("test-small-error", p);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("forward-error bound"), std::string::npos) << r.reason;
}

TEST_F(Verifier, CatchesReadingPastTheLogicalMatrix) {
  EXPECT_FALSE(check("test-reads-padding", problem("row-pad")).ok);
}

TEST(Tolerance, GrowsWithK) {
  EXPECT_LT(gemm_tolerance(Dtype::f32, 16), gemm_tolerance(Dtype::f32, 4096));
  EXPECT_LT(gemm_tolerance(Dtype::f64, 4096), gemm_tolerance(Dtype::f32, 1));
  EXPECT_LT(gemm_tolerance(Dtype::f32, 8192), 1e-4);
}

TEST(Inputs, AreReproducibleAndNotZero) {
  GemmProblem p;
  p.m = p.n = p.k = 8;
  p.int_inputs = true;
  GemmCase a(p), b(p);
  EXPECT_EQ(a.print(), b.print());
  p.seed = 7;
  GemmCase c(p);
  EXPECT_NE(a.print(), c.print());
}
