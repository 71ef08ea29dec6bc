// The shared pieces of every benchmark: verify_then_time (a wrong answer is
// never timed, errors become failed verdicts), check_gemm (the reference-free
// GEMM checker of the multi-GPU and MPI paths: full and checksum modes, any
// layout, NaN never passes) and the one registry template.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "parray/gemm.hpp"
#include "parray/gemm_check.hpp"
#include "parray/gemv.hpp"
#include "parray/measure.hpp"
#include "parray/registry.hpp"

using namespace parray;

namespace {

Trial counting_trial(int& runs, int& timed, bool passes) {
  Trial t;
  t.run = [&runs] { ++runs; };
  t.check = [passes] { return Verdict{passes ? Outcome::passed : Outcome::failed, 0.5, passes ? "" : "wrong"}; };
  t.time_one = [&timed] { return double(++timed); };
  return t;
}

TimingPlan fixed_plan(int warmup, int reps) {
  TimingPlan p;
  p.warmup = warmup, p.min_reps = p.max_reps = reps, p.target_seconds = 0;
  return p;
}

}  // namespace

TEST(VerifyThenTime, AWrongAnswerIsNeverTimed) {
  int runs = 0, timed = 0;
  const Measurement m = verify_then_time(counting_trial(runs, timed, false), fixed_plan(1, 5));
  EXPECT_EQ(m.verdict.outcome, Outcome::failed);
  EXPECT_EQ(m.verdict.note, "wrong");
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(timed, 0);
  EXPECT_EQ(m.timing.reps, 0);
}

TEST(VerifyThenTime, APassedCheckIsWarmedUpAndTimed) {
  int runs = 0, timed = 0;
  const Measurement m = verify_then_time(counting_trial(runs, timed, true), fixed_plan(2, 5));
  EXPECT_TRUE(m.verdict.passed());
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(timed, 7);  // 2 warm-up calls, then 5 timed ones returning 3..7 ms
  EXPECT_EQ(m.timing.reps, 5);
  EXPECT_DOUBLE_EQ(m.timing.median_ms, 5.0);
  EXPECT_DOUBLE_EQ(m.timing.min_ms, 3.0);
}

TEST(VerifyThenTime, ResetComesBeforeTheCheckedRun) {
  std::vector<int> order;
  Trial t;
  t.reset = [&] { order.push_back(0); };
  t.run = [&] { order.push_back(1); };
  t.finish = [&] { order.push_back(2); };
  t.check = [&] {
    order.push_back(3);
    return Verdict{Outcome::passed, 0, ""};
  };
  t.before_timing = [&] { order.push_back(4); };
  verify_then_time(t, fixed_plan(0, 1));
  // The default clock times run() and finish() again.
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 1, 2}));
}

TEST(VerifyThenTime, AnErrorBecomesAFailedVerdictOrPropagates) {
  Trial t;
  t.run = [] { throw Error("device lost"); };
  t.check = [] { return Verdict{Outcome::passed, 0, ""}; };
  const Measurement m = verify_then_time(t, fixed_plan(0, 1));
  EXPECT_EQ(m.verdict.outcome, Outcome::failed);
  EXPECT_EQ(m.verdict.note, "device lost");
  t.catch_errors = false;
  EXPECT_THROW(verify_then_time(t, fixed_plan(0, 1)), Error);
}

namespace {

// C = alpha A B + beta C0 in FP32 by parray's CPU GEMM, A column-major and B
// row-major, for check_gemm to judge.
struct Product {
  index_t m, n, k;
  std::vector<float> a, b, c0, c;
  float alpha = 1.5f, beta = -0.5f;
  Product(index_t m_, index_t n_, index_t k_) : m(m_), n(n_), k(k_), a(m * k), b(k * n), c0(m * n), c(m * n) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (auto* v : {&a, &b, &c0})
      for (float& x : *v) x = u(rng);
    c = c0;
    gemm<float>(alpha, av(), bv(), beta, MatrixView<float>{c.data(), MatrixLayout::row_major(m, n, n), Memory::paged});
  }
  MatrixView<const float> av() const { return {a.data(), MatrixLayout::col_major(m, k, m), Memory::paged}; }
  MatrixView<const float> bv() const { return {b.data(), MatrixLayout::row_major(k, n, n), Memory::paged}; }
  MatrixView<const float> cv(const std::vector<float>& x) const {
    return {x.data(), MatrixLayout::row_major(m, n, n), Memory::paged};
  }
  GemmCheck check(const std::vector<float>& x) const {
    const MatrixView<const float> c0v = cv(c0);
    return check_gemm<float>(alpha, av(), bv(), beta, &c0v, cv(x));
  }
};

}  // namespace

TEST(CheckGemm, FullModePassesARightProductAndFindsOneWrongElement) {
  Product p(37, 29, 53);
  GemmCheck r = p.check(p.c);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.method, "full");
  std::vector<float> bad = p.c;
  bad[5 * 29 + 7] += 1e-3f;
  r = p.check(bad);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("C(5, 7)"), std::string::npos) << r.reason;
  bad = p.c;
  bad[3] = std::numeric_limits<float>::quiet_NaN();
  r = p.check(bad);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("not finite"), std::string::npos) << r.reason;
}

TEST(CheckGemm, ChecksumModeAboveTwoToThe31MultiplyAdds) {
  Product p(1100, 1000, 2000);  // 2.2e9 multiply-adds
  GemmCheck r = p.check(p.c);
  EXPECT_TRUE(r.ok) << r.reason;
  EXPECT_EQ(r.method, "checksum+samples");
  std::vector<float> bad = p.c;
  for (index_t j = 0; j < p.n; ++j) bad[std::size_t(400 * p.n + j)] += 0.05f;  // one row off
  r = p.check(bad);
  EXPECT_FALSE(r.ok);
  bad = p.c;
  bad[std::size_t(p.m * p.n - 1)] = std::numeric_limits<float>::infinity();
  r = p.check(bad);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.reason.find("not finite"), std::string::npos) << r.reason;
}

TEST(CheckGemm, RefusesMismatchedShapesAndMissingC0) {
  Product p(8, 6, 5);
  const MatrixView<const float> c = p.cv(p.c);
  EXPECT_THROW(check_gemm<float>(1.f, p.av(), p.av(), 0.f, nullptr, c), Error);
  EXPECT_THROW(check_gemm<float>(1.f, p.av(), p.bv(), 1.f, nullptr, c), Error);
}

TEST(ImplRegistry, OneTemplateForGemmAndGemv) {
  // The same lookups and errors for both operations.
  EXPECT_EQ(registry().find("cpu").name, registry().default_name(Device::cpu));
  EXPECT_EQ(gemv_registry().find("cpu").name, gemv_registry().default_name(Device::cpu));
  for (const std::string& name : {std::string("nosuch")}) {
    try {
      gemv_registry().find(name);
      ADD_FAILURE() << "found " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown GEMV implementation 'nosuch' (known: gemv-cpu"), std::string::npos)
          << e.what();
    }
  }
  GemvRegistry r;
  GemvImpl impl;
  impl.name = "x";
  impl.aliases = {"y"};
  r.add(impl);
  EXPECT_EQ(r.find("y").name, "x");
  EXPECT_THROW(r.add(impl), Error);  // twice
  impl.name = "all";
  impl.aliases.clear();
  EXPECT_THROW(r.add(impl), Error);  // reserved
  EXPECT_THROW(r.find("gpu"), Error);  // no default set
}
