// GEMV step 5: tuned for bandwidth. A GEMV must stream A once at the speed
// of a device copy; steps 1-4 have one 4-byte load per thread in flight.
//
// Row-major A (rows contiguous): warp-cooperative rows. One warp per row;
// each lane loads 16 bytes (float4 / double2) per step and the loop is
// unrolled kUnroll times, so each lane has kUnroll 128-bit loads in flight;
// x is read through the read-only path (L1/L2-resident); a shuffle tree
// reduces the 32 partial sums.
//
// Column-major A (columns contiguous), tuned_cols_whole (the default when
// there is a block for every SM): a block owns 64 rows and walks every
// column, below. Otherwise (few rows) tuned_cols_partial: each thread owns kVec consecutive
// rows (one 128-bit load per column), a block covers 256 * kVec rows, and the
// columns are split into `slices` (grid.y) so that the grid fills the GPU even
// when M is small; each slice writes its partial y to a workspace and a second
// kernel sums the slices in a fixed order (deterministic) and applies
// alpha/beta.
// Alignment fallback: kVec = 1 when the leading dimension or the pointer is
// not 16-byte aligned.
// It runs at the device copy's bandwidth in both layouts (docs/perf-notes.md).
#pragma once

#include "parray/core.hpp"

namespace parray::cuda::gemv_kernels {

template <class T, int kVec>
struct VecOf;
template <> struct VecOf<float, 4> { using type = float4; };
template <> struct VecOf<double, 2> { using type = double2; };

template <class T, int kVec>
__device__ __forceinline__ void load_vec(const T* p, T (&v)[kVec]) {
  if constexpr (kVec == 1) {
    v[0] = __ldg(p);
  } else {
    using V = typename VecOf<T, kVec>::type;
    const V w = __ldg(reinterpret_cast<const V*>(p));
    if constexpr (kVec == 4) v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
    else v[0] = w.x, v[1] = w.y;
  }
}

// One lane's share of row[jb, je) . x[jb, je): the kLanes lanes of a row
// take kVec elements each per step, kUnroll steps' loads in flight; the part
// past the last whole step one element a lane.
template <class T, int kVec, int kUnroll, int kLanes>
__device__ __forceinline__ T row_dot(const T* __restrict__ row, const T* __restrict__ x, index_t jb, index_t je,
                                     int lane) {
  constexpr index_t kStep = index_t(kLanes) * kVec;  // elements the row's lanes read per load
  T acc = 0;
  const index_t nv = jb + (je - jb) / kStep * kStep;  // vectorised part
  index_t j = jb + lane * kVec;
  for (; j + (kUnroll - 1) * kStep < nv; j += kUnroll * kStep) {
    T v[kUnroll][kVec], w[kUnroll][kVec];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) load_vec<T, kVec>(row + j + u * kStep, v[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) load_vec<T, kVec>(x + j + u * kStep, w[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc += v[u][e] * w[u][e];
  }
  for (; j < nv; j += kStep) {
    T v[kVec], w[kVec];
    load_vec<T, kVec>(row + j, v);
    load_vec<T, kVec>(x + j, w);
#pragma unroll
    for (int e = 0; e < kVec; ++e) acc += v[e] * w[e];
  }
  for (index_t t = nv + lane; t < je; t += kLanes) acc += row[t] * x[t];  // tail
  return acc;
}

// One warp per row; rows are blockDim.y apart. A(i, j) = a[i * ld + j].
template <class T, int kVec, int kUnroll>
__global__ void __launch_bounds__(256) tuned_rows(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                  const T* __restrict__ x, T* __restrict__ y, T alpha, T beta) {
  const int lane = threadIdx.x & 31;
  const index_t warps = index_t(gridDim.x) * (blockDim.x / 32);
  for (index_t i = index_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32; i < m; i += warps) {
    T acc = row_dot<T, kVec, kUnroll, 32>(a + i * ld, x, 0, n, lane);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
  }
}

// acc[e] += A(i0 + e, j) x(j) for the columns j = jb, jb + step, ... < je:
// kUnroll 128-bit column loads in flight; rows past m skipped (the last
// block's partial vector).
template <class T, int kVec, int kUnroll>
__device__ __forceinline__ void column_sums(index_t m, const T* __restrict__ a, index_t ld, const T* __restrict__ x,
                                            index_t i0, index_t jb, index_t je, index_t step, T (&acc)[kVec]) {
  if (i0 + kVec <= m) {
    index_t j = jb;
    for (; j + (kUnroll - 1) * step < je; j += kUnroll * step) {
      T v[kUnroll][kVec];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) load_vec<T, kVec>(a + (j + u * step) * ld + i0, v[u]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const T xj = __ldg(x + j + u * step);
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[e] += v[u][e] * xj;
      }
    }
    for (; j < je; j += step) {
      T v[kVec];
      load_vec<T, kVec>(a + j * ld + i0, v);
      const T xj = __ldg(x + j);
#pragma unroll
      for (int e = 0; e < kVec; ++e) acc[e] += v[e] * xj;
    }
  } else {
    for (index_t j = jb; j < je; j += step)
      for (int e = 0; e < kVec && i0 + e < m; ++e) acc[e] += a[j * ld + i0 + e] * x[j];
  }
}

// Column-major partial sums: block (256 threads) x kVec rows, slice blockIdx.y
// of the columns. part[s * m + i] = sum over the slice's columns.
template <class T, int kVec, int kUnroll>
__global__ void __launch_bounds__(256) tuned_cols_partial(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                          const T* __restrict__ x, index_t cols_per_slice,
                                                          T* __restrict__ part) {
  const index_t i0 = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) * kVec;
  const index_t jb = index_t(blockIdx.y) * cols_per_slice;
  const index_t je = jb + cols_per_slice < n ? jb + cols_per_slice : n;
  T acc[kVec] = {};
  column_sums<T, kVec, kUnroll>(m, a, ld, x, i0, jb, je, 1, acc);
  for (int e = 0; e < kVec && i0 + e < m; ++e) part[index_t(blockIdx.y) * m + i0 + e] = acc[e];
}

// A block's kRowLanes * kVec rows from r0 over columns [jb, je) of a
// column-major A: kRowLanes lanes along the rows (one 128-bit load each per
// column) x G = 256 / kRowLanes column groups (group g takes columns jb + g,
// jb + g + G, ...), kUnroll columns in flight per thread; the groups' partial
// sums are added in shared memory in a fixed order. Returns row
// r0 + threadIdx.x's sum to the threads below kRowLanes * kVec.
template <class T, int kVec, int kRowLanes, int kUnroll>
__device__ __forceinline__ T block_column_sums(index_t m, const T* __restrict__ a, index_t ld,
                                               const T* __restrict__ x, index_t r0, index_t jb, index_t je) {
  constexpr int kGroups = 256 / kRowLanes, kRows = kRowLanes * kVec;
  static_assert(256 % kRowLanes == 0 && kRows <= 256, "block shape");
  __shared__ T part[kGroups][kRows];
  const int lane = threadIdx.x % kRowLanes, g = threadIdx.x / kRowLanes;
  T acc[kVec] = {};
  column_sums<T, kVec, kUnroll>(m, a, ld, x, r0 + lane * kVec, jb + g, je, kGroups, acc);
#pragma unroll
  for (int e = 0; e < kVec; ++e) part[g][lane * kVec + e] = acc[e];
  __syncthreads();
  T s = 0;
  if (threadIdx.x < kRows) {
#pragma unroll 8
    for (int q = 0; q < kGroups; ++q) s += part[q][threadIdx.x];
  }
  return s;
}

// Column-major in one kernel: a block (256 threads) owns kRowLanes * kVec
// rows and walks ALL n columns of them (block_column_sums). No workspace and
// no second launch (the split version's reduce pass and launch gap;
// docs/perf-notes.md); needs m large enough that the blocks fill the GPU
// (gemv/01_05_launch.cu chooses). Bounds (256, 4): up to 64 registers — with
// no minimum, nvcc 13's ptxas held it to 32 and spilled the loads in flight.
template <class T, int kVec, int kRowLanes, int kUnroll>
__global__ void __launch_bounds__(256, 4) tuned_cols_whole(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                        const T* __restrict__ x, T* __restrict__ y, T alpha,
                                                        T beta) {
  const index_t r0 = index_t(blockIdx.x) * (kRowLanes * kVec), i = r0 + threadIdx.x;
  const T s = block_column_sums<T, kVec, kRowLanes, kUnroll>(m, a, ld, x, r0, 0, n);
  if (threadIdx.x < kRowLanes * kVec && i < m) y[i] = beta == T(0) ? alpha * s : alpha * s + beta * y[i];
}

template <class T>
__global__ void __launch_bounds__(256) tuned_cols_reduce(index_t m, int slices, const T* __restrict__ part,
                                                         T* __restrict__ y, T alpha, T beta) {
  const index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  T acc = 0;
  for (int s = 0; s < slices; ++s) acc += part[index_t(s) * m + i];
  y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
}

}  // namespace parray::cuda::gemv_kernels
