// Parray's #copy on the device: element (i, j) of one matrix type to element
// (i, j) of another, both in device memory (e.g. row-major into figure 18's
// 2x2-block storage). One thread per element; the threads of a warp walk the
// destination's contiguous direction so the stores coalesce.
#include <algorithm>

#include "parray/cuda/check.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/cuda/operand.cuh"

namespace parray::cuda {

namespace {
template <class T, bool RowsFast>
__global__ __launch_bounds__(256) void copy_kernel(MatrixView<const T> src, MatrixView<T> dst) {
  const index_t rows = dst.rows(), cols = dst.cols();
  const index_t n = rows * cols;
  for (index_t e = blockIdx.x * index_t(blockDim.x) + threadIdx.x; e < n; e += index_t(gridDim.x) * blockDim.x) {
    const index_t i = RowsFast ? e % rows : e / cols, j = RowsFast ? e / rows : e % cols;
    dst(i, j) = src(i, j);
  }
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
  const bool rows_fast = dst.layout.is_col_major();
  const unsigned blocks = unsigned(std::min<index_t>((n + 255) / 256, 65535));
  if (rows_fast) copy_kernel<T, true><<<blocks, 256>>>(src, dst);
  else copy_kernel<T, false><<<blocks, 256>>>(src, dst);
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
