// GEMV step 7: several vectors at once — C = alpha A B + beta C where B has
// at most 8 columns (or, transposed, A at most 8 rows): a GEMM that is a few
// GEMVs sharing A. The tile kernels spend a 64- or 128-wide tile on 1-8
// columns and run far below the bandwidth of reading A once; this reads A
// once, at step 6's bandwidth, and keeps the NV columns' sums in registers.
//
//  * few_vectors_rows (A along k: A(i, k) = a[i * lda + k]): a warp takes 4
//    rows, its lanes 16 bytes of each row per step, B's 4 x NV values for
//    those k read once and used for the 4 rows; the lanes' sums are added by
//    shuffles at the end;
//  * few_vectors_cols (A along m: A(i, k) = a[i + k * lda]): a thread takes
//    kVec consecutive rows (one 16-byte load per k), the warp's lanes share
//    each k, so B(k, j) is one broadcast load.
//
// Where the rows are too few to fill the GPU, K is cut into slices (grid.y);
// each slice's sums go to a workspace and the last block to finish adds them
// in slice order (deterministic), as in step 6.
#pragma once

#include "05_tuned.cuh"

namespace parray::cuda::gemv_kernels {

// Where the few-vector kernels write: C (strided) directly, or a slice's
// partial sums (part[(slice * m + i) * NV + j]).
struct FewOut {
  float* c;
  index_t n;  // C's columns (<= NV; the kernels' last NV - n columns are padding)
  index_t rsc, csc;
  float alpha, beta;
  float* part;       // with slices > 1
  unsigned* ticket;  // with slices > 1
};

template <int NV>
__device__ __forceinline__ void few_store(const FewOut& o, index_t m, index_t i, int j, float s) {
  if (gridDim.y == 1) {
    float& c = o.c[i * o.rsc + j * o.csc];
    c = o.beta == 0.f ? o.alpha * s : o.alpha * s + o.beta * c;
  } else {
    o.part[(index_t(blockIdx.y) * m + i) * NV + j] = s;
  }
}

// The last block of a sliced launch adds the slices in order into C.
template <int NV>
__device__ __forceinline__ void few_last_block(const FewOut& o, index_t m) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(o.ticket, 1u) == gridDim.x * gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int slices = int(gridDim.y);
  for (index_t e = threadIdx.x; e < m * NV; e += blockDim.x) {
    if (e % NV >= o.n) continue;  // a padding column: C has none there
    float s = 0.f;
    for (int q = 0; q < slices; ++q) s += __ldcg(o.part + index_t(q) * m * NV + e);
    float& c = o.c[(e / NV) * o.rsc + (e % NV) * o.csc];
    c = o.beta == 0.f ? o.alpha * s : o.alpha * s + o.beta * c;
  }
  if (threadIdx.x == 0) *o.ticket = 0;
}

// A along k. Slice blockIdx.y covers k in [kb, ke), kb a multiple of kVec.
template <int NV, int kVec>
__global__ void __launch_bounds__(256) few_vectors_rows(index_t m, index_t n_cols, index_t k, const float* __restrict__ a,
                                                        index_t lda, const float* __restrict__ b, index_t rsb,
                                                        index_t csb, index_t k_per_slice, FewOut out) {
  constexpr int kRows = 4;
  constexpr index_t kStep = 32 * kVec;
  const int lane = threadIdx.x % 32;
  const index_t kb = index_t(blockIdx.y) * k_per_slice, ke = kb + k_per_slice < k ? kb + k_per_slice : k;
  const index_t warps = index_t(gridDim.x) * 8;
  for (index_t i0 = (index_t(blockIdx.x) * 8 + threadIdx.x / 32) * kRows; i0 < m; i0 += warps * kRows) {
    float acc[kRows][NV] = {};
    const float* rows[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) rows[r] = a + (i0 + r < m ? i0 + r : i0) * lda;
    const index_t kv = kb + (ke - kb) / kStep * kStep;
    for (index_t kk = kb + lane * kVec; kk < kv; kk += kStep) {
      float av[kRows][kVec], bv[kVec][NV];
#pragma unroll
      for (int r = 0; r < kRows; ++r) load_vec<float, kVec>(rows[r] + kk, av[r]);
#pragma unroll
      for (int e = 0; e < kVec; ++e)
#pragma unroll
        for (int j = 0; j < NV; ++j) bv[e][j] = j < n_cols ? __ldg(b + (kk + e) * rsb + j * csb) : 0.f;
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int e = 0; e < kVec; ++e)
#pragma unroll
          for (int j = 0; j < NV; ++j) acc[r][j] += av[r][e] * bv[e][j];
    }
    for (index_t kk = kv + lane; kk < ke; kk += 32)  // the slice's tail
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const float bj = j < n_cols ? b[kk * rsb + j * csb] : 0.f;
#pragma unroll
        for (int r = 0; r < kRows; ++r) acc[r][j] += rows[r][kk] * bj;
      }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        float s = acc[r][j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == (r * NV + j) % 32 && i0 + r < m && j < n_cols) few_store<NV>(out, m, i0 + r, j, s);
      }
  }
  if (gridDim.y > 1) few_last_block<NV>(out, m);
}

// A along m. Thread t of the grid takes rows [t * kVec, t * kVec + kVec).
template <int NV, int kVec>
__global__ void __launch_bounds__(256) few_vectors_cols(index_t m, index_t n_cols, index_t k, const float* __restrict__ a,
                                                        index_t lda, const float* __restrict__ b, index_t rsb,
                                                        index_t csb, index_t k_per_slice, FewOut out) {
  constexpr int kUnroll = 4;
  const index_t kb = index_t(blockIdx.y) * k_per_slice, ke = kb + k_per_slice < k ? kb + k_per_slice : k;
  const index_t i0 = (index_t(blockIdx.x) * 256 + threadIdx.x) * kVec;
  float acc[kVec][NV] = {};
  if (i0 + kVec <= m) {
    index_t kk = kb;
    for (; kk + kUnroll <= ke; kk += kUnroll) {
      float av[kUnroll][kVec];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) load_vec<float, kVec>(a + (kk + u) * lda + i0, av[u]);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          const float bj = j < n_cols ? __ldg(b + (kk + u) * rsb + j * csb) : 0.f;
#pragma unroll
          for (int e = 0; e < kVec; ++e) acc[e][j] += av[u][e] * bj;
        }
    }
    for (; kk < ke; ++kk) {
      float av[kVec];
      load_vec<float, kVec>(a + kk * lda + i0, av);
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const float bj = j < n_cols ? __ldg(b + kk * rsb + j * csb) : 0.f;
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[e][j] += av[e] * bj;
      }
    }
  } else {
    for (index_t kk = kb; kk < ke; ++kk)
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        const float bj = j < n_cols ? b[kk * rsb + j * csb] : 0.f;
        for (int e = 0; e < kVec && i0 + e < m; ++e) acc[e][j] += a[kk * lda + i0 + e] * bj;
      }
  }
#pragma unroll
  for (int e = 0; e < kVec; ++e)
#pragma unroll
    for (int j = 0; j < NV; ++j)
      if (i0 + e < m && j < n_cols) few_store<NV>(out, m, i0 + e, j, acc[e][j]);
  if (gridDim.y > 1) few_last_block<NV>(out, m);
}

}  // namespace parray::cuda::gemv_kernels
