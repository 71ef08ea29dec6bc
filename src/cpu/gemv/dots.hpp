// Dot products of a few contiguous rows with one contiguous vector: the
// kernels under the CPU GEMV's row-major path and the GEMM's few-columns path
// (gemv.cpp), one file per instruction set as the GEMM's microkernels are.
//
//   rows[i](a, x, n, out): out[r] = sum_j a[r][j] * x[j] (j < n) for the
//   first 1, 2 or 4 rows a[r] (i = 0, 1, 2).
//
// Each row keeps two vector accumulators, so four rows hold eight independent
// FMA chains (two FMA ports of four cycles' latency); the last partial vector
// is a masked load, and each row's sum is reduced once at the end. A vector
// loop with an OpenMP `simd reduction` instead reduces its lanes one at a time
// through memory and, compiled as ISO C++, without contraction into FMAs.
//
// Like microkernel.hpp, this header is included by files compiled for
// different instruction sets: declarations and PODs only.
#pragma once

#include "../gemm/microkernel.hpp"

namespace parray::cpu {

//   tiles[w].run(a, b, n, out): out[r * cols + c] = sum_j a[r][j] * b[c][j]
//   for tiles[w].rows rows a[r] and cols = 4 (w = 0) or 2 (w = 1) rows b[c]:
//   a tile of dot products whose accumulators reuse each loaded vector rows
//   or cols times and run as independent chains, their sums reduced four at
//   a time by shuffles (the GEMM's few-columns path: A's rows against B's
//   columns; tiles[0].rows divides tiles[1].rows).
template <class T>
struct DotKernel {
  using Rows = void (*)(const T* const* a, const T* x, index_t n, T* out);
  using Block = void (*)(const T* const* a, const T* const* b, index_t n, T* out);
  struct Tile {
    int rows;
    Block run;
  };
  Rows rows[3];  // 1, 2 and 4 rows
  // The most rows at once, the GEMV's step: 8 on AVX-512 (16 accumulators of
  // its 32 registers), else 4 (rows[2]).
  int widest_rows;
  Rows widest;
  Tile tiles[2];  // 4 and 2 columns
  const char* name;
};

// Defined in dot_avx512.cpp, dot_avx2.cpp, dot_portable.cpp.
const DotKernel<float>& dot_kernel_avx512_f32();
const DotKernel<double>& dot_kernel_avx512_f64();
const DotKernel<float>& dot_kernel_avx2_f32();
const DotKernel<double>& dot_kernel_avx2_f64();
const DotKernel<float>& dot_kernel_portable_f32();
const DotKernel<double>& dot_kernel_portable_f64();

// The kernels of `isa` (isa.hpp's selected_isa() for the CPU's own);
// defined in dot_portable.cpp.
template <class T>
const DotKernel<T>& dot_kernel(Isa isa);
template <>
const DotKernel<float>& dot_kernel<float>(Isa isa);
template <>
const DotKernel<double>& dot_kernel<double>(Isa isa);

}  // namespace parray::cpu
