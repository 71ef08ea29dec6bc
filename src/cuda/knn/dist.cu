// The GEMV lab report on the GPU: distances from one query to N vectors, sorted, ties
// by index.
//
// N <= 1024 (the lab report's case is 1024 x 32): ONE launch of N / 32 blocks
// that sort by rank. Every block computes all N sort keys (below) into shared
// memory — the base comes from L2 after the first — and places 32 of them: an
// element's place is the number of keys before it, counted by 8 threads over
// an eighth of the keys each. The keys are unique (the index is in them), so
// the places are a permutation, and every block's keys are the same bits.
// Why: one block's sorting network is one SM's work, N log^2 N / 2 steps in
// sequence; the ranks spread N^2 compares over N / 32 SMs with no barrier
// between them.
//
// N <= 4096: ONE kernel launch of P / E
// threads (P = N rounded up to a power of two, at least 128; E elements per
// thread, element i = E * thread + e). Each element is one 64-bit sort key:
// the float key's order-preserving bits above the 32-bit index, so "(key,
// index) before" is one unsigned compare and a compare-exchange is a min and
// a max — ties by index for free (-0 is folded into +0 first). The bitonic
// network is unrolled at compile time (every stride and direction is a
// constant, the keys stay in registers) and runs where the partners are:
//   stride < E:            inside the thread's registers;
//   E <= stride < 32 E:    in the same warp, exchanged with __shfl_xor_sync;
//   stride >= 32 E:        across warps, through shared memory (double
//                          buffered: one barrier per stage).
// Why: a kernel with 4 elements per thread, a runtime loop over the stages
// and (float, index) pairs compared in two steps issues far more
// instructions per thread, from 2 warps per scheduler.
// N > 4096: a distance kernel, then CUB's stable radix sort of (key, index)
// pairs (stable, and indices start in order, so ties stay ordered by index).
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/stream_workspace.hpp"
#include "parray/cuda/check.hpp"
#include "parray/knn.hpp"
#include "parray/tuning.hpp"
#include "select_topk.cuh"

namespace parray::cuda {

namespace {

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

using SortKey = unsigned long long;
constexpr SortKey kPadKey = ~SortKey(0);  // after every real element

// (key, index) as one unsigned integer ordered like (key, index).
__device__ __forceinline__ SortKey sort_key(float key, int index) {
  if (key == 0.f) key = 0.f;  // -0 ties with +0 (by index), as the CPU sort has it
  unsigned u = __float_as_uint(key);
  u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return (SortKey(u) << 32) | unsigned(index);
}
__device__ __forceinline__ float key_part(SortKey v) {
  const unsigned u = unsigned(v >> 32);
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

// Keys of rows first .. first + E - 1 (those < n). vec: d % 4 == 0 and 16-byte
// aligned base and query: 128-bit loads, the t loop unrolled so that several
// loads per row are in flight. The summation order is key_of's.
template <int E>
__device__ __forceinline__ void row_keys(const float* __restrict__ base, index_t n, index_t d,
                                         const float* __restrict__ q, bool l2, bool vec, index_t first,
                                         float (&s)[E]) {
  if (vec) {
    const float* row[E];
#pragma unroll
    for (int e = 0; e < E; ++e) row[e] = base + (first + e < n ? first + e : n - 1) * d;  // clamped: discarded
    const index_t d4 = d / 4;
#pragma unroll 4
    for (index_t t = 0; t < d4; ++t) {
      const float4 q4 = __ldg(reinterpret_cast<const float4*>(q) + t);
#pragma unroll
      for (int e = 0; e < E; ++e) {
        const float4 x4 = __ldg(reinterpret_cast<const float4*>(row[e]) + t);
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
      for (int e = 0; e < E; ++e) s[e] = -s[e];
  } else {
#pragma unroll
    for (int e = 0; e < E; ++e)
      if (first + e < n) s[e] = key_of(base + (first + e) * d, q, d, l2);
  }
}

// The sort keys of all n rows into keys[] by the whole block, 16-byte loads
// (d % 4 == 0, aligned): a warp's lanes 8 to a row, 4 rows a load, so that
// each load reads 512 contiguous bytes (a lane per row instead reads 32 rows
// 4 d bytes apart with every load: the L1 then serves 32 lines per load); a
// warp takes kUnroll such loads of rows at once, so that each waits on the
// memory once, not kUnroll times in turn. Lane c of a row sums the row's
// 16-byte chunks c, c + 8, ... in order, and the 8 partial sums are added by
// xor shuffles, whose pairs are added commutatively: every lane, and every
// block, gets the same bits.
__device__ __forceinline__ void block_keys(const float* __restrict__ base, int n, index_t d,
                                           const float* __restrict__ q, bool l2, SortKey* keys) {
  constexpr int kLanesPerRow = 8, kRowsPerLoad = 32 / kLanesPerRow, kUnroll = 4;
  const int lane = int(threadIdx.x) % 32, c = lane % kLanesPerRow;
  const int step = int(blockDim.x) / 32 * kRowsPerLoad;  // rows of one load of every warp
  const float4* q4 = reinterpret_cast<const float4*>(q);
  const index_t d4 = d / 4;
  for (int r0 = int(threadIdx.x) / 32 * kRowsPerLoad; r0 < n; r0 += kUnroll * step) {  // warp-uniform
    const float4* x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int row = r0 + u * step + lane / kLanesPerRow;
      x[u] = reinterpret_cast<const float4*>(base + index_t(row < n ? row : n - 1) * d);
    }
    float s[kUnroll] = {};
    for (index_t t = c; t < d4; t += kLanesPerRow) {
      const float4 a = __ldg(q4 + t);
      float4 b[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) b[u] = __ldg(x[u] + t);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (l2) {
          const float e = a.x - b[u].x, f = a.y - b[u].y, g = a.z - b[u].z, h = a.w - b[u].w;
          s[u] += e * e, s[u] += f * f, s[u] += g * g, s[u] += h * h;
        } else {
          s[u] += a.x * b[u].x, s[u] += a.y * b[u].y, s[u] += a.z * b[u].z, s[u] += a.w * b[u].w;
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int o = 1; o < kLanesPerRow; o <<= 1) s[u] += __shfl_xor_sync(0xffffffffu, s[u], o);
      const int row = r0 + u * step + lane / kLanesPerRow;
      if (c == 0 && row < n) keys[row] = sort_key(l2 ? s[u] : -s[u], row);
    }
  }
}

__device__ __forceinline__ SortKey key_min(SortKey a, SortKey b) { return a < b ? a : b; }
__device__ __forceinline__ SortKey key_max(SortKey a, SortKey b) { return a < b ? b : a; }

template <int P, int E>
__global__ void __launch_bounds__(P / E) fused_dist_sort(const float* __restrict__ base, index_t n, index_t d,
                                                         const float* __restrict__ query, bool l2, bool vec,
                                                         float* __restrict__ dist, index_t* __restrict__ idx) {
  constexpr int kWarpSpan = 32 * E;    // elements per warp
  constexpr bool kDouble = P <= 2048;  // two exchange buffers fit the 48 KiB of static shared memory
  constexpr int kLogP = __builtin_ctz(P);
  __shared__ SortKey xbuf[kDouble ? 2 * P : P];
  const int first = E * int(threadIdx.x);
  SortKey v[E];
  {
    float s[E] = {};
    if (first < n) row_keys<E>(base, n, d, query, l2, vec, first, s);
#pragma unroll
    for (int e = 0; e < E; ++e) v[e] = first + e < n ? sort_key(s[e], first + e) : kPadKey;
  }
  int parity = 0;
#pragma unroll
  for (int lw = 1; lw <= kLogP; ++lw) {
    const int width = 1 << lw;
#pragma unroll
    for (int ls = lw - 1; ls >= 0; --ls) {
      const int stride = 1 << ls;
      if (stride >= kWarpSpan) {  // across warps: through shared memory
        SortKey* b = xbuf + (kDouble ? parity * P : 0);
        if (!kDouble) __syncthreads();  // the previous stage's reads are done
#pragma unroll
        for (int e = 0; e < E; ++e) b[first + e] = v[e];
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const SortKey y = b[(first + e) ^ stride];
          const bool take_min = ((first & stride) == 0) == ((first & width) == 0);
          v[e] = take_min ? key_min(v[e], y) : key_max(v[e], y);
        }
        parity ^= 1;
      } else if (stride >= E) {  // same warp: lane ^ (stride / E) holds the partner
        const bool take_min = ((first & stride) == 0) == ((first & width) == 0);
#pragma unroll
        for (int e = 0; e < E; ++e) {
          const SortKey y = __shfl_xor_sync(0xffffffffu, v[e], stride / E);
          v[e] = take_min ? key_min(v[e], y) : key_max(v[e], y);
        }
      } else {  // both elements are this thread's
#pragma unroll
        for (int e = 0; e < E; ++e) {
          if (e & stride) continue;
          const bool ascending = ((first + e) & width) == 0;
          const SortKey lo = key_min(v[e], v[e + stride]), hi = key_max(v[e], v[e + stride]);
          v[e] = ascending ? lo : hi;
          v[e + stride] = ascending ? hi : lo;
        }
      }
    }
  }
#pragma unroll
  for (int e = 0; e < E; ++e)
    if (first + e < n) {
      const float key = key_part(v[e]);
      dist[first + e] = l2 ? key : -key;
      idx[first + e] = index_t(unsigned(v[e] & 0xffffffffu));
    }
}

// Sort by rank (N <= kRankMaxN): the keys of all N rows in every block, then
// each of the block's kRankPerBlock elements placed by kRankThreads threads.
constexpr int kRankMaxN = 1024, kRankPerBlock = 32, kRankThreads = 8;

__global__ void __launch_bounds__(kRankPerBlock * kRankThreads)
    ranked_dist(const float* __restrict__ base, index_t n, index_t d, const float* __restrict__ query, bool l2,
                bool vec, float* __restrict__ dist, index_t* __restrict__ idx) {
  constexpr int kThreads = kRankPerBlock * kRankThreads, kRows = 4;
  static_assert(kThreads * kRows >= kRankMaxN, "one pass computes every key");
  __shared__ SortKey keys[kRankMaxN];
  const int first = kRows * int(threadIdx.x);
  if (vec) {
    block_keys(base, int(n), d, query, l2, keys);
  } else if (first < n) {
    float s[kRows] = {};
    row_keys<kRows>(base, n, d, query, l2, vec, first, s);
#pragma unroll
    for (int e = 0; e < kRows; ++e)
      if (first + e < n) keys[first + e] = sort_key(s[e], first + e);
  }
  __syncthreads();
  const int elem = int(blockIdx.x) * kRankPerBlock + int(threadIdx.x) / kRankThreads;
  const int part = int(threadIdx.x) % kRankThreads;
  const SortKey mine = elem < n ? keys[elem] : kPadKey;
  unsigned before = 0;
  for (int j = part; j < n; j += kRankThreads) before += keys[j] < mine ? 1u : 0u;
#pragma unroll
  for (int o = 1; o < kRankThreads; o <<= 1) before += __shfl_xor_sync(0xffffffffu, before, o);
  if (part == 0 && elem < n) {
    const float key = key_part(mine);
    dist[before] = l2 ? key : -key;
    idx[before] = index_t(elem);
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

// The sort path's buffers: per host thread and device, a use on another
// stream than the last one's waiting for it (common/stream_workspace.hpp).
struct SortBuffers {
  StreamOrder order;
  StreamBuffer keys, idx_in, temp;
};
SortBuffers& sort_buffers_here() { return per_thread_on_device<SortBuffers>(); }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Elements per thread: 2 (measured against 1 and 4), but at least P / 1024
// (a block has <= 1024 threads) and at most P / 32 (one warp).
int elems_per_thread(int p) {
  constexpr int kElems = 2;
  return std::min(std::max(kElems, p / 1024), p / 32);
}

template <int P, int E>
void launch_fused_e(cudaStream_t s, const float* base, index_t n, index_t d, const float* query, bool l2, bool vec,
                    float* dist, index_t* idx) {
  if constexpr (P / E <= 1024 && P / E >= 32) {
    fused_dist_sort<P, E><<<1, P / E, 0, s>>>(base, n, d, query, l2, vec, dist, idx);
  } else {
    throw Error("GPU dist: no kernel for P = " + std::to_string(P) + ", E = " + std::to_string(E));
  }
}

template <int P>
void launch_fused(cudaStream_t s, const float* base, index_t n, index_t d, const float* query, bool l2, bool vec,
                  float* dist, index_t* idx) {
  switch (elems_per_thread(P)) {
    case 1: launch_fused_e<P, 1>(s, base, n, d, query, l2, vec, dist, idx); break;
    case 2: launch_fused_e<P, 2>(s, base, n, d, query, l2, vec, dist, idx); break;
    default: launch_fused_e<P, 4>(s, base, n, d, query, l2, vec, dist, idx); break;
  }
}

}  // namespace

void distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                             float* distances, index_t* indices, GpuStream stream) {
  const cudaStream_t s = on_stream(stream);
  KnnOptions o;
  o.k = n;
  check_knn_problem(n, 1, d, o);
  if (n >= (index_t(1) << 31)) throw Error("GPU dist: N >= 2^31 vectors");
  const bool l2 = metric == Metric::l2;
  // 128-bit loads where every row and the query are 16-byte aligned
  const bool vec = d % 4 == 0 && aligned16(base) && aligned16(query);
  if (n <= kRankMaxN && gpu_tuning().dist_rank != Choice::off) {
    ranked_dist<<<unsigned((n + kRankPerBlock - 1) / kRankPerBlock), kRankPerBlock * kRankThreads, 0, s>>>(
        base, n, d, query, l2, vec, distances, indices);
    PARRAY_CUDA_CHECK_LAUNCH();
    return;
  }
  if (n <= 4096) {
    if (n <= 128) launch_fused<128>(s, base, n, d, query, l2, vec, distances, indices);
    else if (n <= 256) launch_fused<256>(s, base, n, d, query, l2, vec, distances, indices);
    else if (n <= 512) launch_fused<512>(s, base, n, d, query, l2, vec, distances, indices);
    else if (n <= 1024) launch_fused<1024>(s, base, n, d, query, l2, vec, distances, indices);
    else if (n <= 2048) launch_fused<2048>(s, base, n, d, query, l2, vec, distances, indices);
    else launch_fused<4096>(s, base, n, d, query, l2, vec, distances, indices);
    PARRAY_CUDA_CHECK_LAUNCH();
    return;
  }
  SortBuffers& w = sort_buffers_here();
  float* k_in = static_cast<float*>(w.keys.get(std::size_t(n) * sizeof(float), s, w.order, false));
  index_t* i_in = static_cast<index_t*>(w.idx_in.get(std::size_t(n) * sizeof(index_t), s, w.order, false));
  dist_keys<<<unsigned((n + 255) / 256), 256, 0, s>>>(base, n, d, query, l2, k_in, i_in);
  PARRAY_CUDA_CHECK_LAUNCH();
  std::size_t need = 0;
  PARRAY_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(nullptr, need, k_in, distances, i_in, indices, n, 0, int(sizeof(float) * 8), s));
  void* t = w.temp.get(std::max<std::size_t>(need, 1), s, w.order, false);
  PARRAY_CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(t, need, k_in, distances, i_in, indices, n, 0, int(sizeof(float) * 8), s));
  w.order.leave(s);
  if (!l2) {
    negate<<<unsigned((n + 255) / 256), 256, 0, s>>>(distances, n);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
}

DistCallTiming time_distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                                            float* distances, index_t* indices, int calls) {
  if (calls < 1) throw Error("GPU dist timing: calls = " + std::to_string(calls) + " (need >= 1)");
  auto call = [&] { distances_sorted_device(base, n, d, query, metric, distances, indices); };
  const cudaStream_t s = cudaStreamPerThread;  // the calls' stream
  for (int i = 0; i < 10; ++i) call();  // warm-up: module load, clocks
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
  DistCallTiming t;
  t.calls = calls;
  // (1) Throughput: CUDA events around `calls` back-to-back calls, launches
  // included (PyTorch's per-call figure is measured the same way).
  cudaEvent_t start, stop;
  PARRAY_CUDA_CHECK(cudaEventCreate(&start));
  PARRAY_CUDA_CHECK(cudaEventCreate(&stop));
  PARRAY_CUDA_CHECK(cudaEventRecord(start, s));
  for (int i = 0; i < calls; ++i) call();
  PARRAY_CUDA_CHECK(cudaEventRecord(stop, s));
  PARRAY_CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  PARRAY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  t.back_to_back_us = double(ms) * 1e3 / calls;
  // (2) Latency: one call, then wait for it (host steady clock), median.
  std::vector<double> us;
  for (int i = 0; i < std::min(calls, 2000); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  t.single_sync_us = us[us.size() / 2];
  // (3) The kernel alone, once, between events (what the GPU spends).
  PARRAY_CUDA_CHECK(cudaEventRecord(start, s));
  call();
  PARRAY_CUDA_CHECK(cudaEventRecord(stop, s));
  PARRAY_CUDA_CHECK(cudaEventSynchronize(stop));
  PARRAY_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  t.single_event_us = double(ms) * 1e3;
  PARRAY_CUDA_CHECK(cudaEventDestroy(start));
  PARRAY_CUDA_CHECK(cudaEventDestroy(stop));
  return t;
}

}  // namespace parray::cuda
