// The k-NN and GEMV commands of the parray tool:
//
//   parray knn   --base B.fvecs --queries Q.fvecs --k K [--metric l2|ip] [--out I.ivecs] [--gt GT.ivecs]
//   parray knn   --synthetic N,d,Q --k K ...        (uniform [-1,1) data, recall against FP64 ground truth)
//   parray knn   ... --write-gt --out GT.ivecs       (exact FP64 ground truth)
//   (knn and bench knn: the implementations of the k-NN registry, knn_bench.hpp)
//   parray dist  --base B.fvecs --query Q.fvecs [--query-index I] | --synthetic N,d [--impl cpu|gpu]
//   parray bench knn  --impl cpu,gpu,faiss --synthetic N,d,Q --k LIST [--threads LIST] [--csv FILE] | --list
//   parray bench gemv --impl LIST|all --shapes MxN,... [--layout row,col] [--dtype f32,f64] [--threads LIST] [--csv FILE]
//
// Bad input: parray::Error, turned into one line and exit status 2 by main().
#include <omp.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "parray/array.hpp"
#include "parray/config.hpp"
#include "harness/harness.hpp"
#include "harness/knn_bench.hpp"
#include "parray/measure.hpp"
#include "parray/vecs_io.hpp"
#include "cli_util.hpp"
#include "commands.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

using namespace parray;

namespace {

using tools::split_list;
using tools::whole;
using tools::whole_list;

int resolve_threads(int t) {
  if (t < 0) throw Error("--threads " + std::to_string(t) + " is negative");
  return t > 0 ? t : omp_get_max_threads();
}

}  // namespace

struct KnnCli {
  CLI::App *knn = nullptr, *dist = nullptr, *bench_knn = nullptr, *bench_gemv = nullptr;
  // knn
  std::string base, queries, out, gt, synthetic, metric = "l2", impl = "cpu", save_data;
  std::string k, tiles, storage = "f32";
  bool write_gt = false;
  int threads = 0, reps = 0;
  std::uint64_t seed = 42;
  double offset = 0;
  // dist
  std::string query, dist_synthetic;
  std::string query_index = "0", top = "10", dist_csv, time_csv;
  // bench knn
  std::string b_impl = "cpu,faiss", b_synthetic, b_k = "10", b_threads = "1", b_csv, b_metric = "l2", b_storage = "f32";
  bool b_list = false;
  // bench gemv
  std::string g_impl = "all", g_shapes, g_layouts = "row,col", g_dtypes = "f32", g_threads = "1", g_csv;
  double g_alpha = 1.0, g_beta = 0.0;
  bool g_list = false;
};

namespace {

struct Data {
  std::vector<float> base, queries;
  index_t n = 0, d = 0, q = 0;
  bool synthetic = false;
};

Data load_knn_data(const KnnCli& c) {
  Data x;
  if (!c.synthetic.empty()) {
    if (!c.base.empty() || !c.queries.empty()) throw Error("give either --synthetic or --base/--queries, not both");
    const std::vector<index_t> v = whole_list(c.synthetic, "--synthetic", 1, index_t(1) << 31);
    if (v.size() != 3) throw Error("--synthetic '" + c.synthetic + "' is not N,d,Q");
    x.n = v[0], x.d = v[1], x.q = v[2];
    // The vectors, and the FP64 ground truth's copies of them.
    tools::check_host_memory(12.0 * double(x.n + x.q) * double(x.d), "--synthetic " + c.synthetic);
    x.base = synthetic_vectors(x.n, x.d, c.seed, c.offset);
    x.queries = synthetic_vectors(x.q, x.d, c.seed + 1, c.offset);
    x.synthetic = true;
    return x;
  }
  if (c.offset != 0) throw Error("--offset applies to --synthetic data only");
  if (c.base.empty() || c.queries.empty()) throw Error("give --base and --queries (.fvecs or .bvecs), or --synthetic N,d,Q");
  Vectors<float> b = read_vectors_as_float(c.base), q = read_vectors_as_float(c.queries);
  if (b.d != q.d)
    throw Error("dimension mismatch: " + c.base + " has d = " + std::to_string(b.d) + ", " + c.queries + " has d = " +
                std::to_string(q.d));
  x.n = b.n, x.d = b.d, x.q = q.n;
  x.base = std::move(b.data);
  x.queries = std::move(q.data);
  return x;
}

// --save-data: the same data for other tools (bench/baselines/torch_knn.py).
int save_knn_data(const KnnCli& c, const Data& x) {
  Vectors<float> v;
  v.n = x.n, v.d = x.d, v.data = x.base;
  write_fvecs(c.save_data + "_base.fvecs", v);
  v.n = x.q, v.data = x.queries;
  write_fvecs(c.save_data + "_queries.fvecs", v);
  std::cout << fmt::format("wrote {}_base.fvecs ({} x {}) and {}_queries.fvecs ({} x {})\n", c.save_data, x.n, x.d,
                           c.save_data, x.q, x.d);
  return 0;
}

KnnOptions knn_options(const KnnCli& c, const Data& x) {
  KnnOptions o;
  o.k = whole(c.k, "--k", 1, INT32_MAX);
  o.metric = parse_metric(c.metric);
  o.threads = resolve_threads(c.threads);
  if (!c.tiles.empty()) {
    const std::vector<index_t> t = whole_list(c.tiles, "--tiles", 1, index_t(1) << 30);
    if (t.size() != 2) throw Error("--tiles '" + c.tiles + "' is not QT,NT");
    o.query_tile = t[0], o.base_tile = t[1];
  }
  check_knn_problem(x.n, x.q, x.d, o);
  if (!c.out.empty() && x.n > INT32_MAX) throw Error("--out: indices above 2^31 do not fit .ivecs");
  return o;
}

// --write-gt: the exact FP64 ground truth into --out.
int write_ground_truth(const KnnCli& c, const Data& x, const KnnOptions& o) {
  if (c.out.empty()) throw Error("--write-gt needs --out GT.ivecs");
  const auto t0 = std::chrono::steady_clock::now();
  Vectors<std::int32_t> g;
  g.n = x.q, g.d = o.k;
  g.data = knn_ground_truth(x.base.data(), x.n, x.queries.data(), x.q, x.d, o.k, o.metric, o.threads);
  write_ivecs(c.out, g);
  std::cout << fmt::format("exact FP64 ground truth: {} queries x k = {} ({}), {} base vectors of d = {}, {:.2f} s -> {}\n",
                           x.q, o.k, metric_name(o.metric), x.n, x.d,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), c.out);
  return 0;
}

// Ground truth: from --gt, or computed in FP64 for synthetic data (else none).
Vectors<std::int32_t> ground_truth(const KnnCli& c, const Data& x, const KnnOptions& o) {
  Vectors<std::int32_t> gt;
  if (!c.gt.empty()) {
    gt = read_ivecs(c.gt);
    if (gt.n != x.q)
      throw Error(c.gt + " holds ground truth for " + std::to_string(gt.n) + " queries, the query set has " +
                  std::to_string(x.q));
    if (gt.d < o.k)
      throw Error(c.gt + " holds " + std::to_string(gt.d) + " neighbours per query, fewer than k = " + std::to_string(o.k));
  } else if (x.synthetic) {
    gt.n = x.q, gt.d = o.k;
    gt.data = knn_ground_truth(x.base.data(), x.n, x.queries.data(), x.q, x.d, o.k, o.metric, o.threads);
  }
  return gt;
}

// The k-NN implementation --impl names (bench knn --list shows them); a
// 16-bit --storage only for one that searches the 16-bit base.
const KnnImpl& knn_impl(const KnnCli& c, Storage storage) {
  const KnnRegistry& reg = knn_registry();
  const KnnImpl* impl = reg.find_or_null(c.impl);
  if (!impl) {
    if (const KnnAbsent* a = reg.absent_or_null(c.impl))
      throw Error("--impl " + c.impl + ": " + a->impl.name + " is not available: " + a->reason);
    impl = &reg.find(c.impl);  // throws "unknown k-NN implementation", naming the known ones
  }
  if (storage != Storage::f32 && !impl->stores_16bit)
    throw Error("--storage " + c.storage + " is implemented for --impl cpu and gpu only, not " + impl->name);
  return *impl;
}

// The search's answers and speed.
struct KnnFound {
  std::vector<float> dist;
  std::vector<index_t> idx;
  double recall = -1;  // -1: no ground truth
  TimingStats timing;
};

// Runs the search once, fetches its answers and computes recall@k where
// there is ground truth (reported, not judged), then times it.
KnnFound search_and_time(const KnnCli& c, const KnnData& x, const KnnSearch& s, const KnnOptions& o,
                         const Vectors<std::int32_t>& gt) {
  KnnFound f;
  f.dist.assign(std::size_t(x.q() * o.k), std::nanf(""));
  f.idx.assign(std::size_t(x.q() * o.k), -1);
  Trial t;
  t.run = s.run;
  t.finish = s.finish;
  t.check = [&] {
    s.results(f.dist.data(), f.idx.data());
    Verdict v;
    v.outcome = Outcome::passed;
    if (!gt.data.empty()) {
      f.recall = knn_recall(x.base(), x.n(), x.queries(), x.q(), x.d(), o.metric, f.idx.data(), o.k, gt.data.data(),
                            gt.d, o.k);
      v.error = 1 - f.recall;
    }
    return v;
  };
  TimingPlan plan;
  plan.warmup = 0;
  plan.min_reps = c.reps > 0 ? c.reps : 1;
  plan.max_reps = c.reps > 0 ? c.reps : 5;
  plan.target_seconds = 1.0;
  const Measurement m = verify_then_time(t, plan);
  if (!m.verdict.passed()) throw Error(m.verdict.note);
  f.timing = m.timing;
  return f;
}

int cmd_knn(const KnnCli& c) {
  tools::check_writable(c.out, "--out");
  Data x = load_knn_data(c);
  if (!c.save_data.empty()) return save_knn_data(c, x);
  const KnnOptions o = knn_options(c, x);
  if (c.write_gt) return write_ground_truth(c, x, o);
  const Storage storage = parse_storage(c.storage);
  const KnnImpl& impl = knn_impl(c, storage);
  const Vectors<std::int32_t> gt = ground_truth(c, x, o);
  KnnData data(std::move(x.base), x.n, std::move(x.queries), x.q, x.d, storage);
  const KnnSearch s = impl.prepare(data, o);
  const KnnFound f = search_and_time(c, data, s, o, gt);
  const TimingStats& t = f.timing;
  std::cout << fmt::format("{}: {} queries x {} base vectors, d = {}, k = {}, {}, {} thread(s)\n", s.name, x.q, x.n,
                           x.d, o.k, metric_name(o.metric), o.threads);
  std::cout << fmt::format("time {:.3f} ms (median of {}), {:.0f} queries/s\n", t.median_ms, t.reps,
                           double(x.q) / (t.median_ms * 1e-3));
  if (f.recall >= 0)
    std::cout << fmt::format("recall@{} {:.6f} (against {})\n", o.k, f.recall,
                             c.gt.empty() ? "exact FP64 ground truth" : c.gt);
  if (!c.out.empty()) {
    Vectors<std::int32_t> v;
    v.n = x.q, v.d = o.k;
    v.data.assign(f.idx.begin(), f.idx.end());
    write_ivecs(c.out, v);
  }
  return 0;
}

// The base and the one query of `parray dist`: synthetic, or read from files.
struct DistData {
  std::vector<float> base, query;
  index_t n = 0, d = 0;
};

DistData load_dist_data(const KnnCli& c) {
  DistData x;
  if (!c.dist_synthetic.empty()) {
    if (!c.base.empty()) throw Error("give either --synthetic or --base, not both");
    const std::vector<index_t> v = whole_list(c.dist_synthetic, "--synthetic", 1, index_t(1) << 31);
    if (v.size() != 2) throw Error("--synthetic '" + c.dist_synthetic + "' is not N,d");
    x.n = v[0], x.d = v[1];
    tools::check_host_memory(12.0 * double(x.n + 1) * double(x.d), "--synthetic " + c.dist_synthetic);
    x.base = synthetic_vectors(x.n, x.d, c.seed);
    x.query = synthetic_vectors(1, x.d, c.seed + 1);
    return x;
  }
  if (c.base.empty()) throw Error("give --base B.fvecs (and --query Q.fvecs), or --synthetic N,d");
  Vectors<float> b = read_vectors_as_float(c.base);
  x.n = b.n, x.d = b.d;
  x.base = std::move(b.data);
  const index_t qi = whole(c.query_index, "--query-index", 0, INT32_MAX);
  if (c.query.empty()) {
    if (qi >= x.n) throw Error("--query-index " + std::to_string(qi) + " is past the " + std::to_string(x.n) + " base vectors");
    x.query.assign(x.base.begin() + qi * x.d, x.base.begin() + (qi + 1) * x.d);
  } else {
    Vectors<float> q = read_vectors_as_float(c.query, qi + 1);
    if (q.d != x.d)
      throw Error("dimension mismatch: " + c.base + " has d = " + std::to_string(x.d) + ", " + c.query + " has d = " +
                  std::to_string(q.d));
    if (qi >= q.n) throw Error("--query-index " + std::to_string(qi) + " is past the " + std::to_string(q.n) + " queries");
    x.query.assign(q.row(qi), q.row(qi) + x.d);
  }
  return x;
}

// Check against FP64: a permutation, each distance within FP32 rounding of
// the exact one, and (distance, index) non-decreasing in the order returned.
// worst: the largest |d - d_exact| / (|q|^2 + |x|^2) seen.
bool sorted_distances_ok(const DistData& x, Metric metric, const std::vector<float>& dist,
                         const std::vector<index_t>& idx, double& worst) {
  const index_t n = x.n, d = x.d;
  std::vector<char> seen(std::size_t(n), 0);
  worst = 0;
  bool ok = true;
  for (index_t r = 0; r < n; ++r) {
    const index_t j = idx[std::size_t(r)];
    if (j < 0 || j >= n || seen[std::size_t(j)]) { ok = false; break; }
    seen[std::size_t(j)] = 1;
    double e = 0, scale = 0;
    for (index_t t2 = 0; t2 < d; ++t2) {
      const double a = x.query[std::size_t(t2)], b = x.base[std::size_t(j * d + t2)];
      e += metric == Metric::l2 ? (a - b) * (a - b) : a * b;
      scale += a * a + b * b;
    }
    const double err = std::abs(double(dist[std::size_t(r)]) - e) / std::max(scale, 1e-30);
    worst = std::max(worst, err);
    if (!std::isfinite(dist[std::size_t(r)]) || err > 1e-5) ok = false;
    if (r > 0) {
      const float p = dist[std::size_t(r - 1)], cur = dist[std::size_t(r)];
      const bool ordered = metric == Metric::l2 ? (p < cur || (p == cur && idx[std::size_t(r - 1)] < j))
                                                : (p > cur || (p == cur && idx[std::size_t(r - 1)] < j));
      if (!ordered) ok = false;
    }
  }
  return ok;
}

int cmd_dist(const KnnCli& c) {
  const DistData x = load_dist_data(c);
  const index_t n = x.n, d = x.d;
  const Metric metric = parse_metric(c.metric);
  const int threads = resolve_threads(c.threads);
  const index_t top = whole(c.top, "--top", 0, INT64_MAX);
  std::vector<float> dist(std::size_t(n), std::nanf(""));
  std::vector<index_t> idx(std::size_t(n), -1);
  std::function<void()> run, finish;
#if PARRAY_HAVE_CUDA
  std::unique_ptr<Array<float>> bd, qd, dd;
  std::unique_ptr<Array<index_t>> id;
#endif
  if (c.impl == "cpu") {
    run = [&] { distances_sorted_cpu<float>(x.base.data(), n, d, x.query.data(), metric, threads, dist.data(), idx.data()); };
  } else if (c.impl == "gpu") {
#if PARRAY_HAVE_CUDA
    if (!cuda_available()) throw Error("--impl gpu: no GPU is present");
    bd = std::make_unique<Array<float>>(Layout::dense({n, d}), Memory::device);
    qd = std::make_unique<Array<float>>(Layout::dense({d}), Memory::device);
    dd = std::make_unique<Array<float>>(Layout::dense({n}), Memory::device);
    id = std::make_unique<Array<index_t>>(Layout::dense({n}), Memory::device);
    copy_bytes(bd->data(), Memory::device, x.base.data(), Memory::paged, x.base.size() * 4);
    copy_bytes(qd->data(), Memory::device, x.query.data(), Memory::paged, x.query.size() * 4);
    run = [&] { cuda::distances_sorted_device(bd->data(), n, d, qd->data(), metric, dd->data(), id->data()); };
    finish = [] { cuda::synchronize(); };
#else
    throw Error("--impl gpu: parray was built without CUDA");
#endif
  } else {
    throw Error("unknown --impl '" + c.impl + "' (use cpu or gpu)");
  }
  run();
  if (finish) finish();
  const TimingStats t = time_repeated(run, 10, c.reps > 0 ? c.reps : 50, c.reps > 0 ? c.reps : 2000, 0.3, finish);
  std::string gpu_timing;
#if PARRAY_HAVE_CUDA
  if (c.impl == "gpu") {
    // CUDA events around back-to-back calls (PyTorch's way), beside the
    // single-call synchronous latency. The check below reads the last call's output.
    const int calls = c.reps > 0 ? c.reps : 2000;
    const cuda::DistCallTiming g =
        cuda::time_distances_sorted_device(bd->data(), n, d, qd->data(), metric, dd->data(), id->data(), calls);
    gpu_timing = fmt::format(
        "GPU per call: {:.2f} us back-to-back (CUDA events around {} calls, launch included); {:.2f} us single call + "
        "synchronize (host clock, median); {:.2f} us one call between events\n",
        g.back_to_back_us, g.calls, g.single_sync_us, g.single_event_us);
    tools::write_output(c.time_csv,
                        fmt::format("impl,device,metric,n,d,calls,back_to_back_us,single_sync_us,single_event_us\n"
                                    "parray-dist-fused,gpu,{},{},{},{},{:.3f},{:.3f},{:.3f}\n",
                                    metric_name(metric), n, d, g.calls, g.back_to_back_us, g.single_sync_us,
                                    g.single_event_us),
                        "parray");
    copy_bytes(dist.data(), Memory::paged, dd->data(), Memory::device, dist.size() * 4);
    copy_bytes(idx.data(), Memory::paged, id->data(), Memory::device, idx.size() * sizeof(index_t));
  }
#endif
  double worst = 0;
  const bool ok = sorted_distances_ok(x, metric, dist, idx, worst);
  std::cout << fmt::format("dist ({}, {}): 1 query x {} vectors of d = {}, sorted; {:.2f} us per call (median of {})\n",
                           c.impl, metric_name(metric), n, d, t.median_ms * 1e3, t.reps);
  std::cout << gpu_timing;
  std::cout << fmt::format("check {}: max |d - d_exact| / (|q|^2 + |x|^2) = {:.2e}, order by (distance, index)\n",
                           ok ? "OK" : "FAILED", worst);
  std::cout << "rank,index,distance\n";
  for (index_t r = 0; r < std::min(top, n); ++r)
    std::cout << fmt::format("{},{},{:.7g}\n", r, idx[std::size_t(r)], dist[std::size_t(r)]);
  if (!c.dist_csv.empty()) {
    std::string s = "rank,index,distance\n";
    for (index_t r = 0; r < n; ++r) s += fmt::format("{},{},{:.9g}\n", r, idx[std::size_t(r)], dist[std::size_t(r)]);
    tools::write_output(c.dist_csv, s, "parray");
  }
  return ok ? 0 : 1;
}

// bench knn --list: the k-NN registry, and what this build or machine lacks.
int list_knn_impls() {
  const KnnRegistry& reg = knn_registry();
  for (const KnnImpl& i : reg.all())
    std::cout << fmt::format("{:<22} {:<4} {:<12} {}{}\n{:<40}({})\n", i.name, device_name(i.device),
                             i.stores_16bit ? "f32,f16,bf16" : "f32", i.baseline ? "[baseline] " : "", i.description,
                             "", i.preconditions);
  for (const MissingPart& m : reg.missing()) std::cout << fmt::format("missing: {}: {}\n", m.name, m.reason);
  return 0;
}

int cmd_bench_knn(const KnnCli& c) {
  if (c.b_list) return list_knn_impls();
  if (c.b_synthetic.empty()) throw Error("give --synthetic N,d,Q");
  KnnBenchOptions o;
  o.impls = split_list(c.b_impl, ',');
  if (o.impls.empty()) throw Error("--impl is empty");
  const std::vector<index_t> v = whole_list(c.b_synthetic, "--synthetic", 1, index_t(1) << 31);
  if (v.size() != 3) throw Error("--synthetic '" + c.b_synthetic + "' is not N,d,Q");
  o.n = v[0], o.d = v[1], o.q = v[2];
  tools::check_host_memory(12.0 * double(o.n + o.q) * double(o.d), "--synthetic " + c.b_synthetic);
  o.ks = whole_list(c.b_k, "--k", 1, INT32_MAX);
  o.metric = parse_metric(c.b_metric);
  o.storage = parse_storage(c.b_storage);
  o.threads.clear();
  for (index_t t : whole_list(c.b_threads, "--threads", 1, 1024)) o.threads.push_back(int(t));
  o.seed = c.seed;
  o.offset = c.offset;
  if (c.reps > 0) o.min_reps = o.max_reps = c.reps;
  if (!c.tiles.empty()) {
    const std::vector<index_t> t = whole_list(c.tiles, "--tiles", 1, index_t(1) << 30);
    if (t.size() != 2) throw Error("--tiles '" + c.tiles + "' is not QT,NT");
    o.query_tile = t[0], o.base_tile = t[1];
  }
  const std::vector<KnnBenchRow> rows = run_knn_bench(o);
  std::cout << knn_bench_table(rows);
  tools::write_output(c.b_csv, knn_bench_csv(rows), "parray");
  for (const KnnBenchRow& r : rows)
    if (r.outcome == Outcome::failed) return 1;
  return 0;
}

int cmd_bench_gemv(const KnnCli& c) {
  GemvRegistry& reg = gemv_registry();
  register_gemv_baselines(reg);
  if (c.g_list) {
    for (const GemvImpl& i : reg.all())
      std::cout << fmt::format("{:<22} {:<4} {:<8} {}{}\n{:<36}({})\n", i.name, device_name(i.device), i.dtypes(),
                               i.baseline ? "[baseline] " : "", i.description, "", i.preconditions);
    for (const MissingPart& m : reg.missing()) std::cout << fmt::format("missing: {}: {}\n", m.name, m.reason);
    return 0;
  }
  GemvBenchOptions o;
  for (const std::string& item : split_list(c.g_impl, ',')) {
    if (item == "all") {
      for (const GemvImpl& i : reg.all()) o.impls.push_back(i.name);
    } else if (item == "cpu" || item == "gpu") {
      for (const GemvImpl& i : reg.all())
        if (device_name(i.device) == item) o.impls.push_back(i.name);
    } else {
      o.impls.push_back(reg.find(item).name);
    }
  }
  if (o.impls.empty()) throw Error("--impl names no GEMV implementation");
  std::vector<std::string> unique;  // "cpu,gemv-openblas" names OpenBLAS twice
  for (const std::string& n : o.impls)
    if (std::find(unique.begin(), unique.end(), n) == unique.end()) unique.push_back(n);
  o.impls = unique;
  for (const std::string& s : split_list(c.g_shapes, ',')) {
    const std::vector<std::string> p = split_list(s, 'x');
    if (p.size() != 2) throw Error("--shapes '" + s + "' is not MxN");
    o.shapes.emplace_back(whole(p[0], "M", 1, index_t(1) << 31), whole(p[1], "N", 1, index_t(1) << 31));
  }
  if (o.shapes.empty()) throw Error("give --shapes MxN,...");
  o.layouts = split_list(c.g_layouts, ',');
  for (const std::string& l : o.layouts) make_matrix_type(l, 1, 1);  // unknown names throw
  o.dtypes.clear();
  for (const std::string& d : split_list(c.g_dtypes, ',')) {
    if (d == "f32") o.dtypes.push_back(Dtype::f32);
    else if (d == "f64") o.dtypes.push_back(Dtype::f64);
    else throw Error("unknown dtype '" + d + "' (use f32 or f64)");
  }
  o.threads.clear();
  for (index_t t : whole_list(c.g_threads, "--threads", 1, 1024)) o.threads.push_back(int(t));
  o.alpha = c.g_alpha, o.beta = c.g_beta;
  if (c.reps > 0) o.min_reps = o.max_reps = c.reps;
  const std::vector<GemvBenchRow> rows = run_gemv_bench(o);
  std::cout << gemv_bench_table(rows);
  tools::write_output(c.g_csv, gemv_bench_csv(rows), "parray");
  for (const GemvBenchRow& r : rows)
    if (r.outcome == Outcome::failed) return 1;
  return 0;
}

// Options that knn, dist, bench knn and bench gemv share, worded alike in each.

void add_metric(CLI::App& cmd, std::string& metric) { cmd.add_option("--metric", metric, "l2 or ip"); }

void add_seed(CLI::App& cmd, std::uint64_t& seed) { cmd.add_option("--seed", seed, "seed of --synthetic"); }

// --seed, --offset: how --synthetic data is drawn.
void add_synthetic_draw(CLI::App& cmd, std::uint64_t& seed, double& offset) {
  add_seed(cmd, seed);
  cmd.add_option("--offset", offset, "--synthetic data uniform in [C-1, C+1) instead of [-1, 1)");
}

// --threads of the benchmarks: a row for each count.
void add_thread_counts(CLI::App& cmd, std::string& counts) {
  cmd.add_option("--threads", counts, "comma list of CPU thread counts");
}

// --storage, --tiles: how the base vectors are stored and tiled for the search's GEMM.
void add_storage_and_tiles(CLI::App& cmd, std::string& storage, std::string& tiles) {
  cmd.add_option("--storage", storage, "base storage (CPU and GPU search): f32, f16 or bf16");
  cmd.add_option("--tiles", tiles, "QT,NT: queries and base vectors per GEMM tile (default: automatic)");
}

void add_knn_command(CLI::App& app, KnnCli& c) {
  c.knn = app.add_subcommand("knn", "Exact k-nearest-neighbour search (.fvecs/.bvecs or synthetic data)");
  c.knn->add_option("--base", c.base, "base vectors (.fvecs or .bvecs)");
  c.knn->add_option("--queries", c.queries, "query vectors (.fvecs or .bvecs)");
  c.knn->add_option("--synthetic", c.synthetic, "N,d,Q: uniform [-1,1) base and queries");
  c.knn->add_option("--k", c.k, "neighbours per query (1..N)")->required();
  add_metric(*c.knn, c.metric);
  c.knn->add_option("--impl", c.impl, "cpu, gpu, faiss or a name of bench knn --list");
  c.knn->add_option("--out", c.out, "write the neighbour indices (.ivecs)");
  c.knn->add_option("--gt", c.gt, "ground truth (.ivecs) for recall@k");
  c.knn->add_flag("--write-gt", c.write_gt, "compute exact ground truth in FP64 and write it to --out");
  tools::add_cpu_threads(*c.knn, c.threads);
  c.knn->add_option("--reps", c.reps, "timed repeats");
  add_synthetic_draw(*c.knn, c.seed, c.offset);
  add_storage_and_tiles(*c.knn, c.storage, c.tiles);
  c.knn->add_option("--save-data", c.save_data, "write the data as PREFIX_base.fvecs / PREFIX_queries.fvecs and exit");
}

void add_dist_command(CLI::App& app, KnnCli& c) {
  c.dist = app.add_subcommand("dist", "The GEMV lab report: distances from one query to N vectors, sorted (ties by index)");
  c.dist->add_option("--base", c.base, "vectors (.fvecs or .bvecs)");
  c.dist->add_option("--query", c.query, "query file (default: a base vector)");
  c.dist->add_option("--query-index", c.query_index, "which vector of the query file (or of the base)");
  c.dist->add_option("--synthetic", c.dist_synthetic, "N,d: random data (the lab report's case is 1024,32)");
  add_metric(*c.dist, c.metric);
  c.dist->add_option("--impl", c.impl, "cpu or gpu");
  tools::add_cpu_threads(*c.dist, c.threads);
  c.dist->add_option("--top", c.top, "rows to print (default 10)");
  tools::add_csv_option(*c.dist, c.dist_csv, "write all N sorted (rank, index, distance) rows");
  c.dist->add_option("--reps", c.reps, "timed repeats (GPU: also the back-to-back calls timed with CUDA events)");
  c.dist->add_option("--time-csv", c.time_csv, "GPU: write the per-call times (back-to-back, single call) as CSV");
  add_seed(*c.dist, c.seed);
}

void add_bench_knn_command(CLI::App& bench, KnnCli& c) {
  c.bench_knn = bench.add_subcommand("knn", "Time k-NN implementations and FAISS on the same data");
  c.bench_knn->add_option("--impl", c.b_impl,
                          "comma list of cpu, gpu, gpu:GEMM (a GPU GEMM by name), faiss, or names (--list)");
  c.bench_knn->add_option("--synthetic", c.b_synthetic, "N,d,Q (required)");
  c.bench_knn->add_option("--k", c.b_k, "comma list of k");
  add_metric(*c.bench_knn, c.b_metric);
  add_storage_and_tiles(*c.bench_knn, c.b_storage, c.tiles);
  add_thread_counts(*c.bench_knn, c.b_threads);
  tools::add_csv_option(*c.bench_knn, c.b_csv);
  c.bench_knn->add_option("--reps", c.reps, "timed repeats");
  add_synthetic_draw(*c.bench_knn, c.seed, c.offset);
  c.bench_knn->add_flag("--list", c.b_list, "list the k-NN implementations");
}

void add_bench_gemv_command(CLI::App& bench, KnnCli& c) {
  c.bench_gemv = bench.add_subcommand("gemv", "Verify and time GEMV implementations (GB/s, % of copy bandwidth)");
  c.bench_gemv->add_option("--impl", c.g_impl, "comma list of names, or all, cpu, gpu");
  c.bench_gemv->add_option("--shapes", c.g_shapes, "MxN shapes, comma list");
  c.bench_gemv->add_option("--layout", c.g_layouts, "layouts of A, comma list (row, col, row-pad, fig17, ...)");
  tools::add_dtype_list(*c.bench_gemv, c.g_dtypes);
  add_thread_counts(*c.bench_gemv, c.g_threads);
  tools::add_alpha_beta(*c.bench_gemv, c.g_alpha, c.g_beta);
  c.bench_gemv->add_option("--reps", c.reps, "timed repeats");
  tools::add_csv_option(*c.bench_gemv, c.g_csv);
  c.bench_gemv->add_flag("--list", c.g_list, "list the GEMV implementations");
}

}  // namespace

std::shared_ptr<KnnCli> add_knn_commands(CLI::App& app, CLI::App& bench) {
  auto c = std::make_shared<KnnCli>();
  add_knn_command(app, *c);
  add_dist_command(app, *c);
  add_bench_knn_command(bench, *c);
  add_bench_gemv_command(bench, *c);
  return c;
}

namespace {

// Registered with main() through tools/commands.hpp: no edit of main.cpp.
std::vector<parray::tools::CliCommand> knn_commands(CLI::App& app, CLI::App& bench) {
  std::shared_ptr<KnnCli> c = add_knn_commands(app, bench);  // the lambdas keep it alive
  return {{c->knn, [c] { return cmd_knn(*c); }},
          {c->dist, [c] { return cmd_dist(*c); }},
          {c->bench_knn, [c] { return cmd_bench_knn(*c); }},
          {c->bench_gemv, [c] { return cmd_bench_gemv(*c); }}};
}

const parray::tools::RegisterCommands registered_knn(&knn_commands);

}  // namespace
