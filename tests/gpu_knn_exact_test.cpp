// The k-NN's exactness guarantee on the GPU: the same property grid as the
// CPU's (knn_data.hpp), FP32 and 16-bit bases, L2 and IP, one-pass (kc <=
// 2048) and merged-pass selection, rounds of more candidates. Outputs are
// poisoned before each call. Skipped when no GPU is present.
#include <gtest/gtest.h>

#include <cmath>

#include "parray/array.hpp"
#include "parray/cuda_runtime.hpp"
#include "knn_data.hpp"

using namespace parray;
using namespace parray_test;

namespace {

#define SKIP_WITHOUT_GPU() \
  if (!cuda_available()) GTEST_SKIP() << "no GPU"

template <class T>
std::unique_ptr<Array<T>> upload(const std::vector<T>& h) {
  auto a = std::make_unique<Array<T>>(Layout::dense({std::max<index_t>(index_t(h.size()), 1)}), Memory::device);
  copy_bytes(a->data(), Memory::device, h.data(), Memory::paged, h.size() * sizeof(T));
  return a;
}

template <class T>
std::vector<T> download(const Array<T>& a, std::size_t n) {
  std::vector<T> h(n);
  copy_bytes(h.data(), Memory::paged, a.data(), Memory::device, n * sizeof(T));
  return h;
}

struct GpuResult {
  std::vector<float> dist;
  std::vector<index_t> idx;
};

// base16: empty for an FP32 base, else the 16-bit patterns of `storage`.
GpuResult run_gpu(const KnnData& x, const std::vector<std::uint16_t>& base16, Storage storage, index_t k, Metric m,
                  index_t base_tile = 0) {
  KnnOptions o;
  o.k = k, o.metric = m, o.base_tile = base_tile;
  const std::size_t out = std::size_t(x.q * k);
  auto q = upload(x.queries);
  auto dist = upload(std::vector<float>(out, std::nanf("")));
  auto idx = upload(std::vector<index_t>(out, -1));
  if (base16.empty()) {
    auto b = upload(x.base);
    cuda::knn_device(b->data(), x.n, q->data(), x.q, x.d, o, dist->data(), idx->data());
  } else {
    auto b = upload(base16);
    cuda::knn_device_16bit(b->data(), storage, x.n, q->data(), x.q, x.d, o, dist->data(), idx->data());
  }
  return {download(*dist, out), download(*idx, out)};
}

void expect_exact(const KnnData& x, index_t k, Metric m, const GpuResult& r) {
  parray_test::expect_exact(x, k, m, r.dist, r.idx);
}

class GpuKnnExact : public testing::TestWithParam<ExactCase> {};

}  // namespace

TEST_P(GpuKnnExact, EqualsFp64BruteForce) {
  SKIP_WITHOUT_GPU();
  const ExactCase& c = GetParam();
  const KnnData x = make_knn_data(c.kind, c.n, c.q, c.d, 7 + std::uint64_t(c.d), c.offset);
  for (Metric m : {Metric::l2, Metric::ip}) {
    SCOPED_TRACE(metric_name(m));
    expect_exact(x, c.k, m, run_gpu(x, {}, Storage::f32, c.k, m));
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuKnnExact, testing::ValuesIn(exact_cases()), exact_case_name);

// Merged passes (kc > 2048) and small base tiles on offset and tied data.
TEST(GpuKnnExactCases, MergedPassesAndSmallTiles) {
  SKIP_WITHOUT_GPU();
  const KnnData a = make_knn_data(KnnKind::offset, 5000, 6, 16, 3, 1e4);
  for (Metric m : {Metric::l2, Metric::ip}) expect_exact(a, 2100, m, run_gpu(a, {}, Storage::f32, 2100, m));
  const KnnData b = make_knn_data(KnnKind::integers, 3000, 9, 4, 5);
  for (Metric m : {Metric::l2, Metric::ip}) expect_exact(b, 50, m, run_gpu(b, {}, Storage::f32, 50, m, 97));
}

// 16-bit bases: exact on the rounded (stored) base, centered or not.
TEST(GpuKnnExactCases, SixteenBitBaseExactOnRoundedBase) {
  SKIP_WITHOUT_GPU();
  for (Storage s : {Storage::f16, Storage::bf16}) {
    for (double offset : {0.0, 1e2}) {
      KnnData x = make_knn_data(offset > 0 ? KnnKind::offset : KnnKind::uniform, 3000, 12, 24, 9, offset);
      const std::vector<std::uint16_t> b16 = to_16bit(x.base.data(), x.n * x.d, s);
      from_16bit(b16.data(), x.n * x.d, s, x.base.data());  // x.base is now the rounded base
      for (Metric m : {Metric::l2, Metric::ip}) {
        SCOPED_TRACE(std::string(storage_name(s)) + " " + metric_name(m) + " offset " + std::to_string(offset));
        expect_exact(x, 10, m, run_gpu(x, b16, s, 10, m));
      }
    }
  }
}

// The cases that the FP32 expansion alone got wrong, and values whose squares
// overflow FP32 (every vector a candidate, the FP64 keys decide).
TEST(GpuKnnExactCases, ReportedRegressionsAndHugeValues) {
  SKIP_WITHOUT_GPU();
  const KnnData a{"two points at 1000", 2, 1, 2, {1000, 0, 1000, 0.3f}, {1000, 0.2f}};
  expect_exact(a, 1, Metric::l2, run_gpu(a, {}, Storage::f32, 1, Metric::l2));
  const KnnData b{"d = 1", 2, 1, 1, {0.56679654f, 0.5653702f}, {0.56607664f}};
  expect_exact(b, 1, Metric::l2, run_gpu(b, {}, Storage::f32, 1, Metric::l2));
  const KnnData c = make_knn_data(KnnKind::offset, 2000, 20, 16, 11, 1000);
  expect_exact(c, 10, Metric::l2, run_gpu(c, {}, Storage::f32, 10, Metric::l2));
  const KnnData h = huge_values_data();
  for (Metric m : {Metric::l2, Metric::ip}) expect_exact(h, 7, m, run_gpu(h, {}, Storage::f32, 7, m));
}
