// Parray's #copy on the device: element (i, j) of one matrix type to element
// (i, j) of another, both in device memory (e.g. row-major into figure 18's
// 2x2-block storage, or a transpose), through 64 x 64 tiles in shared memory:
// read along the source's contiguous direction, written along the
// destination's, so both sides coalesce whichever way each runs. Where a
// tile's run along that direction is contiguous in storage and 16-byte
// aligned (row-major, column-major, and the blocked layouts away from their
// block edges), a thread moves 16 bytes at a time; elsewhere one element
// (docs/layouts.md has what one element per access costs).
#include <algorithm>

#include "parray/cuda/check.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/cuda/operand.cuh"

namespace parray::cuda {

namespace {

constexpr int kTile = 64, kThreads = 256;

// Whether consecutive rows of a column are next to each other in storage.
bool rows_contiguous(const MatrixLayout& l) {
  return l.rows.stride[l.rows.levels - 1] == 1 && !(l.cols.stride[l.cols.levels - 1] == 1 && l.cols.size > 1);
}

// 16 bytes of T.
template <class T>
struct alignas(16) Vec {
  static constexpr int n = 16 / sizeof(T);
  T v[n];
};

// One side of a tile: its 64 row and 64 column offsets, which direction is
// contiguous, and whether that direction's run is contiguous in storage.
struct TileSide {
  const index_t* rows;  // shared: offsets of the tile's rows
  const index_t* cols;  // shared: offsets of the tile's columns
  bool rows_fast;       // the run goes down a column (column-major-like)
  bool run;             // the 64-run along the fast direction is one contiguous stretch
};

// Moves the tile between global memory (side g) and the shared tile, along
// g's fast direction: to_shared reads global, else writes it. The tile spans
// [i0, i0 + 64) x [j0, j0 + 64) of a rows x cols matrix.
template <bool ToShared, class T, class P>
__device__ void move_tile(P data, const TileSide& g, T (&tile)[kTile][kTile + 1], index_t rows, index_t cols,
                          index_t i0, index_t j0) {
  constexpr int V = Vec<T>::n, chunks = kTile / V;
  const index_t fast_n = g.rows_fast ? rows - i0 : cols - j0, slow_n = g.rows_fast ? cols - j0 : rows - i0;
  const index_t* fast_off = g.rows_fast ? g.rows : g.cols;
  const index_t* slow_off = g.rows_fast ? g.cols : g.rows;
  const bool whole = fast_n >= kTile && g.run && reinterpret_cast<std::uintptr_t>(data) % 16 == 0;
  for (int c = threadIdx.x; c < kTile * chunks; c += kThreads) {
    const int s = c / chunks, f0 = (c % chunks) * V;
    if (s >= slow_n) continue;
    const index_t base = fast_off[f0] + slow_off[s];
    if (whole && base % V == 0) {  // 16 bytes in one access
      Vec<T> x;
      if constexpr (ToShared) x = *reinterpret_cast<const Vec<T>*>(data + base);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        T& t = g.rows_fast ? tile[f0 + e][s] : tile[s][f0 + e];
        if constexpr (ToShared) t = x.v[e];
        else x.v[e] = t;
      }
      if constexpr (!ToShared) *reinterpret_cast<Vec<T>*>(data + base) = x;
    } else {
      for (int e = 0; e < V && f0 + e < fast_n; ++e) {
        T& t = g.rows_fast ? tile[f0 + e][s] : tile[s][f0 + e];
        const index_t off = fast_off[f0 + e] + slow_off[s];
        if constexpr (ToShared) t = data[off];
        else data[off] = t;
      }
    }
  }
}

template <class T>
__global__ __launch_bounds__(kThreads) void copy_tiled_kernel(MatrixView<const T> src, bool src_rows_fast,
                                                              MatrixView<T> dst, bool dst_rows_fast) {
  __shared__ T tile[kTile][kTile + 1];
  __shared__ index_t offsets[4][kTile];  // source rows, source columns, destination rows, destination columns
  __shared__ bool runs[2];               // the source's and the destination's fast run is contiguous
  const index_t rows = dst.rows(), cols = dst.cols();
  const index_t tiles_i = (rows + kTile - 1) / kTile;
  const index_t j0 = index_t(blockIdx.x) * kTile;
  for (index_t ti = blockIdx.y; ti < tiles_i; ti += gridDim.y) {
    const index_t i0 = ti * kTile;
    {  // 256 threads, 256 offsets: one each (32-bit digit arithmetic)
      const int w = threadIdx.x / kTile, t = threadIdx.x % kTile;
      const bool along_rows = w % 2 == 0;
      const index_t x = (along_rows ? i0 : j0) + t, n = along_rows ? rows : cols;
      const MatrixLayout& l = w < 2 ? src.layout : dst.layout;
      offsets[w][t] = x < n ? axis_offset(along_rows ? l.rows : l.cols, x) : 0;
      if (threadIdx.x < 2) {
        const MatrixLayout& side = threadIdx.x == 0 ? src.layout : dst.layout;
        const bool rf = threadIdx.x == 0 ? src_rows_fast : dst_rows_fast;
        const index_t f0 = rf ? i0 : j0, fn = rf ? rows : cols;
        const AxisRun r = f0 + kTile <= fn ? axis_run(rf ? side.rows : side.cols, f0, kTile) : AxisRun{0, 0, false};
        runs[threadIdx.x] = r.ok && r.step == 1;
      }
    }
    __syncthreads();
    move_tile<true>(src.data, TileSide{offsets[0], offsets[1], src_rows_fast, runs[0]}, tile, rows, cols, i0, j0);
    __syncthreads();
    move_tile<false>(dst.data, TileSide{offsets[2], offsets[3], dst_rows_fast, runs[1]}, tile, rows, cols, i0, j0);
    __syncthreads();
  }
}

template <class T>
void copy_tiled(MatrixView<const T> src, MatrixView<T> dst, cudaStream_t stream) {
  const index_t rows = dst.rows(), cols = dst.cols();
  const dim3 grid(unsigned((cols + kTile - 1) / kTile), unsigned(std::min<index_t>((rows + kTile - 1) / kTile, 65535)));
  copy_tiled_kernel<<<grid, kThreads, 0, stream>>>(src, rows_contiguous(src.layout), dst, rows_contiguous(dst.layout));
}

template <class T>
__global__ __launch_bounds__(256) void scale_kernel(T beta, MatrixView<T> c) {
  const index_t rows = c.rows(), n = rows * c.cols();
  for (index_t e = blockIdx.x * index_t(blockDim.x) + threadIdx.x; e < n; e += index_t(gridDim.x) * blockDim.x) {
    T& x = c(e / c.cols(), e % c.cols());
    x = beta == T(0) ? T(0) : beta * x;
  }
}
}  // namespace

template <class T>
void scale(T beta, MatrixView<T> c, GpuStream stream) {
  if (c.memory != Memory::device) throw Error("cuda::scale: C must be in device memory");
  const index_t n = c.rows() * c.cols();
  if (n == 0) return;
  scale_kernel<T><<<unsigned(std::min<index_t>((n + 255) / 256, 65535)), 256, 0, on_stream(stream)>>>(beta, c);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template <class T>
void copy(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream) {
  if (src.rows() != dst.rows() || src.cols() != dst.cols())
    throw Error("cuda::copy: source is " + std::to_string(src.rows()) + "x" + std::to_string(src.cols()) +
                ", destination is " + std::to_string(dst.rows()) + "x" + std::to_string(dst.cols()));
  if (src.memory != Memory::device || dst.memory != Memory::device)
    throw Error("cuda::copy: both views must be in device memory (use to_device/to_host for whole arrays)");
  const index_t n = dst.rows() * dst.cols();
  if (n == 0) return;
  copy_tiled(src, dst, on_stream(stream));
  PARRAY_CUDA_CHECK_LAUNCH();
}

bool workspace_fits(std::size_t bytes) {
  if (bytes <= (std::size_t(256) << 20)) return true;
  std::size_t free_bytes = 0, total_bytes = 0;
  PARRAY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return bytes <= free_bytes / 2;
}

template void copy<float>(MatrixView<const float>, MatrixView<float>, GpuStream);
template void copy<double>(MatrixView<const double>, MatrixView<double>, GpuStream);
template void scale<float>(float, MatrixView<float>, GpuStream);
template void scale<double>(double, MatrixView<double>, GpuStream);

}  // namespace parray::cuda
