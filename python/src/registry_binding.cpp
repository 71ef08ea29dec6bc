// parray.impls(): the GEMM registry as `parray list` shows it, read from the
// same table (registry.hpp) that the CLI, the tests and the benchmarks use.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "parray/registry.hpp"

namespace parray::python {

namespace {

py::dict describe(const GemmImpl& impl) {
  py::dict d;
  d["name"] = impl.name;
  d["description"] = impl.description;
  d["device"] = device_name(impl.device);
  d["dtypes"] = impl.dtypes();
  d["baseline"] = impl.baseline;
  d["tags"] = impl.tags;
  d["aliases"] = impl.aliases;
  d["preconditions"] = impl.preconditions;
  d["precision_f32"] = precision_name(impl.delivers(Dtype::f32));
  d["default"] = registry().default_name(impl.device) == impl.name;
  return d;
}

py::list implementations() {
  py::list out;
  for (const GemmImpl& impl : registry().all()) out.append(describe(impl));
  return out;
}

py::list missing_parts() {
  py::list out;
  for (const MissingPart& part : registry().missing()) out.append(py::make_tuple(part.name, part.reason));
  return out;
}

}  // namespace

void bind_registry(py::module_& m) {
  m.def("impls", &implementations,
        "Every GEMM implementation of this build, as dicts (name, description, device, dtypes, baseline, tags, "
        "aliases, preconditions, precision_f32, default).");
  m.def("missing", &missing_parts, "The optional parts this build or machine lacks, as (name, reason) pairs.");
}

}  // namespace parray::python
