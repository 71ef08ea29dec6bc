// k-NN, sorted distances and the vector file formats against brute force in
// FP64: random data, ties, duplicates, k = 1, k = N, N and Q not multiples of
// any tile, L2 and IP, file round trips and corrupt files, and the CLI's
// bad-input contract (one line, exit status 2).
#include <gtest/gtest.h>
#include <unistd.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>

#include "harness/knn_bench.hpp"
#include "parray/vecs_io.hpp"
#include "cli_run.hpp"

using namespace parray;
using namespace parray_test;

namespace {

// Exact (distance, index) order in FP64, the definition every result must meet.
void brute_force(const std::vector<float>& base, index_t n, const std::vector<float>& queries, index_t q, index_t d,
                 index_t k, Metric m, std::vector<double>& dist, std::vector<index_t>& idx) {
  dist.assign(std::size_t(q * k), 0);
  idx.assign(std::size_t(q * k), 0);
  for (index_t i = 0; i < q; ++i) {
    std::vector<std::pair<double, index_t>> all(static_cast<std::size_t>(n));
    for (index_t j = 0; j < n; ++j) {
      double s = 0;
      for (index_t t = 0; t < d; ++t) {
        const double a = queries[std::size_t(i * d + t)], b = base[std::size_t(j * d + t)];
        s += m == Metric::l2 ? (a - b) * (a - b) : a * b;
      }
      all[std::size_t(j)] = {m == Metric::l2 ? s : -s, j};
    }
    std::sort(all.begin(), all.end());
    for (index_t r = 0; r < k; ++r) {
      dist[std::size_t(i * k + r)] = m == Metric::l2 ? all[std::size_t(r)].first : -all[std::size_t(r)].first;
      idx[std::size_t(i * k + r)] = all[std::size_t(r)].second;
    }
  }
}

// Small integers: every product and sum is exact in FP32, so FP32 results must
// equal brute force exactly, ties and duplicates included.
std::vector<float> small_ints(index_t n, index_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, 3);
  std::vector<float> v(std::size_t(n * d));
  for (float& x : v) x = float(u(rng));
  return v;
}

struct Case {
  index_t n, q, d, k;
  Metric metric;
  int threads;
  index_t qt, nt;  // tiles, 0 = automatic
};

}  // namespace

TEST(Knn, RandomDataMatchesFp64BruteForce) {
  const std::vector<Case> cases = {
      {1, 1, 1, 1, Metric::l2, 1, 0, 0},        {100, 7, 16, 1, Metric::l2, 1, 0, 0},
      {100, 7, 16, 100, Metric::l2, 2, 0, 0},   {1037, 33, 37, 10, Metric::l2, 2, 5, 129},
      {1037, 33, 37, 10, Metric::ip, 2, 5, 129}, {513, 19, 3, 200, Metric::l2, 1, 7, 31},
      {2049, 65, 128, 64, Metric::l2, 2, 0, 0}, {2049, 65, 128, 64, Metric::ip, 2, 0, 0},
      {300, 3, 8, 300, Metric::ip, 2, 1, 17},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "n " << c.n << " q " << c.q << " d " << c.d << " k " << c.k << " "
                                    << metric_name(c.metric) << " threads " << c.threads << " tiles " << c.qt << "x"
                                    << c.nt);
    const std::vector<float> base = synthetic_vectors(c.n, c.d, 1), queries = synthetic_vectors(c.q, c.d, 2);
    KnnOptions o;
    o.k = c.k, o.metric = c.metric, o.threads = c.threads, o.query_tile = c.qt, o.base_tile = c.nt;
    std::vector<float> dist(std::size_t(c.q * c.k), std::nanf(""));  // poisoned
    std::vector<index_t> idx(std::size_t(c.q * c.k), -1);
    knn_cpu<float>(base.data(), c.n, queries.data(), c.q, c.d, o, dist.data(), idx.data());
    std::vector<double> ref_d;
    std::vector<index_t> ref_i;
    brute_force(base, c.n, queries, c.q, c.d, c.k, c.metric, ref_d, ref_i);
    std::vector<std::int32_t> gt(ref_i.begin(), ref_i.end());
    EXPECT_EQ(knn_recall(base.data(), c.n, queries.data(), c.q, c.d, c.metric, idx.data(), c.k, gt.data(), c.k, c.k),
              1.0);
    double scale = 0;
    for (float x : base) scale = std::max(scale, double(std::abs(x)));
    for (std::size_t i = 0; i < dist.size(); ++i) {
      ASSERT_TRUE(std::isfinite(dist[i])) << i;
      // FP32 expansion error: a few ulps of ||q||^2 + ||x||^2 <= 2 d scale^2
      EXPECT_NEAR(dist[i], ref_d[i], 8 * c.d * 6e-8 * 2 * scale * scale + 1e-6) << i;
    }
    // the FP64 version (ground truth) matches exactly
    std::vector<double> b64(base.begin(), base.end()), q64(queries.begin(), queries.end()), d64(dist.size());
    std::vector<index_t> i64(idx.size());
    knn_cpu<double>(b64.data(), c.n, q64.data(), c.q, c.d, o, d64.data(), i64.data());
    EXPECT_EQ(i64, ref_i);
  }
}

TEST(Knn, TiesAndDuplicatesOrderedByIndex) {
  for (Metric m : {Metric::l2, Metric::ip}) {
    for (auto [n, d, k] : {std::array<index_t, 3>{257, 4, 257}, {1000, 3, 50}, {64, 2, 1}, {100, 1, 99}}) {
      std::vector<float> base = small_ints(n, d, 3);
      for (index_t j = 1; j < n; j += 5)  // exact duplicates of earlier vectors
        std::copy_n(base.begin() + (j - 1) * d, d, base.begin() + j * d);
      const index_t q = 13;
      const std::vector<float> queries = small_ints(q, d, 4);
      KnnOptions o;
      o.k = k, o.metric = m, o.threads = 2, o.base_tile = 61, o.query_tile = 4;
      std::vector<float> dist(std::size_t(q * k));
      std::vector<index_t> idx(std::size_t(q * k));
      knn_cpu<float>(base.data(), n, queries.data(), q, d, o, dist.data(), idx.data());
      std::vector<double> ref_d;
      std::vector<index_t> ref_i;
      brute_force(base, n, queries, q, d, k, m, ref_d, ref_i);
      EXPECT_EQ(idx, ref_i) << metric_name(m) << " n " << n << " k " << k;
      for (std::size_t i = 0; i < dist.size(); ++i) EXPECT_EQ(double(dist[i]), ref_d[i]);
      // the GEMV lab report's sorted distances: every query against all n, exact too
      std::vector<float> sd(static_cast<std::size_t>(n));
      std::vector<index_t> si(static_cast<std::size_t>(n));
      std::vector<double> rd;
      std::vector<index_t> ri;
      brute_force(base, n, queries, 1, d, n, m, rd, ri);
      distances_sorted_cpu<float>(base.data(), n, d, queries.data(), m, 2, sd.data(), si.data());
      EXPECT_EQ(si, ri);
      for (index_t j = 0; j < n; ++j) EXPECT_EQ(double(sd[std::size_t(j)]), rd[std::size_t(j)]);
    }
  }
}

TEST(Knn, SeedCaseSortedDistances) {  // 1 query x 1024 x 32, random
  const index_t n = 1024, d = 32;
  const std::vector<float> base = synthetic_vectors(n, d, 5), query = synthetic_vectors(1, d, 6);
  std::vector<float> dist(n);
  std::vector<index_t> idx(n);
  distances_sorted_cpu<float>(base.data(), n, d, query.data(), Metric::l2, 1, dist.data(), idx.data());
  std::vector<double> rd;
  std::vector<index_t> ri;
  brute_force(base, n, query, 1, d, n, Metric::l2, rd, ri);
  for (index_t j = 0; j < n; ++j) EXPECT_NEAR(dist[std::size_t(j)], rd[std::size_t(j)], 1e-4);
  for (index_t j = 1; j < n; ++j) EXPECT_LE(dist[std::size_t(j - 1)], dist[std::size_t(j)]);
}

TEST(Knn, SixteenBitBaseStorageIsExactForTheRoundedBase) {
  // Conversions: exactly representable values survive, rounding is to nearest even.
  const std::vector<float> exact = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 5.9604645e-08f, 1.0009765625f};
  std::vector<float> back(exact.size());
  for (Storage s : {Storage::f16, Storage::bf16}) {
    const std::vector<std::uint16_t> h = to_16bit(exact.data(), index_t(exact.size()), s);
    from_16bit(h.data(), index_t(h.size()), s, back.data());
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(back[i], exact[i]) << storage_name(s);
  }
  const std::vector<std::uint16_t> h = to_16bit(exact.data(), index_t(exact.size()), Storage::f16);
  from_16bit(h.data(), index_t(h.size()), Storage::f16, back.data());
  EXPECT_EQ(back, exact);  // all of them are FP16 values (incl. the smallest normal and subnormal)
  const float ties[] = {1.00048828125f, 1.00146484375f};  // halfway between FP16 neighbours: to even
  const std::vector<std::uint16_t> t = to_16bit(ties, 2, Storage::f16);
  EXPECT_EQ(t[0], 0x3c00);
  EXPECT_EQ(t[1], 0x3c02);
  EXPECT_THROW(parse_storage("f8"), Error);

  const index_t n = 3001, q = 17, d = 40, k = 25;
  const std::vector<float> base = synthetic_vectors(n, d, 21), queries = synthetic_vectors(q, d, 22);
  for (Storage s : {Storage::f16, Storage::bf16}) {
    for (Metric m : {Metric::l2, Metric::ip}) {
      const std::vector<std::uint16_t> b16 = to_16bit(base.data(), n * d, s);
      std::vector<float> rounded(base.size());
      from_16bit(b16.data(), n * d, s, rounded.data());
      KnnOptions o;
      o.k = k, o.metric = m, o.threads = 2, o.base_tile = 333;
      std::vector<float> d16(q * k), d32(q * k);
      std::vector<index_t> i16(q * k), i32(q * k);
      knn_cpu_16bit(b16.data(), s, n, queries.data(), q, d, o, d16.data(), i16.data());
      knn_cpu<float>(rounded.data(), n, queries.data(), q, d, o, d32.data(), i32.data());
      EXPECT_EQ(i16, i32) << storage_name(s);  // same tiles, same GEMM: identical
      EXPECT_EQ(d16, d32) << storage_name(s);
      const std::vector<std::int32_t> gt = knn_ground_truth(rounded.data(), n, queries.data(), q, d, k, m, 1);
      EXPECT_EQ(knn_recall(rounded.data(), n, queries.data(), q, d, m, i16.data(), k, gt.data(), k, k), 1.0);
    }
  }
}

TEST(Knn, BadProblemsThrow) {
  std::vector<float> b(40, 1.0f), q(8, 1.0f), dist(100);
  std::vector<index_t> idx(100);
  KnnOptions o;
  o.k = 11;  // > N = 10
  EXPECT_THROW(knn_cpu<float>(b.data(), 10, q.data(), 2, 4, o, dist.data(), idx.data()), Error);
  o.k = 0;
  EXPECT_THROW(knn_cpu<float>(b.data(), 10, q.data(), 2, 4, o, dist.data(), idx.data()), Error);
  o.k = 3;
  EXPECT_THROW(knn_cpu<float>(b.data(), 0, q.data(), 2, 4, o, dist.data(), idx.data()), Error);
  EXPECT_THROW(knn_cpu<float>(b.data(), 10, q.data(), 2, 0, o, dist.data(), idx.data()), Error);
  EXPECT_THROW(parse_metric("cosine"), Error);
}

TEST(Knn, FaissAgreesWhenBuiltIn) {
  if (!faiss_available()) GTEST_SKIP() << faiss_description();
  const index_t n = 3000, q = 20, d = 24, k = 15;
  const std::vector<float> base = synthetic_vectors(n, d, 7), queries = synthetic_vectors(q, d, 8);
  FaissFlatIndex index(base.data(), n, d, Metric::l2);
  std::vector<float> dist(q * k);
  std::vector<index_t> idx(q * k);
  index.search(queries.data(), q, k, 1, dist.data(), idx.data());
  const std::vector<std::int32_t> gt = knn_ground_truth(base.data(), n, queries.data(), q, d, k, Metric::l2, 1);
  EXPECT_EQ(knn_recall(base.data(), n, queries.data(), q, d, Metric::l2, idx.data(), k, gt.data(), k, k), 1.0);
}

// ---- files ------------------------------------------------------------------------

namespace {
// Per process: ctest runs the test cases of this binary in parallel.
std::string tmp(const std::string& name) {
  return testing::TempDir() + "parray_knn_" + std::to_string(getpid()) + "_" + name;
}
void write_raw(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}
std::vector<char> read_raw(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}
template <class F>
void expect_error(F&& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "no error, expected: " << message;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(VecsIo, RoundTrips) {
  Vectors<float> f;
  f.n = 5, f.d = 3, f.data = synthetic_vectors(5, 3, 9);
  write_fvecs(tmp("a.fvecs"), f);
  const Vectors<float> f2 = read_fvecs(tmp("a.fvecs"));
  EXPECT_EQ(f2.n, 5);
  EXPECT_EQ(f2.d, 3);
  EXPECT_EQ(f2.data, f.data);
  EXPECT_EQ(read_fvecs(tmp("a.fvecs"), 2).n, 2);
  EXPECT_EQ(read_raw(tmp("a.fvecs")).size(), 5u * (4 + 12));
  Vectors<std::int32_t> iv;
  iv.n = 2, iv.d = 4, iv.data = {1, -2, 3, 2147483647, 0, 5, 6, 7};
  write_ivecs(tmp("a.ivecs"), iv);
  EXPECT_EQ(read_ivecs(tmp("a.ivecs")).data, iv.data);
  Vectors<std::uint8_t> bv;
  bv.n = 3, bv.d = 2, bv.data = {0, 255, 7, 8, 9, 10};
  write_bvecs(tmp("a.bvecs"), bv);
  EXPECT_EQ(read_bvecs(tmp("a.bvecs")).data, bv.data);
  const Vectors<float> asf = read_vectors_as_float(tmp("a.bvecs"));
  EXPECT_EQ(asf.data[1], 255.0f);
}

TEST(VecsIo, CorruptFilesGiveClearErrors) {
  Vectors<float> f;
  f.n = 4, f.d = 3, f.data = synthetic_vectors(4, 3, 10);
  write_fvecs(tmp("c.fvecs"), f);
  std::vector<char> good = read_raw(tmp("c.fvecs"));
  std::vector<char> bytes(good.begin(), good.end() - 5);  // truncated
  write_raw(tmp("t.fvecs"), bytes);
  expect_error([&] { read_fvecs(tmp("t.fvecs")); }, "not a whole number");
  bytes = good;
  bytes[16] = 4;  // second record claims d = 4 (the record is 16 bytes)
  write_raw(tmp("i.fvecs"), bytes);
  expect_error([&] { read_fvecs(tmp("i.fvecs")); }, "inconsistent");
  bytes = good;
  bytes[0] = char(0xff), bytes[1] = char(0xff), bytes[2] = char(0xff), bytes[3] = char(0xff);  // d = -1
  write_raw(tmp("n.fvecs"), bytes);
  expect_error([&] { read_fvecs(tmp("n.fvecs")); }, "dimension -1");
  write_raw(tmp("e.fvecs"), {});
  expect_error([&] { read_fvecs(tmp("e.fvecs")); }, "empty");
  f.data[5] = std::nanf("");
  write_fvecs(tmp("nan.fvecs"), f);
  expect_error([&] { read_fvecs(tmp("nan.fvecs")); }, "NaN");
  expect_error([&] { read_fvecs(tmp("does-not-exist.fvecs")); }, "cannot open");
  expect_error([&] { read_vectors_as_float(tmp("a.ivecs")); }, "unknown vector file type");
  // an .fvecs read as .bvecs: record size does not fit
  expect_error([&] { read_bvecs(tmp("c.fvecs")); }, "bvecs");
}

// ---- the k-NN registry ----------------------------------------------------------

TEST(KnnRegistry, FindsByNameAliasAndDevice) {
  const KnnRegistry& reg = knn_registry();
  ASSERT_NE(reg.find_or_null("knn-cpu"), nullptr);
  EXPECT_EQ(reg.find("cpu").name, "knn-cpu");
  EXPECT_TRUE(reg.find("knn-cpu").stores_16bit);
  try {
    reg.find("no-such-knn");
    ADD_FAILURE() << "no error for an unknown name";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown k-NN implementation 'no-such-knn'"), std::string::npos) << m;
    EXPECT_NE(m.find("knn-cpu"), std::string::npos) << m;
  }
  if (!faiss_available()) {
    ASSERT_NE(reg.absent_or_null("faiss"), nullptr);
    GTEST_SKIP() << "faiss-flat: " << faiss_description();
  }
  EXPECT_EQ(reg.find("faiss").name, "faiss-flat");
  EXPECT_TRUE(reg.find("faiss").baseline);
}

TEST(KnnRegistry, PreparedCpuSearchEqualsKnnCpu) {
  const index_t n = 700, q = 9, d = 12, k = 6;
  const std::vector<float> base = synthetic_vectors(n, d, 31), queries = synthetic_vectors(q, d, 32);
  for (Metric m : {Metric::l2, Metric::ip}) {
    KnnOptions o;
    o.k = k, o.metric = m, o.threads = 2;
    std::vector<float> want_d(q * k);
    std::vector<index_t> want_i(q * k);
    knn_cpu<float>(base.data(), n, queries.data(), q, d, o, want_d.data(), want_i.data());
    KnnData data(base, n, queries, q, d);
    const KnnSearch s = knn_registry().find("knn-cpu").prepare(data, o);
    EXPECT_EQ(s.name, "knn-cpu");
    s.run();
    if (s.finish) s.finish();
    std::vector<float> got_d(q * k, std::nanf(""));
    std::vector<index_t> got_i(q * k, -1);
    s.results(got_d.data(), got_i.data());
    EXPECT_EQ(got_i, want_i) << metric_name(m);
    EXPECT_EQ(got_d, want_d) << metric_name(m);
  }
  KnnData big(std::vector<float>(std::size_t(4 * d), 7e4f), 4, queries, q, d, Storage::f16);
  KnnOptions o;
  o.k = 2;
  expect_error([&] { knn_registry().find("cpu").prepare(big, o); }, "beyond FP16's 65504");
}

// ---- CLI ------------------------------------------------------------------------


TEST(KnnCli, RunsAndRejectsBadInput) {
  Vectors<float> b, q, q2;
  b.n = 50, b.d = 8, b.data = synthetic_vectors(50, 8, 11);
  q.n = 4, q.d = 8, q.data = synthetic_vectors(4, 8, 12);
  q2.n = 4, q2.d = 9, q2.data = synthetic_vectors(4, 9, 12);
  write_fvecs(tmp("b.fvecs"), b);
  write_fvecs(tmp("q.fvecs"), q);
  write_fvecs(tmp("q9.fvecs"), q2);
  // Its own bad files: a truncated base and ground truth for 2 queries, not 4.
  std::vector<char> truncated = read_raw(tmp("b.fvecs"));
  truncated.resize(truncated.size() - 5);
  write_raw(tmp("t.fvecs"), truncated);
  Vectors<std::int32_t> two;
  two.n = 2, two.d = 4, two.data = {1, 2, 3, 4, 5, 6, 7, 8};
  write_ivecs(tmp("a.ivecs"), two);
  const std::string base = " --base " + tmp("b.fvecs") + " --queries " + tmp("q.fvecs");
  CliResult r = run_cli("knn" + base + " --k 5 --write-gt --out " + tmp("gt.ivecs"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli("knn" + base + " --k 5 --gt " + tmp("gt.ivecs") + " --out " + tmp("found.ivecs"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("recall@5 1.000000"), std::string::npos) << r.out;
  EXPECT_EQ(read_ivecs(tmp("found.ivecs")).data, read_ivecs(tmp("gt.ivecs")).data);
  r = run_cli("knn --synthetic 300,16,9 --k 300 --metric ip --threads 2");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("recall@300 1.000000"), std::string::npos) << r.out;
  r = run_cli("dist --synthetic 1024,32 --top 3");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("check OK"), std::string::npos) << r.out;
  r = run_cli("bench knn --synthetic 2000,16,20 --k 1,7 --impl cpu,faiss --threads 1,2 --reps 1");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  r = run_cli("bench gemv --shapes 100x37 --layout row,col,fig18 --dtype f32,f64 --reps 1");
  EXPECT_EQ(r.status, 0) << r.out << r.err;

  expect_cli_bad_input("knn" + base + " --k 51", "out of range 1..N = 50");
  expect_cli_bad_input("knn --base " + tmp("b.fvecs") + " --queries " + tmp("q9.fvecs") + " --k 5", "dimension mismatch");
  expect_cli_bad_input("knn --base " + tmp("t.fvecs") + " --queries " + tmp("q.fvecs") + " --k 1", "truncated");
  expect_cli_bad_input("knn" + base + " --k 5 --gt " + tmp("a.ivecs"), "ground truth for 2 queries");
  expect_cli_bad_input("knn" + base + " --k 5 --metric cosine", "unknown metric");
  expect_cli_bad_input("knn --synthetic 10,3 --k 1", "not N,d,Q");
  expect_cli_bad_input("knn" + base + " --k 5 --write-gt", "needs --out");
  expect_cli_bad_input("dist --synthetic 10,4 --impl tpu", "unknown --impl");
  expect_cli_bad_input("bench gemv --shapes 10x10 --impl nosuch", "unknown GEMV implementation");
  expect_cli_bad_input("bench knn --synthetic 10,4,2 --k 11", "out of range");
  expect_cli_bad_input("knn --synthetic 100,4,2 --k 1 --storage f8", "unknown storage 'f8'");
  expect_cli_bad_input("knn --synthetic 100,4,2 --k 1 --storage bf16 --impl faiss", "--impl cpu and gpu only");
  r = run_cli("knn --synthetic 500,8,3 --k 5 --storage bf16");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("knn-cpu-bf16"), std::string::npos) << r.out;
}
