// Exact k-NN on the CPU with parray's GEMM, and seed 002's sorted distances.
//
// Each thread takes query tiles (QT queries) in turn; for a tile it walks the
// base in tiles of NT vectors: one call of parray's CPU GEMM (single-threaded,
// the thread is already one of the team) computes the QT x NT inner products
// into a block that stays in the core's L2, and the selection pass reads it
// straight back: key = max(||q||^2 + ||x||^2 - 2 q.x, 0) (or -q.x for IP),
// compared 16 at a time against the worst of the k kept so far (a max-heap
// ordered by (key, index)). Base indices arrive in increasing order, so a key
// equal to the worst never displaces it: ties keep the smaller index, and the
// 16-wide "anything below the threshold?" test is exact.
// Memory: threads x (QT x NT block + QT x k heap) whatever Q and N are.
#include <omp.h>

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "parray/gemm.hpp"
#include "parray/gemv.hpp"
#include "parray/knn.hpp"

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

// keys[j] = max(qn + bn[j] - 2 c[j], 0) (or -c[j] for IP) for one row of the
// block, and bmin[b] = the smallest key of 16-block b, in one pass: the
// selection then tests 1 value per 16 against its threshold.
#define PARRAY_KNN_KERNELS(T)                                                                       \
  PARRAY_KNN_CLONES void keys_l2(const T* c, const T* bn, T qn, index_t n, T* keys, T* bmin) {      \
    index_t j = 0;                                                                                  \
    for (; j + 16 <= n; j += 16) {                                                                  \
      T m = std::numeric_limits<T>::infinity();                                                     \
      _Pragma("omp simd reduction(min : m)") for (int t = 0; t < 16; ++t) {                         \
        T v = qn + bn[j + t] - T(2) * c[j + t];                                                     \
        v = v > T(0) ? v : T(0);                                                                    \
        keys[j + t] = v;                                                                            \
        m = std::min(m, v);                                                                         \
      }                                                                                             \
      bmin[j / 16] = m;                                                                             \
    }                                                                                               \
    if (j < n) {                                                                                    \
      T m = std::numeric_limits<T>::infinity();                                                     \
      for (; j < n; ++j) {                                                                          \
        const T v = std::max(qn + bn[j] - T(2) * c[j], T(0));                                       \
        keys[j] = v;                                                                                \
        m = std::min(m, v);                                                                         \
      }                                                                                             \
      bmin[(n - 1) / 16] = m;                                                                       \
    }                                                                                               \
  }                                                                                                 \
  PARRAY_KNN_CLONES void keys_ip(const T* c, index_t n, T* keys, T* bmin) {                         \
    for (index_t j = 0; j < n; j += 16) {                                                           \
      const int len = int(std::min<index_t>(16, n - j));                                            \
      T m = std::numeric_limits<T>::infinity();                                                     \
      _Pragma("omp simd reduction(min : m)") for (int t = 0; t < len; ++t) {                        \
        keys[j + t] = -c[j + t];                                                                    \
        m = std::min(m, -c[j + t]);                                                                 \
      }                                                                                             \
      bmin[j / 16] = m;                                                                             \
    }                                                                                               \
  }                                                                                                 \
  /* bit t set when keys[t] < thr, t < 16 */                                                         \
  PARRAY_KNN_CLONES unsigned below16(const T* keys, T thr) {                                        \
    unsigned m = 0;                                                                                 \
    _Pragma("omp simd reduction(| : m)") for (int t = 0; t < 16; ++t) m |= unsigned(keys[t] < thr) << t; \
    return m;                                                                                       \
  }                                                                                                 \
  PARRAY_KNN_CLONES void sq_norms(const T* x, index_t n, index_t d, T* out) {                       \
    for (index_t i = 0; i < n; ++i) {                                                               \
      const T* r = x + i * d;                                                                       \
      T s = 0;                                                                                      \
      _Pragma("omp simd reduction(+ : s)") for (index_t t = 0; t < d; ++t) s += r[t] * r[t];        \
      out[i] = s;                                                                                   \
    }                                                                                               \
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

  T threshold() const { return size < k ? std::numeric_limits<T>::infinity() : h[0].key; }
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

template <class T>
void write_sorted(TopK<T>& t, Metric metric, T* dist, index_t* idx) {
  std::sort_heap(t.h, t.h + t.size);
  for (index_t r = 0; r < t.size; ++r) {
    dist[r] = metric == Metric::l2 ? t.h[r].key : -t.h[r].key;
    idx[r] = t.h[r].idx;
  }
}

// The search over base tiles given by load(j0, nb, scratch) -> pointer to the
// nb x d FP32/FP64 rows of base vectors j0.. (the base itself, or a widened copy).
template <class T, class Load>
void knn_tiles(index_t n, const T* queries, index_t q, index_t d, const KnnOptions& o, T* distances,
               index_t* indices, const std::vector<T>& bn, Load&& load);

}  // namespace

template <class T>
void knn_cpu(const T* base, index_t n, const T* queries, index_t q, index_t d, const KnnOptions& o, T* distances,
             index_t* indices) {
  check_knn_problem(n, q, d, o);
  if (q == 0) return;
  if (!base || !queries || !distances || !indices) throw Error("knn: a null pointer");
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  std::vector<T> bn(static_cast<std::size_t>(n));
  if (o.metric == Metric::l2) {
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (index_t i0 = 0; i0 < n; i0 += 4096) sq_norms(base + i0 * d, std::min<index_t>(4096, n - i0), d, bn.data() + i0);
  }
  knn_tiles<T>(n, queries, q, d, o, distances, indices, bn,
               [&](index_t j0, index_t, std::vector<T>&) -> const T* { return base + j0 * d; });
}

namespace {

template <class T, class Load>
void knn_tiles(index_t n, const T* queries, index_t q, index_t d, const KnnOptions& o, T* distances,
               index_t* indices, const std::vector<T>& bn, Load&& load) {
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  const index_t k = o.k;
  // Tiles: up to 512 queries (a thread's share when Q is small) x 1024 base
  // vectors (512 in FP64): the 2 MiB block of inner products is written by the
  // GEMM and read back at once by the selection (L2/L3). The GEMM packs the
  // query tile again for every base tile and the base tile once per query
  // tile, so both tiles want to be large; the block wants to stay in cache.
  // Tried 128..1000 x 256..4096 on the 2-core Zen 4: 1024 was ahead of 512 by
  // ~5-10 %, the rest within the +-15 % noise of that shared machine.
  const index_t nt = std::min(n, o.base_tile > 0 ? o.base_tile : index_t(4096 / sizeof(T)));
  // ... and at most 2^22 heap entries (64 MiB in FP64) per thread when k is large.
  const index_t qt_auto = std::max<index_t>(
      1, std::min<index_t>({512, (q + threads - 1) / threads, std::max<index_t>(1, (index_t(1) << 22) / k)}));
  const index_t qt = std::min(q, o.query_tile > 0 ? o.query_tile : qt_auto);
  const index_t tiles = (q + qt - 1) / qt;

  std::vector<T> qn(static_cast<std::size_t>(q));
  if (o.metric == Metric::l2) sq_norms(queries, q, d, qn.data());
  const int team = static_cast<int>(std::min<index_t>(threads, tiles));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    std::vector<T> block(static_cast<std::size_t>(qt * nt)), keys(static_cast<std::size_t>(nt)), scratch,
        bmin(static_cast<std::size_t>(nt / 16 + 1));
    std::vector<Entry<T>> heaps(static_cast<std::size_t>(qt * k));
    std::vector<TopK<T>> tops(static_cast<std::size_t>(qt));
#pragma omp for schedule(dynamic, 1)
    for (index_t t = 0; t < tiles; ++t) {
      const index_t q0 = t * qt, qb = std::min(qt, q - q0);
      for (index_t r = 0; r < qb; ++r) tops[static_cast<std::size_t>(r)] = {heaps.data() + r * k, 0, k};
      MatrixView<const T> a{queries + q0 * d, MatrixLayout::row_major(qb, d, d)};  // (QT, d) queries
      for (index_t j0 = 0; j0 < n; j0 += nt) {
        const index_t nb = std::min(nt, n - j0);
        const T* tile = load(j0, nb, scratch);
        MatrixView<const T> b{tile, MatrixLayout::col_major(d, nb, d)};  // (d, NT): base tile^T
        MatrixView<T> c{block.data(), MatrixLayout::row_major(qb, nb, nb)};      // (QT, NT) inner products
        gemm<T>(T(1), a, b, T(0), c, GemmOptions{"cpu", 1});
        for (index_t r = 0; r < qb; ++r) {
          const T* row = block.data() + r * nb;
          if (o.metric == Metric::l2)
            keys_l2(row, bn.data() + j0, qn[static_cast<std::size_t>(q0 + r)], nb, keys.data(), bmin.data());
          else keys_ip(row, nb, keys.data(), bmin.data());
          tops[static_cast<std::size_t>(r)].offer(keys.data(), bmin.data(), nb, j0);
        }
      }
      for (index_t r = 0; r < qb; ++r)
        write_sorted(tops[static_cast<std::size_t>(r)], o.metric, distances + (q0 + r) * k, indices + (q0 + r) * k);
    }
  }
}

}  // namespace

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

// ---- 16-bit base storage ---------------------------------------------------------

Storage parse_storage(const std::string& s) {
  if (s == "f32") return Storage::f32;
  if (s == "f16") return Storage::f16;
  if (s == "bf16") return Storage::bf16;
  throw Error("unknown storage '" + s + "' (use f32, f16 or bf16)");
}

namespace {

std::uint16_t f32_to_f16(float f) {  // round to nearest even
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);           // NaN
  if (ax >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);          // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                               // subnormal half (or zero)
    const float v = std::abs(f) * 16777216.0f;                          // 2^24: units of the smallest subnormal
    return std::uint16_t(sign | std::uint32_t(std::nearbyint(v)));
  }
  const std::uint32_t mant = ax + 0xfffu + ((ax >> 13) & 1u);           // RNE on the 13 dropped bits
  return std::uint16_t(sign | ((mant - 0x38000000u) >> 13));
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(float(m | 0x400u), int(e) - 25);
  std::uint32_t x;
  std::memcpy(&x, &v, 4);
  x |= sign;
  std::memcpy(&v, &x, 4);
  return v;
}

std::uint16_t f32_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return std::uint16_t(x >> 16);
}

__attribute__((target("f16c,avx"))) void f16_to_f32_f16c(const std::uint16_t* in, index_t n, float* out) {
  index_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

}  // namespace

std::vector<std::uint16_t> to_16bit(const float* x, index_t count, Storage storage) {
  if (storage == Storage::f32) throw Error("to_16bit: f32 is not a 16-bit storage");
  std::vector<std::uint16_t> out(static_cast<std::size_t>(count));
  for (index_t i = 0; i < count; ++i) out[std::size_t(i)] = storage == Storage::f16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
  return out;
}

void from_16bit(const std::uint16_t* x, index_t count, Storage storage, float* out) {
  if (storage == Storage::bf16) {
#pragma omp simd
    for (index_t i = 0; i < count; ++i) {
      const std::uint32_t b = std::uint32_t(x[i]) << 16;
      std::memcpy(out + i, &b, 4);
    }
  } else if (storage == Storage::f16) {
    static const bool f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    if (f16c) f16_to_f32_f16c(x, count, out);
    else
      for (index_t i = 0; i < count; ++i) out[i] = f16_to_f32(x[i]);
  } else {
    throw Error("from_16bit: f32 is not a 16-bit storage");
  }
}

void knn_cpu_16bit(const std::uint16_t* base, Storage storage, index_t n, const float* queries, index_t q, index_t d,
                   const KnnOptions& o, float* distances, index_t* indices) {
  check_knn_problem(n, q, d, o);
  if (storage == Storage::f32) throw Error("knn_cpu_16bit: storage f32 (use knn_cpu)");
  if (q == 0) return;
  if (!base || !queries || !distances || !indices) throw Error("knn: a null pointer");
  const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
  std::vector<float> bn(static_cast<std::size_t>(n));
  if (o.metric == Metric::l2) {
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      std::vector<float> w(static_cast<std::size_t>(4096 * d));
#pragma omp for schedule(static)
      for (index_t i0 = 0; i0 < n; i0 += 4096) {
        const index_t nb = std::min<index_t>(4096, n - i0);
        from_16bit(base + i0 * d, nb * d, storage, w.data());
        sq_norms(w.data(), nb, d, bn.data() + i0);
      }
    }
  }
  knn_tiles<float>(n, queries, q, d, o, distances, indices, bn,
                   [&](index_t j0, index_t nb, std::vector<float>& scratch) -> const float* {
                     scratch.resize(static_cast<std::size_t>(nb * d));
                     from_16bit(base + j0 * d, nb * d, storage, scratch.data());
                     return scratch.data();
                   });
}

double knn_recall(const float* base, index_t n, const float* queries, index_t q, index_t d, Metric metric,
                  const index_t* found, index_t k_found, const std::int32_t* truth, index_t k_truth, index_t k) {
  if (k < 1 || k > k_found || k > k_truth)
    throw Error("recall@" + std::to_string(k) + ": results hold " + std::to_string(k_found) +
                " and the ground truth " + std::to_string(k_truth) + " neighbours per query");
  auto exact = [&](index_t qi, index_t j) {  // FP64 key, smaller is better
    const float* a = queries + qi * d;
    const float* b = base + j * d;
    double s = 0;
    for (index_t t = 0; t < d; ++t) {
      const double x = double(a[t]), y = double(b[t]);
      s += metric == Metric::l2 ? (x - y) * (x - y) : x * y;
    }
    return metric == Metric::l2 ? s : -s;
  };
  index_t hits = 0;
  for (index_t qi = 0; qi < q; ++qi) {
    const std::int32_t g = truth[qi * k_truth + k - 1];
    if (g < 0 || g >= n)
      throw Error("ground truth: query " + std::to_string(qi) + " names base vector " + std::to_string(g) +
                  " of only " + std::to_string(n) + " (wrong --gt file?)");
    const double kth = exact(qi, g);
    const double limit = kth + 1e-5 * std::max(std::abs(kth), 1e-30);
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

std::vector<float> synthetic_vectors(index_t n, index_t d, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(n * d));
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace parray
