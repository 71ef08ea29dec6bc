// parray._parray, the compiled part of the Python package `parray`
// (python/parray/__init__.py, docs/python.md). The library's errors
// (parray::Error, a std::invalid_argument) reach Python as ValueError.
#include <pybind11/pybind11.h>

#include "bindings.hpp"

PYBIND11_MODULE(_parray, m) {
  m.doc() = "parray's compiled core: GEMM, layouts and exact k-NN over host buffers and DLPack capsules.";
  parray::python::bind_gemm(m);
  parray::python::bind_gemm16(m);
  parray::python::bind_gemm8(m);
  parray::python::bind_layout(m);
  parray::python::bind_knn(m);
  parray::python::bind_registry(m);
}
