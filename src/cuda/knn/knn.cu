// GPU exact k-NN: parray's GPU GEMM for the inner products, tile by tile, a
// k-selection of lower bounds after each tile (the filter), then the exact
// FP64 decision (knn_exact.hpp, decide.cuh).
//
//   [L2, offset base: the base's mean mu; the filter sees q - mu, x - mu]
//   round (kc candidates per query, 4x more each round, up to N):
//     for each query tile (QT queries, 1024 by default):
//       for each base tile (NT = 16384 vectors by default; at least kc when kc <= 2048):
//         [16-bit or centered base: the tile widened / centered in FP32]
//         C (QT x NT) = Q_tile . B_tile^T          parray::gemm(..., cuda-12-best), device views
//         kc <= 2048: select_tile<<<QT>>>           one pass, fused top-kc (select_topk.cuh)
//         kc >  2048: keys, CUB segmented stable sort of each row of C, then
//                     merge_rows: the sorted row merged with the query's sorted
//                     kc best so far (merged passes)
//     exact keys of the candidates, ordered by (key, index), the proof per
//     query: proven queries written out, the others go to the next round
// Memory: one QT x NT tile (64 MiB) + QT x kc state + the candidates of one
// chunk of queries; for kc > 2048, QT shrinks so that the sorted copy of the
// tile and the two state buffers stay within the same budget.
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "parray/cuda/check.hpp"
#include "parray/gemm.hpp"
#include "parray/knn.hpp"
#include "parray/registry.hpp"
#include "parray/tuning.hpp"
#include "decide.cuh"
#include "select_topk.cuh"

namespace parray::cuda {

namespace {

using namespace knn_kernels;

// A grow-only device buffer of the calling thread (a search synchronises its
// stream before it returns, so the next search, on any stream, finds it idle).
struct Workspace {
  void* p = nullptr;
  std::size_t size = 0;
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace() {
    if (p) (void)cudaFree(p);  // errors ignored at thread exit
  }
  template <class T>
  T* get(std::size_t count) {
    const std::size_t bytes = std::max<std::size_t>(count, 1) * sizeof(T);
    if (bytes > size) {
      if (p) PARRAY_CUDA_CHECK(cudaFree(p));
      p = nullptr, size = 0;
      PARRAY_CUDA_CHECK(cudaMalloc(&p, bytes));
      size = bytes;
    }
    return static_cast<T*>(p);
  }
};

template <int CAP>
void launch_select(cudaStream_t st, int rows, const float* c, index_t nb, index_t j0, const float* bn, const float* qn,
                   KeyArgs ka, int k, float* sk, int* si, bool last, index_t q0, float* od, index_t* oi) {
  select_tile<CAP, 256><<<rows, 256, 0, st>>>(c, nb, j0, bn, qn, ka, k, sk, si, last, q0, od, oi);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// ---- k > 2048: merged passes ----------------------------------------------------

// In place: C's inner products become lower-bound keys (ascending = better); idx[r, j] =
// j0 + j; offsets[r] = r * nb. +0.0f turns -0.0 into +0.0, so that the sort and
// the merge's compares see one zero.
__global__ void __launch_bounds__(256) tile_keys(float* __restrict__ c, int* __restrict__ idx, int rows, index_t nb,
                                                 index_t j0, const float* __restrict__ base_roots,
                                                 const float* __restrict__ query_norms, index_t q0, KeyArgs ka,
                                                 int* __restrict__ offsets) {
  const index_t total = index_t(rows) * nb;
  for (index_t i = index_t(blockIdx.x) * 256 + threadIdx.x; i < total; i += index_t(gridDim.x) * 256) {
    const index_t r = i / nb, j = i - r * nb;
    const float dot = c[i];
    c[i] = filter_lower<float>(ka.l2, dot, terms_of(ka, query_norms[q0 + r]), base_roots[j0 + j]) + 0.0f;
    idx[i] = int(j0 + j);
    if (j == 0) offsets[r] = int(i);
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) offsets[rows] = int(total);
}

// Per query row r: the first `keep` of (old[r, 0 .. old_len) merged with
// tile[r, 0 .. nb)), both sorted by (key, index), by rank: each element's
// output position is its position in its own list plus the number of
// elements of the other list before it. grid = (ceil((old_len + nb) / 256), rows).
__global__ void __launch_bounds__(256) merge_rows(const float* __restrict__ old_key, const int* __restrict__ old_idx,
                                                  index_t old_len, const float* __restrict__ tile_key,
                                                  const int* __restrict__ tile_idx, index_t nb, index_t keep,
                                                  float* __restrict__ new_key, int* __restrict__ new_idx, index_t ld,
                                                  bool last, index_t q0, float* __restrict__ out_key,
                                                  index_t* __restrict__ out_idx) {
  const index_t r = blockIdx.y;
  const index_t t = index_t(blockIdx.x) * 256 + threadIdx.x;
  if (t >= old_len + nb) return;
  const float* ok = old_key + r * ld;
  const int* oi = old_idx + r * ld;
  const float* tk = tile_key + r * nb;
  const int* ti = tile_idx + r * nb;
  const bool from_old = t < old_len;
  const index_t own = from_old ? t : t - old_len;
  const Cand x = from_old ? Cand{ok[own], oi[own]} : Cand{tk[own], ti[own]};
  // Binary search in the other list.
  const float* yk = from_old ? tk : ok;
  const int* yi = from_old ? ti : oi;
  index_t lo = 0, hi = from_old ? nb : old_len;
  if (own >= keep) return;  // its position is at least own: past the cut
  while (lo < hi) {
    const index_t mid = (lo + hi) / 2;
    if (before(Cand{yk[mid], yi[mid]}, x)) lo = mid + 1;
    else hi = mid;
  }
  const index_t pos = own + lo;
  if (pos >= keep) return;
  if (last) {
    out_key[(q0 + r) * keep + pos] = x.key;
    out_idx[(q0 + r) * keep + pos] = x.idx;
  } else {
    new_key[r * ld + pos] = x.key;
    new_idx[r * ld + pos] = x.idx;
  }
}

// Grow-only device buffers, shared by every search of the process.
thread_local Workspace ws_c, ws_state, ws_state2, ws_sorted_key, ws_idx, ws_sorted_idx, ws_offsets, ws_temp, ws_qn,
    ws_norms, ws_wide, ws_qf, ws_mu, ws_stats, ws_ids, ws_cand_key, ws_cand_idx, ws_exact, ws_exact2, ws_exact_idx,
    ws_exact_idx2, ws_seg, ws_flag;

// One filter pass: q queries (rows of `queries`, already as the filter sees
// them) against the whole base; the kc smallest lower bounds of each query,
// ascending by (bound, index), to cand_key / cand_idx (q x kc).
struct FilterPass {
  index_t n, q, d, kc;
  const float* queries;
  const KnnOptions* o;
  GemmOptions gemm;  // the inner products' GEMM (filter_gemm)
  KeyArgs keys;
  float* cand_key;
  index_t* cand_idx;
};

// The arithmetic the filter's bound must cover when `impl`, asked for
// `asked`, computes the inner products.
FilterArithmetic arithmetic_of(const GemmImpl& impl, Precision asked) {
  switch (impl.delivers(Dtype::f32, asked)) {
    case Precision::tf32: return {0x1p-10, 0x1p-126, 0x1p-23};
    case Precision::bf16: return {0x1p-7, 0x1p-126, 0x1p-23};
    case Precision::fp16: return {0x1p-10, 0x1p-14, 0x1p-23};
    default: break;
  }
  // FP32 accuracy from tensor cores: split inputs, 3 TF32 products each,
  // within 2^-19 of each input's product; with BF16 cross terms (step 21,
  // tag "bf16-cross") within 2^-18 + 2^-22 of the product, which v = 2^-17
  // covers; from the CUDA cores, the bound's own.
  if (impl.device == Device::gpu && impl.has_tag("bf16-cross")) return {0x1p-17, 0x1p-126, 0x1p-23};
  if (impl.device == Device::gpu && (impl.has_tag("tensor") || !impl.selects_down_to.empty()))
    return {0x1p-19, 0x1p-126, 0x1p-23};
  return {};
}

// The GEMM of the filter: KnnOptions::gemm, else gpu.knn_gemm, asked for
// what it delivers; else the default GPU GEMM asked for TF32 (its tensor
// cores where the GPU has them), whose rounding the bound then covers.
struct FilterGemm {
  GemmOptions options;
  FilterBound bound;
};

FilterGemm filter_gemm(const KnnOptions& o, index_t d) {
  std::string name = o.gemm.empty() ? gpu_tuning().knn_gemm : o.gemm;
  const bool named = !name.empty();
  const GemmImpl& impl = registry().find(named ? name : std::string("gpu"));
  const Precision asked = named ? impl.delivers(Dtype::f32) : Precision::tf32;
  return {GemmOptions{.impl = impl.name, .threads = 1, .precision = asked, .stream = o.stream},
          filter_bound(d, arithmetic_of(impl, asked))};
}

// tile(j0, nb) returns FP32 rows j0 .. j0 + nb as the filter sees them (the
// base itself, or a widened / centered copy); base_roots are their norms.
template <class BaseTile>
void filter(const FilterPass& p, const float* base_roots, BaseTile&& tile) {
  const KnnOptions& o = *p.o;
  const cudaStream_t st = on_stream(o.stream);
  const index_t n = p.n, q = p.q, d = p.d, k = p.kc;
  const bool one_pass = k <= 2048;
  // Tile budget: 2^24 floats (64 MiB) for C, and, for merged passes, for the
  // state (QT x k) too.
  constexpr index_t kBudget = index_t(1) << 24;
  index_t nt = o.base_tile > 0 ? o.base_tile : 16384;
  if (one_pass) nt = std::max(nt, k);  // the first tile fills the k best
  nt = std::min(nt, n);
  index_t qt = o.query_tile > 0 ? o.query_tile : 1024;
  if (!one_pass && o.query_tile <= 0) qt = std::max<index_t>(1, std::min(kBudget / nt, kBudget / k));
  qt = std::min(qt, q);
  if (!one_pass) qt = std::min<index_t>(qt, 65535);  // merge_rows: one grid row per query
  if (qt * nt >= (index_t(1) << 31)) throw Error("GPU k-NN: a tile of QT x NT = " + std::to_string(qt) + " x " +
                                                 std::to_string(nt) + " has 2^31 or more entries; give smaller --tiles");
  float* c = ws_c.get<float>(std::size_t(qt * nt));
  float* qn = ws_qn.get<float>(std::size_t(q));
  row_norms<<<unsigned((q + 7) / 8), 256, 0, st>>>(p.queries, q, d, false, qn);
  PARRAY_CUDA_CHECK_LAUNCH();
  GemmOptions gemm_options = p.gemm;
  gemm_options.stream = st;
  // State: k keys + int32 indices per query of the tile (two copies for merged passes).
  float* sk = ws_state.get<float>(std::size_t(qt * k) * 2);
  int* si = reinterpret_cast<int*>(sk + qt * k);
  float* sk2 = nullptr;
  int* si2 = nullptr;
  float* sorted_key = nullptr;
  int *tile_idx = nullptr, *sorted_idx = nullptr, *offsets = nullptr;
  if (!one_pass) {
    sk2 = ws_state2.get<float>(std::size_t(qt * k) * 2);
    si2 = reinterpret_cast<int*>(sk2 + qt * k);
    sorted_key = ws_sorted_key.get<float>(std::size_t(qt * nt));
    tile_idx = ws_idx.get<int>(std::size_t(qt * nt));
    sorted_idx = ws_sorted_idx.get<int>(std::size_t(qt * nt));
    offsets = ws_offsets.get<int>(std::size_t(qt + 1));
  }
  for (index_t q0 = 0; q0 < q; q0 += qt) {
    const index_t qb = std::min(qt, q - q0);
    MatrixView<const float> a{p.queries + q0 * d, MatrixLayout::row_major(qb, d, d), Memory::device};  // (QT, d)
    index_t have = 0;  // merged passes: length of each query's sorted state
    for (index_t j0 = 0; j0 < n; j0 += nt) {
      const index_t nb = std::min(nt, n - j0);
      MatrixView<const float> b{tile(j0, nb), MatrixLayout::col_major(d, nb, d), Memory::device};  // (d, NT)
      MatrixView<float> cv{c, MatrixLayout::row_major(qb, nb, nb), Memory::device};                 // (QT, NT)
      gemm<float>(1.0f, a, b, 0.0f, cv, gemm_options);
      const bool last = j0 + nb >= n;
      const int rows = int(qb);
      if (one_pass) {
        const int ki = int(k);
        // CAP >= k + 4 * 256: one step may append 4 candidates per thread.
        if (k <= 1024)
          launch_select<2048>(st, rows, c, nb, j0, base_roots, qn, p.keys, ki, sk, si, last, q0, p.cand_key,
                              p.cand_idx);
        else
          launch_select<4096>(st, rows, c, nb, j0, base_roots, qn, p.keys, ki, sk, si, last, q0, p.cand_key,
                              p.cand_idx);
        continue;
      }
      const index_t items = qb * nb;
      const unsigned key_blocks = unsigned(std::min<index_t>((items + 255) / 256, 65535));
      tile_keys<<<key_blocks, 256, 0, st>>>(c, tile_idx, rows, nb, j0, base_roots, qn, q0, p.keys, offsets);
      PARRAY_CUDA_CHECK_LAUNCH();
      std::size_t temp_bytes = 0;
      PARRAY_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(nullptr, temp_bytes, c, sorted_key, tile_idx,
                                                                  sorted_idx, items, qb, offsets, offsets + 1, st));
      void* temp = ws_temp.get<char>(temp_bytes);
      PARRAY_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, c, sorted_key, tile_idx, sorted_idx,
                                                                  items, qb, offsets, offsets + 1, st));
      const index_t keep = std::min(k, have + nb);
      const dim3 grid{unsigned((have + nb + 255) / 256), unsigned(rows), 1u};
      merge_rows<<<grid, 256, 0, st>>>(sk, si, have, sorted_key, sorted_idx, nb, keep, sk2, si2, k, last, q0,
                                       p.cand_key, p.cand_idx);
      PARRAY_CUDA_CHECK_LAUNCH();
      std::swap(sk, sk2);
      std::swap(si, si2);
      have = keep;
    }
  }
}

__global__ void segment_offsets(int* off, index_t rows, index_t width) {
  const index_t r = index_t(blockIdx.x) * 256 + threadIdx.x;
  if (r <= rows) off[r] = int(r * width);
}

// Each row of (key, idx) (rows x kc) ordered by (key, index): stable by index
// first, then stable by key. Results in key2 / idx2.
void sort_by_key_then_index(cudaStream_t st, double* key, int* idx, double* key2, int* idx2, index_t rows, index_t kc) {
  int* off = ws_seg.get<int>(std::size_t(rows + 1));
  segment_offsets<<<unsigned((rows + 256) / 256), 256, 0, st>>>(off, rows, kc);
  PARRAY_CUDA_CHECK_LAUNCH();
  const index_t items = rows * kc;
  std::size_t a = 0, b = 0;
  PARRAY_CUDA_CHECK(
      cub::DeviceSegmentedSort::StableSortPairs(nullptr, a, idx, idx2, key, key2, items, rows, off, off + 1, st));
  PARRAY_CUDA_CHECK(
      cub::DeviceSegmentedSort::StableSortPairs(nullptr, b, key2, key, idx2, idx, items, rows, off, off + 1, st));
  void* temp = ws_temp.get<char>(std::max(a, b));
  PARRAY_CUDA_CHECK(
      cub::DeviceSegmentedSort::StableSortPairs(temp, a, idx, idx2, key, key2, items, rows, off, off + 1, st));
  PARRAY_CUDA_CHECK(
      cub::DeviceSegmentedSort::StableSortPairs(temp, b, key2, key, idx2, idx, items, rows, off, off + 1, st));
  // the (key, index) order is now in key / idx
}

// The base for the two steps: FP32 rows or 16-bit patterns, and, when
// centering pays (L2), the mean subtracted from what the filter sees.
struct DeviceBase {
  const float* f32 = nullptr;
  const unsigned short* b16 = nullptr;
  bool bf16 = false;
  index_t n = 0, d = 0;
  const float* mu = nullptr;  // device, d floats; null: not centered
  float* wide = nullptr;      // a tile as the filter sees it, when it is not the base itself
  index_t wide_rows = 0;
  cudaStream_t stream = cudaStreamPerThread;  // the search's (KnnOptions::stream)

  template <class F>
  void dispatch(F&& f) const {  // f(RowReader<...>) for the stored type
    if (f32) f(RowReader<float, false>{f32});
    else if (bf16) f(RowReader<unsigned short, true>{b16});
    else f(RowReader<unsigned short, false>{b16});
  }
  const float* tile(index_t j0, index_t nb) const {
    if (f32 && !mu) return f32 + j0 * d;
    const cudaStream_t st = stream;
    dispatch([&](auto in) {
      in.base += j0 * d;
      const unsigned blocks = unsigned(std::min<index_t>((nb * d + 255) / 256, 4096));
      filter_rows<<<blocks, 256, 0, st>>>(in, nullptr, nb, d, mu, wide);
      PARRAY_CUDA_CHECK_LAUNCH();
    });
    return wide;
  }
};

// L2: the base's mean in FP64; mu set (and uploaded) when centering pays.
void choose_centering(DeviceBase& b) {
  const cudaStream_t st = b.stream;
  double* stats = ws_stats.get<double>(std::size_t(b.d + 1));
  PARRAY_CUDA_CHECK(cudaMemsetAsync(stats, 0, sizeof(double) * std::size_t(b.d + 1), st));
  const index_t per_block = std::max<index_t>(64, (b.n + 1023) / 1024);
  b.dispatch([&](auto in) {
    column_sums<<<unsigned((b.n + per_block - 1) / per_block), 256, 0, st>>>(in, b.n, b.d, per_block, stats,
                                                                             stats + b.d);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
  std::vector<double> h(static_cast<std::size_t>(b.d + 1));
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(h.data(), stats, sizeof(double) * h.size(), cudaMemcpyDeviceToHost, st));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(st));
  double mu_sq = 0;
  std::vector<float> mu(static_cast<std::size_t>(b.d));
  for (index_t t = 0; t < b.d; ++t) {
    const double m = h[std::size_t(t)] / double(b.n);
    mu_sq += m * m;
    mu[std::size_t(t)] = float(m);
  }
  if (!centering_pays(h[std::size_t(b.d)] / double(b.n), mu_sq)) return;
  float* dmu = ws_mu.get<float>(std::size_t(b.d));
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(dmu, mu.data(), sizeof(float) * mu.size(), cudaMemcpyHostToDevice, st));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(st));  // mu is a local
  b.mu = dmu;
}

// The norm of every base row as the filter sees it.
const float* base_roots(DeviceBase& b) {
  const cudaStream_t st = b.stream;
  float* bn = ws_norms.get<float>(std::size_t(b.n));
  if (b.f32 && !b.mu) {
    row_norms<<<unsigned((b.n + 7) / 8), 256, 0, st>>>(b.f32, b.n, b.d, true, bn);
    PARRAY_CUDA_CHECK_LAUNCH();
    return bn;
  }
  for (index_t i0 = 0; i0 < b.n; i0 += b.wide_rows) {
    const index_t nb = std::min(b.wide_rows, b.n - i0);
    const float* rows = b.tile(i0, nb);
    row_norms<<<unsigned((nb + 7) / 8), 256, 0, st>>>(rows, nb, b.d, true, bn + i0);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  return bn;
}

struct Search {
  DeviceBase base;
  const float* base_roots = nullptr;
  const float* queries = nullptr;  // device, original
  index_t q = 0;
  const KnnOptions* o = nullptr;
  FilterGemm filter;  // the inner products' GEMM and the bound it needs, for every round
  float* distances = nullptr;
  index_t* indices = nullptr;
};

// One chunk of one round: queries ids[0, m) (device ids; null: the first m)
// with kc candidates each; returns the flags (1: not proven).
std::vector<unsigned char> search_chunk(const Search& s, const index_t* ids, index_t m, index_t kc) {
  const DeviceBase& b = s.base;
  const cudaStream_t st = b.stream;
  const bool l2 = s.o->metric == Metric::l2;
  const index_t d = b.d;
  // the queries as the filter sees them
  const float* qf = s.queries;
  if (ids || b.mu) {
    float* buf = ws_qf.get<float>(std::size_t(m * d));
    filter_rows<<<unsigned(std::min<index_t>((m * d + 255) / 256, 4096)), 256, 0, st>>>(
        RowReader<float, false>{s.queries}, ids, m, d, b.mu, buf);
    PARRAY_CUDA_CHECK_LAUNCH();
    qf = buf;
  }
  const FilterGemm& g = s.filter;
  const KeyArgs keys{l2, float(g.bound.beta), float(g.bound.eta), float(g.bound.gamma)};
  float* cand_key = ws_cand_key.get<float>(std::size_t(m * kc));
  index_t* cand_idx = ws_cand_idx.get<index_t>(std::size_t(m * kc));
  filter(FilterPass{b.n, m, d, kc, qf, s.o, g.options, keys, cand_key, cand_idx}, s.base_roots,
         [&](index_t j0, index_t nb) { return b.tile(j0, nb); });
  double* key = ws_exact.get<double>(std::size_t(m * kc));
  double* key2 = ws_exact2.get<double>(std::size_t(m * kc));
  int* idx = ws_exact_idx.get<int>(std::size_t(m * kc));
  int* idx2 = ws_exact_idx2.get<int>(std::size_t(m * kc));
  b.dispatch([&](auto in) {
    const bool vec4 = b.f32 && d % 4 == 0 && reinterpret_cast<std::uintptr_t>(b.f32) % 16 == 0 &&
                      reinterpret_cast<std::uintptr_t>(s.queries) % 16 == 0;
    exact_keys<<<dim3{unsigned((kc + 127) / 128), unsigned(m), 1u}, 128, 0, st>>>(s.queries, ids, in, d, l2, vec4,
                                                                                  cand_idx, kc, key, idx);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
  sort_by_key_then_index(st, key, idx, key2, idx2, m, kc);
  unsigned char* flag = ws_flag.get<unsigned char>(std::size_t(m));
  finish<<<unsigned((m + 127) / 128), 128, 0, st>>>(cand_key, key, idx, m, kc, s.o->k, b.n, l2, ids, s.distances,
                                                    s.indices, flag);
  PARRAY_CUDA_CHECK_LAUNCH();
  std::vector<unsigned char> h(static_cast<std::size_t>(m));
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(h.data(), flag, h.size(), cudaMemcpyDeviceToHost, st));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(st));
  return h;
}

// Rounds of 4x more candidates until every query is proven.
void run_search(const Search& s) {
  const index_t n = s.base.n;
  std::vector<index_t> pending;  // host ids of the queries still open; empty in round one: all
  bool first = true;
  for (index_t kc = first_candidates(s.o->k, n, s.filter.bound.beta); first || !pending.empty();
       kc = std::min(n, 4 * kc)) {
    const index_t total = first ? s.q : index_t(pending.size());
    const index_t chunk = std::max<index_t>(1, (index_t(1) << 23) / kc);
    std::vector<index_t> failed;
    for (index_t c0 = 0; c0 < total; c0 += chunk) {
      const index_t m = std::min(chunk, total - c0);
      index_t* ids = nullptr;
      std::vector<index_t> hid(static_cast<std::size_t>(m));
      for (index_t i = 0; i < m; ++i) hid[std::size_t(i)] = first ? c0 + i : pending[std::size_t(c0 + i)];
      if (!first || c0 > 0) {
        ids = ws_ids.get<index_t>(std::size_t(m));
        // hid outlives the copy: search_chunk synchronises the stream
        PARRAY_CUDA_CHECK(
            cudaMemcpyAsync(ids, hid.data(), sizeof(index_t) * std::size_t(m), cudaMemcpyHostToDevice, s.base.stream));
      }
      const std::vector<unsigned char> flag = search_chunk(s, ids, m, kc);
      for (index_t i = 0; i < m; ++i)
        if (flag[std::size_t(i)]) failed.push_back(hid[std::size_t(i)]);
    }
    pending = std::move(failed);
    first = false;
    if (kc >= n && !pending.empty()) throw Error("GPU k-NN: a query was not proven with all N candidates");
  }
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(s.base.stream));
}

void check_device_problem(index_t n, index_t q, index_t d, const KnnOptions& o) {
  check_knn_problem(n, q, d, o);
  if (n >= (index_t(1) << 31)) throw Error("GPU k-NN: N >= 2^31 base vectors (indices are int32 on the device)");
  if (o.k >= (index_t(1) << 31) / 2) throw Error("GPU k-NN: k = " + std::to_string(o.k) + " is too large");
}

void run(DeviceBase b, const float* queries, index_t q, const KnnOptions& o, float* distances, index_t* indices) {
  b.stream = on_stream(o.stream);
  if (o.metric == Metric::l2) choose_centering(b);
  if (b.b16 || b.mu) {
    // One base tile at a time as the filter sees it (NT x d floats, NT >= kc
    // when kc <= 2048); made again for each query tile: 6-8 bytes moved per
    // element against the GEMM's 2 QT d flops.
    b.wide_rows = std::min(b.n, std::max<index_t>(o.base_tile > 0 ? o.base_tile : 16384, 2048));
    b.wide = ws_wide.get<float>(std::size_t(b.wide_rows * b.d));
  }
  Search s;
  s.base = b;
  s.base_roots = base_roots(b);
  s.queries = queries, s.q = q, s.o = &o, s.distances = distances, s.indices = indices;
  s.filter = filter_gemm(o, b.d);
  run_search(s);
}

}  // namespace

void knn_device(const float* base, index_t n, const float* queries, index_t q, index_t d, const KnnOptions& o,
                float* distances, index_t* indices) {
  check_device_problem(n, q, d, o);
  if (q == 0) return;
  DeviceBase b;
  b.f32 = base, b.n = n, b.d = d;
  run(b, queries, q, o, distances, indices);
}

void knn_device_16bit(const std::uint16_t* base, Storage storage, index_t n, const float* queries, index_t q, index_t d,
                      const KnnOptions& o, float* distances, index_t* indices) {
  if (storage == Storage::f32) throw Error("GPU k-NN: knn_device_16bit needs --storage f16 or bf16");
  check_device_problem(n, q, d, o);
  if (q == 0) return;
  DeviceBase b;
  b.b16 = reinterpret_cast<const unsigned short*>(base), b.bf16 = storage == Storage::bf16, b.n = n, b.d = d;
  run(b, queries, q, o, distances, indices);
}

}  // namespace parray::cuda
