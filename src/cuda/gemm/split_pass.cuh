// Host side of the split pass (gemm/13_split_tf32.cuh) shared by the
// tensor-core GEMMs of steps 13 and 14: a per-GPU memory pool for the split
// copies, and the launch that reads an operand through its layout.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "gemm/13_split_tf32.cuh"
#include "parray/cuda/check.hpp"
#include "parray/registry.hpp"

namespace parray::cuda {

// A stream-ordered memory pool of the current device that keeps what it was
// given (release threshold: never), so a repeated GEMM allocates from it in
// microseconds; stream-ordered allocation lets calls on different streams of
// one GPU (the multi-GPU local GEMMs) each have their own.
cudaMemPool_t split_pool();

// Stream-ordered device memory from the pool, given back on the same stream.
struct PoolBuffer {
  float* p = nullptr;
  cudaStream_t s;
  PoolBuffer(std::size_t floats, cudaStream_t stream) : s(stream) {
    if (floats)
      PARRAY_CUDA_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&p), floats * sizeof(float), split_pool(), s));
  }
  ~PoolBuffer() {
    if (p) cudaFreeAsync(p, s);  // no throw from a destructor; a failure shows at the next check
  }
  PoolBuffer(const PoolBuffer&) = delete;
  PoolBuffer& operator=(const PoolBuffer&) = delete;
};

namespace split_detail {

// Whether an operand's elements are contiguous along k (then the split reads
// with lanes along k): row-major A, column-major B.
inline bool k_contiguous(const MatrixLayout& l, bool is_b) {
  const Axis& k = is_b ? l.rows : l.cols;
  return k.stride[k.levels - 1] == 1;
}

template <bool IsB, class Op, class Out>
void launch(cudaStream_t s, const Op& op, bool along_k, index_t X, index_t K, const Out& out, const char* impl) {
  if (X > 65535 * 32) throw Error(std::string(impl) + ": more than 2097120 rows of A or columns of B");
  const dim3 grid(ceil_div(K, 32), ceil_div(X, 32)), block(32, 8);
  if (along_k)
    ladder::split_tf32<IsB, true><<<grid, block, 0, s>>>(op, int(X), int(K), out);
  else
    ladder::split_tf32<IsB, false><<<grid, block, 0, s>>>(op, int(X), int(K), out);
  PARRAY_CUDA_CHECK_LAUNCH();
}

}  // namespace split_detail

// A (is_b false, as M x K) or B (as N x K) split into `out`
// (ladder::ChunkedSplit, PairedSplit or RoundedCopy), read through `op`, the
// operand view v as a strided or a layout operand.
template <class Op, class Out>
void split_through(cudaStream_t s, const Op& op, const MatrixView<const float>& v, bool is_b, const Out& out,
                   const char* impl) {
  const index_t X = is_b ? v.cols() : v.rows(), K = is_b ? v.rows() : v.cols();
  const bool along_k = split_detail::k_contiguous(v.layout, is_b);
  is_b ? split_detail::launch<true>(s, op, along_k, X, K, out, impl)
       : split_detail::launch<false>(s, op, along_k, X, K, out, impl);
}

// The same through any layout.
template <class Out>
void split_operand(cudaStream_t s, const MatrixView<const float>& v, bool is_b, const Out& out, const char* impl) {
  if (v.layout.is_strided())
    split_through(s, strided_operand(v), v, is_b, out, impl);
  else
    split_through(s, layout_operand(v), v, is_b, out, impl);
}

// C = alpha W + beta C through C's layout, W its M x N row-major workspace
// (steps 13 and 21 compute a C that is not row- or column-major there first).
inline void scatter_workspace(cudaStream_t s, const GemmCall<float>& call, const float* w) {
  const int m = int(call.c.rows()), n = int(call.c.cols());
  const dim3 grid(std::min(ceil_div(n, 256), 1024u), unsigned(std::min(m, 65535)));
  if (call.c.layout.is_strided())
    ladder::scatter_c<<<grid, 256, 0, s>>>(m, n, w, call.alpha, call.beta, strided_operand(call.c));
  else
    ladder::scatter_c<<<grid, 256, 0, s>>>(m, n, w, call.alpha, call.beta, layout_operand(call.c));
  PARRAY_CUDA_CHECK_LAUNCH();
}

// A (M x K) and B (K x N) split into out_a and out_b by one launch
// (ladder::split_pair), where both are strided; false, with nothing
// launched, otherwise.
template <class Out>
bool split_pair_through(cudaStream_t s, const MatrixView<const float>& a, const MatrixView<const float>& b,
                        const Out& out_a, const Out& out_b) {
  if (!a.layout.is_strided() || !b.layout.is_strided()) return false;
  const index_t M = a.rows(), K = a.cols(), N = b.cols(), block_rows = ceil_div(M, 32) + ceil_div(N, 32);
  if (block_rows > 65535) return false;
  using Side = ladder::SplitSide<StridedOperand<const float>, Out>;
  const Side side_a{strided_operand(a), split_detail::k_contiguous(a.layout, false), int(M), out_a};
  const Side side_b{strided_operand(b), split_detail::k_contiguous(b.layout, true), int(N), out_b};
  ladder::split_pair<<<dim3(unsigned(ceil_div(K, 32)), unsigned(block_rows)), dim3(32, 8), 0, s>>>(side_a, side_b,
                                                                                                  int(K));
  PARRAY_CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace parray::cuda
