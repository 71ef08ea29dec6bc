// `parray bench knn`: parray's k-NN (CPU, GPU) and the baselines (FAISS on the
// CPU) on the same synthetic data in one run. Every result is checked for
// recall@k against exact FP64 ground truth (parray's CPU DGEMM) before it is
// timed; queries/s = Q / median time of a whole search (device-resident data
// on the GPU, as PyTorch's side measures it).
#include <omp.h>

#include <algorithm>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/harness.hpp"
#include "parray/knn_bench.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {

std::vector<std::int32_t> knn_ground_truth(const float* base, index_t n, const float* queries, index_t q, index_t d,
                                           index_t k, Metric metric, int threads) {
  if (n > INT32_MAX) throw Error("ground truth: " + std::to_string(n) + " base vectors do not fit .ivecs's int32");
  std::vector<double> b(base, base + n * d), qs(queries, queries + q * d), dist(size_t(q * k));
  std::vector<index_t> idx(size_t(q * k));
  KnnOptions o;
  o.k = k, o.metric = metric, o.threads = threads;
  knn_cpu<double>(b.data(), n, qs.data(), q, d, o, dist.data(), idx.data());
  return std::vector<std::int32_t>(idx.begin(), idx.end());
}

namespace {

// What every row of one benchmark searches: the data, its exact ground truth,
// and the copies each implementation searches (made on first use).
struct KnnBenchData {
  index_t kmax = 0;
  std::vector<float> base, queries;
  std::vector<std::int32_t> gt;
  std::vector<std::uint16_t> base16;
  std::unique_ptr<FaissFlatIndex> faiss;
#if PARRAY_HAVE_CUDA
  std::unique_ptr<Array<float>> base_dev, queries_dev, dist_dev;
  std::unique_ptr<Array<index_t>> idx_dev;
  std::unique_ptr<Array<std::uint16_t>> base16_dev;
#endif
};

KnnBenchData knn_bench_data(const KnnBenchOptions& o) {
  KnnBenchData x;
  x.kmax = *std::max_element(o.ks.begin(), o.ks.end());
  KnnOptions check;
  check.k = x.kmax;
  check_knn_problem(o.n, o.q, o.d, check);
  x.base = synthetic_vectors(o.n, o.d, o.seed, o.offset);
  x.queries = synthetic_vectors(o.q, o.d, o.seed + 1, o.offset);
  if (o.progress) std::fprintf(stderr, "[knn] exact FP64 ground truth, k = %lld\n", (long long)x.kmax);
  const int gt_threads = *std::max_element(o.threads.begin(), o.threads.end());
  x.gt = knn_ground_truth(x.base.data(), o.n, x.queries.data(), o.q, o.d, x.kmax, o.metric, gt_threads);
  if (o.storage != Storage::f32) x.base16 = to_16bit(x.base.data(), o.n * o.d, o.storage);
  return x;
}

// One row's search: run() writes the k nearest of every query (the GPU's into
// device buffers, which fetch_indices brings back), finish() waits for it.
struct KnnSearch {
  std::function<void()> run, finish;
  bool gpu = false;
};

// The GPU search of a row: the data on the device once, the result buffers
// per k. Empty when there is no GPU (the row's note says why).
KnnSearch gpu_search(const KnnBenchOptions& o, KnnBenchData& x, index_t k, const KnnOptions& ko, KnnBenchRow& r) {
  KnnSearch s;
#if PARRAY_HAVE_CUDA
  if (!cuda_available()) {
    r.outcome = Outcome::skipped, r.note = "no GPU";
    return s;
  }
  if (!x.queries_dev) {
    x.queries_dev = std::make_unique<Array<float>>(Layout::dense({std::max<index_t>(o.q, 1), o.d}), Memory::device);
    copy_bytes(x.queries_dev->data(), Memory::device, x.queries.data(), Memory::paged, x.queries.size() * sizeof(float));
  }
  if (o.storage == Storage::f32 && !x.base_dev) {
    x.base_dev = std::make_unique<Array<float>>(Layout::dense({o.n, o.d}), Memory::device);
    copy_bytes(x.base_dev->data(), Memory::device, x.base.data(), Memory::paged, x.base.size() * sizeof(float));
  }
  if (o.storage != Storage::f32 && !x.base16_dev) {  // only the 16-bit copy of the base goes to the device
    x.base16_dev = std::make_unique<Array<std::uint16_t>>(Layout::dense({o.n, o.d}), Memory::device);
    copy_bytes(x.base16_dev->data(), Memory::device, x.base16.data(), Memory::paged, x.base16.size() * 2);
  }
  x.dist_dev = std::make_unique<Array<float>>(Layout::dense({std::max<index_t>(o.q * k, 1)}), Memory::device);
  x.idx_dev = std::make_unique<Array<index_t>>(Layout::dense({std::max<index_t>(o.q * k, 1)}), Memory::device);
  if (o.storage == Storage::f32)
    s.run = [&o, &x, &ko] {
      cuda::knn_device(x.base_dev->data(), o.n, x.queries_dev->data(), o.q, o.d, ko, x.dist_dev->data(),
                       x.idx_dev->data());
    };
  else
    s.run = [&o, &x, &ko] {
      cuda::knn_device_16bit(x.base16_dev->data(), o.storage, o.n, x.queries_dev->data(), o.q, o.d, ko,
                             x.dist_dev->data(), x.idx_dev->data());
    };
  s.finish = [] { cuda::synchronize(); };
  s.gpu = true;
#else
  (void)o, (void)x, (void)k, (void)ko;
  r.outcome = Outcome::skipped, r.note = "built without CUDA";
#endif
  return s;
}

// The search of implementation impl (cpu, gpu or faiss) with k and threads
// in ko into dist and idx; empty (the row skipped, its note saying why)
// where it cannot run here.
KnnSearch knn_search(const KnnBenchOptions& o, KnnBenchData& x, const std::string& impl, index_t k,
                     const KnnOptions& ko, std::vector<float>& dist, std::vector<index_t>& idx, KnnBenchRow& r) {
  KnnSearch s;
  if (impl == "cpu" && o.storage != Storage::f32) {
    s.run = [&o, &x, &ko, &dist, &idx] {
      knn_cpu_16bit(x.base16.data(), o.storage, o.n, x.queries.data(), o.q, o.d, ko, dist.data(), idx.data());
    };
  } else if (impl == "cpu") {
    s.run = [&o, &x, &ko, &dist, &idx] {
      knn_cpu<float>(x.base.data(), o.n, x.queries.data(), o.q, o.d, ko, dist.data(), idx.data());
    };
  } else if (impl == "faiss") {
    if (!faiss_available()) {
      r.outcome = Outcome::skipped, r.note = faiss_description();
      return s;
    }
    if (!x.faiss) x.faiss = std::make_unique<FaissFlatIndex>(x.base.data(), o.n, o.d, o.metric);
    s.run = [&o, &x, &ko, &dist, &idx] {
      x.faiss->search(x.queries.data(), o.q, ko.k, ko.threads, dist.data(), idx.data());
    };
  } else {
    s = gpu_search(o, x, k, ko, r);
  }
  return s;
}

// The row's search once, checked for recall@k against the ground truth,
// then timed.
void measure_row(const KnnBenchOptions& o, const KnnBenchData& x, const KnnSearch& s, index_t k, bool rounded,
                 std::vector<index_t>& idx, KnnBenchRow& r) {
  try {
    s.run();
    if (s.finish) s.finish();
#if PARRAY_HAVE_CUDA
    if (s.gpu) copy_bytes(idx.data(), Memory::paged, x.idx_dev->data(), Memory::device, idx.size() * sizeof(index_t));
#endif
    r.recall =
        knn_recall(x.base.data(), o.n, x.queries.data(), o.q, o.d, o.metric, idx.data(), k, x.gt.data(), x.kmax, k);
    const TimingStats t = time_repeated(s.run, 1, o.min_reps, o.max_reps, o.target_seconds, s.finish);
    r.ms = t.median_ms;
    r.qps = double(o.q) / (r.ms * 1e-3);
    // 16-bit storage rounds the base: recall against the FP32 data's ground truth may drop.
    r.outcome = r.recall >= 1.0 || rounded ? Outcome::passed : Outcome::failed;
    if (r.recall < 1.0)
      r.note = rounded ? fmt::format("base stored as {}: recall against the FP32 data", storage_name(o.storage))
                       : fmt::format("recall {:.6f} < 1", r.recall);
  } catch (const Error& e) {
    r.note = e.what();
  }
}

}  // namespace

std::vector<KnnBenchRow> run_knn_bench(const KnnBenchOptions& o) {
  KnnBenchData x = knn_bench_data(o);
  std::vector<KnnBenchRow> rows;
  for (const std::string& item : o.impls) {
    // "gpu:NAME" runs the GPU k-NN with GEMM implementation NAME (parray list)
    const std::string impl = item.rfind("gpu:", 0) == 0 ? "gpu" : item;
    const std::string gemm_name = item.rfind("gpu:", 0) == 0 ? item.substr(4) : "";
    const bool gpu = impl == "gpu";
    if (impl != "cpu" && impl != "gpu" && impl != "faiss")
      throw Error("unknown k-NN implementation '" + impl + "' (known: cpu, gpu, gpu:GEMM, faiss)");
    for (index_t k : o.ks) {
      for (int threads : gpu ? std::vector<int>{1} : o.threads) {
        KnnBenchRow r;
        r.impl = impl == "cpu" ? "knn-cpu" : impl == "gpu" ? "knn-gpu" : "faiss-flat";
        if (!gemm_name.empty()) r.impl += ":" + gemm_name;
        r.device = gpu ? "gpu" : "cpu";
        r.metric = metric_name(o.metric);
        r.n = o.n, r.d = o.d, r.q = o.q, r.k = k, r.threads = threads;
        std::vector<float> dist(size_t(o.q * k));
        std::vector<index_t> idx(size_t(o.q * k), -1);
        KnnOptions ko;
        ko.k = k, ko.metric = o.metric, ko.threads = threads, ko.gemm = gemm_name;
        ko.query_tile = o.query_tile, ko.base_tile = o.base_tile;
        const bool rounded = o.storage != Storage::f32 && impl != "faiss";  // the searched base is rounded
        if (rounded) r.impl += std::string("-") + storage_name(o.storage);
        const KnnSearch s = knn_search(o, x, impl, k, ko, dist, idx, r);
        if (s.run) {
          if (o.progress) std::fprintf(stderr, "[knn] %s k=%lld threads=%d\n", r.impl.c_str(), (long long)k, threads);
          measure_row(o, x, s, k, rounded, idx, r);
        }
        rows.push_back(r);
      }
    }
  }
  return rows;
}

std::string knn_bench_csv(const std::vector<KnnBenchRow>& rows) {
  std::string s = "impl,device,metric,n,d,q,k,threads,ms,qps,recall,ok,note\n";
  for (const KnnBenchRow& r : rows)
    s += fmt::format("{},{},{},{},{},{},{},{},{:.4f},{:.1f},{:.6f},{},\"{}\"\n", r.impl, r.device, r.metric, r.n, r.d,
                     r.q, r.k, r.threads, r.ms, r.qps, r.recall, r.ok() ? 1 : 0, shown_note(r.outcome, r.note));
  return s;
}

std::string knn_bench_table(const std::vector<KnnBenchRow>& rows) {
  std::string s = fmt::format("{:<11} {:<4} {:<3} {:>8} {:>5} {:>6} {:>5} {:>3} {:>10} {:>11} {:>8}  {}\n", "impl",
                              "dev", "met", "N", "d", "Q", "k", "thr", "ms", "queries/s", "recall", "note");
  for (const KnnBenchRow& r : rows)
    s += fmt::format("{:<11} {:<4} {:<3} {:>8} {:>5} {:>6} {:>5} {:>3} {:>10.3f} {:>11.0f} {:>8.4f}  {}\n", r.impl,
                     r.device, r.metric, r.n, r.d, r.q, r.k, r.threads, r.ms, r.qps, r.recall,
                     shown_note(r.outcome, r.note));
  return s;
}

}  // namespace parray
