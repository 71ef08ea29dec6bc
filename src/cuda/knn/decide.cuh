// The GPU k-NN's decision step and the base statistics behind centering
// (knn_exact.hpp says what is proven and why).
//
//   exact_keys   one thread per candidate: its FP64 key (exact_key, the same
//                bits as the CPU's) from the original query and base rows
//   (CUB)        each query's candidates ordered by (key, index): a stable
//                segmented sort by index, then one by key
//   finish       the proof per query (largest lower bound kept > k-th exact
//                key, or all N were candidates): the k best written to the
//                query's output row, or the query flagged for another round
#pragma once

#include <cuda_fp16.h>

#include "parray/core.hpp"
#include "parray/knn_exact.hpp"

namespace parray::cuda::knn_kernels {

// One base row as the exact key reads it: FP32, or 16-bit patterns widened.
template <class T, bool kBf16>
struct RowReader {
  const T* base;
  __device__ __forceinline__ float at(index_t i) const {
    if constexpr (sizeof(T) == 4) {
      return base[i];
    } else if constexpr (kBf16) {
      return __uint_as_float(unsigned(base[i]) << 16);
    } else {
      return __half2float(__ushort_as_half(base[i]));
    }
  }
};

__device__ __forceinline__ double key_step(bool l2, float q, float x, double s) {
  const double a = double(q), b = double(x);
  return l2 ? fma(a - b, a - b, s) : fma(a, b, s);
}

// key[r, c] = exact key of query ids[r] (row r of `queries` when ids is null)
// and candidate cand[r, c]; idx[r, c] = that candidate's index (int32).
// One thread per candidate, its FMA chain in component order (exact_key's
// bits); vec4: FP32 rows read 16 bytes at a time (d % 4 == 0, aligned).
// grid = (ceil(kc / 128), rows).
template <class T, bool kBf16>
__global__ void __launch_bounds__(128) exact_keys(const float* __restrict__ queries, const index_t* __restrict__ ids,
                                                  RowReader<T, kBf16> base, index_t d, bool l2, bool vec4,
                                                  const index_t* __restrict__ cand, index_t kc,
                                                  double* __restrict__ key, int* __restrict__ idx) {
  const index_t r = blockIdx.y;
  const index_t c = index_t(blockIdx.x) * 128 + threadIdx.x;
  if (c >= kc) return;
  const float* q = queries + (ids ? ids[r] : r) * d;
  const index_t j = cand[r * kc + c];
  const index_t row = j * d;
  double s = 0;
  if constexpr (sizeof(T) == 4) {
    if (vec4) {
      const float4* q4 = reinterpret_cast<const float4*>(q);
      const float4* x4 = reinterpret_cast<const float4*>(base.base + row);
      for (index_t t = 0; t < d / 4; ++t) {
        const float4 a = __ldg(q4 + t), b = __ldg(x4 + t);
        s = key_step(l2, a.w, b.w, key_step(l2, a.z, b.z, key_step(l2, a.y, b.y, key_step(l2, a.x, b.x, s))));
      }
      vec4 = false, d = 0;  // done
    }
  }
  for (index_t t = 0; t < d; ++t) s = key_step(l2, q[t], base.at(row + t), s);
  key[r * kc + c] = (l2 ? s : -s) + 0.0;  // -0 -> +0: the radix sort must see one zero
  idx[r * kc + c] = int(j);
}

// Per query row r (one thread each): proven when all n were candidates or the
// largest lower bound kept, lower[r, kc - 1], exceeds the k-th exact key.
// Then its k best (distance = key for L2, -key for IP) go to output row
// ids[r] (r when ids is null); else flag[r] = 1.
__global__ void __launch_bounds__(128) finish(const float* __restrict__ lower, const double* __restrict__ key,
                                              const int* __restrict__ idx, index_t rows, index_t kc, index_t k,
                                              index_t n, bool l2, const index_t* __restrict__ ids,
                                              float* __restrict__ out_dist, index_t* __restrict__ out_idx,
                                              unsigned char* __restrict__ flag) {
  const index_t r = index_t(blockIdx.x) * 128 + threadIdx.x;
  if (r >= rows) return;
  const double kth = key[r * kc + k - 1];
  if (kc < n && !(double(lower[r * kc + kc - 1]) > kth)) {
    flag[r] = 1;
    return;
  }
  flag[r] = 0;
  const index_t o = (ids ? ids[r] : r) * k;
  for (index_t i = 0; i < k; ++i) {
    const double v = key[r * kc + i];
    out_dist[o + i] = float(l2 ? v : -v);
    out_idx[o + i] = idx[r * kc + i];
  }
}

// sum[t] += x[i, t], sq += x[i, t]^2 over this block's rows (FP64), for the
// base's mean and mean squared norm. grid-stride over row ranges.
template <class T, bool kBf16>
__global__ void __launch_bounds__(256) column_sums(RowReader<T, kBf16> x, index_t n, index_t d, index_t rows_per_block,
                                                   double* __restrict__ sum, double* __restrict__ sq) {
  const index_t i0 = index_t(blockIdx.x) * rows_per_block, i1 = min(n, i0 + rows_per_block);
  double local_sq = 0;
  for (index_t t = threadIdx.x; t < d; t += 256) {
    double s = 0;
    for (index_t i = i0; i < i1; ++i) {
      const double v = x.at(i * d + t);
      s += v;
      local_sq += v * v;
    }
    atomicAdd(sum + t, s);
  }
  atomicAdd(sq, local_sq);
}

// out[i, t] = widen(in[rows[i], t]) - mu[t] (mu may be null; rows null: row i):
// a block of base rows or queries as the filter sees them.
template <class T, bool kBf16>
__global__ void __launch_bounds__(256) filter_rows(RowReader<T, kBf16> in, const index_t* __restrict__ rows,
                                                   index_t count, index_t d, const float* __restrict__ mu,
                                                   float* __restrict__ out) {
  for (index_t e = index_t(blockIdx.x) * 256 + threadIdx.x; e < count * d; e += index_t(gridDim.x) * 256) {
    const index_t i = e / d, t = e - i * d;
    const float v = in.at((rows ? rows[i] : i) * d + t);
    out[e] = mu ? v - mu[t] : v;
  }
}

}  // namespace parray::cuda::knn_kernels
