// Data sets on which a k-NN built on the FP32 expansion ||q||^2 + ||x||^2 -
// 2 q.x goes wrong unless it is exact by construction, and the FP64 brute
// force that defines the right answer (knn_exact.hpp). Shared by the CPU and
// GPU property tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <ostream>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "parray/knn.hpp"
#include "parray/knn_exact.hpp"

namespace parray_test {

using parray::index_t;
using parray::Metric;

struct KnnData {
  std::string name;
  index_t n = 0, q = 0, d = 0;
  std::vector<float> base, queries;
};

enum class KnnKind { uniform, offset, near_duplicates, integers, clustered };

inline const char* kind_name(KnnKind k) {
  switch (k) {
    case KnnKind::uniform: return "uniform";
    case KnnKind::offset: return "offset";
    case KnnKind::near_duplicates: return "near-duplicates";
    case KnnKind::integers: return "integers";
    case KnnKind::clustered: return "clustered";
  }
  return "?";
}

// n base vectors and q queries of dimension d. offset: uniform in
// [c - 1, c + 1)^d with c = `offset` (the offset in units of the spread);
// near_duplicates: 16 copies of each of n/16 vectors, each copy moved by a few
// ulps, queries likewise; integers: 0..255 as in SIFT, queries too (ties
// everywhere); clustered: tight clusters (spread 1e-3) around 32 centres far apart.
inline KnnData make_knn_data(KnnKind kind, index_t n, index_t q, index_t d, std::uint64_t seed, double offset = 0) {
  KnnData x;
  x.name = kind_name(kind);
  if (kind == KnnKind::offset) x.name += " at " + std::to_string(offset);
  x.name += " n " + std::to_string(n) + " q " + std::to_string(q) + " d " + std::to_string(d);
  x.n = n, x.q = q, x.d = d;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto fill = [&](std::vector<float>& v, index_t rows) {
    v.resize(static_cast<std::size_t>(rows * d));
    switch (kind) {
      case KnnKind::uniform:
        for (float& e : v) e = float(u(rng));
        break;
      case KnnKind::offset:
        for (float& e : v) e = float(offset + u(rng));
        break;
      case KnnKind::near_duplicates: {
        std::vector<float> seeds(static_cast<std::size_t>(std::max<index_t>(1, rows / 16) * d));
        for (float& e : seeds) e = float(4.0 * u(rng));
        std::uniform_int_distribution<int> ulps(-3, 3);
        for (index_t i = 0; i < rows; ++i)
          for (index_t t = 0; t < d; ++t) {
            float e = seeds[static_cast<std::size_t>((i % (index_t(seeds.size()) / d)) * d + t)];
            for (int s = ulps(rng); s != 0; s += s > 0 ? -1 : 1) e = std::nextafter(e, s > 0 ? 1e30f : -1e30f);
            v[static_cast<std::size_t>(i * d + t)] = e;
          }
        break;
      }
      case KnnKind::integers: {
        std::uniform_int_distribution<int> b(0, 255);
        for (float& e : v) e = float(b(rng));
        break;
      }
      case KnnKind::clustered: {
        std::mt19937_64 centres(seed ^ 0x5eed);  // the same centres for base and queries
        std::vector<double> c(static_cast<std::size_t>(32 * d));
        for (double& e : c) e = 100.0 * u(centres);
        std::normal_distribution<double> g(0.0, 1e-3);
        std::uniform_int_distribution<int> pick(0, 31);
        for (index_t i = 0; i < rows; ++i) {
          const int k = pick(rng);
          for (index_t t = 0; t < d; ++t)
            v[static_cast<std::size_t>(i * d + t)] = float(c[static_cast<std::size_t>(k * d + t)] + g(rng));
        }
        break;
      }
    }
  };
  fill(x.base, n);
  fill(x.queries, q);
  return x;
}

// The right answer: the k smallest FP64 keys per query (exact_key, written out
// here again so that the test does not trust the library's copy), ties by
// index. Distances as the library reports them: L2 squared distance, IP inner
// product, rounded once to float.
inline void exact_brute_force(const std::vector<float>& base, index_t n, const std::vector<float>& queries, index_t q,
                              index_t d, index_t k, Metric m, std::vector<float>& dist, std::vector<index_t>& idx) {
  dist.assign(static_cast<std::size_t>(q * k), 0.0f);
  idx.assign(static_cast<std::size_t>(q * k), -1);
  std::vector<std::pair<double, index_t>> all(static_cast<std::size_t>(n));
  for (index_t i = 0; i < q; ++i) {
    const float* a = queries.data() + i * d;
    for (index_t j = 0; j < n; ++j) {
      const float* b = base.data() + j * d;
      double s = 0;
      for (index_t t = 0; t < d; ++t) {
        const double x = double(a[t]), y = double(b[t]);
        s = m == Metric::l2 ? std::fma(x - y, x - y, s) : std::fma(x, y, s);
      }
      all[static_cast<std::size_t>(j)] = {m == Metric::l2 ? s : -s, j};
    }
    std::partial_sort(all.begin(), all.begin() + k, all.end());
    for (index_t r = 0; r < k; ++r) {
      const auto& e = all[static_cast<std::size_t>(r)];
      dist[static_cast<std::size_t>(i * k + r)] = float(m == Metric::l2 ? e.first : -e.first);
      idx[static_cast<std::size_t>(i * k + r)] = e.second;
    }
  }
}

// Values whose squares overflow FP32: the filter cannot bound them, so every
// vector becomes a candidate and the FP64 keys decide.
inline KnnData huge_values_data() {
  KnnData x = make_knn_data(KnnKind::uniform, 300, 5, 6, 13);
  for (float& v : x.base) v *= 3e30f;
  for (float& v : x.queries) v *= 3e30f;
  return x;
}

// Asserts that a search's results (q x k indices and distances) are exactly
// the brute force's.
inline void expect_exact(const KnnData& x, index_t k, Metric m, const std::vector<float>& dist,
                         const std::vector<index_t>& idx) {
  std::vector<float> ref_d;
  std::vector<index_t> ref_i;
  exact_brute_force(x.base, x.n, x.queries, x.q, x.d, k, m, ref_d, ref_i);
  ASSERT_EQ(idx, ref_i);
  for (std::size_t i = 0; i < dist.size(); ++i) ASSERT_EQ(dist[i], ref_d[i]) << "entry " << i;
}

// The property tests' grid: every kind of data, d from 1 to 4096, L2 and IP.
struct ExactCase {
  KnnKind kind;
  index_t n, q, d, k;
  double offset;
};

inline void PrintTo(const ExactCase& c, std::ostream* os) {
  *os << kind_name(c.kind) << " n " << c.n << " q " << c.q << " d " << c.d << " k " << c.k;
  if (c.kind == KnnKind::offset) *os << " offset " << c.offset;
}

// A test name carrying the case: offset_n2000_d16_k10_off6_6.
inline std::string exact_case_name(const testing::TestParamInfo<ExactCase>& p) {
  const ExactCase& c = p.param;
  std::string s = std::string(kind_name(c.kind)) + "_n" + std::to_string(c.n) + "_d" + std::to_string(c.d) + "_k" +
                  std::to_string(c.k);
  if (c.kind == KnnKind::offset) s += "_off" + std::to_string(int(std::log10(c.offset)));
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s + "_" + std::to_string(p.index);
}

inline std::vector<ExactCase> exact_cases() {
  std::vector<ExactCase> c;
  for (double off : {1e2, 1e4, 1e6}) {
    c.push_back({KnnKind::offset, 2000, 20, 16, 10, off});
    c.push_back({KnnKind::offset, 700, 9, 1, 5, off});
    c.push_back({KnnKind::offset, 500, 7, 130, 17, off});
  }
  c.push_back({KnnKind::offset, 300, 4, 4096, 3, 1e3});
  for (index_t d : {index_t(1), index_t(2), index_t(7), index_t(128), index_t(4096)}) {
    const index_t n = d >= 4096 ? 300 : 1500;
    c.push_back({KnnKind::near_duplicates, n, 11, d, 20, 0});
    c.push_back({KnnKind::integers, n, 11, d, 20, 0});
    c.push_back({KnnKind::clustered, n, 11, d, 20, 0});
    c.push_back({KnnKind::uniform, n, 11, d, 20, 0});
  }
  c.push_back({KnnKind::integers, 1000, 13, 8, 1000, 0});  // k = N: every vector, every tie
  return c;
}

}  // namespace parray_test
