// The filter's lower bound (knn_exact.hpp) against the arithmetic of a
// tensor-core GEMM, simulated on the CPU: inputs truncated to TF32 or BF16
// (flushed to zero below the smallest normal), products exact, sums truncated
// toward zero in FP32. Every lower bound must stay at or below the FP64 key
// on data chosen to stress it; the FP32 bound, which assumes FP32 inputs and
// sums rounded to nearest, must fail there, so that the check can fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "parray/knn_exact.hpp"

using namespace parray;

namespace {

// An input as a tensor core of `mantissa` bits sees it at worst: truncated,
// and zero below the smallest normal FP32.
float narrowed(float v, int mantissa) {
  if (std::fabs(v) < 0x1p-126f) return 0.f;
  const std::uint32_t drop = 23 - mantissa;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) & ~((1u << drop) - 1u));
}

// a + b rounded toward zero to FP32.
float sum_toward_zero(float a, float b) {
  const double exact = double(a) + double(b);
  float f = float(exact);
  if (std::fabs(double(f)) > std::fabs(exact)) f = std::nextafter(f, 0.f);
  return f;
}

float narrow_dot(const std::vector<float>& q, const std::vector<float>& x, int mantissa) {
  float s = 0.f;
  for (std::size_t t = 0; t < q.size(); ++t)
    s = sum_toward_zero(s, float(double(narrowed(q[t], mantissa)) * double(narrowed(x[t], mantissa))));
  return s;
}

float norm_sq(const std::vector<float>& v) {
  float s = 0.f;
  for (float e : v) s += e * e;
  return s;
}

// How many (query, vector) pairs of `set` get a lower bound above their key.
int violations(const std::vector<std::vector<float>>& set, bool l2, const FilterBound& b, int mantissa) {
  int bad = 0;
  for (const auto& q : set)
    for (const auto& x : set) {
      const float qn = norm_sq(q), xr = std::sqrt(norm_sq(x));
      const QueryTerms<float> t =
          query_terms<float>(l2, qn, std::sqrt(qn), float(b.beta), float(b.eta), float(b.gamma));
      const float lower = filter_lower<float>(l2, narrow_dot(q, x, mantissa), t, xr);
      if (double(lower) > exact_key(q.data(), x.data(), index_t(q.size()), l2)) ++bad;
    }
  return bad;
}

// Vectors of d components: offset + spread * uniform, with near-duplicates
// of the first (each component moved by a relative 1e-6).
std::vector<std::vector<float>> offset_set(int d, float offset, float spread, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<std::vector<float>> s(24, std::vector<float>(std::size_t(d)));
  for (auto& v : s)
    for (float& e : v) e = offset + spread * u(rng);
  for (std::size_t i = 1; i < 6; ++i)
    for (int t = 0; t < d; ++t) s[i][std::size_t(t)] = s[0][std::size_t(t)] * (1.f + 1e-6f * u(rng));
  return s;
}

// Components of magnitude 2^-40 .. 2^40, tiny ones beside large ones, and a
// vector of subnormals only against one of large components only (what the
// flushed inputs lose is then beyond any multiple of |q| |x|).
std::vector<std::vector<float>> wide_set(int d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(1.f, 2.f);
  std::uniform_int_distribution<int> e(-40, 40), sign(0, 1);
  std::vector<std::vector<float>> s(24, std::vector<float>(std::size_t(d)));
  for (auto& v : s)
    for (float& c : v) c = (sign(rng) ? 1.f : -1.f) * std::ldexp(u(rng), e(rng));
  for (std::size_t i = 0; i < 6; ++i)
    for (int t = 0; t < d; t += 2) s[i][std::size_t(t)] = (t % 4 ? 3e-39f : 1e15f);
  s[6].assign(std::size_t(d), 3e-39f);
  s[7].assign(std::size_t(d), 1e15f);
  return s;
}

struct Format {
  const char* name;
  int mantissa;
  FilterArithmetic arithmetic;
};
const Format kTf32{"tf32", 10, {0x1p-10, 0x1p-126, 0x1p-23}};
const Format kBf16{"bf16", 7, {0x1p-7, 0x1p-126, 0x1p-23}};

// Violations over every stress set, d = 3, 32, 128, L2 and IP, with the
// bound bound_for(d) and inputs of `mantissa` bits.
template <class BoundFor>
int stress_violations(BoundFor bound_for, int mantissa) {
  int bad = 0;
  for (int d : {3, 32, 128})
    for (bool l2 : {true, false}) {
      const FilterBound b = bound_for(index_t(d));
      bad += violations(offset_set(d, 0.f, 1.f, 1), l2, b, mantissa);
      bad += violations(offset_set(d, 1000.f, 1.f, 2), l2, b, mantissa);
      bad += violations(offset_set(d, 1e6f, 1e-3f, 3), l2, b, mantissa);
      bad += violations(wide_set(d, 4), l2, b, mantissa);
    }
  return bad;
}

}  // namespace

TEST(FilterBound, DefaultArithmeticIsTheFp32Bound) {
  for (index_t d : {1, 7, 128, 4096}) {
    const FilterBound a = filter_bound<float>(d), b = filter_bound(d, FilterArithmetic{});
    EXPECT_EQ(a.beta, b.beta) << d;
    EXPECT_EQ(a.eta, b.eta) << d;
    EXPECT_EQ(b.gamma, 0.0) << d;
  }
}

TEST(FilterBound, CoversTensorCoreInputsAndSums) {
  for (const Format& f : {kTf32, kBf16})
    EXPECT_EQ(stress_violations([&](index_t d) { return filter_bound(d, f.arithmetic); }, f.mantissa), 0) << f.name;
}

// The same checks fail for bounds that assume less: so they can fail.
TEST(FilterBound, NarrowerBoundsFailUnderTensorCoreArithmetic) {
  const int m = kTf32.mantissa;
  EXPECT_GT(stress_violations([](index_t d) { return filter_bound<float>(d); }, m), 0) << "the FP32 bound";
  const FilterArithmetic finer{0x1p-12, 0x1p-126, 0x1p-23};
  EXPECT_GT(stress_violations([&](index_t d) { return filter_bound(d, finer); }, m), 0) << "inputs to 2^-12";
  const auto no_gamma = [](index_t d) {
    FilterBound b = filter_bound(d, kTf32.arithmetic);
    b.gamma = 0;  // flushed subnormal inputs not covered
    return b;
  };
  EXPECT_GT(stress_violations(no_gamma, m), 0) << "no gamma";
}

// The first round's candidates on 128-d uniform data under TF32's bound: the
// points whose lower bound (key - bound, the bound's centre case) falls below
// a query's k-th key must fit in first_candidates, else every such query
// takes a second pass over the base. k + k/8, enough for FP32's bound, is
// not enough for TF32's at k = 100 (so the check can fail).
TEST(FilterBound, FirstRoundCandidatesCoverTheBoundsShell) {
  constexpr std::size_t d = 128, n = 20000, queries = 12;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x(n * d), xn(n, 0.0), key(n), lower(n), q(d);
  for (double& e : x) e = u(rng);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t t = 0; t < d; ++t) xn[i] += x[i * d + t] * x[i * d + t];
  const FilterBound b = filter_bound(index_t(d), kTf32.arithmetic);
  for (index_t k : {10, 100}) {
    index_t most = 0;
    for (std::size_t qi = 0; qi < queries; ++qi) {
      double qn = 0;
      for (double& e : q) e = u(rng), qn += e * e;
      for (std::size_t i = 0; i < n; ++i) {
        double dot = 0;
        for (std::size_t t = 0; t < d; ++t) dot += q[t] * x[i * d + t];
        key[i] = qn + xn[i] - 2 * dot;
        const double reach = std::sqrt(qn) + std::sqrt(xn[i]);
        lower[i] = key[i] - b.beta * reach * reach;
      }
      std::vector<double> sorted = key;
      std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end());
      const double kth = sorted[std::size_t(k - 1)];
      most = std::max(most, index_t(std::count_if(lower.begin(), lower.end(), [&](double l) { return l < kth; })));
    }
    EXPECT_LE(most, first_candidates(k, index_t(n), b.beta)) << "k = " << k;
    if (k == 100) {
      EXPECT_GT(most, first_candidates(k, index_t(n), filter_bound<float>(index_t(d)).beta)) << "the FP32 margin";
    }
  }
}
