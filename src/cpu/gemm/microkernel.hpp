// The contract between parray's BLIS-style CPU driver (blocked.cpp) and its
// register-blocked microkernels, one file per instruction set.
//
// A microkernel computes one MR x NR tile of C from packed panels:
//   a: the MR x k panel of A, packed column by column (a[p * MR + i] = A(i, p))
//   b: the k x NR panel of B, packed row by row      (b[p * NR + j] = B(p, j))
//   C(i, j) for j < NR lives at c[row_offset[i] + j]: rows anywhere, but the NR
//   columns of each row contiguous. C = alpha * a * b + beta * C, and beta == 0
//   means C is not read.
//   b_next: packed B the driver will need soon (part of the next micro-panel),
//   or nullptr. A kernel may prefetch up to k / 4 cache lines (16 * k bytes)
//   from there into L2 while it runs; it never reads them otherwise, so any
//   address is allowed (prefetches do not fault).
// Edge tiles (and tiles whose columns are not contiguous in C) are computed
// into a local buffer by the same kernel and merged by the driver.
//
// This header is included by the ISA-specific files, which are compiled with
// -mavx512f / -mavx2: it must not define inline functions or templates that
// other translation units also instantiate (the linker could pick the AVX-512
// copy for a machine without AVX-512). Plain declarations and PODs only.
#pragma once

#include <cstdint>

namespace parray::cpu {

using index_t = std::int64_t;

enum class Isa { portable = 0, avx2 = 1, avx512 = 2 };

template <class T>
struct MicroKernel {
  using Run = void (*)(index_t k, const T* a, const T* b, T alpha, T beta, T* c, const index_t* row_offset,
                       const T* b_next);
  int mr;
  int nr;
  Run run;
  const char* name;
  // Narrow tiles for a micro-panel whose columns end within its first vectors
  // (the last panel of a block, e.g. 1024 = 21 x 48 + 16 columns): narrow[v - 1]
  // computes only the first v vectors (v * lanes columns) of each row, reading
  // the same packed panels (rows nr apart). nullptr where there is none.
  int lanes = 0;
  Run narrow[2] = {nullptr, nullptr};
  // Packs one full MR-row panel of A from MR rows whose k elements are
  // adjacent (row-major A): dst[p * MR + r] = rows[r][p] for p < k. nullptr:
  // the driver's portable loop, one element at a time.
  using PackRows = void (*)(const T* const* rows, index_t k, T* dst);
  PackRows pack_rows = nullptr;
};

// A direct kernel computes rows x cols (any rows, in tiles of at most mr; cols <= nr) of C
// straight from strided operands, no packing: A(i, p) = a[i * a_rs + p * a_cs]
// with a_cs == 1 or a_rs == 1, B(p, j) = b[p * b_rs + j], C(i, j) = c[i * c_rs + j];
// C = alpha * A B + beta * C, beta == 0 means C is not read.
template <class T>
struct DirectKernel {
  int mr;
  int nr;
  void (*run)(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
              index_t c_rs, int rows, int cols);
  // The same, but with beta == 0 full 64-byte-aligned rows of C are written
  // with non-temporal stores (no read for ownership, C not kept in cache):
  // for a C much larger than the caches written once. The caller issues an
  // sfence before anyone else reads C.
  void (*run_streaming)(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta,
                        T* c, index_t c_rs, int rows, int cols);
  // The wide tile: rows x exactly nr_wide columns (four vectors) for A whose
  // columns are adjacent (a_cs == 1), ordinary stores; nullptr when there is none.
  int nr_wide;
  void (*run_wide)(index_t k, const T* a, index_t a_rs, const T* b, index_t b_rs, T alpha, T beta, T* c, index_t c_rs,
                   int rows);
  const char* name;
};

// Defined in microkernel_avx512.cpp, microkernel_avx2.cpp, microkernel_portable.cpp.
const MicroKernel<float>& microkernel_avx512_f32();
const MicroKernel<double>& microkernel_avx512_f64();
const MicroKernel<float>& microkernel_avx2_f32();
const MicroKernel<double>& microkernel_avx2_f64();
const MicroKernel<float>& microkernel_portable_f32();
const MicroKernel<double>& microkernel_portable_f64();
const DirectKernel<float>& direct_avx512_f32();
const DirectKernel<double>& direct_avx512_f64();

}  // namespace parray::cpu
