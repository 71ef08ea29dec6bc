// Owning arrays and Parray's #copy.
//
// Array<T> is Parray's `#create A(x)` / `#destroy A(x)` as RAII: storage for a
// layout (its natural type) in one memory space, freed by the destructor.
// view(type) looks at the same storage through another type of the same or
// smaller span, e.g. figure 17's [2][1024][512] storage seen as the
// 1024x1024 matrix [#A_1][[#A_0][#A_2]].
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "parray/core.hpp"
#include "parray/layout.hpp"
#include "parray/matrix.hpp"

namespace parray {

// Raw allocation per memory space (src/core/memory.cpp). Paged memory is
// 64-byte aligned; pinned and device memory need the CUDA runtime and throw
// parray::Error when parray was built without it or no GPU is present.
void* allocate_bytes(Memory memory, std::size_t bytes);
void free_bytes(Memory memory, void* p) noexcept;
// Copies raw bytes between any two memory spaces (CUDA for device memory, on
// `stream`, nullptr: the calling thread's default stream); returns once the
// bytes are there.
void copy_bytes(void* dst, Memory dst_memory, const void* src, Memory src_memory, std::size_t bytes,
                GpuStream stream = nullptr);
bool cuda_available();  // built with CUDA and a GPU is present

template <class T>
class Array {
 public:
  explicit Array(Layout type, Memory memory = Memory::paged)
      : type_(std::move(type)), memory_(memory), elements_(type_.span()) {
    index_t bytes = Layout::checked_mul(elements_, static_cast<index_t>(sizeof(T)));
    if (bytes > 0) {
      data_.reset(static_cast<T*>(allocate_bytes(memory_, static_cast<std::size_t>(bytes))));
      data_.get_deleter().memory = memory_;
    }
  }

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  const Layout& type() const { return type_; }
  Memory memory() const { return memory_; }
  index_t storage_elements() const { return elements_; }

  // Storage offset access (host memory only), Parray's x[$A[...]$].
  T& operator[](index_t offset) { return data_.get()[offset]; }
  const T& operator[](index_t offset) const { return data_.get()[offset]; }

  // The array as a matrix through its own (rank-2) type.
  MatrixView<T> view() { return view(type_); }
  MatrixView<const T> view() const { return {data_.get(), MatrixLayout::from(type_), memory_}; }
  // The same storage through another rank-2 type.
  MatrixView<T> view(const Layout& matrix_type) {
    MatrixLayout l = MatrixLayout::from(matrix_type);
    if (l.span() > elements_)
      throw Error("array view " + matrix_type.str() + " reaches " + std::to_string(l.span()) +
                  " elements but the storage " + type_.str() + " holds " + std::to_string(elements_));
    return {data_.get(), l, memory_};
  }

 private:
  struct Deleter {
    Memory memory = Memory::paged;
    void operator()(T* p) const noexcept { free_bytes(memory, p); }
  };
  Layout type_;
  Memory memory_;
  index_t elements_;
  std::unique_ptr<T, Deleter> data_;
};

// Parray's `#copy A(x) to B(y)`: element i of A's logical order goes to element
// i of B's; both types must have the same size. Host memory only here.
template <class T>
void copy(const T* src, const Layout& src_type, T* dst, const Layout& dst_type) {
  if (src_type.size() != dst_type.size())
    throw Error("copy: source " + src_type.str() + " has " + std::to_string(src_type.size()) +
                " elements, destination " + dst_type.str() + " has " + std::to_string(dst_type.size()));
  for (index_t i = 0; i < src_type.size(); ++i) dst[dst_type.offset(i)] = src[src_type.offset(i)];
}

// Layout-transforming copy between two matrices of the same shape, both in
// host memory (paged or pinned).
template <class T>
void copy_host(MatrixView<const T> src, MatrixView<T> dst) {
  // Walk the destination's contiguous direction innermost.
  const bool dst_rows_inner = dst.layout.rows.is_strided() && dst.layout.rows.stride[0] == 1 &&
                              !(dst.layout.cols.is_strided() && dst.layout.cols.stride[0] == 1);
  if (dst_rows_inner) {
    for (index_t j = 0; j < dst.cols(); ++j) {
      const index_t so = src.layout.cols.offset(j), dof = dst.layout.cols.offset(j);
      for (index_t i = 0; i < dst.rows(); ++i)
        dst.data[dof + dst.layout.rows.offset(i)] = src.data[so + src.layout.rows.offset(i)];
    }
  } else {
    for (index_t i = 0; i < dst.rows(); ++i) {
      const index_t so = src.layout.rows.offset(i), dof = dst.layout.rows.offset(i);
      for (index_t j = 0; j < dst.cols(); ++j)
        dst.data[dof + dst.layout.cols.offset(j)] = src.data[so + src.layout.cols.offset(j)];
    }
  }
}

// The copies that touch device memory (src/core/copy.cpp): one copy of the
// bytes where both sides have the same dense layout, else a staged copy and
// the device's tiled layout-changing kernel, all on `stream` (nullptr: the
// calling thread's default stream). A copy to or from the host returns once
// it is done; device to device, once it is queued. Built without CUDA:
// parray::Error.
template <class T>
void copy_device(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream = nullptr);
extern template void copy_device<float>(MatrixView<const float>, MatrixView<float>, GpuStream);
extern template void copy_device<double>(MatrixView<const double>, MatrixView<double>, GpuStream);

// Parray's #copy between two matrix types of the same shape, any layouts, any
// memory kinds (paged, pinned, device) on either side, in one call; the GPU's
// part on `stream` as copy_device.
template <class T>
void copy(MatrixView<const T> src, MatrixView<T> dst, GpuStream stream = nullptr) {
  if (src.rows() != dst.rows() || src.cols() != dst.cols())
    throw Error("copy: source is " + std::to_string(src.rows()) + "x" + std::to_string(src.cols()) +
                ", destination is " + std::to_string(dst.rows()) + "x" + std::to_string(dst.cols()));
  if (src.memory == Memory::device || dst.memory == Memory::device) return copy_device(src, dst, stream);
  copy_host(src, dst);
}

}  // namespace parray
