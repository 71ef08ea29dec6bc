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

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "parray/core.hpp"
#include "parray/cuda/check.hpp"
#include "parray/matrix.hpp"
#include "parray/registry.hpp"

namespace parray::cuda {

// A run of `len` consecutive indices of one axis starting at i0, seen as
// strided: offset(i0 + d) = base + d * step for 0 <= d < len when `ok`. Every
// strided axis is; a nested (mixed-radix) axis is when the run does not cross
// a carry of its innermost digit, which is how the step-12 kernel addresses a
// figure-17/18 tile once per tile instead of once per element.
struct AxisRun {
  index_t base, step;
  bool ok;
};

template <class T>
struct StridedOperand {
  T* p;
  index_t rs, cs;
  static constexpr bool strided = true;
  PARRAY_HD index_t offset(index_t i, index_t j) const { return i * rs + j * cs; }
  PARRAY_HD index_t row(index_t i) const { return i * rs; }
  PARRAY_HD index_t col(index_t j) const { return j * cs; }
  PARRAY_HD AxisRun row_run(index_t i0, index_t) const { return {i0 * rs, rs, true}; }
  PARRAY_HD AxisRun col_run(index_t j0, index_t) const { return {j0 * cs, cs, true}; }
  PARRAY_HD T& operator()(index_t i, index_t j) const { return p[offset(i, j)]; }
};

// C as an accumulator: the step-12 epilogue adds alpha * acc into it with
// atomic additions (L2 reductions, 16 bytes at a time where C's rows allow)
// instead of storing, and does not apply beta (C was scaled before). The K
// split's parts (src/cuda/multilevel/), running at once on their streams, add
// into one C this way rather than each writing a partial product that a
// summing pass reads back. The additions' order is not fixed, so the last
// bits of C may differ from run to run.
template <class T>
struct AddOperand : StridedOperand<T> {
  static constexpr bool adds = true;
};
template <class Op>
concept AddsInto = requires { requires Op::adds; };

// Axis::offset with 32-bit digit arithmetic: a 64-bit division is a ~60-
// instruction subroutine on the GPU, a 32-bit one ~15, and kernels index
// with int (M, N, K < 2^31), so the digits fit.
PARRAY_HD inline index_t axis_offset(const Axis& a, index_t i64) {
  if (a.levels == 1) return i64 * a.stride[0];
  unsigned i = static_cast<unsigned>(i64);
  index_t off = 0;
  for (int l = a.levels - 1; l > 0; --l) {
    const unsigned e = static_cast<unsigned>(a.extent[l]);
    off += index_t(i % e) * a.stride[l];
    i /= e;
  }
  return off + index_t(i) * a.stride[0];
}

// The run [i0, i0 + len) of an axis: strided inside one digit of the
// innermost level (len >= 1, i0 + len <= size).
PARRAY_HD inline AxisRun axis_run(const Axis& a, index_t i0, index_t len) {
  if (a.levels == 1) return {i0 * a.stride[0], a.stride[0], true};
  const int l = a.levels - 1;
  const unsigned e = static_cast<unsigned>(a.extent[l]);
  return {axis_offset(a, i0), a.stride[l], static_cast<unsigned>(i0) % e + static_cast<unsigned>(len) <= e};
}

template <class T>
struct LayoutOperand {
  T* p;
  MatrixLayout l;
  static constexpr bool strided = false;
  PARRAY_HD index_t offset(index_t i, index_t j) const { return row(i) + col(j); }
  PARRAY_HD index_t row(index_t i) const { return axis_offset(l.rows, i); }
  PARRAY_HD index_t col(index_t j) const { return axis_offset(l.cols, j); }
  PARRAY_HD AxisRun row_run(index_t i0, index_t len) const { return axis_run(l.rows, i0, len); }
  PARRAY_HD AxisRun col_run(index_t j0, index_t len) const { return axis_run(l.cols, j0, len); }
  PARRAY_HD T& operator()(index_t i, index_t j) const { return p[offset(i, j)]; }
};

// A matrix stored as a grid of strided blocks of block_rows x block_cols
// (figs 17 / 17x4 / 18: each axis's inner digit a whole block), block (bi,
// bj) at bi * block_rs + bj * block_cs; a strided matrix is one block. A
// kernel whose tiles never cross a block takes the tile's block once and
// addresses it as a strided operand, at the strided layouts' cost.
template <class T>
struct BlockedOperand {
  T* p;
  index_t rs, cs;              // inside a block
  index_t block_rs, block_cs;  // from a block to the next down / across
  index_t block_rows, block_cols;
  PARRAY_HD StridedOperand<T> block(index_t bi, index_t bj) const {
    return {p + bi * block_rs + bj * block_cs, rs, cs};
  }
  PARRAY_HD T& operator()(index_t i, index_t j) const {
    return block(i / block_rows, j / block_cols)(i % block_rows, j % block_cols);
  }
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

// v as a grid of strided blocks whose extents are multiples of tile_rows x
// tile_cols wherever an axis has several (a tile then lies in one block); none
// where v's layout is not such a grid (more than two levels on an axis, or a
// last block cut short).
template <class T>
std::optional<BlockedOperand<T>> tile_blocks(const MatrixView<T>& v, index_t tile_rows, index_t tile_cols) {
  struct Blocks {
    index_t extent, stride, block_stride;
  };
  const auto blocks = [](const Axis& a, index_t tile) -> std::optional<Blocks> {
    if (a.levels == 1 || (a.levels == 2 && a.size <= a.extent[1]))
      return Blocks{std::max<index_t>(a.size, 1), a.stride[a.levels - 1], 0};
    if (a.levels == 2 && a.size % a.extent[1] == 0 && a.extent[1] % tile == 0)
      return Blocks{a.extent[1], a.stride[1], a.stride[0]};
    return std::nullopt;
  };
  const auto r = blocks(v.layout.rows, tile_rows), c = blocks(v.layout.cols, tile_cols);
  if (!r || !c) return std::nullopt;
  return BlockedOperand<T>{v.data, r->stride, c->stride, r->block_stride, c->block_stride, r->extent, c->extent};
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
