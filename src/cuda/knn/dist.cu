// Seed 002 on the GPU: distances from one query to N vectors, sorted, ties
// by index.
//
// N <= 4096 (the seed's case is 1024 x 32): ONE kernel launch. A block of
// 1024 threads computes the N distances directly ((q - x)^2 summed, or -q.x
// for IP) into shared memory and bitonic-sorts the (key, index) pairs there,
// then writes them out: no intermediate arrays, no second launch, which is
// what a per-call latency well under PyTorch's ~63 us needs.
// N > 4096: a distance kernel, then CUB's stable radix sort of (key, index)
// pairs (stable, and indices start in order, so ties stay ordered by index).
#include <cub/device/device_radix_sort.cuh>

#include <string>

#include "parray/cuda/check.hpp"
#include "parray/knn.hpp"
#include "select_topk.cuh"

namespace parray::cuda {

namespace {

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

template <int CAP>
__global__ void __launch_bounds__(1024) fused_dist_sort(const float* __restrict__ base, index_t n, index_t d,
                                                        const float* __restrict__ query, bool l2,
                                                        float* __restrict__ dist, index_t* __restrict__ idx) {
  __shared__ Cand buf[CAP];  // (CAP) keys and indices
  for (int j = threadIdx.x; j < n; j += 1024) buf[j] = {key_of(base + j * d, query, d, l2), j};
  knn_kernels::bitonic_sort<CAP, 1024>(buf, int(n));  // pads [n, CAP), syncs first
  for (int j = threadIdx.x; j < n; j += 1024) {
    dist[j] = l2 ? buf[j].key : -buf[j].key;
    idx[j] = buf[j].idx;
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
    PARRAY_CUDA_CHECK(cudaMalloc(&p, bytes));
    size = bytes;
  }
  return p;
}

}  // namespace

void distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                             float* distances, index_t* indices) {
  KnnOptions o;
  o.k = n;
  check_knn_problem(n, 1, d, o);
  if (n >= (index_t(1) << 31)) throw Error("GPU dist: N >= 2^31 vectors");
  const bool l2 = metric == Metric::l2;
  if (n <= 1024) fused_dist_sort<1024><<<1, 1024>>>(base, n, d, query, l2, distances, indices);
  else if (n <= 2048) fused_dist_sort<2048><<<1, 1024>>>(base, n, d, query, l2, distances, indices);
  else if (n <= 4096) fused_dist_sort<4096><<<1, 1024>>>(base, n, d, query, l2, distances, indices);
  if (n <= 4096) {
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

}  // namespace parray::cuda
