// Parray's #copy on the device: element (i, j) of one matrix type to element
// (i, j) of another, both in device memory (e.g. row-major into figure 18's
// 2x2-block storage, or a transpose), through 32 x 32 tiles in shared memory:
// read along the source's contiguous direction, written along the
// destination's, so both sides coalesce whichever way each runs.
#include <algorithm>

#include "parray/cuda/check.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/cuda/operand.cuh"

namespace parray::cuda {

namespace {

constexpr int kTile = 32, kTileRows = 8;

// Whether consecutive rows of a column are next to each other in storage.
bool rows_contiguous(const MatrixLayout& l) {
  return l.rows.stride[l.rows.levels - 1] == 1 && !(l.cols.stride[l.cols.levels - 1] == 1 && l.cols.size > 1);
}

// One 32 x 32 tile per step: the tile's 32 row and 32 column offsets of each
// side computed once (64 index evaluations for 1024 elements: a blocked
// layout's divisions vanish from the per-element cost), the tile read along
// the source's contiguous direction into shared memory and written along the
// destination's.
template <class T>
__global__ __launch_bounds__(kTile* kTileRows) void copy_tiled_kernel(MatrixView<const T> src, bool src_rows_fast,
                                                                       MatrixView<T> dst, bool dst_rows_fast) {
  __shared__ T tile[kTile][kTile + 1];
  __shared__ index_t offsets[4][kTile];  // source rows, source columns, destination rows, destination columns
  const index_t rows = dst.rows(), cols = dst.cols();
  const index_t tiles_i = (rows + kTile - 1) / kTile;
  const index_t j0 = index_t(blockIdx.x) * kTile;
  for (index_t ti = blockIdx.y; ti < tiles_i; ti += gridDim.y) {
    const index_t i0 = ti * kTile;
    if (threadIdx.y < 4) {
      const int t = threadIdx.x;
      const bool along_rows = threadIdx.y % 2 == 0;
      const index_t x = (along_rows ? i0 : j0) + t, n = along_rows ? rows : cols;
      const MatrixLayout& l = threadIdx.y < 2 ? src.layout : dst.layout;
      offsets[threadIdx.y][t] = x < n ? (along_rows ? l.rows.offset(x) : l.cols.offset(x)) : 0;
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const int a = src_rows_fast ? threadIdx.x : k, b = src_rows_fast ? k : threadIdx.x;
      if (i0 + a < rows && j0 + b < cols) tile[a][b] = src.data[offsets[0][a] + offsets[1][b]];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < kTile; k += kTileRows) {
      const int a = dst_rows_fast ? threadIdx.x : k, b = dst_rows_fast ? k : threadIdx.x;
      if (i0 + a < rows && j0 + b < cols) dst.data[offsets[2][a] + offsets[3][b]] = tile[a][b];
    }
    __syncthreads();
  }
}

template <class T>
void copy_tiled(MatrixView<const T> src, MatrixView<T> dst) {
  const index_t rows = dst.rows(), cols = dst.cols();
  const dim3 block(kTile, kTileRows);
  const dim3 grid(unsigned((cols + kTile - 1) / kTile), unsigned(std::min<index_t>((rows + kTile - 1) / kTile, 65535)));
  copy_tiled_kernel<<<grid, block>>>(src, rows_contiguous(src.layout), dst, rows_contiguous(dst.layout));
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
void scale(T beta, MatrixView<T> c) {
  if (c.memory != Memory::device) throw Error("cuda::scale: C must be in device memory");
  const index_t n = c.rows() * c.cols();
  if (n == 0) return;
  scale_kernel<T><<<unsigned(std::min<index_t>((n + 255) / 256, 65535)), 256>>>(beta, c);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template <class T>
void copy(MatrixView<const T> src, MatrixView<T> dst) {
  if (src.rows() != dst.rows() || src.cols() != dst.cols())
    throw Error("cuda::copy: source is " + std::to_string(src.rows()) + "x" + std::to_string(src.cols()) +
                ", destination is " + std::to_string(dst.rows()) + "x" + std::to_string(dst.cols()));
  if (src.memory != Memory::device || dst.memory != Memory::device)
    throw Error("cuda::copy: both views must be in device memory (use to_device/to_host for whole arrays)");
  const index_t n = dst.rows() * dst.cols();
  if (n == 0) return;
  copy_tiled(src, dst);
  PARRAY_CUDA_CHECK_LAUNCH();
}

bool workspace_fits(std::size_t bytes) {
  if (bytes <= (std::size_t(256) << 20)) return true;
  std::size_t free_bytes = 0, total_bytes = 0;
  PARRAY_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return bytes <= free_bytes / 2;
}

template void copy<float>(MatrixView<const float>, MatrixView<float>);
template void copy<double>(MatrixView<const double>, MatrixView<double>);
template void scale<float>(float, MatrixView<float>);
template void scale<double>(double, MatrixView<double>);

}  // namespace parray::cuda
