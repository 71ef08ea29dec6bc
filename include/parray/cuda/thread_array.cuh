// CUDA thread arrays: Parray's `cuda(args) [[grid dims]][[block dims]]` and
// `cuda(args) [M][N]`, and `#detour`.
//
// The shape is a ThreadShape (thread_shape.hpp); two forms, as in the paper:
//
//   [[8][8]][[16][16]]  explicit: top-level dimension 0 is the grid, 1 the
//                       block (each 1 to 3 sub-dimensions, the last one x).
//                       $tid_0$ = t.tid(0) is the block's index, $tid_1$ the
//                       thread's index in its block; $tid_0_0$, $tid_0_1$,
//                       $tid_1_0$, $tid_1_1$ are blockIdx.y, blockIdx.x,
//                       threadIdx.y, threadIdx.x (section 2.4).
//   [1024][1024]        logical (1 to 3 dimensions): one thread per element,
//                       $tid_0$, $tid_1$ its row and column; detour covers
//                       the array with blocks (one block of the exact shape
//                       when it has at most 1024 threads, else 16 x 16 tiles)
//                       and threads past the edge do not run the body.
//
// detour() generates the kernel and runs the device callable (a __device__
// or __host__ __device__ lambda, compiled with --extended-lambda, or a
// functor) once on every thread, passing `const CudaThread&` — the same
// coordinates as a CPU or MPI thread's, so one body template serves all:
//
//   CudaThreadArray({1024, 1024}).detour([=] __device__(const CudaThread& t) {
//     c[t.tid(0) * n + t.tid(1)] = ...;
//   });
//
// #sync: t.sync(1) in an explicit array is the block's barrier
// (__syncthreads), and t.sync() is too when the grid is one block or the
// logical array fits one block. A kernel's blocks cannot wait for one
// another, so any other sync stops the kernel (__trap) with a message on the
// device's stdout; the launch then reports the failure.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <initializer_list>
#include <string>

#include "parray/core.hpp"
#include "parray/cuda/check.hpp"
#include "parray/thread_shape.hpp"

namespace parray::cuda {

namespace detail {
// x, y, z component of a dim3 / uint3.
template <class V>
__device__ inline unsigned axis(const V& v, int a) {
  return a == 0 ? v.x : a == 1 ? v.y : v.z;
}
}  // namespace detail

// One CUDA thread of an array (device side).
class CudaThread {
 public:

  // $tid$: flat id, row-major over every extent.
  __device__ int tid() const {
    if (explicit_grid) return tid(0) * shape_.dim(1) + tid(1);
    int x = 0;
    for (int d = 0; d < shape_.rank(); ++d) x = x * shape_.dim(d) + tid(d);
    return x;
  }
  // $tid_d$.
  __device__ int tid(int d) const {
    if (explicit_grid)
      return d == 0 ? linear(blockIdx, gridDim, shape_.sub_rank(0)) : linear(threadIdx, blockDim, shape_.sub_rank(1));
    const int a = shape_.rank() - 1 - d;  // the last dimension is x
    return int(detail::axis(blockIdx, a) * detail::axis(blockDim, a) + detail::axis(threadIdx, a));
  }
  // $tid_d_e$.
  __device__ int tid(int d, int e) const {
    if (explicit_grid) {
      const int a = shape_.sub_rank(d) - 1 - e;
      return int(d == 0 ? detail::axis(blockIdx, a) : detail::axis(threadIdx, a));
    }
    return shape_.sub_index(d, tid(d), e);
  }
  __device__ int operator[](int d) const { return tid(d); }
  __device__ int rank() const { return shape_.rank(); }
  __device__ int dim(int d) const { return shape_.dim(d); }
  __device__ int dim(int d, int e) const { return shape_.dim(d, e); }
  __device__ int size() const { return shape_.size(); }
  __device__ const ThreadShape& shape() const { return shape_; }
  // CUDA's own indices, for code that wants them by name.
  __device__ int grid(int d) const { return d == 0 ? blockIdx.y : blockIdx.x; }
  __device__ int block(int d) const { return d == 0 ? threadIdx.y : threadIdx.x; }

  // False for the threads that only pad a logical array to whole blocks
  // (detour does not run the body on them).
  __device__ bool inside() const {
    if (explicit_grid) return true;
    for (int d = 0; d < shape_.rank(); ++d)
      if (tid(d) >= shape_.dim(d)) return false;
    return true;
  }

  __device__ void sync() const {
    if (!one_block) stop("#sync over the whole array needs it to be one block");
    __syncthreads();
  }
  __device__ void sync(int d) const {
    if (explicit_grid ? d != 1 : !(one_block && shape_.rank() == 1))
      stop("#sync over a sub-array: only over dimension 1 (the block) of a [[grid]][[block]] array");
    __syncthreads();
  }

 private:
  // Row-major index over the n sub-dimensions of a dim3 (the last one x).
  __device__ static int linear(const uint3& i, const dim3& n, int sub) {
    int x = 0;
    for (int a = sub - 1; a >= 0; --a) x = x * int(detail::axis(n, a)) + int(detail::axis(i, a));
    return x;
  }
  friend class CudaThreadArray;
  ThreadShape shape_;
  bool explicit_grid = false;  // [[grid]][[block]] rather than a logical array
  bool one_block = false;      // the whole array is one block: sync() is __syncthreads

  __device__ static void stop(const char* why) {
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) printf("parray cuda thread array: %s\n", why);
    __trap();
  }
};

namespace detail {
// The body is a __grid_constant__ parameter: read where it lies (the constant
// bank) even where the body takes addresses into it (a type's sub-type table,
// as parrayc's translated kernels do), instead of a copy in local memory
// (fig 21 translated: a 5752-byte stack frame without it, 544 with it).
template <int MaxThreadsPerBlock, int MinBlocksPerSM, class F>
__global__ __launch_bounds__(MaxThreadsPerBlock, MinBlocksPerSM) void detour_kernel(const __grid_constant__ F f,
                                                                                    CudaThread t) {
  if (!t.inside()) return;
  f(static_cast<const CudaThread&>(t));
}
}  // namespace detail

class CudaThreadArray {
 public:
  struct Dims {
    int d0 = 1, d1 = 1;  // [d0][d1]: d0 -> .y, d1 -> .x
  };
  // A logical array: Parray's cuda [1024][1024] is CudaThreadArray({1024, 1024}).
  CudaThreadArray(std::initializer_list<int> dims) : CudaThreadArray(ThreadShape(dims)) {}
  // Any shape: ThreadShape::parse("[[N/16][N/256]][[4][32]]", {{"N", n}}).
  explicit CudaThreadArray(const ThreadShape& shape) { plan(shape); }
  // [[grid.d0][grid.d1]][[block.d0][block.d1]].
  CudaThreadArray(Dims grid, Dims block)
      : CudaThreadArray(ThreadShape::nested({{grid.d0, grid.d1}, {block.d0, block.d1}})) {}
  // A logical [rows][cols] array covered by blocks of `block`.
  static CudaThreadArray over(index_t rows, index_t cols, Dims block = {16, 16}) {
    if (rows < 1 || cols < 1 || rows > 0x7fffffff || cols > 0x7fffffff || rows * cols > 0x7fffffff)
      throw Error("cuda thread array: " + std::to_string(rows) + " x " + std::to_string(cols) + " threads");
    CudaThreadArray t(ThreadShape({int(rows), int(cols)}));
    t.block_ = dim3(block.d1, block.d0);
    t.grid_ = dim3(ceil(cols, block.d1), ceil(rows, block.d0));
    t.check_limits();
    t.t_.one_block = t.grid_.x * t.grid_.y * t.grid_.z == 1;
    return t;
  }

  const ThreadShape& shape() const { return t_.shape_; }
  index_t size(int d) const { return t_.shape_.dim(d); }
  dim3 grid() const { return grid_; }
  dim3 block() const { return block_; }

  // Parray's #detour: runs f on every thread; asynchronous, launch checked.
  // MaxThreadsPerBlock, when the block is known to be smaller than 1024,
  // lets the compiler give each thread more registers (__launch_bounds__).
  // MinBlocksPerSM, where given (0: not), caps the registers so that many
  // blocks fit on one SM (the second argument of __launch_bounds__; 0 leaves
  // the compiler's choice, as the one-argument form does).
  template <int MaxThreadsPerBlock = 1024, int MinBlocksPerSM = 0, class F>
  void detour(F f, cudaStream_t stream = 0) const {
    if (block_.x * block_.y * block_.z > unsigned(MaxThreadsPerBlock))
      throw Error("cuda thread array " + t_.shape_.str() + ": blocks of " +
                  std::to_string(block_.x * block_.y * block_.z) + " threads, the body allows " +
                  std::to_string(MaxThreadsPerBlock));
    detail::detour_kernel<MaxThreadsPerBlock, MinBlocksPerSM><<<grid_, block_, 0, stream>>>(f, t_);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  // How many blocks of this array detour<MaxThreadsPerBlock, MinBlocksPerSM>
  // of body F fits on one SM of the current device (its registers and shared
  // memory decide).
  template <int MaxThreadsPerBlock = 1024, int MinBlocksPerSM = 0, class F>
  int blocks_per_sm() const {
    int n = 0;
    PARRAY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &n, detail::detour_kernel<MaxThreadsPerBlock, MinBlocksPerSM, F>, int(block_.x * block_.y * block_.z), 0));
    return n;
  }

 private:
  static unsigned ceil(index_t a, index_t b) { return unsigned((a + b - 1) / b); }
  static dim3 to_dim3(const ThreadShape& s, int d) {
    unsigned v[3] = {1, 1, 1};
    for (int e = 0; e < s.sub_rank(d); ++e) v[s.sub_rank(d) - 1 - e] = unsigned(s.dim(d, e));
    return dim3(v[0], v[1], v[2]);
  }
  void plan(const ThreadShape& s) {
    t_.shape_ = s;
    t_.explicit_grid = s.rank() == 2 && (s.is_nested(0) || s.is_nested(1));
    if (t_.explicit_grid) {
      grid_ = to_dim3(s, 0);
      block_ = to_dim3(s, 1);
    } else {
      if (s.rank() > 3) throw Error("cuda thread array " + s.str() + ": a logical array has 1 to 3 dimensions");
      unsigned ext[3] = {1, 1, 1};  // x, y, z
      for (int d = 0; d < s.rank(); ++d) ext[s.rank() - 1 - d] = unsigned(s.dim(d));
      if (s.size() <= 1024) {
        block_ = dim3(ext[0], ext[1], ext[2]);
      } else {
        const unsigned tile[3][3] = {{256, 1, 1}, {16, 16, 1}, {16, 16, 1}};
        const unsigned* b = tile[s.rank() - 1];
        block_ = dim3(b[0], b[1], b[2]);
      }
      grid_ = dim3(ceil(ext[0], block_.x), ceil(ext[1], block_.y), ceil(ext[2], block_.z));
    }
    check_limits();
    t_.one_block = grid_.x * grid_.y * grid_.z == 1;
  }
  void check_limits() const {
    const std::string name = "cuda thread array " + t_.shape_.str() + ": ";
    if (block_.x * block_.y * block_.z > 1024)
      throw Error(name + std::to_string(block_.x * block_.y * block_.z) + " threads per block (max 1024)");
    if (block_.z > 64) throw Error(name + "block dimension z is over 64");
    if (grid_.y > 65535 || grid_.z > 65535) throw Error(name + "grid dimension y or z is over 65535");
  }

  CudaThread t_;
  dim3 grid_{1, 1, 1}, block_{1, 1, 1};
};

}  // namespace parray::cuda
