// parray.Layout and parray.view: Parray types from their notation, and host
// storage seen as a matrix through one.
#include "storage_view.hpp"

#include "bindings.hpp"
#include "parray/array.hpp"

namespace parray::python {

HostArgument::HostArgument(py::handle obj, const std::string& name, bool writable) {
  if (py::isinstance<StorageView>(obj)) {
    const auto& view = obj.cast<const StorageView&>();
    object_ = view.storage;
    buffer_ = std::make_unique<HostBuffer>(object_, name, writable);
    operand_ = storage_operand(view, *buffer_, name);
    return;
  }
  object_ = py::reinterpret_borrow<py::object>(obj);
  if (!exports_buffer(obj) && py::hasattr(obj, "__array_interface__"))
    object_ = py::module_::import("numpy").attr("asarray")(obj);  // the same memory, no copy
  buffer_ = std::make_unique<HostBuffer>(object_, name, writable);
  operand_ = buffer_->matrix();
}

Operand storage_operand(const StorageView& view, const HostBuffer& buffer, const std::string& name) {
  const Py_buffer& b = buffer.view();
  if (!PyBuffer_IsContiguous(&b, 'C')) value_error(name, "the storage of a view must be C-contiguous");
  if (reinterpret_cast<std::uintptr_t>(b.buf) % static_cast<std::uintptr_t>(b.itemsize) != 0)
    value_error(name, "its data is not aligned to its element size");
  Operand op;
  op.name = name;
  op.dtype = buffer.dtype();
  op.data = b.buf;
  op.layout = view.matrix;
  const index_t elements = b.len / b.itemsize;
  if (op.layout.span() > elements)
    value_error(name, std::string("the type ")
                          .append(view.type.str())
                          .append(" reaches ")
                          .append(std::to_string(op.layout.span()))
                          .append(" elements, its storage holds ")
                          .append(std::to_string(elements)));
  return op;
}

namespace {

// Layout(text, **symbols): integer keywords are the extents' named constants,
// the others types (a notation string, parsed with the constants and the types
// given before it, or a Layout) that the text refers to as #NAME_i.
Layout parse_layout(const std::string& text, const py::kwargs& symbols) {
  Layout::Constants constants;
  for (const auto& [key, value] : symbols)
    if (py::isinstance<py::int_>(value)) constants[key.cast<std::string>()] = value.cast<index_t>();
  Layout::Symbols types;
  for (const auto& [key, value] : symbols) {
    const std::string name = key.cast<std::string>();
    if (py::isinstance<Layout>(value))
      types.insert_or_assign(name, value.cast<Layout>());
    else if (py::isinstance<py::str>(value))
      types.insert_or_assign(name, Layout::parse(value.cast<std::string>(), types, constants));
    else if (!py::isinstance<py::int_>(value))
      type_error(name, "a symbol is a type (str or Layout) or a named constant (int)");
  }
  return Layout::parse(text, types, constants);
}

py::tuple shape_of(const Layout& l) {
  py::tuple shape(l.rank());
  for (int k = 0; k < l.rank(); ++k) shape[static_cast<std::size_t>(k)] = l.dim(k).size();
  return shape;
}

StorageView make_view(py::object storage, const Layout& type) {
  StorageView v;
  v.type = type;
  v.matrix = MatrixLayout::from(type);
  const HostBuffer buffer(storage, "storage", false);
  v.dtype = buffer.dtype();
  storage_operand(v, buffer, "storage");  // checks contiguity and span now, not at the first product
  v.storage = std::move(storage);
  return v;
}

// The view's matrix as a new NumPy array (a copy, in row-major order).
template <class T>
py::object to_numpy(const StorageView& v) {
  const HostBuffer buffer(v.storage, "storage", false);
  const Operand from = storage_operand(v, buffer, "storage");
  const index_t rows = v.matrix.rows.size, cols = v.matrix.cols.size;
  const NewArray out(rows, cols, v.dtype == Dtype::f32 ? "float32" : "float64");
  MatrixView<const T> src{static_cast<const T*>(from.data), v.matrix, Memory::paged};
  copy_host(src, MatrixView<T>{static_cast<T*>(out.data()), MatrixLayout::row_major(rows, cols, cols)});
  return out.object();
}

}  // namespace

void bind_layout(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<Layout>(m, "Layout", "A Parray type: nested dimensions over a storage, in the paper's notation.")
      .def(py::init(&parse_layout), "text"_a)
      .def_property_readonly("size", &Layout::size, "elements it shows")
      .def_property_readonly("rank", &Layout::rank, "top-level dimensions")
      .def_property_readonly("span", &Layout::span, "storage elements it reaches: 1 + its largest offset")
      .def_property_readonly("shape", &shape_of, "the sizes of its top-level dimensions")
      .def(
          "dim", [](const Layout& l, int k) { return Layout(l.dim(k)); }, "k"_a, "the sub-type L_k")
      .def("offset", py::overload_cast<index_t>(&Layout::offset, py::const_), "i"_a,
           "storage offset of flat logical index i")
      .def("__eq__", [](const Layout& a, const Layout& b) { return a == b; })
      .def("__str__", &Layout::str)
      .def("__repr__", [](const Layout& l) { return std::string("parray.Layout('").append(l.str()).append("')"); });

  py::class_<StorageView>(m, "View", "A host array's storage seen as a matrix through a rank-2 Layout.")
      .def_readonly("storage", &StorageView::storage)
      .def_readonly("layout", &StorageView::type)
      .def_property_readonly(
          "shape", [](const StorageView& v) { return py::make_tuple(v.matrix.rows.size, v.matrix.cols.size); })
      .def_property_readonly("dtype",
                             [](const StorageView& v) { return v.dtype == Dtype::f32 ? "float32" : "float64"; })
      .def(
          "numpy",
          [](const StorageView& v) -> py::object {
            if (v.dtype == Dtype::f32) return to_numpy<float>(v);
            return to_numpy<double>(v);
          },
          "the matrix as a new row-major NumPy array")
      .def("__repr__", [](const StorageView& v) {
        return std::string("parray.View(")
            .append(v.type.str())
            .append(" over ")
            .append(py::str(py::type::of(v.storage)).cast<std::string>())
            .append(")");
      });
  m.def("view", &make_view, "storage"_a, "layout"_a,
        "The C-contiguous host array `storage` (its elements as one flat storage) seen as the matrix of the rank-2 "
        "Layout `layout`.");
}

}  // namespace parray::python
