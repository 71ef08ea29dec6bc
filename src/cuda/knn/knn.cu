// GPU exact k-NN: parray's GPU GEMM for the inner products, tile by tile,
// and a k-selection after each tile.
//
//   for each query tile (QT queries, 1024 by default):
//     for each base tile (NT = 16384 vectors by default; at least k when k <= 2048):
//       [16-bit base: widen the tile to FP32]
//       C (QT x NT) = Q_tile . B_tile^T          parray::gemm(..., "gpu"), device views
//       k <= 2048: select_tile<<<QT>>>           one pass, fused top-k (select_topk.cuh)
//       k >  2048: keys, CUB segmented stable sort of each row of C, then
//                  merge_rows: the sorted row merged with the query's sorted
//                  k best so far (merged passes)
// Memory: one QT x NT tile (64 MiB) + QT x k state; for k > 2048, QT shrinks
// so that the sorted copy of the tile and the two state buffers stay within
// the same budget.
#include <cub/device/device_segmented_sort.cuh>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "parray/cuda/check.hpp"
#include "parray/gemm.hpp"
#include "parray/knn.hpp"
#include "select_topk.cuh"

namespace parray::cuda {

namespace {

using namespace knn_kernels;

struct Workspace {
  void* p = nullptr;
  std::size_t size = 0;
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
void launch_select(int rows, const float* c, index_t nb, index_t j0, const float* bn, const float* qn, bool l2, int k,
                   float* sk, int* si, bool last, index_t q0, float* od, index_t* oi) {
  select_tile<CAP, 256><<<rows, 256>>>(c, nb, j0, bn, qn, l2, k, sk, si, last, q0, od, oi);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// ---- k > 2048: merged passes ----------------------------------------------------

// In place: C's inner products become keys (ascending = better); idx[r, j] =
// j0 + j; offsets[r] = r * nb. +0.0f turns -0.0 into +0.0, so that the sort and
// the merge's compares see one zero.
__global__ void __launch_bounds__(256) tile_keys(float* __restrict__ c, int* __restrict__ idx, int rows, index_t nb,
                                                 index_t j0, const float* __restrict__ base_norms,
                                                 const float* __restrict__ query_norms, index_t q0, bool l2,
                                                 int* __restrict__ offsets) {
  const index_t total = index_t(rows) * nb;
  for (index_t i = index_t(blockIdx.x) * 256 + threadIdx.x; i < total; i += index_t(gridDim.x) * 256) {
    const index_t r = i / nb, j = i - r * nb;
    const float dot = c[i];
    c[i] = (l2 ? fmaxf(query_norms[q0 + r] + base_norms[j0 + j] - 2.0f * dot, 0.0f) : -dot) + 0.0f;
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
                                                  bool last, bool l2, index_t q0, float* __restrict__ out_dist,
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
    out_dist[(q0 + r) * keep + pos] = l2 ? x.key : -x.key;
    out_idx[(q0 + r) * keep + pos] = x.idx;
  } else {
    new_key[r * ld + pos] = x.key;
    new_idx[r * ld + pos] = x.idx;
  }
}

// Grow-only device buffers, shared by every search of the process.
Workspace ws_c, ws_state, ws_state2, ws_sorted_key, ws_idx, ws_sorted_idx, ws_offsets, ws_temp, ws_qn, ws_norms,
    ws_wide;

struct Problem {
  index_t n, q, d;
  const float* queries;
  const KnnOptions* o;
  float* distances;
  index_t* indices;
};

// The base, as the GEMM sees it: tile(j0, nb) returns FP32 rows j0 .. j0 + nb
// (the base itself, or a widened copy of a 16-bit base).
template <class BaseTile>
void search(const Problem& p, const float* base_norms, BaseTile&& tile) {
  const KnnOptions& o = *p.o;
  const index_t n = p.n, q = p.q, d = p.d, k = o.k;
  const bool l2 = o.metric == Metric::l2;
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
  if (l2) {
    row_norms<float><<<unsigned((q + 7) / 8), 256>>>(p.queries, q, d, qn);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  // The GEMM: KnnOptions::gemm, else $PARRAY_KNN_GEMM, else the GPU default.
  std::string gemm_impl = o.gemm;
  if (gemm_impl.empty())
    if (const char* env = std::getenv("PARRAY_KNN_GEMM")) gemm_impl = env;
  const GemmOptions gemm_options{gemm_impl.empty() ? "gpu" : gemm_impl, 1};
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
        if (k <= 1024) launch_select<2048>(rows, c, nb, j0, base_norms, qn, l2, ki, sk, si, last, q0, p.distances, p.indices);
        else launch_select<4096>(rows, c, nb, j0, base_norms, qn, l2, ki, sk, si, last, q0, p.distances, p.indices);
        continue;
      }
      const index_t items = qb * nb;
      const unsigned key_blocks = unsigned(std::min<index_t>((items + 255) / 256, 65535));
      tile_keys<<<key_blocks, 256>>>(c, tile_idx, rows, nb, j0, base_norms, qn, q0, l2, offsets);
      PARRAY_CUDA_CHECK_LAUNCH();
      std::size_t temp_bytes = 0;
      PARRAY_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(nullptr, temp_bytes, c, sorted_key, tile_idx,
                                                                  sorted_idx, items, qb, offsets, offsets + 1));
      void* temp = ws_temp.get<char>(temp_bytes);
      PARRAY_CUDA_CHECK(cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, c, sorted_key, tile_idx, sorted_idx,
                                                                  items, qb, offsets, offsets + 1));
      const index_t keep = std::min(k, have + nb);
      const dim3 grid{unsigned((have + nb + 255) / 256), unsigned(rows), 1u};
      merge_rows<<<grid, 256>>>(sk, si, have, sorted_key, sorted_idx, nb, keep, sk2, si2, k, last, l2, q0, p.distances,
                                p.indices);
      PARRAY_CUDA_CHECK_LAUNCH();
      std::swap(sk, sk2);
      std::swap(si, si2);
      have = keep;
    }
  }
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
}

void check_device_problem(index_t n, index_t q, index_t d, const KnnOptions& o) {
  check_knn_problem(n, q, d, o);
  if (n >= (index_t(1) << 31)) throw Error("GPU k-NN: N >= 2^31 base vectors (indices are int32 on the device)");
  if (o.k >= (index_t(1) << 31) / 2) throw Error("GPU k-NN: k = " + std::to_string(o.k) + " is too large");
}

}  // namespace

void knn_device(const float* base, index_t n, const float* queries, index_t q, index_t d, const KnnOptions& o,
                float* distances, index_t* indices) {
  check_device_problem(n, q, d, o);
  if (q == 0) return;
  float* bn = ws_norms.get<float>(std::size_t(n));
  if (o.metric == Metric::l2) {
    row_norms<float><<<unsigned((n + 7) / 8), 256>>>(base, n, d, bn);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  search(Problem{n, q, d, queries, &o, distances, indices}, bn,
         [&](index_t j0, index_t) -> const float* { return base + j0 * d; });
}

void knn_device_16bit(const std::uint16_t* base, Storage storage, index_t n, const float* queries, index_t q, index_t d,
                      const KnnOptions& o, float* distances, index_t* indices) {
  if (storage == Storage::f32) throw Error("GPU k-NN: knn_device_16bit needs --storage f16 or bf16");
  check_device_problem(n, q, d, o);
  if (q == 0) return;
  const bool bf16 = storage == Storage::bf16;
  const auto* b16 = reinterpret_cast<const unsigned short*>(base);
  float* bn = ws_norms.get<float>(std::size_t(n));
  if (o.metric == Metric::l2) {
    if (bf16) row_norms<unsigned short, true><<<unsigned((n + 7) / 8), 256>>>(b16, n, d, bn);
    else row_norms<unsigned short, false><<<unsigned((n + 7) / 8), 256>>>(b16, n, d, bn);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  // One widened base tile at a time (NT x d floats); widened again for each
  // query tile: 6 bytes moved per element against the GEMM's 2 QT d flops.
  const index_t nt_max = std::min(n, std::max(o.base_tile > 0 ? o.base_tile : 16384, o.k <= 2048 ? o.k : 0));
  float* wide = ws_wide.get<float>(std::size_t(nt_max * d));
  search(Problem{n, q, d, queries, &o, distances, indices}, bn, [&](index_t j0, index_t nb) -> const float* {
    const index_t count = nb * d;
    const unsigned blocks = unsigned(std::min<index_t>((count + 255) / 256, 4096));
    if (bf16) widen_rows<true><<<blocks, 256>>>(b16 + j0 * d, count, wide);
    else widen_rows<false><<<blocks, 256>>>(b16 + j0 * d, count, wide);
    PARRAY_CUDA_CHECK_LAUNCH();
    return wide;
  });
}

}  // namespace parray::cuda
