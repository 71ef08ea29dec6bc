// `parray bench knn`: parray's k-NN (CPU, GPU) and the baselines (FAISS on the
// CPU) on the same synthetic data in one run. Every result is checked for
// recall@k against exact FP64 ground truth (parray's CPU DGEMM) before it is
// timed; queries/s = Q / median time of a whole search (device-resident data
// on the GPU, as PyTorch's side measures it).
#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

#include "parray/array.hpp"
#include "harness/knn_bench.hpp"
#include "parray/measure.hpp"

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

// One row's implementation: an item of --impl ("cpu", "faiss-flat",
// "gpu:GEMM") resolved in the registry, or the part this build or machine
// lacks (the row skipped, saying why).
struct KnnItem {
  const KnnImpl* impl = nullptr;
  const KnnAbsent* absent = nullptr;
  std::string gemm;  // after ':' (a GPU k-NN's inner GEMM)

  const KnnImpl& info() const { return impl ? *impl : absent->impl; }
};

KnnItem resolve_item(const KnnRegistry& reg, const std::string& item) {
  KnnItem it;
  const std::size_t colon = item.find(':');
  const std::string name = item.substr(0, colon);
  if (colon != std::string::npos) it.gemm = item.substr(colon + 1);
  it.impl = reg.find_or_null(name);
  if (!it.impl) it.absent = reg.absent_or_null(name);
  if (!it.impl && !it.absent) reg.find(name);  // throws "unknown k-NN implementation" with the names
  if (colon != std::string::npos && (it.gemm.empty() || it.info().device != Device::gpu))
    throw Error("k-NN item '" + item + "': only a GPU k-NN takes an inner GEMM (gpu:NAME)");
  return it;
}

// Why a row of this item cannot run here, or "".
std::string skip_reason(const KnnItem& it) {
  if (it.absent) return it.absent->reason;
  if (it.impl->device == Device::gpu && !cuda_available()) return "no GPU";
  return "";
}

// What a search's check compares with: the exact ground truth (kmax per query).
struct KnnTruth {
  const KnnData& data;
  Metric metric;
  const std::vector<std::int32_t>& gt;
  index_t kmax;
};

// The search run once from poisoned outputs, checked for recall@k against
// the ground truth (a 16-bit base is rounded: its recall against the FP32
// data may drop and still pass), then timed.
void measure_row(const KnnBenchOptions& o, const KnnTruth& t, const KnnSearch& s, bool rounded, KnnBenchRow& r) {
  const index_t k = r.k;
  std::vector<float> dist(std::size_t(t.data.q() * k));
  std::vector<index_t> idx(std::size_t(t.data.q() * k), -1);
  Trial trial;
  trial.run = s.run;
  trial.finish = s.finish;
  trial.check = [&] {
    s.results(dist.data(), idx.data());
    r.recall = knn_recall(t.data.base(), t.data.n(), t.data.queries(), t.data.q(), t.data.d(), t.metric, idx.data(),
                          k, t.gt.data(), t.kmax, k);
    Verdict v;
    v.error = 1.0 - r.recall;
    v.outcome = r.recall >= 1.0 || rounded ? Outcome::passed : Outcome::failed;
    if (r.recall < 1.0)
      v.note = rounded ? fmt::format("base stored as {}: recall against the FP32 data", storage_name(o.storage))
                       : fmt::format("recall {:.6f} < 1", r.recall);
    return v;
  };
  TimingPlan plan;
  plan.warmup = 1, plan.min_reps = o.min_reps, plan.max_reps = o.max_reps, plan.target_seconds = o.target_seconds;
  const Measurement m = verify_then_time(trial, plan);
  r.outcome = m.verdict.outcome;
  r.note = m.verdict.note;
  if (m.timing.reps > 0) {
    r.ms = m.timing.median_ms;
    r.qps = double(t.data.q()) / (r.ms * 1e-3);
  }
}

// The rows of one item at one k: one per thread count (one for an
// implementation that takes none).
void item_rows(const KnnBenchOptions& o, KnnData& data, const KnnTruth& truth, const KnnItem& it, index_t k,
               std::vector<KnnBenchRow>& rows) {
  const KnnImpl& info = it.info();
  const std::string skip = skip_reason(it);
  for (int threads : info.threaded ? o.threads : std::vector<int>{1}) {
    KnnOptions ko;
    ko.k = k, ko.metric = o.metric, ko.threads = threads, ko.gemm = it.gemm;
    ko.query_tile = o.query_tile, ko.base_tile = o.base_tile;
    KnnBenchRow r;
    r.impl = knn_search_name(info, o.storage, ko);
    r.device = device_name(info.device);
    r.metric = metric_name(o.metric);
    r.n = o.n, r.d = o.d, r.q = o.q, r.k = k, r.threads = threads;
    if (!skip.empty()) {
      r.outcome = Outcome::skipped, r.note = skip;
    } else {
      try {
        const KnnSearch s = it.impl->prepare(data, ko);
        if (o.progress) std::fprintf(stderr, "[knn] %s k=%lld threads=%d\n", r.impl.c_str(), (long long)k, threads);
        measure_row(o, truth, s, info.stores_16bit && o.storage != Storage::f32, r);
      } catch (const Error& e) {
        r.outcome = Outcome::failed, r.note = e.what();
      }
    }
    rows.push_back(r);
  }
}

}  // namespace

std::vector<KnnBenchRow> run_knn_bench(const KnnBenchOptions& o) {
  if (o.ks.empty() || o.threads.empty()) throw Error("k-NN bench: no k or no thread count given");
  const index_t kmax = *std::max_element(o.ks.begin(), o.ks.end());
  KnnOptions check;
  check.k = kmax;
  check_knn_problem(o.n, o.q, o.d, check);
  const KnnRegistry& reg = knn_registry();
  std::vector<KnnItem> items;
  for (const std::string& item : o.impls) items.push_back(resolve_item(reg, item));
  KnnData data(synthetic_vectors(o.n, o.d, o.seed, o.offset), o.n, synthetic_vectors(o.q, o.d, o.seed + 1, o.offset),
               o.q, o.d, o.storage);
  if (o.progress) std::fprintf(stderr, "[knn] exact FP64 ground truth, k = %lld\n", (long long)kmax);
  const int gt_threads = *std::max_element(o.threads.begin(), o.threads.end());
  const std::vector<std::int32_t> gt =
      knn_ground_truth(data.base(), o.n, data.queries(), o.q, o.d, kmax, o.metric, gt_threads);
  const KnnTruth truth{data, o.metric, gt, kmax};
  std::vector<KnnBenchRow> rows;
  for (const KnnItem& it : items)
    for (index_t k : o.ks) item_rows(o, data, truth, it, k, rows);
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
