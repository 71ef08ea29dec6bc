// The measurement side of GEMV and k-NN (src/harness/bench_gemv.cpp,
// bench_knn.cpp; baselines in src/baselines/): verified,
// timed tables with the baselines (OpenBLAS SGEMV, cuBLAS SGEMV, FAISS
// IndexFlatL2/IP) in the same run. Used by `parray bench gemv|knn` and tests.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "parray/gemv.hpp"
#include "parray/knn.hpp"

namespace parray {

// ---- GEMV ---------------------------------------------------------------------

struct GemvBenchRow {
  std::string impl, device, dtype, layout;
  index_t m = 0, n = 0;
  int threads = 1;
  double ms = 0, gbps = 0, copy_gbps = 0, pct_copy = 0, pct_best_baseline = 0, rel_err = 0;
  Outcome outcome = Outcome::failed;
  bool ok() const { return outcome == Outcome::passed; }
  std::string note;
};

struct GemvBenchOptions {
  std::vector<std::string> impls;                          // registry names
  std::vector<std::pair<index_t, index_t>> shapes;         // (M, N)
  std::vector<std::string> layouts = {"row", "col"};       // named layouts (named_layouts.hpp)
  std::vector<Dtype> dtypes = {Dtype::f32};
  std::vector<int> threads = {1};
  double alpha = 1.0, beta = 0.0;
  int min_reps = 5, max_reps = 50;
  double target_seconds = 0.3;
  bool progress = true;
};

// Relative 2-norm tolerance of a GEMV result with inner dimension N.
double gemv_tolerance(Dtype dtype, index_t n);
std::vector<GemvBenchRow> run_gemv_bench(const GemvBenchOptions& o);
std::string gemv_bench_csv(const std::vector<GemvBenchRow>& rows);
std::string gemv_bench_table(const std::vector<GemvBenchRow>& rows);

// ---- k-NN ---------------------------------------------------------------------

// FAISS IndexFlatL2 / IndexFlatIP (exact), when parray was built with it.
bool faiss_available();
std::string faiss_description();
// The index holds its own copy of the base (faiss::IndexFlat::add); search()
// has knn_cpu<float>'s contract. threads sets OpenMP's and the BLAS's count.
class FaissFlatIndex {
 public:
  FaissFlatIndex(const float* base, index_t n, index_t d, Metric metric);
  ~FaissFlatIndex();
  void search(const float* queries, index_t q, index_t k, int threads, float* distances, index_t* indices) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  index_t n_, d_;
};

struct KnnBenchRow {
  std::string impl, device, metric;
  index_t n = 0, d = 0, q = 0, k = 0;
  int threads = 1;
  double ms = 0, qps = 0, recall = 0;
  Outcome outcome = Outcome::failed;
  bool ok() const { return outcome == Outcome::passed; }
  std::string note;
};

struct KnnBenchOptions {
  std::vector<std::string> impls;  // cpu, gpu, faiss
  index_t n = 0, d = 0, q = 0;
  std::vector<index_t> ks = {10};
  Metric metric = Metric::l2;
  Storage storage = Storage::f32;  // of the base, CPU and GPU k-NN ("knn-cpu-f16", "knn-gpu-bf16" rows)
  index_t query_tile = 0, base_tile = 0;  // KnnOptions's tiles (0: automatic)
  std::vector<int> threads = {1};
  std::uint64_t seed = 42;
  double offset = 0;  // synthetic data uniform in [offset - 1, offset + 1)
  int min_reps = 3, max_reps = 10;
  double target_seconds = 1.0;
  bool progress = true;
};

// Exact FP64 ground truth (q x k int32), parray's CPU DGEMM.
std::vector<std::int32_t> knn_ground_truth(const float* base, index_t n, const float* queries, index_t q, index_t d,
                                           index_t k, Metric metric, int threads);
std::vector<KnnBenchRow> run_knn_bench(const KnnBenchOptions& o);
std::string knn_bench_csv(const std::vector<KnnBenchRow>& rows);
std::string knn_bench_table(const std::vector<KnnBenchRow>& rows);

}  // namespace parray
