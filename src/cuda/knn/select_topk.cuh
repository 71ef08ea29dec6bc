// Fused k-selection for the GPU k-NN (k <= 2048): one block per query row of
// a (QT, NT) inner-product tile just written by parray's GEMM.
//
// The block keeps the query's best candidates in shared memory, buf[CAP]
// (key, index) with CAP >= k + 256: slots [0, k) hold the k best of the
// previous base tiles (sorted), new candidates are appended behind them. Each
// round, the 256 threads compute 256 keys
//     L2: max(||q||^2 + ||x||^2 - 2 q.x, 0)      IP: -q.x
// and keep those below the current threshold (the k-th best key) with a
// ballot/prefix compaction. When the next round might not fit, the buffer is
// bitonic-sorted by (key, index), cut back to k and the threshold tightens.
// After the first tile almost nothing passes the threshold (about k ln(N/k)
// insertions per query in all), so the pass costs one read of the tile.
// Base indices arrive in increasing order, so "key < threshold" is exact
// under the (key, index) tie order. The distance matrix is never stored.
#pragma once

#include <cfloat>
#include <climits>

#include "parray/core.hpp"

namespace parray::cuda::knn_kernels {

struct Cand {
  float key;
  int idx;
};

__device__ __forceinline__ bool before(const Cand& a, const Cand& b) {
  return a.key < b.key || (a.key == b.key && a.idx < b.idx);
}

// Sorts buf[0, CAP) ascending by (key, index); slots [count, CAP) are padded.
template <int CAP, int BLOCK>
__device__ void bitonic_sort(Cand* buf, int count) {
  for (int t = count + threadIdx.x; t < CAP; t += BLOCK) buf[t] = {FLT_MAX, INT_MAX};
  for (int size = 2; size <= CAP; size <<= 1) {
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      for (int t = threadIdx.x; t < CAP / 2; t += BLOCK) {
        const int pos = 2 * t - (t & (stride - 1));
        const int partner = pos + stride;
        const bool up = (pos & size) == 0;
        const Cand a = buf[pos], b = buf[partner];
        if (before(b, a) == up) buf[pos] = b, buf[partner] = a;
      }
    }
  }
  __syncthreads();
}

// grid.x = rows of the tile (queries q0 .. q0 + qb). c: (qb, nb) row-major tile
// of inner products for base vectors j0 .. j0 + nb. State per query: k keys and
// int32 indices (sorted), valid when j0 > 0. On the last tile the result goes
// to out_dist/out_idx (row q0 + r, k wide) instead.
template <int CAP, int BLOCK>
__global__ void __launch_bounds__(BLOCK) select_tile(const float* __restrict__ c, index_t nb, index_t j0,
                                                     const float* __restrict__ base_norms,
                                                     const float* __restrict__ query_norms, bool l2, int k,
                                                     float* __restrict__ state_key, int* __restrict__ state_idx,
                                                     bool last, index_t q0, float* __restrict__ out_dist,
                                                     index_t* __restrict__ out_idx) {
  __shared__ Cand buf[CAP];
  __shared__ int warp_count[BLOCK / 32];
  __shared__ int count_s;
  __shared__ float thr_s;
  const int r = blockIdx.x;
  const float* row = c + index_t(r) * nb;
  float* sk = state_key + index_t(r) * k;
  int* si = state_idx + index_t(r) * k;
  const float qn = l2 ? query_norms[q0 + r] : 0.0f;
  if (j0 > 0) {
    for (int t = threadIdx.x; t < k; t += BLOCK) buf[t] = {sk[t], si[t]};
    if (threadIdx.x == 0) count_s = k, thr_s = sk[k - 1];
  } else if (threadIdx.x == 0) {
    count_s = 0, thr_s = FLT_MAX;
  }
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  for (index_t s = 0; s < nb; s += BLOCK) {
    const index_t j = s + threadIdx.x;
    float key = FLT_MAX;
    if (j < nb) {
      const float dot = row[j];
      key = l2 ? fmaxf(qn + base_norms[j0 + j] - 2.0f * dot, 0.0f) : -dot;
    }
    int count = count_s;
    if (count + BLOCK > CAP) {  // uniform: every thread read the same count
      bitonic_sort<CAP, BLOCK>(buf, count);
      if (threadIdx.x == 0) count_s = k, thr_s = buf[k - 1].key;
      __syncthreads();
      count = k;
    }
    const bool keep = j < nb && key < thr_s;
    const unsigned mask = __ballot_sync(0xffffffffu, keep);
    if (lane == 0) warp_count[warp] = __popc(mask);
    __syncthreads();
    int offset = count, total = 0;
    for (int w = 0; w < BLOCK / 32; ++w) {
      if (w < warp) offset += warp_count[w];
      total += warp_count[w];
    }
    if (keep) buf[offset + __popc(mask & ((1u << lane) - 1))] = {key, int(j0 + j)};
    __syncthreads();
    if (threadIdx.x == 0) count_s = count + total;
    __syncthreads();
  }
  bitonic_sort<CAP, BLOCK>(buf, count_s);
  if (last) {
    for (int t = threadIdx.x; t < k; t += BLOCK) {
      out_dist[(q0 + r) * index_t(k) + t] = l2 ? buf[t].key : -buf[t].key;
      out_idx[(q0 + r) * index_t(k) + t] = buf[t].idx;
    }
  } else {
    for (int t = threadIdx.x; t < k; t += BLOCK) sk[t] = buf[t].key, si[t] = buf[t].idx;
  }
}

// ||x||^2 of n rows of length d (row-major), one warp per row.
static __global__ void __launch_bounds__(256) row_norms(const float* __restrict__ x, index_t n, index_t d,
                                                 float* __restrict__ out) {
  const index_t i = index_t(blockIdx.x) * 8 + threadIdx.x / 32;
  if (i >= n) return;
  float s = 0;
  for (index_t t = threadIdx.x & 31; t < d; t += 32) {
    const float v = x[i * d + t];
    s += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) out[i] = s;
}

}  // namespace parray::cuda::knn_kernels
