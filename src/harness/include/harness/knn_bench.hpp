// The measurement side of GEMV and k-NN (src/harness/bench_gemv.cpp,
// bench_knn.cpp, knn_impls.cpp; baselines in src/baselines/): verified,
// timed tables with the baselines (OpenBLAS SGEMV, cuBLAS SGEMV, FAISS
// IndexFlatL2/IP) in the same run. Used by `parray bench gemv|knn`,
// `parray knn` and tests.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "parray/gemv.hpp"
#include "parray/impl_registry.hpp"
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

// The data one k-NN search runs on: base (n x d) and queries (q x d), FP32
// row-major on the host, and how the base is stored (Storage), with the
// copies that implementations make on first use and then share: the 16-bit
// host base, the device base (FP32, or only its 16-bit copy) and queries,
// a FAISS index per metric. Searches refer to it: not copied or moved.
class KnnData {
 public:
  KnnData(std::vector<float> base, index_t n, std::vector<float> queries, index_t q, index_t d,
          Storage storage = Storage::f32);
  ~KnnData();
  KnnData(const KnnData&) = delete;
  KnnData& operator=(const KnnData&) = delete;

  index_t n() const { return n_; }
  index_t q() const { return q_; }
  index_t d() const { return d_; }
  Storage storage() const { return storage_; }
  const float* base() const { return base_.data(); }
  const float* queries() const { return queries_.data(); }

  // The base rounded to storage() (to_16bit). parray::Error when storage()
  // is f32, or f16 and the base holds a value beyond FP16's 65504.
  const std::uint16_t* base_16bit();
  // Device copies (parray::Error when built without CUDA or no GPU).
  const float* device_base();
  const std::uint16_t* device_base_16bit();
  const float* device_queries();
  const FaissFlatIndex& faiss_index(Metric metric);

 private:
  struct DeviceCopies;  // defined where CUDA is known
  index_t n_, q_, d_;
  Storage storage_;
  std::vector<float> base_, queries_;
  std::vector<std::uint16_t> base16_;
  std::array<std::unique_ptr<FaissFlatIndex>, 2> faiss_;  // by Metric
  std::unique_ptr<DeviceCopies> device_;
};

// One k-NN implementation set up on one KnnData with one KnnOptions: run()
// writes the k nearest of every query into the search's own buffers (device
// ones on the GPU), finish() waits for it (may be empty), results() copies
// the last run's q x k answers into host arrays. The KnnData must outlive it.
struct KnnSearch {
  std::string name;  // the row's name: "knn-cpu-bf16", "knn-gpu:GEMM", "faiss-flat"
  std::function<void()> run, finish;
  std::function<void(float* distances, index_t* indices)> results;
};

struct KnnImpl : ImplInfo {
  bool stores_16bit = false;  // searches the base as KnnData::storage() stores it (f16, bf16)
  std::function<KnnSearch(KnnData&, const KnnOptions&)> prepare;
};

class KnnRegistry : public ImplRegistry<KnnImpl> {
 public:
  KnnRegistry() : ImplRegistry<KnnImpl>("k-NN implementation") {}
};
using KnnAbsent = KnnRegistry::Absent;

// Filled on first use: knn-cpu (default "cpu"), knn-gpu (default "gpu"; with
// CUDA) and, through register_knn_baselines, faiss-flat ("faiss").
KnnRegistry& knn_registry();
void register_knn_baselines(KnnRegistry& r);

// A search's name: the implementation's, ":GEMM" when options.gemm names the
// inner GEMM, "-f16"/"-bf16" when it searches a 16-bit base ("knn-gpu:NAME-bf16").
std::string knn_search_name(const KnnImpl& impl, Storage storage, const KnnOptions& options);

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
  std::vector<std::string> impls;  // k-NN registry names (cpu, gpu, faiss, ...); "gpu:GEMM" sets the inner GEMM
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
