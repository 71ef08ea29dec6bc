// Launchers of GEMV steps 6 (06_any_shape.cuh: the group of lanes a row or a
// column gets, and the slices that fill the GPU where the rows or the
// columns are too few; column-major A of more than 256 * kVec rows goes to
// step 6's sliced block where its 64-row blocks are fewer than the SMs, else
// to step 5's column kernels) and 7
// (07_few_vectors.cuh: a GEMM with at most 8 columns or rows, for the default
// GEMM).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "common/stream_workspace.hpp"
#include "06_any_shape.cuh"
#include "07_few_vectors.cuh"
#include "06_07_launch.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/tuning.hpp"

namespace parray::cuda {

namespace {

using namespace gemv_kernels;

// Blocks of 256 threads that fill an SM (2048 threads).
constexpr int kBlocksPerSm = 8;

// The sliced kernels' workspace: a ticket counter (zeroed when allocated,
// reset by each launch's last block) and the partial sums, per host thread
// and device; a use on another stream waits for the last use.
struct SliceWorkspace {
  StreamOrder order;
  StreamBuffer buffer;
};
SliceWorkspace& slice_workspace() { return per_thread_on_device<SliceWorkspace>(); }

// Tickets ahead of the partial sums: one per block of rows of a sliced
// launch (step 7's row blocks), or step 6's root and one per group of slices;
// a multiple of 256 bytes so that the sums stay 256-byte aligned. Always the
// same bytes, so they stay zero between calls.
constexpr std::size_t kTickets = 4096, kTicketBytes = kTickets * sizeof(unsigned);

// The longest chain of partial sums a thread of the last block adds alone
// (slices times its rows) that one level still sums faster than the tree,
// whose second round of tickets costs a few microseconds (docs/knn.md,
// "Step 6").
constexpr index_t kFlatChain = 128;

// Slices per group where the tree sums: kTreeSlices, or gpu.gemv_tree_slices.
int tree_size() {
  const int g = gpu_tuning().gemv_tree_slices;
  return g > 0 ? g : kTreeSlices;
}

// Slices per group of step 6's sum of `slices` partial y's of m: one level
// (a group of all) where the chain is short, else the tree's; the tree's
// whatever the chain where gpu.gemv_tree_slices is set.
int tree_group(int slices, index_t m) {
  const bool told = gpu_tuning().gemv_tree_slices > 0;
  return told || index_t(slices) * ((m + 255) / 256) > kFlatChain ? tree_size() : slices;
}

// Slices of one launch: at most 65535 (grid.y), and step 6's groups one
// ticket each beside the root.
index_t max_slices() { return std::min<index_t>(65535, index_t(tree_size()) * (index_t(kTickets) - 1)); }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Lanes a row of `elems` loads gets: about 4 loads each (in flight
// together), at least 4 lanes and at most a warp.
int lanes_for(index_t elems) { return elems <= 16 ? 4 : elems <= 32 ? 8 : elems <= 64 ? 16 : 32; }

// Where a sliced launch leaves its partial sums: the workspace, its tickets
// and the slices per group of the two-level sum.
template <class T>
struct SliceSums {
  T* part = nullptr;
  unsigned* ticket = nullptr;
  int group = 1;
};

template <class T, int kVec>
void rows_launch(int lanes, dim3 grid, cudaStream_t s, index_t m, index_t n, const T* a, index_t ld, const T* x,
                 index_t per_slice, SliceSums<T> w, T* y, T alpha, T beta) {
  const auto launch = [&](auto kernel) {
    kernel<<<grid, 256, 0, s>>>(m, n, a, ld, x, per_slice, w.group, w.part, y, alpha, beta, w.ticket);
  };
  switch (lanes) {
    case 4: launch(rows_grouped<T, kVec, 4>); break;
    case 8: launch(rows_grouped<T, kVec, 8>); break;
    case 16: launch(rows_grouped<T, kVec, 16>); break;
    default: launch(rows_grouped<T, kVec, 32>);
  }
  PARRAY_CUDA_CHECK_LAUNCH();
}

// Runs `launch(SliceSums)` with a workspace for `slices` partial y's of m
// and, past one group of slices, their groups' sums (none when slices == 1).
template <class T, class Launch>
void with_slices(int slices, index_t m, cudaStream_t s, Launch&& launch) {
  if (slices == 1) return launch(SliceSums<T>{});
  const int group = tree_group(slices, m), groups = (slices + group - 1) / group;
  const std::size_t partials = std::size_t(slices) + (groups > 1 ? std::size_t(groups) : 0);
  SliceWorkspace& w = slice_workspace();
  auto* base = static_cast<char*>(w.buffer.get(kTicketBytes + partials * std::size_t(m) * sizeof(T), s, w.order, true));
  launch(SliceSums<T>{reinterpret_cast<T*>(base + kTicketBytes), reinterpret_cast<unsigned*>(base), group});
  w.order.leave(s);
}

// The slice count that brings `blocks` blocks of a slice up to `target`
// blocks, each slice keeping >= min_cols columns; and the columns per
// slice, a multiple of `multiple`.
std::pair<int, index_t> slicing(index_t blocks, index_t n, index_t min_cols, index_t multiple,
                                index_t target = index_t(sm_count()) * kBlocksPerSm) {
  index_t slices = blocks >= target ? 1 : (target + blocks - 1) / blocks;
  slices = std::clamp<index_t>(std::min(slices, n / std::max<index_t>(min_cols, 1)), 1, max_slices());
  index_t per = (n + slices - 1) / slices;
  per = (per + multiple - 1) / multiple * multiple;
  return {int((n + per - 1) / per), per};
}

template <class T>
void run_rows(const GemvCall<T>& c, cudaStream_t s, index_t ld) {
  constexpr int kVec = 16 / sizeof(T);
  const index_t m = c.a.rows(), n = c.a.cols();
  const bool vec = ld % kVec == 0 && aligned16(c.a.data) && aligned16(c.x);
  const int kv = vec ? kVec : 1, lanes = lanes_for((n + kv - 1) / kv);
  const index_t blocks = (m + 256 / lanes - 1) / (256 / lanes);
  // Slices only where the rows leave SMs without two blocks: elsewhere the
  // partial sums and the last block's sum cost more than the idle SMs do.
  const auto [slices, per] = slicing(blocks, n, index_t(lanes) * kv * 4, index_t(lanes) * kv, index_t(sm_count()) * 2);
  const dim3 grid(unsigned(std::min<index_t>(blocks, index_t(sm_count()) * kBlocksPerSm * 4)), unsigned(slices));
  with_slices<T>(slices, m, s, [&](SliceSums<T> w) {
    if (vec) rows_launch<T, kVec>(lanes, grid, s, m, n, c.a.data, ld, c.x, per, w, c.y, c.alpha, c.beta);
    else rows_launch<T, 1>(lanes, grid, s, m, n, c.a.data, ld, c.x, per, w, c.y, c.alpha, c.beta);
  });
}

template <class T, int kVec>
void run_short_cols(const GemvCall<T>& c, cudaStream_t s, index_t ld) {
  const index_t m = c.a.rows(), n = c.a.cols();
  const int col_threads = int((m + kVec - 1) / kVec), groups = 256 / col_threads;
  // Slices enough for 4 blocks a SM (gpu.gemv_column_slices): a block walks
  // its columns a few at a time, so more blocks keep more bytes in flight,
  // and the tree sums the partials the slices leave.
  const int per_sm = gpu_tuning().gemv_column_slices > 0 ? gpu_tuning().gemv_column_slices : 4;
  const auto [slices, per] = slicing(1, n, index_t(groups) * 16, 1, index_t(sm_count()) * per_sm);
  with_slices<T>(slices, m, s, [&](SliceSums<T> w) {
    cols_grouped<T, kVec><<<dim3(1, unsigned(slices)), 256, 0, s>>>(m, n, c.a.data, ld, c.x, col_threads, per,
                                                                    w.group, w.part, c.y, c.alpha, c.beta, w.ticket);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

// Column-major A of more rows than run_short_cols takes whose 64-row blocks
// are fewer than the SMs (unless gpu.gemv_tall_cols = 0): step 5's one-kernel
// block over slices of the columns (4 blocks a SM, at least 128 columns a
// slice), a ticket per block of rows, in one launch. False otherwise: step
// 5's kernels run it.
template <class T, int kVec>
bool run_tall_cols(const GemvCall<T>& c, cudaStream_t s, index_t ld) {
  constexpr int kRowLanes = 16, kRows = kRowLanes * kVec, kBlocksPerSmAt64Registers = 4;
  const index_t m = c.a.rows(), n = c.a.cols(), blocks = (m + kRows - 1) / kRows;
  if (gpu_tuning().gemv_tall_cols == Choice::off || blocks >= sm_count()) return false;
  const auto [slices, per] = slicing(blocks, n, 128, 1, index_t(sm_count()) * kBlocksPerSmAt64Registers);
  if (slices == 1) return false;
  with_slices<T>(slices, m, s, [&](SliceSums<T> w) {  // its tickets: one per block of rows, not w.group's
    cols_tall_sliced<T, kVec, kRowLanes, 8><<<dim3(unsigned(blocks), unsigned(slices)), 256, 0, s>>>(
        m, n, c.a.data, ld, c.x, per, w.part, c.y, c.alpha, c.beta, w.ticket);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
  return true;
}

}  // namespace

template <class T>
bool gemv_any_shape(const GemvCall<T>& c) {
  const cudaStream_t s = on_stream(c.stream);
  const MatrixLayout& l = c.a.layout;
  const index_t m = c.a.rows(), n = c.a.cols();
  if (m < 1 || n < 1 || !l.is_strided()) return false;
  const bool row_major = (l.cols.stride[0] == 1 || n == 1) && !(l.rows.stride[0] == 1 && m > 1 && n > 1);
  if (row_major) {
    run_rows(c, s, m == 1 ? n : l.rows.stride[0]);
    return true;
  }
  if (!(l.rows.stride[0] == 1 || m == 1)) return false;
  constexpr int kVec = 16 / sizeof(T);
  const index_t ld = n == 1 ? m : l.cols.stride[0];
  const bool vec = ld % kVec == 0 && aligned16(c.a.data);
  if (vec && m <= 256 * kVec) run_short_cols<T, kVec>(c, s, ld);
  else if (!vec && m <= 256) run_short_cols<T, 1>(c, s, ld);
  else if (vec) return run_tall_cols<T, kVec>(c, s, ld);
  else return false;  // step 5's column kernels
  return true;
}

namespace {

// A (m x k) along k or along m, B (k x n, any strides), C (m x n, any strides).
template <class T>
struct FewVectors {
  index_t m, n, k;
  const T* a;
  index_t lda;
  bool a_along_k;
  const T* b;
  index_t rsb, csb;
  T* c;
  index_t rsc, csc;
  T alpha, beta;
};

// Groups of a block's threads that split the k's of step 7's column kernel
// (1, 2, 4, 8 or 16): doubled while the rows' threads times the groups stay
// under 1024 a SM (about twice the loads in flight that DRAM's latency asks
// for) and every group keeps >= 8 k's. Many rows keep one group: a thread
// per kv rows already fills the GPU.
int few_column_groups(index_t m, index_t k, int kv) {
  const index_t row_threads = (m + kv - 1) / kv, want = index_t(sm_count()) * 1024;
  int groups = 1;
  while (groups < 16 && row_threads * groups < want && k >= index_t(groups) * 2 * 8) groups *= 2;
  return groups;
}

template <class T, int NV>
void launch_few(const FewVectors<T>& p, cudaStream_t s) {
  constexpr int kVec = 16 / int(sizeof(T));  // one 16-byte load
  const bool vec = p.lda % kVec == 0 && aligned16(p.a);
  const index_t target = index_t(sm_count()) * kBlocksPerSm;
  index_t blocks, per;
  int slices, groups = 1;
  if (p.a_along_k) {  // a warp per 4 rows, 8 warps a block; slices of whole 128-wide k-steps
    blocks = (p.m + 31) / 32;
    const index_t step = 32 * (vec ? kVec : 1);  // a warp's k's an iteration
    std::tie(slices, per) = slicing(blocks, p.k, step * 4, step);
  } else {  // a thread per kv rows, groups of threads splitting k where the rows are few, then slices
    const int kv = vec ? kVec : 1;
    groups = few_column_groups(p.m, p.k, kv);
    blocks = (p.m + index_t(256 / groups) * kv - 1) / (index_t(256 / groups) * kv);
    // Slices of >= 128 k (the partial sums, NV per row, stay small beside A)
    // and >= 16 a group, up to 4 blocks a SM.
    std::tie(slices, per) = slicing(blocks, p.k, std::max(128, 16 * groups), 4, index_t(sm_count()) * 4);
  }
  if (blocks > index_t(kTickets)) slices = 1, per = p.k;  // a ticket per block of rows
  const dim3 grid(unsigned(p.a_along_k ? std::min(blocks, target * 4) : blocks), unsigned(slices));
  with_slices<T>(slices, p.m * NV, s, [&](SliceSums<T> w) {  // step 7 sums its slices in one level
    const gemv_kernels::FewOut<T> out{p.c, p.n, p.rsc, p.csc, p.alpha, p.beta, w.part, w.ticket};
    if (p.a_along_k) {
      if (vec) few_vectors_rows<T, NV, kVec><<<grid, 256, 0, s>>>(p.m, p.n, p.k, p.a, p.lda, p.b, p.rsb, p.csb, per, out);
      else few_vectors_rows<T, NV, 1><<<grid, 256, 0, s>>>(p.m, p.n, p.k, p.a, p.lda, p.b, p.rsb, p.csb, per, out);
    } else {
      if (vec)
        few_vectors_cols<T, NV, kVec><<<grid, 256, 0, s>>>(p.m, p.n, p.k, p.a, p.lda, p.b, p.rsb, p.csb, per, groups,
                                                           out);
      else few_vectors_cols<T, NV, 1><<<grid, 256, 0, s>>>(p.m, p.n, p.k, p.a, p.lda, p.b, p.rsb, p.csb, per, groups, out);
    }
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

bool unit(const Axis& x) { return x.is_strided() && (x.stride[0] == 1 || x.size <= 1); }

}  // namespace

template <class T>
bool gemm_few_vectors(const GemmCall<T>& call) {
  MatrixView<const T> a = call.a, b = call.b;
  MatrixView<T> c = call.c;
  if (c.cols() > kFewVectors) {  // C^T = B^T A^T: the few rows become the few columns
    if (c.rows() > kFewVectors) return false;
    std::swap(a, b);
    a = a.t(), b = b.t(), c = c.t();
  }
  if (!a.layout.is_strided() || !b.layout.is_strided() || !c.layout.is_strided()) return false;
  const bool along_k = unit(a.layout.cols) && a.rows() > 1, along_m = unit(a.layout.rows);
  if (!along_k && !along_m) return false;
  FewVectors<T> p{c.rows(), c.cols(), a.cols(), a.data, along_k ? a.layout.rows.stride[0] : a.layout.cols.stride[0],
               along_k, b.data, b.layout.rows.stride[0], b.layout.cols.stride[0], c.data, c.layout.rows.stride[0],
               c.layout.cols.stride[0], call.alpha, call.beta};
  if (p.m == 1 && !along_k) p.lda = p.k > 1 ? a.layout.cols.stride[0] : 1;
  const cudaStream_t s = on_stream(call.stream);
  switch (p.n) {
    case 1: launch_few<T, 1>(p, s); break;
    case 2: launch_few<T, 2>(p, s); break;
    case 3:
    case 4: launch_few<T, 4>(p, s); break;
    default: launch_few<T, 8>(p, s); break;
  }
  return true;
}

template bool gemm_few_vectors<float>(const GemmCall<float>&);
template bool gemm_few_vectors<double>(const GemmCall<double>&);

template bool gemv_any_shape<float>(const GemvCall<float>&);
template bool gemv_any_shape<double>(const GemvCall<double>&);

}  // namespace parray::cuda
