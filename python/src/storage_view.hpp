// parray.view(storage, layout): a matrix seen through a Parray type over the
// storage of a host array (figure 17's [2][1024][512] storage as one
// 1024x1024 matrix). The view keeps the storage object alive; its buffer is
// requested again on each use, so a view never holds an export that would
// stop NumPy from resizing or freeing the array.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "operand.hpp"
#include "parray/layout.hpp"

namespace parray::python {

struct StorageView {
  py::object storage;
  Layout type;  // rank 2: dimension 0 the rows, 1 the columns
  MatrixLayout matrix;
  Dtype dtype = Dtype::f32;
};

// A host array argument: a buffer (or an __array_interface__ object, seen as
// a NumPy array of the same memory) or a StorageView, held for one call.
class HostArgument {
 public:
  HostArgument(py::handle obj, const std::string& name, bool writable);
  const Operand& operand() const { return operand_; }

 private:
  py::object object_;  // what the buffer came from (a NumPy array made for an __array_interface__)
  std::unique_ptr<HostBuffer> buffer_;
  Operand operand_;
};

// The storage's buffer as a StorageView over it sees it: checked to be
// C-contiguous (the type's offsets count elements of a flat storage) and large
// enough for the type's span.
Operand storage_operand(const StorageView& view, const HostBuffer& buffer, const std::string& name);

}  // namespace parray::python
