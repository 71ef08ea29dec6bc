// GEMV step 7: several vectors at once — C = alpha A B + beta C where B has
// at most 8 columns (or, transposed, A at most 8 rows): a GEMM that is a few
// GEMVs sharing A. The tile kernels spend a 64- or 128-wide tile on 1-8
// columns and run far below the bandwidth of reading A once; this reads A
// once, at step 6's bandwidth, and keeps the NV columns' sums in registers.
// FP32 and FP64 alike (16-byte loads: 4 floats or 2 doubles).
//
//  * B is staged in shared memory a chunk of kChunk k at a time, 4 k's NV
//    values side by side (a lane's 4 x NV values are whole 16-byte loads) and
//    each group padded to an odd number of 16-byte units (no bank conflict);
//    read from global memory per lane instead, B's scattered loads outnumber
//    A's coalesced ones by 8 to 1 and the L1 becomes the limit;
//  * few_vectors_rows (A along k: A(i, k) = a[i * lda + k]): a warp takes 4
//    rows, its lanes 16 bytes of each row per step; the lanes' sums are
//    added by shuffles at the end;
//  * few_vectors_cols (A along m: A(i, k) = a[i + k * lda]): a thread takes
//    kVec consecutive rows (one 16-byte load per k), every lane reads the
//    same B values (a shared-memory broadcast); where the rows are few,
//    groups of a block's threads split each chunk's k's.
//
// Where the rows are too few to fill the GPU, K is cut into slices (grid.y);
// each slice's sums go to a workspace and, per block of rows, the last of
// its slices to finish adds them in slice order (deterministic): the sum is
// spread over the row blocks, not left to one block.
#pragma once

#include "05_tuned.cuh"

namespace parray::cuda::gemv_kernels {

// Where the few-vector kernels write: C (strided) directly, or a slice's
// partial sums (part[(slice * m + i) * NV + j]). T: float or double.
template <class T>
struct FewOut {
  T* c;
  index_t n;  // C's columns (<= NV; the kernels' last NV - n columns are padding)
  index_t rsc, csc;
  T alpha, beta;
  T* part;           // with slices > 1
  unsigned* ticket;  // with slices > 1: one per block of rows (blockIdx.x)
};

// Values of T in a 16-byte unit, and the unit's load from shared memory.
template <class T>
constexpr int kFewUnit = 16 / int(sizeof(T));
__device__ __forceinline__ void few_unit(const float* p, float (&v)[4]) {
  const float4 w = *reinterpret_cast<const float4*>(p);
  v[0] = w.x, v[1] = w.y, v[2] = w.z, v[3] = w.w;
}
__device__ __forceinline__ void few_unit(const double* p, double (&v)[2]) {
  const double2 w = *reinterpret_cast<const double2*>(p);
  v[0] = w.x, v[1] = w.y;
}

// k's a block stages of B at a time, and the shared values that takes: 4
// k's NV values per group, the group padded to an odd count of 16-byte units.
constexpr int kFewChunk = 512;
template <class T, int NV>
constexpr int few_group_values() {
  constexpr int units = 4 * NV / kFewUnit<T>;
  return (units % 2 == 0 ? units + 1 : units) * kFewUnit<T>;
}
template <class T, int NV>
constexpr int few_stage_values() {
  return kFewChunk / 4 * few_group_values<T, NV>();
}

// B(k, j) for k in [c0, c1) into bs, zero past c1 and past n_cols (so the
// padded columns add nothing). Along B's unit stride where it has one.
template <class T, int NV>
__device__ __forceinline__ void few_stage_b(T* bs, const T* __restrict__ b, index_t rsb, index_t csb, index_t n_cols,
                                            index_t c0, index_t c1) {
  constexpr int G = few_group_values<T, NV>();
  const bool k_fastest = rsb == 1 && csb != 1;
  for (int e = threadIdx.x; e < kFewChunk * NV; e += blockDim.x) {
    const int kl = k_fastest ? e % kFewChunk : e / NV, j = k_fastest ? e / kFewChunk : e % NV;
    const index_t k = c0 + kl;
    bs[(kl / 4) * G + (kl % 4) * NV + j] = k < c1 && j < n_cols ? __ldg(b + k * rsb + j * csb) : T(0);
  }
}

// The 4 x NV staged values of the 4 k's from local k `kl` (a multiple of 4).
template <class T, int NV>
__device__ __forceinline__ void few_read4(const T* bs, int kl, T (&bv)[4][NV]) {
  constexpr int U = kFewUnit<T>;
  const T* g = bs + (kl / 4) * few_group_values<T, NV>();
#pragma unroll
  for (int q = 0; q < 4 * NV / U; ++q) {
    T f[U];
    few_unit(g + q * U, f);
#pragma unroll
    for (int t = 0; t < U; ++t) bv[(U * q + t) / NV][(U * q + t) % NV] = f[t];
  }
}

// The NV staged values of local k `kl` (NV a multiple of a unit's values).
template <class T, int NV>
__device__ __forceinline__ void few_read1(const T* bs, int kl, T (&v)[NV]) {
  constexpr int U = kFewUnit<T>;
  const T* g = bs + (kl / 4) * few_group_values<T, NV>() + (kl % 4) * NV;
#pragma unroll
  for (int q = 0; q < NV / U; ++q) {
    T f[U];
    few_unit(g + q * U, f);
#pragma unroll
    for (int t = 0; t < U; ++t) v[U * q + t] = f[t];
  }
}

template <class T, int NV>
__device__ __forceinline__ T few_at(const T* bs, int kl, int j) {
  return bs[(kl / 4) * few_group_values<T, NV>() + (kl % 4) * NV + j];
}

template <class T, int NV>
__device__ __forceinline__ void few_store(const FewOut<T>& o, index_t m, index_t i, int j, T s) {
  if (gridDim.y == 1) {
    T& c = o.c[i * o.rsc + j * o.csc];
    c = o.beta == T(0) ? o.alpha * s : o.alpha * s + o.beta * c;
  } else {
    o.part[(index_t(blockIdx.y) * m + i) * NV + j] = s;
  }
}

// The last of a row block's slices adds the slices of rows [r0, r1) in order
// into C. A sliced grid has one block per row block (no grid stride).
template <class T, int NV>
__device__ __forceinline__ void few_last_block(const FewOut<T>& o, index_t m, index_t r0, index_t r1) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(o.ticket + blockIdx.x, 1u) == gridDim.y - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  const int slices = int(gridDim.y);
  r1 = r1 < m ? r1 : m;
  for (index_t e = r0 * NV + threadIdx.x; e < r1 * NV; e += blockDim.x) {
    if (e % NV >= o.n) continue;  // a padding column: C has none there
    T s = 0;
#pragma unroll 8
    for (int q = 0; q < slices; ++q) s += __ldcg(o.part + index_t(q) * m * NV + e);
    T& c = o.c[(e / NV) * o.rsc + (e % NV) * o.csc];
    c = o.beta == T(0) ? o.alpha * s : o.alpha * s + o.beta * c;
  }
  if (threadIdx.x == 0) o.ticket[blockIdx.x] = 0;
}

// A along k: a block of 8 warps takes 32 rows (grid stride over blocks of
// rows), a warp 4 of them. Slice blockIdx.y covers k in [kb, ke), kb a
// multiple of kVec.
template <class T, int NV, int kVec>
__global__ void __launch_bounds__(256) few_vectors_rows(index_t m, index_t n_cols, index_t k, const T* __restrict__ a,
                                                        index_t lda, const T* __restrict__ b, index_t rsb, index_t csb,
                                                        index_t k_per_slice, FewOut<T> out) {
  constexpr int kRows = 4, kBlockRows = 8 * kRows;
  __shared__ __align__(16) T bs[few_stage_values<T, NV>()];
  const int lane = threadIdx.x % 32;
  const index_t kb = index_t(blockIdx.y) * k_per_slice, ke = kb + k_per_slice < k ? kb + k_per_slice : k;
  for (index_t r0 = index_t(blockIdx.x) * kBlockRows; r0 < m; r0 += index_t(gridDim.x) * kBlockRows) {
    const index_t i0 = r0 + threadIdx.x / 32 * kRows;
    T acc[kRows][NV] = {};
    const T* rows[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) rows[r] = a + (i0 + r < m ? i0 + r : m - 1) * lda;
    for (index_t c0 = kb; c0 < ke; c0 += kFewChunk) {
      const index_t c1 = c0 + kFewChunk < ke ? c0 + kFewChunk : ke;
      __syncthreads();  // the last chunk's readers are done
      few_stage_b<T, NV>(bs, b, rsb, csb, n_cols, c0, c1);
      __syncthreads();
      index_t kk = c0 + lane * kVec;
      for (; kk + kVec <= c1; kk += 32 * kVec) {
        T av[kRows][kVec];
#pragma unroll
        for (int r = 0; r < kRows; ++r) load_vec<T, kVec>(rows[r] + kk, av[r]);
        if constexpr (kVec > 1 && NV % kFewUnit<T> == 0) {  // one k's values at a time: fewer registers
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            T bv[NV];
            few_read1<T, NV>(bs, int(kk - c0) + e, bv);
#pragma unroll
            for (int r = 0; r < kRows; ++r)
#pragma unroll
              for (int j = 0; j < NV; ++j) acc[r][j] += av[r][e] * bv[j];
          }
        } else if constexpr (kVec == 4) {
          T bv[4][NV];
          few_read4<T, NV>(bs, int(kk - c0), bv);
#pragma unroll
          for (int r = 0; r < kRows; ++r)
#pragma unroll
            for (int e = 0; e < 4; ++e)
#pragma unroll
              for (int j = 0; j < NV; ++j) acc[r][j] += av[r][e] * bv[e][j];
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e)
#pragma unroll
            for (int j = 0; j < NV; ++j) {
              const T bj = few_at<T, NV>(bs, int(kk - c0) + e, j);
#pragma unroll
              for (int r = 0; r < kRows; ++r) acc[r][j] += av[r][e] * bj;
            }
        }
      }
      for (kk = c0 + (c1 - c0) / kVec * kVec + lane; kk < c1; kk += 32)  // fewer than kVec k's left
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          const T bj = few_at<T, NV>(bs, int(kk - c0), j);
#pragma unroll
          for (int r = 0; r < kRows; ++r) acc[r][j] += rows[r][kk] * bj;
        }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < NV; ++j) {
        T s = acc[r][j];
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == (r * NV + j) % 32 && i0 + r < m && j < n_cols) few_store<T, NV>(out, m, i0 + r, j, s);
      }
  }
  if (gridDim.y > 1)
    few_last_block<T, NV>(out, m, index_t(blockIdx.x) * kBlockRows, index_t(blockIdx.x + 1) * kBlockRows);
}

// A along m: a block's 256 threads form `groups` groups (1, 2, 4, 8 or 16)
// of 256 / groups threads; thread t of every group takes the block's rows
// [t * kVec, t * kVec + kVec), group g the 4-k units g, g + groups, ... of
// each staged chunk. Where the rows are few, the groups give each row several
// threads' loads in flight instead of one thread's chain of them (a row's
// kVec values are one 16-byte load a k). At the end the groups' sums meet in
// shared memory, added in group order (deterministic), and the block stores
// its rows' sums with consecutive threads on consecutive values.
template <class T, int NV, int kVec>
__global__ void __launch_bounds__(256) few_vectors_cols(index_t m, index_t n_cols, index_t k, const T* __restrict__ a,
                                                        index_t lda, const T* __restrict__ b, index_t rsb, index_t csb,
                                                        index_t k_per_slice, int groups, FewOut<T> out) {
  constexpr int kStage = few_stage_values<T, NV>(), kSums = 256 * kVec * NV;
  __shared__ __align__(16) T smem[kStage > kSums ? kStage : kSums];
  T* bs = smem;
  const int group_threads = 256 / groups, g = int(threadIdx.x) / group_threads, t = int(threadIdx.x) % group_threads;
  const int block_rows = group_threads * kVec;
  const index_t r0 = index_t(blockIdx.x) * block_rows, i0 = r0 + index_t(t) * kVec;
  const index_t kb = index_t(blockIdx.y) * k_per_slice, ke = kb + k_per_slice < k ? kb + k_per_slice : k;
  const bool whole = i0 + kVec <= m;
  T acc[kVec][NV] = {};
  for (index_t c0 = kb; c0 < ke; c0 += kFewChunk) {
    const index_t c1 = c0 + kFewChunk < ke ? c0 + kFewChunk : ke;
    __syncthreads();
    few_stage_b<T, NV>(bs, b, rsb, csb, n_cols, c0, c1);
    __syncthreads();
    for (index_t kk = c0 + 4 * g; kk < c1; kk += 4 * groups) {
      if (whole && kk + 4 <= c1) {
        T av[4][kVec];
#pragma unroll
        for (int u = 0; u < 4; ++u) load_vec<T, kVec>(a + (kk + u) * lda + i0, av[u]);
        T bv[4][NV];  // kk - c0 a multiple of 4
        few_read4<T, NV>(bs, int(kk - c0), bv);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int j = 0; j < NV; ++j)
#pragma unroll
            for (int e = 0; e < kVec; ++e) acc[e][j] += av[u][e] * bv[u][j];
      } else {  // the last rows, or fewer than 4 k's left
        for (index_t q = kk; q < kk + 4 && q < c1; ++q)
#pragma unroll
          for (int j = 0; j < NV; ++j) {
            const T bj = few_at<T, NV>(bs, int(q - c0), j);
#pragma unroll
            for (int e = 0; e < kVec; ++e)
              if (i0 + e < m) acc[e][j] += a[q * lda + i0 + e] * bj;
          }
      }
    }
  }
  __syncthreads();  // every group is done with the staged B: the sums take its place
  T* sums = smem;
  const int block_values = block_rows * NV;
#pragma unroll
  for (int e = 0; e < kVec; ++e)
#pragma unroll
    for (int j = 0; j < NV; ++j) sums[g * block_values + (t * kVec + e) * NV + j] = acc[e][j];
  __syncthreads();
  for (int v = int(threadIdx.x); v < block_values; v += 256) {
    const index_t i = r0 + v / NV;
    const int j = v % NV;
    T s = 0;
    for (int q = 0; q < groups; ++q) s += sums[q * block_values + v];
    if (i < m && j < n_cols) few_store<T, NV>(out, m, i, j, s);
  }
  if (gridDim.y > 1) few_last_block<T, NV>(out, m, r0, r0 + block_rows);
}

}  // namespace parray::cuda::gemv_kernels
