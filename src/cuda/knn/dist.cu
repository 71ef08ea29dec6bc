// Seed 002 on the GPU: distances from one query to N vectors, sorted, ties
// by index.
//
// N <= 4096 (the seed's case is 1024 x 32): ONE kernel launch of P / 4
// threads (P = N rounded up to a power of two, at least 128). Each thread
// computes 4 distances ((q - x)^2 summed, or -q.x for IP; 128-bit loads when
// d % 4 == 0) and keeps the 4 (key, index) pairs in registers, element
// i = 4 * thread + e. The bitonic network then runs where the partners are:
//   stride 1, 2:           inside the thread's registers (no communication);
//   stride 4 .. 64:        in the same warp, exchanged with __shfl_xor_sync;
//   stride >= 128:         across warps, through shared memory (double
//                          buffered: one barrier per stage).
// For P = 1024 that is 6 barriers instead of the 55 of a shared-memory
// bitonic sort of 1024 threads with one element each, and each thread does 4
// compare-exchanges per stage instead of one.
// N > 4096: a distance kernel, then CUB's stable radix sort of (key, index)
// pairs (stable, and indices start in order, so ties stay ordered by index).
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "parray/cuda/check.hpp"
#include "parray/knn.hpp"
#include "select_topk.cuh"

namespace parray::cuda {

namespace {

using knn_kernels::before;
using knn_kernels::Cand;

__device__ __forceinline__ float key_of(const float* __restrict__ x, const float* __restrict__ q, index_t d, bool l2) {
  float s = 0;
  if (l2) {
    for (index_t t = 0; t < d; ++t) {
      const float v = q[t] - x[t];
      s += v * v;
    }
    return s;
  }
  for (index_t t = 0; t < d; ++t) s += q[t] * x[t];
  return -s;
}

// Keys of rows i0 .. i0 + 3 (those < n) with 128-bit loads: d % 4 == 0, base
// and query 16-byte aligned. The same summation order as key_of.
__device__ __forceinline__ void keys4_vec(const float* __restrict__ base, index_t n, index_t d,
                                          const float* __restrict__ q, bool l2, index_t i0, float (&s)[4]) {
  const int rows = n - i0 < 4 ? int(n - i0) : 4;
  for (index_t t = 0; t < d; t += 4) {
    const float4 q4 = __ldg(reinterpret_cast<const float4*>(q + t));
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if (e >= rows) break;
      const float4 x4 = __ldg(reinterpret_cast<const float4*>(base + (i0 + e) * d + t));
      if (l2) {
        const float a = q4.x - x4.x, b = q4.y - x4.y, c = q4.z - x4.z, w = q4.w - x4.w;
        s[e] += a * a, s[e] += b * b, s[e] += c * c, s[e] += w * w;
      } else {
        s[e] += q4.x * x4.x, s[e] += q4.y * x4.y, s[e] += q4.z * x4.z, s[e] += q4.w * x4.w;
      }
    }
  }
  if (!l2)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[e] = -s[e];
}

// Compare-exchange of element i (held here as x) with its partner (y): after
// it, the lower position of the pair holds the smaller one when the block of
// `width` runs ascending.
__device__ __forceinline__ Cand keep(const Cand& x, const Cand& y, int i, int stride, int width) {
  const bool lower = (i & stride) == 0;
  const bool ascending = (i & width) == 0;
  const bool y_first = before(y, x);
  return (lower == ascending) == y_first ? y : x;
}

template <int P>
__global__ void __launch_bounds__(P / 4) fused_dist_sort(const float* __restrict__ base, index_t n, index_t d,
                                                         const float* __restrict__ query, bool l2, bool vec,
                                                         float* __restrict__ dist, index_t* __restrict__ idx) {
  constexpr int kWarpSpan = 4 * 32;  // elements per warp
  constexpr bool kDouble = P <= 2048;  // two exchange buffers fit the 48 KiB of static shared memory
  __shared__ Cand xbuf[kDouble ? 2 * P : P];
  const int tid = threadIdx.x;
  const int first = 4 * tid;
  Cand v[4];
  {
    float s[4] = {0, 0, 0, 0};
    if (first < n) {
      if (vec) {
        keys4_vec(base, n, d, query, l2, first, s);
      } else {
#pragma unroll
        for (int e = 0; e < 4; ++e)
          if (first + e < n) s[e] = key_of(base + (first + e) * d, query, d, l2);
      }
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) v[e] = first + e < n ? Cand{s[e], first + e} : Cand{FLT_MAX, INT_MAX};
  }
  int parity = 0;
  for (int width = 2; width <= P; width <<= 1) {
    for (int stride = width >> 1; stride > 0; stride >>= 1) {
      if (stride >= kWarpSpan) {  // across warps: through shared memory
        Cand* b = xbuf + (kDouble ? parity * P : 0);
        if (!kDouble) __syncthreads();  // the previous stage's reads are done
#pragma unroll
        for (int e = 0; e < 4; ++e) b[first + e] = v[e];
        __syncthreads();
#pragma unroll
        for (int e = 0; e < 4; ++e) v[e] = keep(v[e], b[(first + e) ^ stride], first + e, stride, width);
        parity ^= 1;
      } else if (stride >= 4) {  // same warp: lane ^ (stride / 4) holds the partner
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          Cand y;
          y.key = __shfl_xor_sync(0xffffffffu, v[e].key, stride / 4);
          y.idx = __shfl_xor_sync(0xffffffffu, v[e].idx, stride / 4);
          v[e] = keep(v[e], y, first + e, stride, width);
        }
      } else {  // stride 1 or 2: both elements are this thread's
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (e & stride) continue;
          const int i = first + e;
          const Cand a = v[e], b = v[e + stride];
          const bool ascending = (i & width) == 0;
          if (before(b, a) == ascending) v[e] = b, v[e + stride] = a;
        }
      }
    }
  }
#pragma unroll
  for (int e = 0; e < 4; ++e)
    if (first + e < n) {
      dist[first + e] = l2 ? v[e].key : -v[e].key;
      idx[first + e] = v[e].idx;
    }
}

__global__ void dist_keys(const float* __restrict__ base, index_t n, index_t d, const float* __restrict__ query,
                          bool l2, float* __restrict__ keys, index_t* __restrict__ idx) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  keys[j] = key_of(base + j * d, query, d, l2);
  idx[j] = j;
}

__global__ void negate(float* x, index_t n) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < n) x[j] = -x[j];
}

void* grow(void*& p, std::size_t& size, std::size_t bytes) {
  if (bytes > size) {
    if (p) PARRAY_CUDA_CHECK(cudaFree(p));
    p = nullptr, size = 0;
    PARRAY_CUDA_CHECK(cudaMalloc(&p, bytes));
    size = bytes;
  }
  return p;
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <int P>
void launch_fused(const float* base, index_t n, index_t d, const float* query, bool l2, float* dist, index_t* idx) {
  const bool vec = d % 4 == 0 && aligned16(base) && aligned16(query);
  fused_dist_sort<P><<<1, P / 4>>>(base, n, d, query, l2, vec, dist, idx);
}

}  // namespace

void distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                             float* distances, index_t* indices) {
  KnnOptions o;
  o.k = n;
  check_knn_problem(n, 1, d, o);
  if (n >= (index_t(1) << 31)) throw Error("GPU dist: N >= 2^31 vectors");
  const bool l2 = metric == Metric::l2;
  if (n <= 4096) {
    if (n <= 128) launch_fused<128>(base, n, d, query, l2, distances, indices);
    else if (n <= 256) launch_fused<256>(base, n, d, query, l2, distances, indices);
    else if (n <= 512) launch_fused<512>(base, n, d, query, l2, distances, indices);
    else if (n <= 1024) launch_fused<1024>(base, n, d, query, l2, distances, indices);
    else if (n <= 2048) launch_fused<2048>(base, n, d, query, l2, distances, indices);
    else launch_fused<4096>(base, n, d, query, l2, distances, indices);
    PARRAY_CUDA_CHECK_LAUNCH();
    return;
  }
  static void *keys = nullptr, *idx_in = nullptr, *temp = nullptr;
  static std::size_t keys_size = 0, idx_size = 0, temp_size = 0;
  float* k_in = static_cast<float*>(grow(keys, keys_size, std::size_t(n) * sizeof(float)));
  index_t* i_in = static_cast<index_t*>(grow(idx_in, idx_size, std::size_t(n) * sizeof(index_t)));
  dist_keys<<<unsigned((n + 255) / 256), 256>>>(base, n, d, query, l2, k_in, i_in);
  PARRAY_CUDA_CHECK_LAUNCH();
  std::size_t need = 0;
  PARRAY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, need, k_in, distances, i_in, indices, n));
  void* t = grow(temp, temp_size, need);
  PARRAY_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(t, need, k_in, distances, i_in, indices, n));
  if (!l2) {
    negate<<<unsigned((n + 255) / 256), 256>>>(distances, n);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
}

DistCallTiming time_distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                                            float* distances, index_t* indices, int calls) {
  if (calls < 1) throw Error("GPU dist timing: calls = " + std::to_string(calls) + " (need >= 1)");
  auto call = [&] { distances_sorted_device(base, n, d, query, metric, distances, indices); };
  for (int i = 0; i < 10; ++i) call();  // warm-up: module load, clocks
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  DistCallTiming t;
  t.calls = calls;
  // (1) Throughput: CUDA events around `calls` back-to-back calls, launches
  // included (PyTorch's per-call figure is measured the same way).
  cudaEvent_t start, stop;
  PARRAY_CUDA_CHECK(cudaEventCreate(&start));
  PARRAY_CUDA_CHECK(cudaEventCreate(&stop));
  PARRAY_CUDA_CHECK(cudaEventRecord(start));
  for (int i = 0; i < calls; ++i) call();
  PARRAY_CUDA_CHECK(cudaEventRecord(stop));
  PARRAY_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  PARRAY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  t.back_to_back_us = double(ms) * 1e3 / calls;
  // (2) Latency: one call, then wait for it (host steady clock), median.
  std::vector<double> us;
  for (int i = 0; i < std::min(calls, 2000); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  t.single_sync_us = us[us.size() / 2];
  // (3) The kernel alone, once, between events (what the GPU spends).
  PARRAY_CUDA_CHECK(cudaEventRecord(start));
  call();
  PARRAY_CUDA_CHECK(cudaEventRecord(stop));
  PARRAY_CUDA_CHECK(cudaEventSynchronize(stop));
  PARRAY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  t.single_event_us = double(ms) * 1e3;
  PARRAY_CUDA_CHECK(cudaEventDestroy(start));
  PARRAY_CUDA_CHECK(cudaEventDestroy(stop));
  return t;
}

}  // namespace parray::cuda
