// Parray's dmem on the host side: owning device arrays are parray::Array<T>
// with Memory::device (array.hpp); this adds the copies between memory spaces
// and the layout-transforming copy on the device (Parray's #copy between two
// array types, e.g. a row-major matrix into figure 18's 2x2-block storage).
//
//   Array<float> host(Layout::dense({m, n}));            // paged
//   Array<float> dev = cuda::to_device(host);             // same type, dmem
//   MatrixType f18 = make_matrix_type("fig18", m, n);
//   Array<float> blocked(f18.storage, Memory::device);
//   cuda::copy(dev.view(), blocked.view(f18.view));      // on the GPU
#pragma once

#include <cstddef>

#include "parray/array.hpp"
#include "parray/matrix.hpp"

namespace parray::cuda {

// Element (i, j) of src goes to element (i, j) of dst. Both views must be in
// device memory and of the same shape; any layouts (strided or nested axes).
// Queued on `stream` (nullptr: the calling thread's default stream);
// asynchronous like a kernel launch.
template <class T>
void copy(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream = nullptr);

// C = beta * C on the device, C not read when beta == 0 (BLAS: the K == 0 and
// alpha == 0 cases of a GEMM whose C is in device memory). Any layout.
template <class T>
void scale(T beta, MatrixView<T> c, GpuStream stream = nullptr);

// Whether a device workspace of `bytes` more may be taken on the current
// GPU: up to 256 MiB always, beyond that only where the GPU has room for it
// twice over (a faster path's copy must not push the caller out of memory).
bool workspace_fits(std::size_t bytes);

// The same storage (same type) in another memory space, copied whole.
template <class T>
Array<T> to_device(const Array<T>& host) {
  Array<T> d(host.type(), Memory::device);
  copy_bytes(d.data(), Memory::device, host.data(), host.memory(),
             static_cast<std::size_t>(host.storage_elements()) * sizeof(T));
  return d;
}
template <class T>
Array<T> to_host(const Array<T>& dev, Memory memory = Memory::paged) {
  Array<T> h(dev.type(), memory);
  copy_bytes(h.data(), memory, dev.data(), Memory::device,
             static_cast<std::size_t>(dev.storage_elements()) * sizeof(T));
  return h;
}

extern template void copy<float>(MatrixView<const float>, MatrixView<float>, GpuStream);
extern template void copy<double>(MatrixView<const double>, MatrixView<double>, GpuStream);
extern template void scale<float>(float, MatrixView<float>, GpuStream);
extern template void scale<double>(double, MatrixView<double>, GpuStream);

}  // namespace parray::cuda
