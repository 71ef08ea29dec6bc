// GEMM operands as kernels see them: a pointer plus an addressing policy.
//
//   StridedOperand   offset(i, j) = i * rs + j * cs        (row, col, row-pad)
//   LayoutOperand    offset(i, j) = rows.offset(i) + cols.offset(j)
//                                   (any MatrixLayout: fig17, fig17x4, fig18)
//
// Kernels are templates over these, so the same source runs on every layout
// (Parray's point: the code is written against logical coordinates, the type
// decides the address); strided layouts get the cheap multiply-add addressing.
#pragma once

#include <cstdint>
#include <string>

#include "parray/core.hpp"
#include "parray/cuda/check.hpp"
#include "parray/matrix.hpp"
#include "parray/registry.hpp"

namespace parray::cuda {

template <class T>
struct StridedOperand {
  T* p;
  index_t rs, cs;
  static constexpr bool strided = true;
  PARRAY_HD index_t offset(index_t i, index_t j) const { return i * rs + j * cs; }
  PARRAY_HD index_t row(index_t i) const { return i * rs; }
  PARRAY_HD index_t col(index_t j) const { return j * cs; }
  PARRAY_HD T& operator()(index_t i, index_t j) const { return p[offset(i, j)]; }
};

template <class T>
struct LayoutOperand {
  T* p;
  MatrixLayout l;
  static constexpr bool strided = false;
  PARRAY_HD index_t offset(index_t i, index_t j) const { return l.offset(i, j); }
  PARRAY_HD index_t row(index_t i) const { return l.rows.offset(i); }
  PARRAY_HD index_t col(index_t j) const { return l.cols.offset(j); }
  PARRAY_HD T& operator()(index_t i, index_t j) const { return p[offset(i, j)]; }
};

// C = v + beta * C, with C not read when beta == 0 (BLAS: NaN there must not
// propagate). v is alpha * (A B)(i, j).
template <class T>
__device__ __forceinline__ void store_c(T& c, T v, T beta) {
  c = beta == T(0) ? v : v + beta * c;
}

template <class T>
StridedOperand<T> strided_operand(const MatrixView<T>& v) {
  return {v.data, v.layout.rows.stride[0], v.layout.cols.stride[0]};
}
template <class T>
LayoutOperand<T> layout_operand(const MatrixView<T>& v) {
  return {v.data, v.layout};
}

// Calls f(a, b, c) with strided operands when all three layouts are strided,
// else with layout operands: two instantiations per kernel, not eight.
template <class T, class F>
void with_operands(const GemmCall<T>& call, F&& f) {
  if (call.a.layout.is_strided() && call.b.layout.is_strided() && call.c.layout.is_strided())
    f(strided_operand(call.a), strided_operand(call.b), strided_operand(call.c));
  else
    f(layout_operand(call.a), layout_operand(call.b), layout_operand(call.c));
}

// Kernels index with int for M, N, K (offsets are 64-bit).
template <class T>
void check_int_sizes(const GemmCall<T>& call, const char* impl) {
  const index_t lim = 0x7fffffff;
  if (call.c.rows() > lim || call.c.cols() > lim || call.a.cols() > lim)
    throw Error(std::string(impl) + ": M, N and K must each be below 2^31");
}

inline bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

inline unsigned ceil_div(index_t a, index_t b) { return static_cast<unsigned>((a + b - 1) / b); }

}  // namespace parray::cuda
