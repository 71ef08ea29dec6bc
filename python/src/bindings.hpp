// The parts of the compiled module parray._parray, one function each
// (module.cpp calls them); the Python package parray/__init__.py builds the
// public API on them.
#pragma once

#include <pybind11/pybind11.h>

namespace parray::python {

namespace py = pybind11;

void bind_gemm(py::module_& m);      // gemm_host, gemm_dlpack, implementations
void bind_gemm16(py::module_& m);    // gemm16_dlpack
void bind_gemm8(py::module_& m);     // gemm8_pointers
void bind_layout(py::module_& m);    // Layout, View
void bind_knn(py::module_& m);       // knn_host, knn_dlpack, vector files
void bind_registry(py::module_& m);  // impls()

}  // namespace parray::python
