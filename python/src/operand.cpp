#include "operand.hpp"

#include <algorithm>
#include <bit>
#include <string_view>
#include <utility>

namespace parray::python {

void type_error(const std::string& name, const std::string& what) {
  throw py::type_error(std::string(name).append(": ").append(what));
}
void value_error(const std::string& name, const std::string& what) {
  throw py::value_error(std::string(name).append(": ").append(what));
}

namespace {

// The lowest and highest element offsets an axis reaches (a nested axis from
// a Parray type has non-negative strides).
std::pair<index_t, index_t> offset_range(const Axis& axis) {
  if (axis.size == 0) return {0, 0};
  if (!axis.is_strided()) return {0, axis.max_offset()};
  const index_t end = (axis.size - 1) * axis.stride[0];
  return {std::min<index_t>(0, end), std::max<index_t>(0, end)};
}

}  // namespace

Operand strided_operand(std::string name, void* data, Dtype dtype, index_t rows, index_t cols, index_t row_stride,
                        index_t col_stride) {
  Operand op;
  op.name = std::move(name);
  op.data = data;
  op.dtype = dtype;
  op.layout = {Axis::strided(rows, row_stride), Axis::strided(cols, col_stride)};
  return op;
}

bool Operand::has_negative_stride() const {
  for (const Axis* axis : {&layout.rows, &layout.cols})
    for (int l = 0; l < axis->levels; ++l)
      if (axis->stride[l] < 0 && axis->size > 1) return true;
  return false;
}

bool Operand::overlaps(const Operand& other) const {
  if (rows() == 0 || cols() == 0 || other.rows() == 0 || other.cols() == 0) return false;
  if (memory != other.memory || device_id != other.device_id) return false;
  auto bytes = [](const Operand& op) {
    const auto [row_low, row_high] = offset_range(op.layout.rows);
    const auto [col_low, col_high] = offset_range(op.layout.cols);
    const auto base = reinterpret_cast<std::intptr_t>(op.data);
    const auto item = static_cast<std::intptr_t>(op.item_size());
    return std::pair<std::intptr_t, std::intptr_t>(base + (row_low + col_low) * item,
                                                   base + (row_high + col_high + 1) * item);
  };
  const auto [first, last] = bytes(*this);
  const auto [other_first, other_last] = bytes(other);
  return first < other_last && other_first < last;
}

std::string Operand::where() const {
  return memory == Memory::device ? std::string("cuda:").append(std::to_string(device_id)) : "host memory";
}

NewArray::NewArray(index_t rows, index_t cols, const char* dtype) {
  static const auto* numpy_empty =
      new py::object(py::module_::import("numpy").attr("empty"));  // lives as long as the process
  object_ = (*numpy_empty)(py::make_tuple(rows, cols), dtype);
  buffer_ = std::make_unique<HostBuffer>(object_, "result", true);
}

bool exports_buffer(py::handle obj) { return PyObject_CheckBuffer(obj.ptr()) != 0; }

HostBuffer::HostBuffer(py::handle obj, const std::string& name, bool writable) : name_(name) {
  const int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) {
    PyErr_Clear();
    if (writable && PyObject_CheckBuffer(obj.ptr())) value_error(name, "is read-only (the result is written into it)");
    type_error(name, std::string("a ")
                         .append(Py_TYPE(obj.ptr())->tp_name)
                         .append(" is not an array (expected a NumPy array or an object with the buffer protocol)"));
  }
}

bool HostBuffer::holds(char code, Py_ssize_t itemsize) const {
  // Native or explicitly little-endian elements only.
  std::string_view format = view_.format ? view_.format : "B";
  const bool little = std::endian::native == std::endian::little;
  if (!format.empty() && (format[0] == '@' || format[0] == '=' || (little && format[0] == '<')))
    format.remove_prefix(1);
  return format.size() == 1 && format[0] == code && view_.itemsize == itemsize;
}

Dtype HostBuffer::dtype() const {
  if (holds('f', 4)) return Dtype::f32;
  if (holds('d', 8)) return Dtype::f64;
  type_error(name_, std::string("elements of format '")
                        .append(view_.format ? view_.format : "B")
                        .append("' are not float32 or float64"));
}

Operand HostBuffer::matrix() const {
  const Dtype type = dtype();
  if (view_.ndim != 2)
    value_error(name_, std::string("has ").append(std::to_string(view_.ndim)).append(" dimensions, a matrix has 2"));
  const auto item = static_cast<index_t>(view_.itemsize);
  if (reinterpret_cast<std::uintptr_t>(view_.buf) % static_cast<std::uintptr_t>(item) != 0)
    value_error(name_, "its data is not aligned to its element size");
  for (int axis = 0; axis < 2; ++axis)
    if (view_.strides[axis] % item != 0)
      value_error(name_, std::string("stride ")
                             .append(std::to_string(view_.strides[axis]))
                             .append(" bytes is not a whole number of elements"));
  return strided_operand(name_, view_.buf, type, view_.shape[0], view_.shape[1], view_.strides[0] / item,
                         view_.strides[1] / item);
}

const char* dtype_text(Dtype d) { return d == Dtype::f32 ? "float32" : "float64"; }

namespace {

bool same_place(const Operand& x, const Operand& y) {
  return (x.memory == Memory::device) == (y.memory == Memory::device) && x.device_id == y.device_id;
}

}  // namespace

void check_product(const Operand& a, const Operand& b, const Operand& c, bool same_dtype) {
  for (const Operand* x : {&b, &c}) {
    if (same_dtype && x->dtype != a.dtype)
      type_error(
          x->name,
          std::string("dtype ").append(dtype_text(x->dtype)).append(" differs from a's ").append(dtype_text(a.dtype)));
    if (!same_place(*x, a))
      value_error(x->name, std::string("is in ").append(x->where()).append(", a in ").append(a.where()));
  }
  if (b.rows() != a.cols())
    value_error(b.name, std::string("has ")
                            .append(std::to_string(b.rows()))
                            .append(" rows, a has ")
                            .append(std::to_string(a.cols()))
                            .append(" columns"));
  if (c.rows() != a.rows() || c.cols() != b.cols())
    value_error(c.name, std::string("shape (")
                            .append(std::to_string(c.rows()))
                            .append(", ")
                            .append(std::to_string(c.cols()))
                            .append(") is not (")
                            .append(std::to_string(a.rows()))
                            .append(", ")
                            .append(std::to_string(b.cols()))
                            .append(")"));
  for (const Operand* x : {&a, &b})
    if (c.overlaps(*x)) value_error(c.name, std::string("overlaps ").append(x->name).append(" in memory"));
}

}  // namespace parray::python
