// GPU GEMV ladder, GPU k-NN and GPU sorted distances against FP64 / the CPU
// versions. Skipped when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "gemv_check.hpp"
#include "parray/array.hpp"
#include "harness/knn_bench.hpp"
#include "parray/tuning.hpp"

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
  // Step 6's classes too: few long rows (sliced), short rows (groups of 4-16
  // lanes), short columns (a few threads each, sliced), columns past its
  // 1024 rows (sliced blocks of 64 rows where 16-byte loads align, else step
  // 5's kernels).
  o.shapes = {{1, 1},      {1, 37},     {37, 1},     {67, 129},  {4097, 33}, {33, 20051}, {1000, 1003}, {256, 256},
              {32, 30011}, {30011, 32}, {3, 70001},  {20011, 7}, {513, 4099}, {1025, 77}, {5, 9},      {2052, 301},
              {4100, 1029}};
  o.layouts = {"row", "col", "row-pad"};
  o.dtypes = {Dtype::f32, Dtype::f64};
  parray_test::expect_every_gemv_passes(o, 60);
}

// Column-major A past step 6's 1024 rows with too few 64-row blocks to fill
// the GPU, through the sliced one-kernel block with a ticket per row block
// (gpu.gemv_tall_cols = 1): several slices, a partial last row block, an
// unaligned leading dimension (6001: step 5 then), beta.
TEST(GpuGemv, TallColumnsSlicedWithATicketPerRowBlock) {
  SKIP_WITHOUT_GPU();
  GemvBenchOptions o;
  o.impls = {"gemv-gpu-06-shapes"};
  o.shapes = {{2052, 301}, {4100, 1029}, {1028, 4099}, {6001, 257}};
  o.layouts = {"col"};
  o.dtypes = {Dtype::f32, Dtype::f64};
  for (const char* choice : {"1", "0"}) {  // the sliced block (the default), step 5's kernels
    set_tuning("gpu.gemv_tall_cols", choice);
    parray_test::expect_every_gemv_passes(o, 7);
  }
  set_tuning("gpu.gemv_tall_cols", "auto");
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

// Searches on the GPU and returns (indices, distances) on the host.
std::pair<std::vector<index_t>, std::vector<float>> gpu_knn(const std::vector<float>& base, index_t n,
                                                            const std::vector<float>& queries, index_t q, index_t d,
                                                            const KnnOptions& o) {
  Dev<float> b(base), qq(queries), dist(std::vector<float>(std::size_t(q * o.k), std::nanf("")));
  Dev<index_t> idx(std::vector<index_t>(std::size_t(q * o.k), -1));  // poisoned
  cuda::knn_device(b.a.data(), n, qq.a.data(), q, d, o, dist.a.data(), idx.a.data());
  return {idx.host(q * o.k), dist.host(q * o.k)};
}

// Exact data (small integers, every product and sum exact in FP32) with
// duplicated base vectors: the GPU must return exactly the CPU's indices and
// distances, ties ordered by index. Covers k just above 2048, k = N, and N not
// a multiple of any tile (merged passes above 2048, one pass below).
TEST(GpuKnn, MergedPassesForLargeKMatchCpuExactly) {
  SKIP_WITHOUT_GPU();
  struct Case {
    index_t n, q, d, k, qt, nt;
    Metric m;
  };
  const std::vector<Case> cases = {{5003, 7, 8, 2049, 0, 0, Metric::l2},    {5003, 7, 8, 2049, 3, 1000, Metric::ip},
                                   {4099, 5, 4, 4099, 0, 0, Metric::l2},    {4099, 5, 4, 4099, 2, 777, Metric::ip},
                                   {30011, 3, 16, 3001, 0, 0, Metric::l2},  {2500, 9, 6, 2500, 4, 1, Metric::l2},
                                   {2049, 1, 3, 2049, 0, 2049, Metric::ip}, {6001, 4, 5, 2048, 0, 0, Metric::l2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(testing::Message() << "n " << c.n << " q " << c.q << " d " << c.d << " k " << c.k << " tiles " << c.qt
                                    << "," << c.nt << " " << metric_name(c.m));
    std::vector<float> base = small_ints(c.n, c.d, 7);
    for (index_t j = 2; j < c.n; j += 5) std::copy_n(base.begin() + (j - 2) * c.d, c.d, base.begin() + j * c.d);
    const std::vector<float> queries = small_ints(c.q, c.d, 8);
    KnnOptions o;
    o.k = c.k, o.metric = c.m, o.query_tile = c.qt, o.base_tile = c.nt;
    std::vector<float> cd(std::size_t(c.q * c.k));
    std::vector<index_t> ci(std::size_t(c.q * c.k));
    knn_cpu<float>(base.data(), c.n, queries.data(), c.q, c.d, o, cd.data(), ci.data());
    const auto [gi, gd] = gpu_knn(base, c.n, queries, c.q, c.d, o);
    EXPECT_EQ(gi, ci);
    EXPECT_EQ(gd, cd);
  }
}

TEST(GpuKnn, MergedPassesRecallOnRandomData) {
  SKIP_WITHOUT_GPU();
  for (Metric m : {Metric::l2, Metric::ip}) {
    const index_t n = 20011, q = 6, d = 40, k = 4097;
    const std::vector<float> base = synthetic_vectors(n, d, 11), queries = synthetic_vectors(q, d, 12);
    KnnOptions o;
    o.k = k, o.metric = m, o.base_tile = 3000;
    const auto [gi, gd] = gpu_knn(base, n, queries, q, d, o);
    const std::vector<std::int32_t> gt = knn_ground_truth(base.data(), n, queries.data(), q, d, k, m, 2);
    EXPECT_EQ(knn_recall(base.data(), n, queries.data(), q, d, m, gi.data(), k, gt.data(), k, k), 1.0) << metric_name(m);
    for (index_t i = 0; i < q; ++i)
      for (index_t r = 0; r < k; ++r) {
        const float cur = gd[std::size_t(i * k + r)];
        ASSERT_TRUE(std::isfinite(cur));
        if (r > 0) {
          const float p = gd[std::size_t(i * k + r - 1)];
          ASSERT_TRUE(m == Metric::l2 ? p <= cur : p >= cur) << metric_name(m) << " query " << i << " rank " << r;
        }
      }
  }
}

// Worst case of the one-pass selection: every base vector is nearer than all
// before it, so every candidate passes the threshold, the buffer overflows
// and is cut again and again, and every tile changes the state. Exact data
// (x_j = (n - j) e_0, queries 0 or small), compared with the CPU exactly.
TEST(GpuKnn, EveryCandidateBetterThanTheLast) {
  SKIP_WITHOUT_GPU();
  const index_t n = 4000, d = 4, q = 3;
  std::vector<float> base(std::size_t(n * d), 1.0f);
  for (index_t j = 0; j < n; ++j) base[std::size_t(j * d)] = float(n - j);
  const std::vector<float> queries = {0, 1, 1, 1, -1, 1, 1, 1, -2, 0, 1, 1};
  for (index_t k : {1, 10, 300, 1024, 1025, 2048, 2049}) {
    for (index_t nt : {0, 1000, 4000}) {
      KnnOptions o;
      o.k = k, o.base_tile = nt;
      std::vector<float> cd(std::size_t(q * k));
      std::vector<index_t> ci(std::size_t(q * k));
      knn_cpu<float>(base.data(), n, queries.data(), q, d, o, cd.data(), ci.data());
      const auto [gi, gd] = gpu_knn(base, n, queries, q, d, o);
      EXPECT_EQ(gi, ci) << "k " << k << " nt " << nt;
      EXPECT_EQ(gd, cd) << "k " << k << " nt " << nt;
    }
  }
}

// 16-bit storage on the device: identical results to the FP32 GPU search on
// the rounded (widened) base, whatever the path (one pass, merged passes).
TEST(GpuKnn, SixteenBitBaseMatchesFp32SearchOnRoundedBase) {
  SKIP_WITHOUT_GPU();
  const index_t n = 9001, q = 11, d = 36;
  const std::vector<float> base = synthetic_vectors(n, d, 21), queries = synthetic_vectors(q, d, 22);
  for (Storage st : {Storage::f16, Storage::bf16}) {
    const std::vector<std::uint16_t> b16 = to_16bit(base.data(), n * d, st);
    std::vector<float> rounded(base.size());
    from_16bit(b16.data(), n * d, st, rounded.data());
    ASSERT_NE(rounded, base) << storage_name(st) << ": the rounding changed nothing, the test would prove nothing";
    for (Metric m : {Metric::l2, Metric::ip}) {
      for (index_t k : {1, 100, 2500}) {
        SCOPED_TRACE(testing::Message() << storage_name(st) << " " << metric_name(m) << " k " << k);
        KnnOptions o;
        o.k = k, o.metric = m, o.base_tile = k == 100 ? 2000 : 0;
        const auto [ri, rd] = gpu_knn(rounded, n, queries, q, d, o);
        Dev<std::uint16_t> b(b16);
        Dev<float> qq(queries), dist(std::vector<float>(std::size_t(q * k), std::nanf("")));
        Dev<index_t> idx(std::vector<index_t>(std::size_t(q * k), -1));
        cuda::knn_device_16bit(b.a.data(), st, n, qq.a.data(), q, d, o, dist.a.data(), idx.a.data());
        EXPECT_EQ(idx.host(q * k), ri);
        EXPECT_EQ(dist.host(q * k), rd);
        if (k == 100) {  // and exact for the stored base: recall 1 against FP64 on the rounded values
          const std::vector<index_t> got = idx.host(q * k);
          const std::vector<std::int32_t> gt = knn_ground_truth(rounded.data(), n, queries.data(), q, d, k, m, 2);
          EXPECT_EQ(knn_recall(rounded.data(), n, queries.data(), q, d, m, got.data(), k, gt.data(), k, k), 1.0);
        }
      }
    }
  }
  Dev<std::uint16_t> b(to_16bit(base.data(), n * d, Storage::f16));
  Dev<float> qq(queries), dist(q * 10);
  Dev<index_t> idx(q * 10);
  KnnOptions o;
  o.k = 10;
  EXPECT_THROW(cuda::knn_device_16bit(b.a.data(), Storage::f32, n, qq.a.data(), q, d, o, dist.a.data(), idx.a.data()),
               Error);
}

// Every path: ranks over several blocks and one block's network up to 1024
// vectors (gpu.dist_rank), the network to 4096, the radix sort beyond.
TEST(GpuDist, SortedDistancesMatchCpu) {
  SKIP_WITHOUT_GPU();
  for (const char* rank : {"auto", "0"})
    for (index_t n : {1, 31, 100, 128, 129, 999, 1000, 1024, 1025, 2047, 2048, 3000, 4096, 5000, 100003}) {
      if (rank[0] == '0' && n > 1024) continue;
      set_tuning("gpu.dist_rank", rank);
      for (Metric m : {Metric::l2, Metric::ip}) {
        const index_t d = n == 999 || n == 1025 || n == 3000 ? 30 : 32;  // d % 4 != 0: the scalar-load path
        const std::vector<float> base = small_ints(n, d, 5), query = small_ints(1, d, 6);  // exact: ties by index
        std::vector<float> cd(n);
        std::vector<index_t> ci(n);
        distances_sorted_cpu<float>(base.data(), n, d, query.data(), m, 2, cd.data(), ci.data());
        Dev<float> b(base), qq(query), dist(std::vector<float>(std::size_t(n), std::nanf("")));
        Dev<index_t> idx(std::vector<index_t>(std::size_t(n), -1));
        cuda::distances_sorted_device(b.a.data(), n, d, qq.a.data(), m, dist.a.data(), idx.a.data());
        EXPECT_EQ(idx.host(n), ci) << "n " << n << " " << metric_name(m) << " gpu.dist_rank " << rank;
        EXPECT_EQ(dist.host(n), cd) << "n " << n << " " << metric_name(m) << " gpu.dist_rank " << rank;
      }
    }
  set_tuning("gpu.dist_rank", "auto");
}

// The timing helper runs the same kernel: its last call's output is still right.
TEST(GpuDist, TimingHelperLeavesACorrectResult) {
  SKIP_WITHOUT_GPU();
  const index_t n = 1024, d = 32;
  const std::vector<float> base = small_ints(n, d, 9), query = small_ints(1, d, 10);
  std::vector<float> cd(n);
  std::vector<index_t> ci(n);
  distances_sorted_cpu<float>(base.data(), n, d, query.data(), Metric::l2, 1, cd.data(), ci.data());
  Dev<float> b(base), qq(query), dist(std::vector<float>(std::size_t(n), std::nanf("")));
  Dev<index_t> idx(std::vector<index_t>(std::size_t(n), -1));
  const cuda::DistCallTiming t =
      cuda::time_distances_sorted_device(b.a.data(), n, d, qq.a.data(), Metric::l2, dist.a.data(), idx.a.data(), 50);
  EXPECT_GT(t.back_to_back_us, 0.0);
  EXPECT_GT(t.single_sync_us, 0.0);
  EXPECT_GT(t.single_event_us, 0.0);
  EXPECT_EQ(t.calls, 50);
  EXPECT_EQ(idx.host(n), ci);
  EXPECT_EQ(dist.host(n), cd);
}
