// CUDA thread arrays: Parray's `cuda(args) [[grid dims]][[block dims]]` and
// `#detour`.
//
// A CUDA thread array has two top-level dimensions: _0, the grid, and _1, the
// block; each is 1- or 2-D. As in the paper (section 2.4), $tid_0_0$ and
// $tid_0_1$ are blockIdx.y and blockIdx.x, $tid_1_0$ and $tid_1_1$ are
// threadIdx.y and threadIdx.x. detour() generates the kernel for the
// thread array and runs the device callable (a __device__ lambda, compiled
// with --extended-lambda, or a functor) once on every thread:
//
//   CudaThreadArray ta({2, 2});                       // Parray's [2][2] (fig. 11)
//   ta.detour([=] __device__(CudaThread t) { ... t.tid(0) ... t.tid(1) ... });
//
//   // fig. 13's [M][N], one thread per element, tiled into 16x16 blocks:
//   CudaThreadArray::over(m, n).detour([=] __device__(CudaThread t) {
//     if (!t.inside()) return;
//     c(t.tid(0), t.tid(1)) = ...;
//   });
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "parray/core.hpp"
#include "parray/cuda/check.hpp"

namespace parray::cuda {

// The coordinates of one thread of a CUDA thread array (device side).
struct CudaThread {
  index_t extent0, extent1;  // logical extent of the array's two dimensions

  // Parray's $tid_0_0$, $tid_0_1$ (grid) and $tid_1_0$, $tid_1_1$ (block).
  __device__ int grid(int d) const { return d == 0 ? blockIdx.y : blockIdx.x; }
  __device__ int block(int d) const { return d == 0 ? threadIdx.y : threadIdx.x; }
  // The thread as one element of the logical [extent0][extent1] array:
  // $tid_0$ (rows: grid y then block y) and $tid_1$ (columns: grid x, block x).
  __device__ index_t tid(int d) const {
    return d == 0 ? index_t(blockIdx.y) * blockDim.y + threadIdx.y
                  : index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  }
  // $tid$: flat id, row-major over the logical array.
  __device__ index_t flat() const { return tid(0) * extent1 + tid(1); }
  // False for the threads that only pad the array to whole blocks.
  __device__ bool inside() const { return tid(0) < extent0 && tid(1) < extent1; }
};

namespace detail {
template <class F>
__global__ void detour_kernel(F f, CudaThread t) {
  f(t);
}
}  // namespace detail

class CudaThreadArray {
 public:
  struct Dims {
    int d0 = 1, d1 = 1;  // [d0][d1]: d0 -> .y, d1 -> .x
  };
  // Parray's [[grid][grid]][[block][block]]; a one-block array when grid is {1, 1}.
  CudaThreadArray(Dims block) : CudaThreadArray(Dims{1, 1}, block) {}
  CudaThreadArray(Dims grid, Dims block) : grid_(grid), block_(block) {
    if (grid.d0 < 1 || grid.d1 < 1 || block.d0 < 1 || block.d1 < 1)
      throw Error("cuda thread array: every dimension must be >= 1");
    if (grid.d0 > 65535) throw Error("cuda thread array: grid dimension 0 (blockIdx.y) is over 65535");
    if (block.d0 * block.d1 > 1024)
      throw Error("cuda thread array: " + std::to_string(block.d0 * block.d1) + " threads per block (max 1024)");
    extent0_ = index_t(grid.d0) * block.d0;
    extent1_ = index_t(grid.d1) * block.d1;
  }
  // A logical [rows][cols] array of threads covered by blocks of `block`;
  // threads past the edge see inside() == false.
  static CudaThreadArray over(index_t rows, index_t cols, Dims block = {16, 16}) {
    CudaThreadArray t(Dims{int((rows + block.d0 - 1) / block.d0), int((cols + block.d1 - 1) / block.d1)},
                      block);
    t.extent0_ = rows;
    t.extent1_ = cols;
    return t;
  }

  index_t size(int d) const { return d == 0 ? extent0_ : extent1_; }

  // Parray's #detour: runs f on every thread; asynchronous, launch checked.
  template <class F>
  void detour(F f, cudaStream_t stream = 0) const {
    detail::detour_kernel<<<dim3(grid_.d1, grid_.d0), dim3(block_.d1, block_.d0), 0, stream>>>(
        f, CudaThread{extent0_, extent1_});
    PARRAY_CUDA_CHECK_LAUNCH();
  }

 private:
  Dims grid_, block_;
  index_t extent0_ = 0, extent1_ = 0;
};

}  // namespace parray::cuda
