// The k-NN's exactness guarantee on the CPU (knn_exact.hpp): results equal an
// FP64 brute force, ties by index, on data where the FP32 expansion alone
// ranks wrongly — offsets up to 10^6 times the spread, near-duplicates,
// integers, tight clusters, d = 1 .. 4096 — for L2 and IP, FP32/FP64 and
// 16-bit bases; the cases first reported as wrong are kept as regressions.
#include <gtest/gtest.h>

#include <cmath>

#include "knn_data.hpp"

using namespace parray;
using namespace parray_test;

namespace {

struct Result {
  std::vector<float> dist;
  std::vector<index_t> idx;
};

Result run_cpu(const parray_test::KnnData& x, index_t k, Metric m, int threads) {
  KnnOptions o;
  o.k = k, o.metric = m, o.threads = threads;
  Result r{std::vector<float>(std::size_t(x.q * k), std::nanf("")), std::vector<index_t>(std::size_t(x.q * k), -1)};
  knn_cpu<float>(x.base.data(), x.n, x.queries.data(), x.q, x.d, o, r.dist.data(), r.idx.data());
  return r;
}

void expect_exact(const parray_test::KnnData& x, index_t k, Metric m, const Result& r) {
  parray_test::expect_exact(x, k, m, r.dist, r.idx);
}

class KnnExact : public testing::TestWithParam<ExactCase> {};

}  // namespace

TEST_P(KnnExact, EqualsFp64BruteForce) {
  const ExactCase& c = GetParam();
  const parray_test::KnnData x = make_knn_data(c.kind, c.n, c.q, c.d, 7 + std::uint64_t(c.d), c.offset);
  for (Metric m : {Metric::l2, Metric::ip}) {
    SCOPED_TRACE(metric_name(m));
    expect_exact(x, c.k, m, run_cpu(x, c.k, m, 2));
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, KnnExact, testing::ValuesIn(exact_cases()), exact_case_name);

// The FP64 search (the ground truth of --write-gt) meets the same definition.
TEST(KnnExactCases, Fp64SearchEqualsBruteForce) {
  const parray_test::KnnData x = make_knn_data(KnnKind::offset, 1200, 9, 16, 5, 1e4);
  std::vector<double> b(x.base.begin(), x.base.end()), q(x.queries.begin(), x.queries.end());
  for (Metric m : {Metric::l2, Metric::ip}) {
    KnnOptions o;
    o.k = 10, o.metric = m, o.threads = 2;
    std::vector<double> dist(std::size_t(x.q * o.k));
    std::vector<index_t> idx(std::size_t(x.q * o.k), -1);
    knn_cpu<double>(b.data(), x.n, q.data(), x.q, x.d, o, dist.data(), idx.data());
    std::vector<float> ref_d;
    std::vector<index_t> ref_i;
    exact_brute_force(x.base, x.n, x.queries, x.q, x.d, o.k, m, ref_d, ref_i);
    EXPECT_EQ(idx, ref_i) << metric_name(m);
  }
}

// 16-bit bases: exact on the rounded (stored) base.
TEST(KnnExactCases, SixteenBitBaseExactOnRoundedBase) {
  for (Storage s : {Storage::f16, Storage::bf16}) {
    parray_test::KnnData x = make_knn_data(KnnKind::offset, 1500, 12, 24, 9, 1e2);
    const std::vector<std::uint16_t> b16 = to_16bit(x.base.data(), x.n * x.d, s);
    from_16bit(b16.data(), x.n * x.d, s, x.base.data());  // x.base is now the rounded base
    for (Metric m : {Metric::l2, Metric::ip}) {
      SCOPED_TRACE(std::string(storage_name(s)) + " " + metric_name(m));
      KnnOptions o;
      o.k = 10, o.metric = m, o.threads = 2;
      Result r{std::vector<float>(std::size_t(x.q * o.k), std::nanf("")), std::vector<index_t>(std::size_t(x.q * o.k), -1)};
      knn_cpu_16bit(b16.data(), s, x.n, x.queries.data(), x.q, x.d, o, r.dist.data(), r.idx.data());
      expect_exact(x, o.k, m, r);
    }
  }
}

// The cases that the FP32 expansion alone got wrong.
TEST(KnnExactCases, ReportedRegressions) {
  parray_test::KnnData a{"two points at 1000", 2, 1, 2, {1000, 0, 1000, 0.3f}, {1000, 0.2f}};
  Result r = run_cpu(a, 1, Metric::l2, 1);
  EXPECT_EQ(r.idx[0], 1);
  expect_exact(a, 1, Metric::l2, r);

  parray_test::KnnData b{"d = 1", 2, 1, 1, {0.56679654f, 0.5653702f}, {0.56607664f}};
  r = run_cpu(b, 1, Metric::l2, 1);
  EXPECT_EQ(r.idx[0], 1);
  expect_exact(b, 1, Metric::l2, r);

  // uniform in [999, 1001]^16, N = 2000, 20 queries, k = 10: recall was ~0.2
  const parray_test::KnnData c = make_knn_data(KnnKind::offset, 2000, 20, 16, 11, 1000);
  for (int threads : {1, 2}) expect_exact(c, 10, Metric::l2, run_cpu(c, 10, Metric::l2, threads));
}

TEST(KnnExactCases, HugeValuesFallBackToExactKeys) {
  const parray_test::KnnData x = huge_values_data();
  for (Metric m : {Metric::l2, Metric::ip}) expect_exact(x, 7, m, run_cpu(x, 7, m, 2));
}
