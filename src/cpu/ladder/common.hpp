// Shared pieces of the CPU GEMM ladder (src/cpu/ladder/0N_*.cpp).
//
// Every step is written once, as a template over *accessors*: small objects
// that turn a logical (i, j) into an element of A, B or C. There are two:
//
//   Strided  offset = i * rs + j * cs     (row-major, column-major, padded)
//   Tabled   offset = rows[i] + cols[j]   (any Parray layout, e.g. fig17/fig18:
//                                          each Axis evaluated once per index)
//
// with_accessors() picks Strided when all three operands are strided and
// Tabled otherwise, so a kernel is compiled twice per dtype and never asks
// which layout it runs on. The packing routines and the register-tile
// product below are shared by the packing and tiling steps.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "parray/registry.hpp"

namespace parray::ladder {

template <class T>
struct Strided {
  T* data;
  index_t rs, cs;  // row and column stride
  index_t row(index_t i) const { return i * rs; }
  index_t col(index_t j) const { return j * cs; }
  T& operator()(index_t i, index_t j) const { return data[i * rs + j * cs]; }
};

template <class T>
struct Tabled {
  T* data;
  const index_t* rows;  // rows[i] = layout.rows.offset(i)
  const index_t* cols;  // cols[j] = layout.cols.offset(j)
  index_t row(index_t i) const { return rows[i]; }
  index_t col(index_t j) const { return cols[j]; }
  T& operator()(index_t i, index_t j) const { return data[rows[i] + cols[j]]; }
};

// The offset tables of one operand, alive for the duration of the call.
struct OffsetTables {
  std::vector<index_t> rows, cols;
  explicit OffsetTables(const MatrixLayout& l) : rows(l.rows.offsets()), cols(l.cols.offsets()) {}
  template <class T>
  Tabled<T> over(T* data) const {
    return {data, rows.data(), cols.data()};
  }
};

// Runs kernel(call, a, b, c) with the cheapest accessors that fit all three layouts.
template <class T, class Kernel>
void with_accessors(const GemmCall<T>& call, Kernel&& kernel) {
  const MatrixLayout &la = call.a.layout, &lb = call.b.layout, &lc = call.c.layout;
  if (la.is_strided() && lb.is_strided() && lc.is_strided()) {
    auto strided = [](auto* data, const MatrixLayout& l) {
      return Strided<std::remove_pointer_t<decltype(data)>>{data, l.rows.stride[0], l.cols.stride[0]};
    };
    kernel(call, strided(call.a.data, la), strided(call.b.data, lb), strided(call.c.data, lc));
  } else {
    const OffsetTables ta(la), tb(lb), tc(lc);
    kernel(call, ta.over(call.a.data), tb.over(call.b.data), tc.over(call.c.data));
  }
}

// C = alpha * acc + beta * C; C is not read when beta == 0 (it may hold NaN).
template <class T>
inline void update(T& c, T acc, T alpha, T beta) {
  c = beta == T(0) ? alpha * acc : alpha * acc + beta * c;
}

// The paper's fig-8 loop on the block [i0, i1) x [j0, j1) of C: one element of
// C at a time, a register accumulator over k. Steps 1, 2 and 7 share it.
template <class T, class A, class B, class C>
void triple_loop(const A& a, const B& b, const C& c, index_t k_size, T alpha, T beta, index_t i0, index_t i1,
                 index_t j0, index_t j1) {
  for (index_t i = i0; i < i1; ++i)
    for (index_t j = j0; j < j1; ++j) {
      T acc = 0;
      for (index_t k = 0; k < k_size; ++k) acc += a(i, k) * b(k, j);
      update(c(i, j), acc, alpha, beta);
    }
}

// ---- packing: copy a block of an operand, in whatever layout, to a contiguous panel ----

// Rows [i0, i0 + W) x columns [k0, k0 + kc) of A to panel[k * W + r] (k-major,
// so one k step reads W consecutive values). Rows past m_size are zero.
template <int W, class T, class A>
void pack_rows(const A& a, index_t m_size, index_t i0, index_t k0, index_t kc, T* panel) {
  for (int r = 0; r < W; ++r) {
    const index_t i = i0 + r;
    if (i < m_size) {
      const index_t row = a.row(i);
      for (index_t k = 0; k < kc; ++k) panel[k * W + r] = a.data[row + a.col(k0 + k)];
    } else {
      for (index_t k = 0; k < kc; ++k) panel[k * W + r] = T(0);
    }
  }
}

// Rows [k0, k0 + kc) x columns [j0, j0 + W) of B to panel[k * W + c]: a row of
// the panel is W consecutive columns of B. Columns past n_size are zero.
template <int W, class T, class B>
void pack_cols(const B& b, index_t n_size, index_t k0, index_t kc, index_t j0, T* panel) {
  index_t col[W];
  const int w = static_cast<int>(std::min<index_t>(W, n_size - j0));
  for (int c = 0; c < w; ++c) col[c] = b.col(j0 + c);
  for (index_t k = 0; k < kc; ++k) {
    const index_t row = b.row(k0 + k);
    T* out = panel + k * W;
    for (int c = 0; c < w; ++c) out[c] = b.data[row + col[c]];
    for (int c = w; c < W; ++c) out[c] = T(0);
  }
}

// ---- the register tile ----

// acc[MR][NR] += (MR x kc panel of A) * (kc x NR panel of B), both packed
// k-major. With MR and NR compile-time constants the compiler unrolls the two
// inner loops, keeps acc in vector registers and turns each row of the tile
// into NR/lanes fused multiply-adds against a broadcast of one A value.
template <int MR, int NR, class T>
inline void tile_product(index_t kc, const T* __restrict ap, const T* __restrict bp, T (&acc)[MR][NR]) {
  for (index_t k = 0; k < kc; ++k) {
    const T* a = ap + k * MR;
    const T* b = bp + k * NR;
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
#pragma omp simd
      for (int c = 0; c < NR; ++c) acc[r][c] += a[r] * b[c];
    }
  }
}

// Writes the valid mr x nr corner of a register tile to C at (i0, j0).
template <int MR, int NR, class T, class C>
void store_tile(const C& c, index_t i0, index_t j0, index_t mr, index_t nr, const T (&acc)[MR][NR], T alpha,
                T beta) {
  for (index_t r = 0; r < mr; ++r) {
    const index_t row = c.row(i0 + r);
    for (index_t col = 0; col < nr; ++col) update(c.data[row + c.col(j0 + col)], acc[r][col], alpha, beta);
  }
}

// ---- registration ----

// A CPU GemmImpl from a step's kernel: a class whose templated
//   void operator()(const GemmCall<T>&, const A& a, const B& b, const C& c) const
// computes C from the accessors that with_accessors chose; FP32 and FP64 both.
template <class Kernel>
GemmImpl ladder_step(std::string name, std::string description, bool threaded, std::string preconditions) {
  GemmImpl impl;
  impl.name = std::move(name);
  impl.description = std::move(description);
  impl.device = Device::cpu;
  impl.threaded = threaded;
  impl.preconditions = std::move(preconditions);
  impl.tags = {"ladder", "cpu-ladder"};
  impl.run_f32 = [](const GemmCall<float>& call) { with_accessors(call, Kernel{}); };
  impl.run_f64 = [](const GemmCall<double>& call) { with_accessors(call, Kernel{}); };
  return impl;
}

inline index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }

// One factory per step, each defined in its own file; register.cpp adds them.
GemmImpl gold();
GemmImpl gold_omp();
GemmImpl transpose();
GemmImpl pack_single();
GemmImpl pack_double();
GemmImpl tile_4x4();
GemmImpl parray_pthd_2x2();

}  // namespace parray::ladder
