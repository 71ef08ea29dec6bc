// #copy between matrix types when one side or both are in device memory.
//
//   same dense layout on both sides   the storage as bytes: one copy
//   device -> device                  the tiled layout-changing kernel
//   host -> device                    the source's storage to the device as
//                                     it lies (one copy), then the kernel
//   device -> host                    the kernel into a device buffer of the
//                                     destination's layout, then one copy back
//                                     (dense destinations), or into a dense
//                                     row-major buffer and the host's loop
//                                     (a destination with holes that belong to
//                                     other data, e.g. a column block)
#include "parray/array.hpp"
#include "parray/config.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda/check.hpp"
#include "parray/cuda/memory.hpp"
#endif

namespace parray {

namespace {

#if PARRAY_HAVE_CUDA
// Every storage element in [0, span) belongs to the matrix: copying the span
// as bytes writes nothing else.
bool dense(const MatrixLayout& l) { return l.span() == l.rows.size * l.cols.size; }

bool same_layout(const MatrixLayout& a, const MatrixLayout& b) {
  auto same_axis = [](const Axis& x, const Axis& y) {
    if (x.levels != y.levels || x.size != y.size) return false;
    for (int l = 0; l < x.levels; ++l)
      if (x.stride[l] != y.stride[l] || (l > 0 && x.extent[l] != y.extent[l])) return false;
    return true;
  };
  return same_axis(a.rows, b.rows) && same_axis(a.cols, b.cols);
}

template <class T>
Array<T> device_buffer(index_t elements) {
  return Array<T>(Layout::dense({std::max<index_t>(elements, 1)}), Memory::device);
}

template <class T>
void host_to_device(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream) {
  const index_t span = src.layout.span();
  Array<T> staged = device_buffer<T>(span);
  copy_bytes(staged.data(), Memory::device, src.data, src.memory, std::size_t(span) * sizeof(T), stream);
  cuda::copy<T>(MatrixView<const T>{staged.data(), src.layout, Memory::device}, dst, stream);
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(cuda::on_stream(stream)));  // before `staged` is freed
}

template <class T>
void device_to_host(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream) {
  const index_t rows = dst.rows(), cols = dst.cols();
  const MatrixLayout staged_layout = dense(dst.layout) ? dst.layout : MatrixLayout::row_major(rows, cols, cols);
  const index_t span = staged_layout.span();
  Array<T> staged = device_buffer<T>(span);
  cuda::copy<T>(src, MatrixView<T>{staged.data(), staged_layout, Memory::device}, stream);
  if (dense(dst.layout)) {
    copy_bytes(dst.data, dst.memory, staged.data(), Memory::device, std::size_t(span) * sizeof(T), stream);
    return;
  }
  std::vector<T> host(static_cast<std::size_t>(span));
  copy_bytes(host.data(), Memory::paged, staged.data(), Memory::device, std::size_t(span) * sizeof(T), stream);
  copy_host<T>(MatrixView<const T>{host.data(), staged_layout, Memory::paged}, dst);
}
#endif

}  // namespace

template <class T>
void copy_device(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream) {
  if (dst.rows() == 0 || dst.cols() == 0) return;
#if PARRAY_HAVE_CUDA
  if (same_layout(src.layout, dst.layout) && dense(dst.layout))
    return copy_bytes(dst.data, dst.memory, src.data, src.memory, std::size_t(dst.layout.span()) * sizeof(T), stream);
  const bool from_device = src.memory == Memory::device, to_device = dst.memory == Memory::device;
  if (from_device && to_device) return cuda::copy<T>(src, dst, stream);
  if (to_device) return host_to_device(src, dst, stream);
  device_to_host(src, dst, stream);
#else
  (void)src, (void)dst, (void)stream;
  throw Error("copy: a copy to or from device memory needs the CUDA backend (parray was built without CUDA)");
#endif
}

template void copy_device<float>(MatrixView<const float>, MatrixView<float>, GpuStream);
template void copy_device<double>(MatrixView<const double>, MatrixView<double>, GpuStream);

}  // namespace parray
