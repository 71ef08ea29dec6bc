// Exact k-NN on the CPU with parray's GEMM, and the GEMV lab report's sorted distances.
//
// Exact means equal to an FP64 brute force, ties by index (knn_exact.hpp).
// A search is two steps, repeated for the queries whose proof fails:
//
// Filter. Each thread takes query tiles (QT queries) in turn; for a tile it
// walks the base in tiles of NT vectors: one call of parray's CPU GEMM
// (single-threaded, the thread is already one of the team) computes the
// QT x NT inner products into a block that stays in the core's L2, and the
// selection pass reads it straight back: key = a rigorous lower bound of the
// exact key (filter_lower), compared 16 at a time against the worst of the kc
// kept so far (a max-heap ordered by (key, index)). Base indices arrive in
// increasing order, so a key equal to the worst never displaces it.
//
// Decision. The kc candidates of each query get their exact FP64 keys (eight
// independent FMA chains at a time), are ordered by (key, index), and the
// proof is checked: the largest lower bound kept must exceed the k-th exact
// key. A query that fails goes again with 4x the candidates, up to all N.
//
// Centering (L2): when the base's mean dominates its spread, the filter sees
// q - mu and x - mu (the distances are unchanged, the bound shrinks with the
// norms); the decision always reads the original vectors.
// Memory: threads x (QT x NT block + QT x kc heap) + the candidates of one
// chunk of queries (at most 2^22), whatever Q and N are.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "parray/gemm.hpp"
#include "parray/gemv.hpp"
#include "parray/knn.hpp"
#include "parray/knn_exact.hpp"

namespace parray {

Metric parse_metric(const std::string& s) {
  if (s == "l2") return Metric::l2;
  if (s == "ip") return Metric::ip;
  throw Error("unknown metric '" + s + "' (use l2 or ip)");
}

void check_knn_problem(index_t n, index_t q, index_t d, const KnnOptions& o) {
  if (n < 1) throw Error("knn: the base is empty (n = " + std::to_string(n) + ")");
  if (q < 0) throw Error("knn: negative number of queries " + std::to_string(q));
  if (d < 1) throw Error("knn: dimension " + std::to_string(d) + " (need d >= 1)");
  if (o.k < 1 || o.k > n)
    throw Error("knn: k = " + std::to_string(o.k) + " is out of range 1..N = " + std::to_string(n));
  if (o.threads < 0) throw Error("knn: thread count " + std::to_string(o.threads) + " is negative");
  if (o.query_tile < 0 || o.base_tile < 0) throw Error("knn: negative tile size");
}

namespace {

#define PARRAY_KNN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// keys[j] = the lower bound of base vector j's exact key, and bmin[b] = the
// smallest key of 16-block b, in one pass: the selection then tests one value
// per 16 against its threshold. xr: the base's norms; qt: the query's terms.
#define PARRAY_KNN_KERNELS(T)                                                                              \
  PARRAY_KNN_CLONES void lower_keys(bool l2, const T* c, const T* xr, QueryTerms<T> qt, index_t n, T* keys, \
                                    T* bmin) {                                                             \
    for (index_t j = 0; j < n; j += 16) {                                                                  \
      const int len = int(std::min<index_t>(16, n - j));                                                   \
      T m = std::numeric_limits<T>::infinity();                                                            \
      if (l2) {                                                                                            \
        _Pragma("omp simd reduction(min : m)") for (int t = 0; t < len; ++t) {                             \
          const T v = filter_lower<T>(true, c[j + t], qt, xr[j + t]);                                      \
          keys[j + t] = v;                                                                                 \
          m = std::min(m, v);                                                                              \
        }                                                                                                  \
      } else {                                                                                             \
        _Pragma("omp simd reduction(min : m)") for (int t = 0; t < len; ++t) {                             \
          const T v = filter_lower<T>(false, c[j + t], qt, xr[j + t]);                                     \
          keys[j + t] = v;                                                                                 \
          m = std::min(m, v);                                                                              \
        }                                                                                                  \
      }                                                                                                    \
      bmin[j / 16] = m;                                                                                    \
    }                                                                                                      \
  }                                                                                                        \
  /* bit t set when keys[t] < thr, t < 16 */                                                                \
  PARRAY_KNN_CLONES unsigned below16(const T* keys, T thr) {                                               \
    unsigned m = 0;                                                                                        \
    _Pragma("omp simd reduction(| : m)") for (int t = 0; t < 16; ++t) m |= unsigned(keys[t] < thr) << t;   \
    return m;                                                                                              \
  }                                                                                                        \
  PARRAY_KNN_CLONES void sq_norms(const T* x, index_t n, index_t d, T* out) {                              \
    for (index_t i = 0; i < n; ++i) {                                                                      \
      const T* r = x + i * d;                                                                              \
      T s = 0;                                                                                             \
      _Pragma("omp simd reduction(+ : s)") for (index_t t = 0; t < d; ++t) s += r[t] * r[t];               \
      out[i] = s;                                                                                          \
    }                                                                                                      \
  }                                                                                                        \
  /* out[c] = exact_key(q, x[c], d) for c < 8: eight independent FMA chains, each in component order, */   \
  /* so every key is bit-identical to exact_key's. */                                                       \
  __attribute__((target_clones("fma", "default"))) void exact_keys8(const T* q, const T* const* x, index_t d, \
                                                                     bool l2, double* out) {               \
    double s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                                \
    for (index_t t = 0; t < d; ++t) {                                                                      \
      const double qt = double(q[t]);                                                                      \
      for (int c = 0; c < 8; ++c) {                                                                        \
        const double a = l2 ? qt - double(x[c][t]) : qt;                                                   \
        const double b = l2 ? a : double(x[c][t]);                                                         \
        s[c] = std::fma(a, b, s[c]);                                                                       \
      }                                                                                                    \
    }                                                                                                      \
    for (int c = 0; c < 8; ++c) out[c] = l2 ? s[c] : -s[c];                                                \
  }

PARRAY_KNN_KERNELS(float)
PARRAY_KNN_KERNELS(double)

template <class T>
struct Entry {
  T key;
  index_t idx;
  bool operator<(const Entry& o) const { return key < o.key || (key == o.key && idx < o.idx); }
};

// A max-heap of the k best (smallest (key, index)) seen so far.
template <class T>
struct TopK {
  Entry<T>* h = nullptr;
  index_t size = 0, k = 0;

  void push(T key, index_t idx) {  // heap not full yet
    h[size++] = {key, idx};
    std::push_heap(h, h + size);
  }
  void replace_top(T key, index_t idx) {  // (key, idx) < top
    index_t i = 0;
    const Entry<T> e{key, idx};
    for (;;) {
      index_t c = 2 * i + 1;
      if (c >= size) break;
      if (c + 1 < size && h[c] < h[c + 1]) ++c;
      if (!(e < h[c])) break;
      h[i] = h[c];
      i = c;
    }
    h[i] = e;
  }
  // Offers keys[0..n) of base vectors j0..j0+n (in increasing index order);
  // bmin[b] is the smallest key of keys[16 b, 16 b + 16).
  void offer(const T* keys, const T* bmin, index_t n, index_t j0) {
    index_t j = 0;
    for (; j < n && size < k; ++j) push(keys[j], j0 + j);
    for (; j < n && j % 16 != 0; ++j)  // finish the block the fill ended in
      if (keys[j] < h[0].key) replace_top(keys[j], j0 + j);
    if (j >= n) return;
    for (index_t b = j / 16; b * 16 < n; ++b) {  // j is a multiple of 16 here
      if (!(bmin[b] < h[0].key)) continue;       // the common case: nothing in this block
      const index_t t0 = b * 16;
      if (t0 + 16 <= n) {  // visit only the keys below the threshold (no mispredicted branches)
        for (unsigned m = below16(keys + t0, h[0].key); m != 0; m &= m - 1) {
          const index_t t = t0 + __builtin_ctz(m);
          if (keys[t] < h[0].key) replace_top(keys[t], j0 + t);  // the threshold may have dropped
        }
      } else {
        for (index_t t = t0; t < n; ++t)
          if (keys[t] < h[0].key) replace_top(keys[t], j0 + t);
      }
    }
  }
};

// The base as the two steps read it: FP32/FP64 rows, or 16-bit patterns
// widened on the fly (T = float); mu, when not empty, is subtracted from
// every row the filter sees.
template <class T>
struct BaseSource {
  const T* rows = nullptr;
  const std::uint16_t* rows16 = nullptr;
  Storage storage = Storage::f32;
  index_t n = 0, d = 0;
  std::vector<T> mu;

  // Rows j0 .. j0 + nb as stored (widened): the base itself or `scratch`.
  const T* plain(index_t j0, index_t nb, std::vector<T>& scratch) const {
    if (rows) return rows + j0 * d;
    scratch.resize(static_cast<std::size_t>(nb * d));
    if constexpr (std::is_same_v<T, float>) from_16bit(rows16 + j0 * d, nb * d, storage, scratch.data());
    return scratch.data();
  }
  // Row j as stored: the base's row, or widened into buffer (d values).
  const T* row(index_t j, T* buffer) const {
    if (rows) return rows + j * d;
    if constexpr (std::is_same_v<T, float>) from_16bit(rows16 + j * d, d, storage, buffer);
    return buffer;
  }
  // The same rows as the filter sees them (centered when mu is set).
  const T* filtered(index_t j0, index_t nb, std::vector<T>& scratch) const {
    const T* p = plain(j0, nb, scratch);
    if (mu.empty()) return p;
    scratch.resize(static_cast<std::size_t>(nb * d));
    T* out = scratch.data();
    for (index_t i = 0; i < nb; ++i)
#pragma omp simd
      for (index_t t = 0; t < d; ++t) out[i * d + t] = p[i * d + t] - mu[static_cast<std::size_t>(t)];
    return out;
  }
};

// Everything the filter needs besides the queries.
template <class T>
struct Filter {
  BaseSource<T> base;
  std::vector<T> xr;  // norms of the rows the filter sees
  FilterBound bound;
  bool l2 = true;
  int threads = 1;
  index_t query_tile = 0, base_tile = 0;
};

constexpr index_t kNormChunk = 4096;

// For L2: the base's mean in FP64, kept (rounded to T) when centering pays.
template <class T>
void choose_centering(BaseSource<T>& b, int threads) {
  std::vector<double> sum(static_cast<std::size_t>(b.d), 0.0);
  double sq = 0;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<T> scratch;
    std::vector<double> part(static_cast<std::size_t>(b.d), 0.0);
    double part_sq = 0;
#pragma omp for schedule(static)
    for (index_t i0 = 0; i0 < b.n; i0 += kNormChunk) {
      const index_t nb = std::min(kNormChunk, b.n - i0);
      const T* r = b.plain(i0, nb, scratch);
      for (index_t i = 0; i < nb * b.d; ++i) {
        part[static_cast<std::size_t>(i % b.d)] += double(r[i]);
        part_sq += double(r[i]) * double(r[i]);
      }
    }
#pragma omp critical
    {
      for (index_t t = 0; t < b.d; ++t) sum[static_cast<std::size_t>(t)] += part[static_cast<std::size_t>(t)];
      sq += part_sq;
    }
  }
  double mu_sq = 0;
  for (double& s : sum) s /= double(b.n), mu_sq += s * s;
  if (centering_pays(sq / double(b.n), mu_sq)) b.mu.assign(sum.begin(), sum.end());
}

template <class T>
Filter<T> make_filter(BaseSource<T> base, const KnnOptions& o, int threads) {
  Filter<T> f;
  f.l2 = o.metric == Metric::l2;
  if (f.l2) choose_centering(base, threads);
  f.base = std::move(base);
  f.bound = filter_bound<T>(f.base.d);
  f.threads = threads, f.query_tile = o.query_tile, f.base_tile = o.base_tile;
  const index_t n = f.base.n;
  f.xr.resize(static_cast<std::size_t>(n));
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<T> scratch;
#pragma omp for schedule(static)
    for (index_t i0 = 0; i0 < n; i0 += kNormChunk) {
      const index_t nb = std::min(kNormChunk, n - i0);
      T* xr = f.xr.data() + i0;
      sq_norms(f.base.filtered(i0, nb, scratch), nb, f.base.d, xr);
      for (index_t i = 0; i < nb; ++i) xr[i] = std::sqrt(xr[i]);
    }
  }
  return f;
}

// The filter over q queries (rows of qf, as the filter sees them): the kc
// smallest lower bounds of each, ascending by (bound, index), into key/idx
// (q x kc).
template <class T>
void filter_tiles(const Filter<T>& f, const T* qf, index_t q, index_t kc, T* key, index_t* idx) {
  const index_t n = f.base.n, d = f.base.d;
  // Tiles: up to 512 queries (a thread's share when Q is small) x 1024 base
  // vectors (512 in FP64): the 2 MiB block of inner products is written by the
  // GEMM and read back at once by the selection (L2/L3). The GEMM packs the
  // query tile again for every base tile and the base tile once per query
  // tile, so both tiles want to be large; the block wants to stay in cache.
  // 1024 base vectors were ahead of 512; other tiles of 128..1000 x
  // 256..4096 ran level (docs/perf-notes.md).
  const index_t nt = std::min(n, f.base_tile > 0 ? f.base_tile : index_t(4096 / sizeof(T)));
  // ... and at most 2^22 heap entries per thread when kc is large.
  const index_t qt_auto = std::max<index_t>(
      1, std::min<index_t>({512, (q + f.threads - 1) / f.threads, std::max<index_t>(1, (index_t(1) << 22) / kc)}));
  const index_t qt = std::min(q, f.query_tile > 0 ? f.query_tile : qt_auto);
  const index_t tiles = (q + qt - 1) / qt;
  std::vector<T> qn(static_cast<std::size_t>(q));
  sq_norms(qf, q, d, qn.data());
  std::vector<QueryTerms<T>> terms(static_cast<std::size_t>(q));
  for (std::size_t i = 0; i < terms.size(); ++i)
    terms[i] = query_terms<T>(f.l2, qn[i], std::sqrt(qn[i]), T(f.bound.beta), T(f.bound.eta));
  const int team = static_cast<int>(std::min<index_t>(f.threads, tiles));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    std::vector<T> block(static_cast<std::size_t>(qt * nt)), keys(static_cast<std::size_t>(nt)), scratch,
        bmin(static_cast<std::size_t>(nt / 16 + 1));
    std::vector<Entry<T>> heaps(static_cast<std::size_t>(qt * kc));
    std::vector<TopK<T>> tops(static_cast<std::size_t>(qt));
#pragma omp for schedule(dynamic, 1)
    for (index_t t = 0; t < tiles; ++t) {
      const index_t q0 = t * qt, qb = std::min(qt, q - q0);
      for (index_t r = 0; r < qb; ++r) tops[static_cast<std::size_t>(r)] = {heaps.data() + r * kc, 0, kc};
      MatrixView<const T> a{qf + q0 * d, MatrixLayout::row_major(qb, d, d)};  // (QT, d) queries
      for (index_t j0 = 0; j0 < n; j0 += nt) {
        const index_t nb = std::min(nt, n - j0);
        MatrixView<const T> b{f.base.filtered(j0, nb, scratch), MatrixLayout::col_major(d, nb, d)};  // (d, NT)
        MatrixView<T> c{block.data(), MatrixLayout::row_major(qb, nb, nb)};  // (QT, NT) inner products
        gemm<T>(T(1), a, b, T(0), c, GemmOptions{"cpu", 1});
        for (index_t r = 0; r < qb; ++r) {
          const std::size_t qi = static_cast<std::size_t>(q0 + r);
          lower_keys(f.l2, block.data() + r * nb, f.xr.data() + j0, terms[qi], nb, keys.data(), bmin.data());
          tops[static_cast<std::size_t>(r)].offer(keys.data(), bmin.data(), nb, j0);
        }
      }
      for (index_t r = 0; r < qb; ++r) {
        TopK<T>& top = tops[static_cast<std::size_t>(r)];
        std::sort_heap(top.h, top.h + top.size);
        for (index_t i = 0; i < kc; ++i) key[(q0 + r) * kc + i] = top.h[i].key, idx[(q0 + r) * kc + i] = top.h[i].idx;
      }
    }
  }
}

// A thread's buffers for decide(), kept across its queries.
template <class T>
struct DecideScratch {
  std::vector<Entry<double>> e;
  std::vector<T> widened;  // eight candidate rows of a 16-bit base
};

// Decides one query from its kc candidates (ascending lower bounds): their
// exact keys, the k best by (key, index) written out, and the proof. False
// when the proof fails (nothing is written then).
template <class T>
bool decide(const BaseSource<T>& b, const T* query, const T* key, const index_t* idx, index_t kc, index_t k,
            bool l2, T* out_dist, index_t* out_idx, DecideScratch<T>& s) {
  std::vector<Entry<double>>& e = s.e;
  e.resize(static_cast<std::size_t>(kc));
  s.widened.resize(static_cast<std::size_t>(8 * b.d));
  for (index_t c0 = 0; c0 < kc; c0 += 8) {
    const T* rows[8];
    for (index_t c = 0; c < 8; ++c) rows[c] = b.row(idx[std::min(c0 + c, kc - 1)], s.widened.data() + c * b.d);
    double out[8];
    exact_keys8(query, rows, b.d, l2, out);
    for (index_t c = 0; c < 8 && c0 + c < kc; ++c) e[static_cast<std::size_t>(c0 + c)] = {out[c], idx[c0 + c]};
  }
  std::partial_sort(e.begin(), e.begin() + k, e.end());
  // Proven complete when every vector left out (lower bound >= key[kc - 1])
  // has an exact key above the k-th: all N were candidates, or key[kc - 1] > it.
  if (kc < b.n && !(double(key[kc - 1]) > e[static_cast<std::size_t>(k - 1)].key)) return false;
  for (index_t r = 0; r < k; ++r) {
    const double v = e[static_cast<std::size_t>(r)].key;
    out_dist[r] = T(l2 ? v : -v);
    out_idx[r] = e[static_cast<std::size_t>(r)].idx;
  }
  return true;
}

// Filter and decision for the queries `ids` with kc candidates each; the ids
// whose proof failed are returned (ascending).
template <class T>
std::vector<index_t> search_round(const Filter<T>& f, const T* queries, const std::vector<index_t>& ids, index_t kc,
                                  index_t k, T* distances, index_t* indices) {
  const index_t d = f.base.d;
  const index_t chunk = std::max<index_t>(1, (index_t(1) << 22) / kc);
  std::vector<index_t> failed;
  for (std::size_t c0 = 0; c0 < ids.size(); c0 += static_cast<std::size_t>(chunk)) {
    const index_t m = std::min<index_t>(chunk, index_t(ids.size() - c0));
    std::vector<T> qf(static_cast<std::size_t>(m * d)), key(static_cast<std::size_t>(m * kc));
    std::vector<index_t> idx(static_cast<std::size_t>(m * kc));
    for (index_t i = 0; i < m; ++i)
      for (index_t t = 0; t < d; ++t)
        qf[static_cast<std::size_t>(i * d + t)] =
            queries[ids[c0 + i] * d + t] - (f.base.mu.empty() ? T(0) : f.base.mu[static_cast<std::size_t>(t)]);
    filter_tiles(f, qf.data(), m, kc, key.data(), idx.data());
    std::vector<char> ok(static_cast<std::size_t>(m));
#pragma omp parallel num_threads(f.threads) if (f.threads > 1 && m > 16)
    {
      DecideScratch<T> scratch;
#pragma omp for schedule(dynamic, 16)
      for (index_t i = 0; i < m; ++i) {
        const index_t qi = ids[c0 + i];
        ok[static_cast<std::size_t>(i)] = decide(f.base, queries + qi * d, key.data() + i * kc, idx.data() + i * kc, kc,
                                                 k, f.l2, distances + qi * k, indices + qi * k, scratch);
      }
    }
    for (index_t i = 0; i < m; ++i)
      if (!ok[static_cast<std::size_t>(i)]) failed.push_back(ids[c0 + i]);
  }
  return failed;
}

// The whole search: rounds of 4x more candidates until every query is proven.
template <class T>
void search(const Filter<T>& f, const T* queries, index_t q, index_t k, T* distances, index_t* indices) {
  std::vector<index_t> ids(static_cast<std::size_t>(q));
  for (index_t i = 0; i < q; ++i) ids[static_cast<std::size_t>(i)] = i;
  for (index_t kc = first_candidates(k, f.base.n, f.bound.beta); !ids.empty(); kc = std::min(f.base.n, 4 * kc))
    ids = search_round(f, queries, ids, kc, k, distances, indices);
}

int resolve_threads(int t) { return t > 0 ? t : omp_get_max_threads(); }

}  // namespace

template <class T>
void knn_cpu(const T* base, index_t n, const T* queries, index_t q, index_t d, const KnnOptions& o, T* distances,
             index_t* indices) {
  check_knn_problem(n, q, d, o);
  if (q == 0) return;
  if (!base || !queries || !distances || !indices) throw Error("knn: a null pointer");
  BaseSource<T> b;
  b.rows = base, b.n = n, b.d = d;
  const int threads = resolve_threads(o.threads);
  search(make_filter(std::move(b), o, threads), queries, q, o.k, distances, indices);
}

void knn_cpu_16bit(const std::uint16_t* base, Storage storage, index_t n, const float* queries, index_t q, index_t d,
                   const KnnOptions& o, float* distances, index_t* indices) {
  check_knn_problem(n, q, d, o);
  if (storage == Storage::f32) throw Error("knn_cpu_16bit: storage f32 (use knn_cpu)");
  if (q == 0) return;
  if (!base || !queries || !distances || !indices) throw Error("knn: a null pointer");
  BaseSource<float> b;
  b.rows16 = base, b.storage = storage, b.n = n, b.d = d;
  const int threads = resolve_threads(o.threads);
  search(make_filter(std::move(b), o, threads), queries, q, o.k, distances, indices);
}

template <class T>
void distances_sorted_cpu(const T* base, index_t n, index_t d, const T* query, Metric metric, int threads,
                          T* distances, index_t* indices) {
  KnnOptions o;
  o.k = n;
  o.threads = threads;
  check_knn_problem(n, 1, d, o);
  if (!base || !query || !distances || !indices) throw Error("dist: a null pointer");
  std::vector<T> p(static_cast<std::size_t>(n)), bn(static_cast<std::size_t>(n));
  gemv<T>(T(1), MatrixView<const T>{base, MatrixLayout::row_major(n, d, d)}, query, T(0), p.data(),
          GemvOptions{"cpu", threads});
  std::vector<Entry<T>> e(static_cast<std::size_t>(n));
  if (metric == Metric::l2) {
    T qn;
    sq_norms(query, 1, d, &qn);
    sq_norms(base, n, d, bn.data());
    for (index_t j = 0; j < n; ++j) e[j] = {std::max(qn + bn[j] - T(2) * p[j], T(0)), j};
  } else {
    for (index_t j = 0; j < n; ++j) e[j] = {-p[j], j};
  }
  std::sort(e.begin(), e.end());
  for (index_t j = 0; j < n; ++j) {
    distances[j] = metric == Metric::l2 ? e[j].key : -e[j].key;
    indices[j] = e[j].idx;
  }
}

template void knn_cpu<float>(const float*, index_t, const float*, index_t, index_t, const KnnOptions&, float*,
                             index_t*);
template void knn_cpu<double>(const double*, index_t, const double*, index_t, index_t, const KnnOptions&, double*,
                              index_t*);
template void distances_sorted_cpu<float>(const float*, index_t, index_t, const float*, Metric, int, float*, index_t*);
template void distances_sorted_cpu<double>(const double*, index_t, index_t, const double*, Metric, int, double*,
                                           index_t*);

double knn_recall(const float* base, index_t n, const float* queries, index_t q, index_t d, Metric metric,
                  const index_t* found, index_t k_found, const std::int32_t* truth, index_t k_truth, index_t k) {
  if (k < 1 || k > k_found || k > k_truth)
    throw Error("recall@" + std::to_string(k) + ": results hold " + std::to_string(k_found) +
                " and the ground truth " + std::to_string(k_truth) + " neighbours per query");
  auto exact = [&](index_t qi, index_t j) { return exact_key(queries + qi * d, base + j * d, d, metric == Metric::l2); };
  index_t hits = 0;
  for (index_t qi = 0; qi < q; ++qi) {
    const std::int32_t g = truth[qi * k_truth + k - 1];
    if (g < 0 || g >= n)
      throw Error("ground truth: query " + std::to_string(qi) + " names base vector " + std::to_string(g) +
                  " of only " + std::to_string(n) + " (wrong --gt file?)");
    const double limit = exact(qi, g);
    std::vector<index_t> seen;
    for (index_t r = 0; r < k; ++r) {
      const index_t j = found[qi * k_found + r];
      if (j < 0 || j >= n || std::find(seen.begin(), seen.end(), j) != seen.end()) continue;
      seen.push_back(j);
      if (exact(qi, j) <= limit) ++hits;
    }
  }
  return q == 0 ? 1.0 : double(hits) / double(q * k);
}

std::vector<float> synthetic_vectors(index_t n, index_t d, std::uint64_t seed, double offset) {
  if (!std::isfinite(offset) || std::abs(offset) > 1e30) throw Error("synthetic data: offset " + std::to_string(offset) + " is not a finite float");
  std::vector<float> v(static_cast<std::size_t>(n * d));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = offset == 0 ? u(rng) : float(offset + double(u(rng)));
  return v;
}

}  // namespace parray
