// Fused k-selection for the GPU k-NN (k <= 2048): one block per query row of
// a (QT, NT) inner-product tile just written by parray's GEMM.
//
// What makes it cheap (docs/knn.md): after the first base
// tile the query's k-th best key is known, and almost every later candidate
// is rejected by ONE compare against it in registers. So the common path of a
// step is: each thread loads 4 inner products and 4 base norms (128-bit loads,
// the next step's loads already in flight), computes 4 keys
//     L2: ||q||^2 + ||x||^2 - 2 q.x      IP: -q.x
// each lowered by the rounding-error bound of knn_exact.hpp (filter_lower):
// the keys are lower bounds of the exact FP64 keys, and the kc smallest are
// the candidates that the decision step (decide.cuh) settles exactly.
// compares them with the threshold held in a register, and the block meets
// once (__syncthreads_count) to learn whether any thread has a candidate.
// Only then (rarely, about k ln(N/k) times per query over the whole search)
// does the slow path run: a warp-aggregated append to a shared buffer of CAP
// (key, index) pairs, and, when the buffer could overflow, a bitonic sort of
// the buffer cut back to the k best (the threshold tightens).
// At the end of the tile only the few new candidates are sorted; they are
// merged with the k sorted old ones by rank (each element finds its output
// position with a binary search in the other list) straight into global
// memory; a tile that brought nothing new writes nothing.
// Base indices grow from tile to tile and from step to step, so "key <
// threshold" is exact under the (key, index) order: ties keep the smaller
// index. The distance matrix is never stored whole.
#pragma once

#include <cuda_fp16.h>

#include <cfloat>
#include <climits>

#include "parray/core.hpp"
#include "parray/knn_exact.hpp"

namespace parray::cuda::knn_kernels {

// How a tile's inner products become keys (filter_lower's arguments).
struct KeyArgs {
  bool l2;
  float beta, eta, gamma;
};

__device__ __forceinline__ QueryTerms<float> terms_of(const KeyArgs& a, float qn) {
  return query_terms<float>(a.l2, qn, sqrtf(qn), a.beta, a.eta, a.gamma);
}

struct Cand {
  float key;
  int idx;
};

__device__ __forceinline__ bool before(const Cand& a, const Cand& b) {
  return a.key < b.key || (a.key == b.key && a.idx < b.idx);
}

__host__ __device__ constexpr int next_pow2(int x) {
  int p = 1;
  while (p < x) p <<= 1;
  return p;
}

// Sorts buf[0, size) ascending by (key, index), size a power of two; slots
// [count, size) are padded first. Every thread of the block must call it; it
// begins and ends with a barrier.
template <int BLOCK>
__device__ void bitonic_sort(Cand* buf, int count, int size) {
  for (int t = count + threadIdx.x; t < size; t += BLOCK) buf[t] = {FLT_MAX, INT_MAX};
  for (int width = 2; width <= size; width <<= 1) {
    for (int stride = width >> 1; stride > 0; stride >>= 1) {
      __syncthreads();
      for (int t = threadIdx.x; t < size / 2; t += BLOCK) {
        const int pos = 2 * t - (t & (stride - 1));
        const int partner = pos + stride;
        const bool up = (pos & width) == 0;
        const Cand a = buf[pos], b = buf[partner];
        if (before(b, a) == up) buf[pos] = b, buf[partner] = a;
      }
    }
  }
  __syncthreads();
}

// Number of elements of the sorted list x[0, len) that come before c.
__device__ __forceinline__ int rank_in(const Cand* x, int len, const Cand& c) {
  int lo = 0, hi = len;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    if (before(x[mid], c)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// Keys of one step: 4 consecutive columns per thread (vec) or 4 columns BLOCK
// apart (scalar fallback when the row or j0 is not 16-byte aligned).
struct Step4 {
  float dot[4], root[4];
};

template <int BLOCK>
__device__ __forceinline__ void load_step(const float* __restrict__ row, const float* __restrict__ bn, index_t nb,
                                          index_t s, bool vec, Step4& v) {
  if (vec) {
    const index_t j = s + 4 * threadIdx.x;
    if (j < nb) {  // nb % 4 == 0 on this path: all four are in range
      const float4 c4 = __ldcs(reinterpret_cast<const float4*>(row + j));  // read once: evict first
      v.dot[0] = c4.x, v.dot[1] = c4.y, v.dot[2] = c4.z, v.dot[3] = c4.w;
      const float4 n4 = __ldg(reinterpret_cast<const float4*>(bn + j));
      v.root[0] = n4.x, v.root[1] = n4.y, v.root[2] = n4.z, v.root[3] = n4.w;
    }
    return;
  }
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    const index_t j = s + threadIdx.x + index_t(e) * BLOCK;
    if (j < nb) {
      v.dot[e] = __ldcs(row + j);
      v.root[e] = __ldg(bn + j);
    }
  }
}

// grid.x = rows of the tile (queries q0 .. q0 + qb). c: (qb, nb) row-major tile
// of inner products for base vectors j0 .. j0 + nb, nb >= k on the first tile.
// State per query: k keys and int32 indices, sorted, valid when j0 > 0. On the
// last tile the result (keys, ascending) goes to out_key/out_idx (row q0 + r,
// k wide) instead.
// CAP: a power of two >= k + 4 * BLOCK (one step can append 4 * BLOCK).
template <int CAP, int BLOCK>
__global__ void __launch_bounds__(BLOCK) select_tile(const float* __restrict__ c, index_t nb, index_t j0,
                                                     const float* __restrict__ base_roots,
                                                     const float* __restrict__ query_norms, KeyArgs ka, int k,
                                                     float* __restrict__ state_key, int* __restrict__ state_idx,
                                                     bool last, index_t q0, float* __restrict__ out_key,
                                                     index_t* __restrict__ out_idx) {
  __shared__ Cand buf[CAP];  // [0, sorted): sorted k best so far; [sorted, count): new candidates
  __shared__ int count_s;
  const int r = blockIdx.x;
  const float* row = c + index_t(r) * nb;
  const float* bn = base_roots + j0;
  float* sk = state_key + index_t(r) * k;
  int* si = state_idx + index_t(r) * k;
  const QueryTerms<float> qt = terms_of(ka, query_norms[q0 + r]);
  int sorted = j0 > 0 ? k : 0;  // block-uniform
  float thr = FLT_MAX;          // the k-th best key so far, in a register
  if (j0 > 0) {
    for (int t = threadIdx.x; t < k; t += BLOCK) buf[t] = {sk[t], si[t]};
    thr = sk[k - 1];
  }
  if (threadIdx.x == 0) count_s = sorted;
  bool changed = false;  // the sorted part no longer equals the global state
  const bool vec = nb % 4 == 0 && j0 % 4 == 0;
  const int lane = threadIdx.x & 31;
  constexpr index_t kStep = 4 * BLOCK;
  Step4 next = {};
  load_step<BLOCK>(row, bn, nb, 0, vec, next);
  __syncthreads();
  for (index_t s = 0; s < nb; s += kStep) {
    const Step4 cur = next;
    if (s + kStep < nb) load_step<BLOCK>(row, bn, nb, s + kStep, vec, next);  // in flight while we filter
    float key[4];
    int col[4];
    int pass = 0;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const index_t j = vec ? s + 4 * threadIdx.x + e : s + threadIdx.x + index_t(e) * BLOCK;
      col[e] = int(j0 + j);
      key[e] = j >= nb ? FLT_MAX : filter_lower<float>(ka.l2, cur.dot[e], qt, cur.root[e]);
      pass |= (j < nb && key[e] < thr) << e;
    }
    const int active = __syncthreads_count(pass != 0);  // the only barrier of the common path
    if (active == 0) continue;
    int count = count_s;  // stable: the last change was before the barrier
    if (count + 4 * active > CAP) {  // uniform; could overflow: keep only the k best
      const int size = next_pow2(count);
      bitonic_sort<BLOCK>(buf, count, size);
      thr = buf[k - 1].key;
      count = sorted = k;
      changed = true;
      pass = 0;
#pragma unroll
      for (int e = 0; e < 4; ++e) pass |= (key[e] < thr && col[e] < j0 + nb) << e;
    }
    __syncthreads();  // everyone has read count_s before it moves
    if (threadIdx.x == 0) count_s = count;
    __syncthreads();
    // Warp-aggregated append: one shared atomic per warp that has candidates.
    const int mine = __popc(pass);
    int incl = mine;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int t = __shfl_up_sync(0xffffffffu, incl, o);
      if (lane >= o) incl += t;
    }
    int base_slot = 0;
    if (lane == 31 && incl > 0) base_slot = atomicAdd(&count_s, incl);
    base_slot = __shfl_sync(0xffffffffu, base_slot, 31);
    int slot = base_slot + incl - mine;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (pass >> e & 1) buf[slot++] = {key[e], col[e]};
    __syncthreads();
  }
  const int count = count_s;
  if (!last && !changed && count == sorted) return;  // nothing new: the state stands
  // Sort the new candidates [sorted, count) alone when they fit, else everything.
  const int fresh = count - sorted;
  if (fresh > 0 && sorted + next_pow2(fresh) <= CAP) {
    bitonic_sort<BLOCK>(buf + sorted, fresh, next_pow2(fresh));
  } else if (fresh > 0) {
    bitonic_sort<BLOCK>(buf, count, next_pow2(count));
    sorted = count;
  }
  // Merge by rank into the first k (count >= k: the first tile holds >= k columns).
  const Cand* old_part = buf;
  const Cand* new_part = buf + sorted;
  const int n_new = count - sorted;
  float* dst_key = last ? nullptr : sk;
  int* dst_idx = last ? nullptr : si;
  auto put = [&](int pos, const Cand& x) {
    if (pos >= k) return;
    if (last) {
      out_key[(q0 + r) * index_t(k) + pos] = x.key;
      out_idx[(q0 + r) * index_t(k) + pos] = x.idx;
    } else {
      dst_key[pos] = x.key;
      dst_idx[pos] = x.idx;
    }
  };
  for (int t = threadIdx.x; t < sorted && t < k; t += BLOCK) put(t + rank_in(new_part, n_new, old_part[t]), old_part[t]);
  for (int t = threadIdx.x; t < n_new && t < k; t += BLOCK) put(t + rank_in(old_part, sorted, new_part[t]), new_part[t]);
}

// ||x||^2 (root: ||x||) of n FP32 rows of length d (row-major), one warp per row.
// (A template so that every file including this header shares one definition.)
template <class T>
__global__ void __launch_bounds__(256) row_norms(const T* __restrict__ x, index_t n, index_t d, bool root,
                                                 float* __restrict__ out) {
  const index_t i = index_t(blockIdx.x) * 8 + threadIdx.x / 32;
  if (i >= n) return;
  float s = 0;
  for (index_t t = threadIdx.x & 31; t < d; t += 32) s += float(x[i * d + t]) * float(x[i * d + t]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) out[i] = root ? sqrtf(s) : s;
}

}  // namespace parray::cuda::knn_kernels
