// An array argument of a Python call as the library sees it, from either of
// the two ways an array reaches the module: the buffer protocol (NumPy and
// anything exporting a strided buffer, host memory) or a DLPack capsule
// (PyTorch, CuPy; host or CUDA memory). Strides become a MatrixLayout, so a
// transposed, sliced or Fortran-ordered array is used where it lies.
#pragma once

#include <Python.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "parray/core.hpp"
#include "parray/matrix.hpp"

namespace parray::python {

namespace py = pybind11;

struct Operand {
  std::string name;  // the argument's name, which every error message starts with
  void* data = nullptr;
  Dtype dtype = Dtype::f32;
  MatrixLayout layout{};  // strides in elements, possibly negative or zero
  Memory memory = Memory::paged;
  int device_id = -1;  // CUDA device ordinal; -1 in host memory
  int item_bytes = 0;  // an element's size where dtype does not say it (16-bit data); 0: dtype's

  index_t rows() const { return layout.rows.size; }
  index_t cols() const { return layout.cols.size; }
  bool has_negative_stride() const;
  std::size_t item_size() const { return item_bytes ? std::size_t(item_bytes) : dtype == Dtype::f32 ? 4 : 8; }
  // Whether the bytes the two operands' elements span intersect (a bound:
  // interleaved but disjoint elements count as overlapping).
  bool overlaps(const Operand& other) const;
  std::string where() const;  // "host memory", "cuda:0"
};

// An operand with the strides of a 2-D array: element (i, j) at
// data + i * row_stride + j * col_stride (in elements).
Operand strided_operand(std::string name, void* data, Dtype dtype, index_t rows, index_t cols, index_t row_stride,
                        index_t col_stride);

// A held Py_buffer: released (with the GIL) when destroyed.
class HostBuffer {
 public:
  // A strided buffer of obj; writable asks for one that may be written.
  // TypeError when obj exports no buffer (or no writable one when asked).
  HostBuffer(py::handle obj, const std::string& name, bool writable);
  ~HostBuffer() { PyBuffer_Release(&view_); }
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  const Py_buffer& view() const { return view_; }
  // The buffer as a matrix: 2-D, float32 or float64, aligned, strides whole
  // elements. TypeError for a dtype, ValueError for anything else.
  Operand matrix() const;
  // The dtype only (for buffers that are storage, not matrices).
  Dtype dtype() const;
  // Whether its elements are of the struct-module format `code` (native
  // order) and itemsize bytes: 'i' 4 for int32, 'B' 1 for uint8.
  bool holds(char code, Py_ssize_t itemsize) const;

 private:
  Py_buffer view_{};
  std::string name_;
};

// A new C-ordered NumPy array made by numpy.empty, with its buffer held.
// The module uses no NumPy C API (pybind11's numpy.h reads NumPy's structures,
// whose layout NumPy 2 changed), so one build serves NumPy 1 and 2.
class NewArray {
 public:
  NewArray(index_t rows, index_t cols, const char* dtype);
  const py::object& object() const { return object_; }
  void* data() const { return buffer_->view().buf; }

 private:
  py::object object_;
  std::unique_ptr<HostBuffer> buffer_;
};

// Whether obj exports a buffer; objects offering only __array_interface__ are
// turned into NumPy arrays of the same memory by the caller.
bool exports_buffer(py::handle obj);

// TypeError / ValueError with the argument's name first: "out: ...".
// NumPy's name of a dtype: "float32", "float64".
const char* dtype_text(Dtype d);

// The operands of out = a b: (with same_dtype) b's and out's dtype a's, all
// three in one place, b's rows a's columns, out a's rows by b's columns, out
// overlapping neither a nor b; TypeError or ValueError naming the argument.
void check_product(const Operand& a, const Operand& b, const Operand& c, bool same_dtype);

[[noreturn]] void type_error(const std::string& name, const std::string& what);
[[noreturn]] void value_error(const std::string& name, const std::string& what);

}  // namespace parray::python
