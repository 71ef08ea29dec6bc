// GPU GEMV ladder, GPU k-NN and GPU sorted distances against FP64 / the CPU
// versions. Skipped when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "parray/array.hpp"
#include "parray/knn_bench.hpp"

using namespace parray;

namespace {

#define SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no GPU"

template <class T>
struct Dev {
  Array<T> a;
  explicit Dev(const std::vector<T>& h) : a(Layout::dense({std::max<index_t>(index_t(h.size()), 1)}), Memory::device) {
    if (!h.empty()) copy_bytes(a.data(), Memory::device, h.data(), Memory::paged, h.size() * sizeof(T));
  }
  explicit Dev(index_t n) : a(Layout::dense({std::max<index_t>(n, 1)}), Memory::device) {}
  std::vector<T> host(index_t n) {
    std::vector<T> h(static_cast<std::size_t>(n));
    copy_bytes(h.data(), Memory::paged, a.data(), Memory::device, h.size() * sizeof(T));
    return h;
  }
};

std::vector<float> small_ints(index_t n, index_t d, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(0, 3);
  std::vector<float> v(static_cast<std::size_t>(n * d));
  for (float& x : v) x = float(u(rng));
  return v;
}

}  // namespace

TEST(GpuGemv, EveryGpuImplementationAgreesWithFp64) {
  SKIP_WITHOUT_GPU();
  GemvBenchOptions o;
  for (const GemvImpl& i : gemv_registry().all())
    if (i.device == Device::gpu) o.impls.push_back(i.name);
  ASSERT_GE(o.impls.size(), 6u);
  o.shapes = {{1, 1}, {1, 37}, {37, 1}, {67, 129}, {4097, 33}, {33, 20051}, {1000, 1003}, {256, 256}};
  o.layouts = {"row", "col", "row-pad"};
  o.dtypes = {Dtype::f32, Dtype::f64};
  o.min_reps = o.max_reps = 1;
  o.target_seconds = 0;
  o.progress = false;
  for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-1.5, 0.5}}) {
    o.alpha = alpha, o.beta = beta;
    int checked = 0;
    for (const GemvBenchRow& r : run_gemv_bench(o)) {
      if (r.note.rfind("skipped", 0) == 0) continue;
      ++checked;
      EXPECT_TRUE(r.ok) << r.impl << " " << r.dtype << " " << r.layout << " " << r.m << "x" << r.n << " alpha " << alpha
                        << " beta " << beta << ": " << r.note;
    }
    EXPECT_GT(checked, 60);
  }
}

TEST(GpuKnn, MatchesCpuAndFp64) {
  SKIP_WITHOUT_GPU();
  struct Case {
    index_t n, q, d, k;
    Metric m;
    index_t qt, nt;
  };
  const std::vector<Case> cases = {{1, 1, 3, 1, Metric::l2, 0, 0},         {1000, 7, 16, 1, Metric::l2, 0, 0},
                                   {1000, 7, 16, 1000, Metric::l2, 0, 0},   {5003, 37, 40, 10, Metric::l2, 5, 1001},
                                   {5003, 37, 40, 10, Metric::ip, 5, 1001}, {20011, 300, 128, 100, Metric::l2, 0, 0},
                                   {20011, 30, 64, 2048, Metric::l2, 0, 0}, {3001, 20, 32, 700, Metric::ip, 7, 777},
                                   {3001, 20, 32, 1500, Metric::l2, 0, 0}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "n " << c.n << " q " << c.q << " d " << c.d << " k " << c.k << " "
                                    << metric_name(c.m));
    const std::vector<float> base = synthetic_vectors(c.n, c.d, 1), queries = synthetic_vectors(c.q, c.d, 2);
    KnnOptions o;
    o.k = c.k, o.metric = c.m, o.query_tile = c.qt, o.base_tile = c.nt;
    Dev<float> b(base), qq(queries), dist(c.q * c.k);
    Dev<index_t> idx(c.q * c.k);
    cuda::knn_device(b.a.data(), c.n, qq.a.data(), c.q, c.d, o, dist.a.data(), idx.a.data());
    const std::vector<index_t> found = idx.host(c.q * c.k);
    const std::vector<float> fd = dist.host(c.q * c.k);
    const std::vector<std::int32_t> gt = knn_ground_truth(base.data(), c.n, queries.data(), c.q, c.d, c.k, c.m, 2);
    EXPECT_EQ(knn_recall(base.data(), c.n, queries.data(), c.q, c.d, c.m, found.data(), c.k, gt.data(), c.k, c.k), 1.0);
    for (float v : fd) ASSERT_TRUE(std::isfinite(v));
    for (index_t i = 0; i < c.q; ++i)
      for (index_t r = 1; r < c.k; ++r) {
        const float p = fd[std::size_t(i * c.k + r - 1)], cur = fd[std::size_t(i * c.k + r)];
        ASSERT_TRUE(c.m == Metric::l2 ? p <= cur : p >= cur) << "query " << i << " rank " << r;
      }
  }
}

TEST(GpuKnn, TiesAndDuplicatesOrderedByIndex) {
  SKIP_WITHOUT_GPU();
  for (Metric m : {Metric::l2, Metric::ip}) {
    const index_t n = 4099, d = 4, q = 9, k = 300;
    std::vector<float> base = small_ints(n, d, 3);
    for (index_t j = 1; j < n; j += 3) std::copy_n(base.begin() + (j - 1) * d, d, base.begin() + j * d);
    const std::vector<float> queries = small_ints(q, d, 4);
    KnnOptions o;
    o.k = k, o.metric = m, o.base_tile = 1000;
    std::vector<float> cd(q * k);
    std::vector<index_t> ci(q * k);
    knn_cpu<float>(base.data(), n, queries.data(), q, d, o, cd.data(), ci.data());  // exact (tested on the CPU)
    Dev<float> b(base), qq(queries), dist(q * k);
    Dev<index_t> idx(q * k);
    cuda::knn_device(b.a.data(), n, qq.a.data(), q, d, o, dist.a.data(), idx.a.data());
    EXPECT_EQ(idx.host(q * k), ci) << metric_name(m);
    EXPECT_EQ(dist.host(q * k), cd) << metric_name(m);
  }
}

TEST(GpuKnn, RefusesKAbove2048) {
  SKIP_WITHOUT_GPU();
  Dev<float> b(3000 * 4), qq(4), dist(3000);
  Dev<index_t> idx(3000);
  KnnOptions o;
  o.k = 2049;
  EXPECT_THROW(cuda::knn_device(b.a.data(), 3000, qq.a.data(), 1, 4, o, dist.a.data(), idx.a.data()), Error);
}

TEST(GpuDist, SortedDistancesMatchCpu) {
  SKIP_WITHOUT_GPU();
  for (index_t n : {1, 1000, 1024, 2047, 4096, 5000, 100003}) {
    for (Metric m : {Metric::l2, Metric::ip}) {
      const index_t d = 32;
      const std::vector<float> base = small_ints(n, d, 5), query = small_ints(1, d, 6);  // exact: ties by index
      std::vector<float> cd(n);
      std::vector<index_t> ci(n);
      distances_sorted_cpu<float>(base.data(), n, d, query.data(), m, 2, cd.data(), ci.data());
      Dev<float> b(base), qq(query), dist(n);
      Dev<index_t> idx(n);
      cuda::distances_sorted_device(b.a.data(), n, d, qq.a.data(), m, dist.a.data(), idx.a.data());
      EXPECT_EQ(idx.host(n), ci) << "n " << n << " " << metric_name(m);
      EXPECT_EQ(dist.host(n), cd) << "n " << n << " " << metric_name(m);
    }
  }
}
