// GEMV step 6: step 5's bandwidth at every shape, wide-short to tall-narrow.
// Step 5 gives a row-major row one warp and a column-major block 256 * kVec
// rows: a row of 32 elements then keeps 8 of a warp's 32 lanes busy, 32
// long rows make 32 warps for the whole GPU, and a column of 32 elements
// leaves 248 of a block's 256 threads idle. Step 6 sizes the work to the
// shape:
//
//  * rows_grouped (row-major): a row is read by a group of kLanes lanes —
//    32 for long rows, 16, 8 or 4 for rows that short, so that a warp reads
//    several rows at once — and where the rows are too few to fill the GPU
//    each row is cut into `slices` column ranges (grid.y) read by different
//    groups;
//  * cols_grouped (column-major, M <= 256 * kVec): a column is read by
//    ceil(M / kVec) threads, one 16-byte load each, and a block walks
//    256 / that many columns at a time; its column groups' sums are added in
//    shared memory in a fixed order; the columns are cut into slices (grid.y)
//    so that the blocks fill the GPU;
//  * cols_tall_sliced (column-major, more rows, too few to fill the GPU in
//    step 5's one-kernel version; gpu.gemv_tall_cols): that kernel's block
//    over slices of the columns, a ticket per block of rows.
//
// Sliced work writes one partial y per slice to a workspace; the last blocks
// to finish (ticket counters, reset by those blocks) add the slices in a
// fixed order, in groups of 16 and then the groups' sums, and apply alpha and
// beta: deterministic, and no second launch, whose gap is a large share of a
// short GEMV's time.
#pragma once

#include "05_tuned.cuh"

namespace parray::cuda::gemv_kernels {

// Slices per group of the sliced kernels' two-level sum (below), unless
// gpu.gemv_tree_slices says otherwise.
constexpr int kTreeSlices = 16;

// Whether this block is the last of `expected` blocks to arrive at `ticket`,
// each once its stores are done (they are visible to the last one).
__device__ __forceinline__ bool last_to_arrive(unsigned* ticket, unsigned expected) {
  __shared__ bool last;
  __threadfence();  // this block's stores are visible before its ticket
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(ticket, 1u) == expected - 1;
  __syncthreads();
  if (last) __threadfence();
  return last;
}

// Rows [0, m) of `count` partial y's, m apart from `from`, added in order:
// into `to`, or (to == nullptr) into y with alpha and beta.
template <class T>
__device__ __forceinline__ void add_partials(index_t m, const T* from, int count, T* to, T* __restrict__ y, T alpha,
                                             T beta) {
  for (index_t i = threadIdx.x; i < m; i += blockDim.x) {
    T s = 0;
    for (int q = 0; q < count; ++q) s += __ldcg(from + index_t(q) * m + i);  // L2: other blocks wrote them
    if (to) to[i] = s;
    else y[i] = beta == T(0) ? alpha * s : alpha * s + beta * y[i];
  }
}

// Every block calls it once its partial sums (part[s * m + i], slice s =
// blockIdx.y) are stored. Up to `group` slices, the grid's last block adds
// them in slice order into y. More: the last block of each group of `group`
// consecutive slices adds the group's into a group sum (after the slices'
// partials, part[(slices + g) * m + i]; ticket 1 + g counts the group's
// blocks), and the last of those adds the group sums in order into y
// (ticket 0). A fixed order either way, so the result is deterministic; the
// tree keeps the serial tail at `group` + groups partials a row instead of
// one per slice. Each ticket is reset by the block that read it last, ready
// for the next launch on this workspace.
template <class T>
__device__ __forceinline__ void last_block_sums(index_t m, int slices, int group, T* part, T* __restrict__ y, T alpha,
                                                T beta, unsigned* ticket) {
  const int groups = (slices + group - 1) / group;
  if (groups == 1) {
    if (!last_to_arrive(ticket, gridDim.x * gridDim.y)) return;
    add_partials(m, part, slices, static_cast<T*>(nullptr), y, alpha, beta);
    if (threadIdx.x == 0) *ticket = 0;
    return;
  }
  const int g = int(blockIdx.y) / group, first = g * group;
  const int count = slices - first < group ? slices - first : group;
  T* group_sums = part + index_t(slices) * m;
  if (!last_to_arrive(ticket + 1 + g, gridDim.x * unsigned(count))) return;
  add_partials(m, part + index_t(first) * m, count, group_sums + index_t(g) * m, y, alpha, beta);
  if (threadIdx.x == 0) ticket[1 + g] = 0;
  if (!last_to_arrive(ticket, unsigned(groups))) return;
  add_partials(m, group_sums, groups, static_cast<T*>(nullptr), y, alpha, beta);
  if (threadIdx.x == 0) *ticket = 0;
}

// Row-major A (A(i, j) = a[i * ld + j]), rows in groups of kLanes lanes;
// slice blockIdx.y reads columns [jb, jb + cols_per_slice), a multiple of
// kLanes * kVec wide.
template <class T, int kVec, int kLanes>
__global__ void __launch_bounds__(256) rows_grouped(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                    const T* __restrict__ x, index_t cols_per_slice, int group,
                                                    T* part, T* __restrict__ y, T alpha, T beta, unsigned* ticket) {
  constexpr int kGroups = 256 / kLanes;
  const int lane = threadIdx.x % kLanes;
  const int slices = int(gridDim.y);
  const index_t jb = index_t(blockIdx.y) * cols_per_slice, je = jb + cols_per_slice < n ? jb + cols_per_slice : n;
  // A warp's groups take consecutive rows and stay in step (the shuffles
  // need the whole warp): a group past the last row adds nothing.
  const index_t stride = index_t(gridDim.x) * kGroups;
  for (index_t i0 = index_t(blockIdx.x) * kGroups + threadIdx.x / 32 * (32 / kLanes); i0 < m; i0 += stride) {
    const index_t i = i0 + threadIdx.x % 32 / kLanes;
    T acc = row_dot<T, kVec, 4, kLanes>(a + (i < m ? i : i0) * ld, x, jb, je, lane);
    if (i >= m) acc = 0;
#pragma unroll
    for (int o = kLanes / 2; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0 && i < m) {
      if (slices == 1) y[i] = beta == T(0) ? alpha * acc : alpha * acc + beta * y[i];
      else part[index_t(blockIdx.y) * m + i] = acc;
    }
  }
  if (slices > 1) last_block_sums(m, slices, group, part, y, alpha, beta, ticket);
}

// Column-major A (A(i, j) = a[j * ld + i]) of m <= 256 * kVec rows: thread
// t reads rows [r * kVec, r * kVec + kVec) of column group g, r = t mod
// col_threads, g = t / col_threads; the block's groups walk the slice's
// columns groups apart, kUnroll columns in flight each.
template <class T, int kVec>
__global__ void __launch_bounds__(256) cols_grouped(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                    const T* __restrict__ x, int col_threads, index_t cols_per_slice,
                                                    int group, T* part, T* __restrict__ y, T alpha, T beta,
                                                    unsigned* ticket) {
  constexpr int kUnroll = 4;
  __shared__ T sums[256 * kVec];  // [group][row]
  const int groups = 256 / col_threads, r = threadIdx.x % col_threads, g = threadIdx.x / col_threads;
  const int slices = int(gridDim.y);
  const index_t jb = index_t(blockIdx.y) * cols_per_slice, je = jb + cols_per_slice < n ? jb + cols_per_slice : n;
  const index_t i0 = index_t(r) * kVec;
  T acc[kVec] = {};
  if (g < groups) {
    column_sums<T, kVec, kUnroll>(m, a, ld, x, i0, jb + g, je, groups, acc);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      if (i0 + e < m) sums[g * m + i0 + e] = acc[e];
  }
  __syncthreads();
  for (index_t i = threadIdx.x; i < m; i += 256) {
    T s = 0;
    for (int q = 0; q < groups; ++q) s += sums[q * m + i];
    if (slices == 1) y[i] = beta == T(0) ? alpha * s : alpha * s + beta * y[i];
    else part[index_t(blockIdx.y) * m + i] = s;
  }
  if (slices > 1) last_block_sums(m, slices, group, part, y, alpha, beta, ticket);
}

// Column-major A of more than 256 * kVec rows whose blocks of step 5's
// one-kernel version (tuned_cols_whole) are too few to fill the GPU: the same
// block over slice blockIdx.y of the columns (gridDim.y > 1). A ticket per
// block of rows (blockIdx.x): the last of its slices to finish adds the
// slices' partial sums of its rows in slice order, so the sums are spread
// over the row blocks instead of left to one block (last_block_sums, whose
// one block walked all M rows' partials in sequence).
template <class T, int kVec, int kRowLanes, int kUnroll>
__global__ void __launch_bounds__(256, 4) cols_tall_sliced(index_t m, index_t n, const T* __restrict__ a, index_t ld,
                                                        const T* __restrict__ x, index_t cols_per_slice, T* part,
                                                        T* __restrict__ y, T alpha, T beta, unsigned* ticket) {
  const int slices = int(gridDim.y);
  const index_t r0 = index_t(blockIdx.x) * (kRowLanes * kVec), i = r0 + threadIdx.x;
  const index_t jb = index_t(blockIdx.y) * cols_per_slice, je = jb + cols_per_slice < n ? jb + cols_per_slice : n;
  const bool mine = threadIdx.x < kRowLanes * kVec && i < m;
  const T s = block_column_sums<T, kVec, kRowLanes, kUnroll>(m, a, ld, x, r0, jb, je);
  if (mine) part[index_t(blockIdx.y) * m + i] = s;
  if (!last_to_arrive(ticket + blockIdx.x, unsigned(slices))) return;
  if (mine) {
    T sum = 0;
    for (int q = 0; q < slices; ++q) sum += __ldcg(part + index_t(q) * m + i);  // L2: other blocks wrote them
    y[i] = beta == T(0) ? alpha * sum : alpha * sum + beta * y[i];
  }
  if (threadIdx.x == 0) ticket[blockIdx.x] = 0;
}

}  // namespace parray::cuda::gemv_kernels
