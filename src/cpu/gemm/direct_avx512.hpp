// AVX-512 direct kernels: C tiles computed straight
// from strided A and B, without packing, for the problems where packing does
// not pay (small matrices, short K; direct.cpp decides). See microkernel.hpp
// for the contract. Included by microkernel_avx512.cpp only, which is compiled
// with -mavx512f (CMake sets the flag per source file); everything here is in
// an anonymous namespace or exported through the table, as microkernel.hpp asks.
//
// The tile is 12 rows x two vectors (the packed FP32 kernel's), but A is broadcast
// from wherever its rows live (A(i, p) at a[i * a_rs + p * a_cs], one of the
// two strides 1) and B's row p is read at b + p * b_rs. Edge columns use
// AVX-512 masked loads and stores (masked-off lanes are neither read nor
// faulted on), edge rows a smaller tile (8, 4, 2, 1 rows): no buffer, no merge.
// Written with intrinsics, k not unrolled: GCC keeps all accumulators in
// registers this way (checked in the generated code).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "microkernel.hpp"

namespace parray::cpu {

namespace {

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m512;
  using mask = __mmask16;
  static constexpr int lanes = 16;
  static type zero() { return _mm512_setzero_ps(); }
  static type load(mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static type load(const float* p) { return _mm512_loadu_ps(p); }
  static type set1(float x) { return _mm512_set1_ps(x); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  static type mul(type a, type b) { return _mm512_mul_ps(a, b); }
  static void store(mask m, float* p, type v) { _mm512_mask_storeu_ps(p, m, v); }
  static void store(float* p, type v) { _mm512_storeu_ps(p, v); }
  static void stream(float* p, type v) { _mm512_stream_ps(p, v); }
};
template <>
struct Vec<double> {
  using type = __m512d;
  using mask = __mmask8;
  static constexpr int lanes = 8;
  static type zero() { return _mm512_setzero_pd(); }
  static type load(mask m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  static type load(const double* p) { return _mm512_loadu_pd(p); }
  static type set1(double x) { return _mm512_set1_pd(x); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_pd(a, b, c); }
  static type mul(type a, type b) { return _mm512_mul_pd(a, b); }
  static void store(mask m, double* p, type v) { _mm512_mask_storeu_pd(p, m, v); }
  static void store(double* p, type v) { _mm512_storeu_pd(p, v); }
  static void stream(double* p, type v) { _mm512_stream_pd(p, v); }
};

// Loads and stores of one row of B or C: plain for full tiles (kFull: cols is
// 2 * lanes), masked otherwise. Unmasked, the k loop needs no mask registers,
// which GCC otherwise reloads from the stack every step (it runs out of
// general registers with 12 rows of A).
template <class V, bool kFull>
struct RowIo {
  using R = typename V::type;
  using M = typename V::mask;
  M m0, m1;
  explicit RowIo(int cols) {
    constexpr int L = V::lanes;
    const M all = static_cast<M>(~0u);
    m0 = cols >= L ? all : static_cast<M>((1u << cols) - 1);
    m1 = cols >= 2 * L ? all : cols > L ? static_cast<M>((1u << (cols - L)) - 1) : M(0);
  }
  template <class T>
  R load0(const T* p) const {
    if constexpr (kFull) return V::load(p);
    else return V::load(m0, p);
  }
  template <class T>
  R load1(const T* p) const {
    if constexpr (kFull) return V::load(p);
    else return V::load(m1, p);
  }
  // One row of B (two vectors), pinned in registers: GCC would otherwise fold
  // the unmasked loads into every FMA (MR loads of each vector instead of one,
  // load-port bound).
  template <class T>
  void load_b(const T* b, R& b0, R& b1) const {
    b0 = load0(b);
    b1 = load1(b + V::lanes);
    asm("" : "+v"(b0), "+v"(b1));
  }
  template <class T>
  void store0(T* p, R v) const {
    if constexpr (kFull) V::store(p, v);
    else V::store(m0, p, v);
  }
  template <class T>
  void store1(T* p, R v) const {
    if constexpr (kFull) V::store(p, v);
    else V::store(m1, p, v);
  }
};

// MR rows x up to 2 * lanes columns. kUnitACol: A's columns are adjacent
// (row-major A: each row a stream); otherwise A's rows are (column-major A:
// the MR elements of one k step are adjacent).
// Not inlined: inlined into the walk over row tiles (all heights in one function),
// GCC spilled twice as much in the 12-row k loop.
template <class T, int MR, bool kUnitACol, bool kStream, bool kFull>
[[gnu::noinline]] void direct_rows(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha,
                                   T beta, T* c, index_t c_rs, int cols) {
  using V = Vec<T>;
  using R = typename V::type;
  constexpr int L = V::lanes;
  const RowIo<V, kFull> io(cols);
  R c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = V::zero();
  if constexpr (kUnitACol) {
    const T* rows[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) rows[i] = a + i * a_rs;
    for (index_t p = 0; p < k; ++p) {
      R b0, b1;
      io.load_b(b, b0, b1);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const R ai = V::set1(rows[i][p]);
        c0[i] = V::fma(ai, b0, c0[i]);
        c1[i] = V::fma(ai, b1, c1[i]);
      }
      b += b_rs;
    }
  } else {
    for (index_t p = 0; p < k; ++p) {
      R b0, b1;
      io.load_b(b, b0, b1);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const R ai = V::set1(a[i]);
        c0[i] = V::fma(ai, b0, c0[i]);
        c1[i] = V::fma(ai, b1, c1[i]);
      }
      a += a_cs;
      b += b_rs;
    }
  }
  const R va = V::set1(alpha);
  if (beta == T(0)) {  // C is not read
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      T* row = c + i * c_rs;
      if (kStream && cols == 2 * L && (reinterpret_cast<std::uintptr_t>(row) & 63) == 0) {
        V::stream(row, V::mul(va, c0[i]));
        V::stream(row + L, V::mul(va, c1[i]));
      } else {
        io.store0(row, V::mul(va, c0[i]));
        io.store1(row + L, V::mul(va, c1[i]));
      }
    }
  } else {
    const R vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      T* row = c + i * c_rs;
      io.store0(row, V::fma(va, c0[i], V::mul(vb, io.load0(row))));
      io.store1(row + L, V::fma(va, c1[i], V::mul(vb, io.load1(row + L))));
    }
  }
}

// The 12-row full tile for row-major A (a_cs == 1, cols == 2 * lanes, ordinary
// stores) in inline assembly. GCC, holding 12 row pointers of A plus B, its
// stride and the loop counter, ran out of general registers and reloaded two
// row offsets from the stack every k step; here the 12 rows are addressed from
// three bases (rows 0, 5 and 10) and two strides (lda, 3 * lda): rows r + 0..4
// are (p), (p, s1), (p, s1, 2), (p, s3), (p, s1, 4). k is unrolled by 4.
// Accumulators in zmm8..zmm31, B's row in zmm0/zmm1, broadcasts of A in
// zmm2..zmm7, as in the packed kernel. After the loop the same base and stride
// registers address C's 12 rows.
#define PARRAY_DR_R0(D) #D "(%[p0])"
#define PARRAY_DR_R1(D) #D "(%[p0], %[s1], 1)"
#define PARRAY_DR_R2(D) #D "(%[p0], %[s1], 2)"
#define PARRAY_DR_R3(D) #D "(%[p0], %[s3], 1)"
#define PARRAY_DR_R4(D) #D "(%[p0], %[s1], 4)"
#define PARRAY_DR_R5(D) #D "(%[p5])"
#define PARRAY_DR_R6(D) #D "(%[p5], %[s1], 1)"
#define PARRAY_DR_R7(D) #D "(%[p5], %[s1], 2)"
#define PARRAY_DR_R8(D) #D "(%[p5], %[s3], 1)"
#define PARRAY_DR_R9(D) #D "(%[p5], %[s1], 4)"
#define PARRAY_DR_R10(D) #D "(%[p10])"
#define PARRAY_DR_R11(D) #D "(%[p10], %[s1], 1)"
#define PARRAY_DR_ROW(BC, FMA, ADDR, T, X, Y)                                 \
  BC " " ADDR ", %%zmm" #T "\n\t"                                              \
  FMA " %%zmm0, %%zmm" #T ", %%zmm" #X "\n\t"                                  \
  FMA " %%zmm1, %%zmm" #T ", %%zmm" #Y "\n\t"
#define PARRAY_DR_STEP(U, ES, BC, FMA)                                        \
  "vmovups (%[b]), %%zmm0\n\t"                                                 \
  "vmovups 64(%[b]), %%zmm1\n\t"                                               \
  "add %[brs], %[b]\n\t"                                                       \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R0(U*ES), 2, 8, 9)                          \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R1(U*ES), 3, 10, 11)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R2(U*ES), 4, 12, 13)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R3(U*ES), 5, 14, 15)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R4(U*ES), 6, 16, 17)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R5(U*ES), 7, 18, 19)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R6(U*ES), 2, 20, 21)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R7(U*ES), 3, 22, 23)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R8(U*ES), 4, 24, 25)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R9(U*ES), 5, 26, 27)                        \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R10(U*ES), 6, 28, 29)                       \
  PARRAY_DR_ROW(BC, FMA, PARRAY_DR_R11(U*ES), 7, 30, 31)
#define PARRAY_DR_ADVANCE(BYTES)                                              \
  "add $" #BYTES ", %[p0]\n\t"                                                 \
  "add $" #BYTES ", %[p5]\n\t"                                                 \
  "add $" #BYTES ", %[p10]\n\t"
#define PARRAY_DR_OUT_ROW(R, MUL, FMA, BETA, X, Y)                            \
  MUL " %%zmm0, %%zmm" #X ", %%zmm" #X "\n\t"                                  \
  MUL " %%zmm0, %%zmm" #Y ", %%zmm" #Y "\n\t"                                  \
  BETA(FMA, R(0), R(64), X, Y)                                                 \
  "vmovups %%zmm" #X ", " R(0) "\n\t"                                          \
  "vmovups %%zmm" #Y ", " R(64) "\n\t"
#define PARRAY_DR_WITH_BETA(FMA, ADDR0, ADDR1, X, Y)                          \
  FMA " " ADDR0 ", %%zmm1, %%zmm" #X "\n\t"                                    \
  FMA " " ADDR1 ", %%zmm1, %%zmm" #Y "\n\t"
#define PARRAY_DR_NO_BETA(FMA, ADDR0, ADDR1, X, Y)
#define PARRAY_DR_OUT(MUL, FMA, BETA)                                         \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R0, MUL, FMA, BETA, 8, 9)                        \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R1, MUL, FMA, BETA, 10, 11)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R2, MUL, FMA, BETA, 12, 13)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R3, MUL, FMA, BETA, 14, 15)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R4, MUL, FMA, BETA, 16, 17)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R5, MUL, FMA, BETA, 18, 19)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R6, MUL, FMA, BETA, 20, 21)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R7, MUL, FMA, BETA, 22, 23)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R8, MUL, FMA, BETA, 24, 25)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R9, MUL, FMA, BETA, 26, 27)                      \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R10, MUL, FMA, BETA, 28, 29)                     \
  PARRAY_DR_OUT_ROW(PARRAY_DR_R11, MUL, FMA, BETA, 30, 31)
#define PARRAY_DR_KERNEL(ES, BC, MUL, FMA)                                    \
  ".irp r,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t" \
  "vpxord %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"                                    \
  ".endr\n\t"                                                                  \
  "test %[blocks], %[blocks]\n\t"                                              \
  "jz 2f\n"                                                                    \
  "1:\n\t"                                                                     \
  PARRAY_DR_STEP(0, ES, BC, FMA)                                               \
  PARRAY_DR_STEP(1, ES, BC, FMA)                                               \
  PARRAY_DR_STEP(2, ES, BC, FMA)                                               \
  PARRAY_DR_STEP(3, ES, BC, FMA)                                               \
  PARRAY_DR_ADVANCE(4*ES)                                                      \
  "dec %[blocks]\n\t"                                                          \
  "jnz 1b\n"                                                                   \
  "2:\n\t"                                                                     \
  "test %[rest], %[rest]\n\t"                                                  \
  "jz 4f\n"                                                                    \
  "3:\n\t"                                                                     \
  PARRAY_DR_STEP(0, ES, BC, FMA)                                               \
  PARRAY_DR_ADVANCE(ES)                                                        \
  "dec %[rest]\n\t"                                                            \
  "jnz 3b\n"                                                                   \
  "4:\n\t"                                                                     \
  "mov %[c], %[p0]\n\t"                                                        \
  "mov %[crs], %[s1]\n\t"                                                      \
  "lea (%[s1], %[s1], 2), %[s3]\n\t"                                           \
  "lea (%[p0], %[s1], 4), %[p5]\n\t"                                           \
  "add %[s1], %[p5]\n\t"                                                       \
  "lea (%[p5], %[s1], 4), %[p10]\n\t"                                          \
  "add %[s1], %[p10]\n\t"                                                      \
  BC " %[alpha], %%zmm0\n\t"                                                   \
  "cmpq $0, %[beta_is_zero]\n\t"                                               \
  "jne 5f\n\t"                                                                 \
  BC " %[beta], %%zmm1\n\t"                                                    \
  PARRAY_DR_OUT(MUL, FMA, PARRAY_DR_WITH_BETA)                                 \
  "jmp 6f\n"                                                                   \
  "5:\n\t"                                                                     \
  PARRAY_DR_OUT(MUL, FMA, PARRAY_DR_NO_BETA)                                   \
  "6:\n\t"

template <class T>
void direct_rows12_asm(index_t k, const T* a, index_t a_rs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                       index_t c_rs) {
  constexpr index_t e = sizeof(T);
  index_t s1 = a_rs * e, s3 = 3 * a_rs * e, blocks = k / 4, rest = k % 4;
  const T* p0 = a;
  const T* p5 = a + 5 * a_rs;
  const T* p10 = a + 10 * a_rs;
  const index_t brs = b_rs * e, crs = c_rs * e, beta_is_zero = beta == T(0);
#define PARRAY_DR_OPERANDS                                                                                   \
  : [p0] "+r"(p0), [p5] "+r"(p5), [p10] "+r"(p10), [s1] "+r"(s1), [s3] "+r"(s3), [b] "+r"(b),              \
    [blocks] "+r"(blocks), [rest] "+r"(rest)                                                                 \
  : [brs] "r"(brs), [c] "m"(c), [crs] "m"(crs), [alpha] "m"(alpha), [beta] "m"(beta),                      \
    [beta_is_zero] "m"(beta_is_zero)                                                                         \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",       \
    "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",     \
    "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc", "memory"
  if constexpr (sizeof(T) == 4) {
    asm volatile(PARRAY_DR_KERNEL(4, "vbroadcastss", "vmulps", "vfmadd231ps") PARRAY_DR_OPERANDS);
  } else {
    asm volatile(PARRAY_DR_KERNEL(8, "vbroadcastsd", "vmulpd", "vfmadd231pd") PARRAY_DR_OPERANDS);
  }
#undef PARRAY_DR_OPERANDS
}

#undef PARRAY_DR_KERNEL
#undef PARRAY_DR_OUT
#undef PARRAY_DR_NO_BETA
#undef PARRAY_DR_WITH_BETA
#undef PARRAY_DR_OUT_ROW
#undef PARRAY_DR_ADVANCE
#undef PARRAY_DR_STEP
#undef PARRAY_DR_ROW
#undef PARRAY_DR_R0
#undef PARRAY_DR_R1
#undef PARRAY_DR_R2
#undef PARRAY_DR_R3
#undef PARRAY_DR_R4
#undef PARRAY_DR_R5
#undef PARRAY_DR_R6
#undef PARRAY_DR_R7
#undef PARRAY_DR_R8
#undef PARRAY_DR_R9
#undef PARRAY_DR_R10
#undef PARRAY_DR_R11

constexpr int kDirectMr = 12;

// Walks rows in tiles of the heights kMrs, tallest first, as many of each as
// fit: tile(std::integral_constant<int, MR>{}, a, c) with A and C at the
// tile's first row.
template <int... kMrs, class T, class Tile>
void row_tiles(int rows, const T* a, index_t a_rs, T* c, index_t c_rs, Tile&& tile) {
  auto run = [&](auto mr_constant) {
    constexpr int mr = decltype(mr_constant)::value;
    for (int n = rows / mr; n > 0; --n) {
      tile(mr_constant, a, c);
      a += mr * a_rs;
      c += mr * c_rs;
      rows -= mr;
    }
  };
  (run(std::integral_constant<int, kMrs>{}), ...);
}

// rows as 12-row tiles, then 8-, 4-, 2- and 1-row tiles for the rest. The
// 12-row tiles of full width over row-major A run the assembly kernel above.
template <class T, bool kUnitACol, bool kStream, bool kFull>
void direct_tile(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                 index_t c_rs, int rows, int cols) {
  row_tiles<kDirectMr, 8, 4, 2, 1>(rows, a, a_rs, c, c_rs, [&](auto mr_constant, const T* at, T* ct) {
    constexpr int mr = decltype(mr_constant)::value;
    if constexpr (mr == kDirectMr && kUnitACol && kFull && !kStream)
      direct_rows12_asm<T>(k, at, a_rs, b, b_rs, alpha, beta, ct, c_rs);
    else
      direct_rows<T, mr, kUnitACol, kStream, kFull>(k, at, a_rs, a_cs, b, b_rs, alpha, beta, ct, c_rs, cols);
  });
}

template <class T, bool kStream>
void direct_kernel(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                   index_t c_rs, int rows, int cols) {
  const bool full = cols == 2 * Vec<T>::lanes;
  if (a_cs == 1) {
    if (full) direct_tile<T, true, kStream, true>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, rows, cols);
    else direct_tile<T, true, kStream, false>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, rows, cols);
  } else {
    if (full) direct_tile<T, false, kStream, true>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, rows, cols);
    else direct_tile<T, false, kStream, false>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, rows, cols);
  }
}

// The wide tile: MR rows x four vectors (FP32 6 x 64, FP64 6 x 32) of full
// width over row-major A. Per k step 4 loads of B and MR broadcasts of A feed
// 4 * MR FMAs: 10 loads per 24 FMAs at MR 6, against 14 for the 12-row tile of
// two vectors, and faster than that tile in assembly with the operands in
// L1/L2, FP32 and FP64 (docs/perf-notes.md). With 6 rows GCC
// keeps the 24 accumulators, the row pointers and B in registers.
// kOverwrite: C = A B (alpha 1, beta 0, the common call) compiled on its own,
// the sums stored as they are: no alpha multiply, no beta test, fewer values
// live around the stores, a little faster than the general instance; a
// run-time alpha == 1 test in the general instance gained nothing.
template <class T, int MR, bool kOverwrite>
[[gnu::noinline]] void direct_rows_wide(index_t k, const T* a, index_t a_rs, const T* b, index_t b_rs, T alpha, T beta,
                                        T* c, index_t c_rs) {
  using V = Vec<T>;
  using R = typename V::type;
  constexpr int L = V::lanes, NV = 4;
  R acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = V::zero();
  const T* rows[MR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i) rows[i] = a + i * a_rs;
  for (index_t p = 0; p < k; ++p) {
    R b0 = V::load(b), b1 = V::load(b + L), b2 = V::load(b + 2 * L), b3 = V::load(b + 3 * L);
    asm("" : "+v"(b0), "+v"(b1), "+v"(b2), "+v"(b3));  // one load each, not folded into every FMA
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const R ai = V::set1(rows[i][p]);
      acc[i][0] = V::fma(ai, b0, acc[i][0]);
      acc[i][1] = V::fma(ai, b1, acc[i][1]);
      acc[i][2] = V::fma(ai, b2, acc[i][2]);
      acc[i][3] = V::fma(ai, b3, acc[i][3]);
    }
    b += b_rs;
  }
  if constexpr (kOverwrite) {
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) V::store(c + i * c_rs + v * L, acc[i][v]);
  } else {
    const R va = V::set1(alpha);
    if (beta == T(0)) {  // C is not read
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) V::store(c + i * c_rs + v * L, V::mul(va, acc[i][v]));
    } else {
      const R vb = V::set1(beta);
#pragma GCC unroll 8
      for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          T* out = c + i * c_rs + v * L;
          V::store(out, V::fma(va, acc[i][v], V::mul(vb, V::load(out))));
        }
    }
  }
}

constexpr int kWideMr = 6;

// rows as 6-row wide tiles, then 4-, 2- and 1-row ones.
template <class T>
void direct_wide(index_t k, const T* a, index_t a_rs, const T* b, index_t b_rs, T alpha, T beta, T* c, index_t c_rs,
                 int rows) {
  const auto tiles = [&](auto overwrite) {
    row_tiles<kWideMr, 4, 2, 1>(rows, a, a_rs, c, c_rs, [&](auto mr_constant, const T* at, T* ct) {
      constexpr int mr = decltype(mr_constant)::value;
      direct_rows_wide<T, mr, decltype(overwrite)::value>(k, at, a_rs, b, b_rs, alpha, beta, ct, c_rs);
    });
  };
  if (alpha == T(1) && beta == T(0)) tiles(std::true_type{});
  else tiles(std::false_type{});
}

}  // namespace

const DirectKernel<float>& direct_avx512_f32() {
  static const DirectKernel<float> k{kDirectMr, 32, &direct_kernel<float, false>, &direct_kernel<float, true>,
                                     64, &direct_wide<float>, "avx512 direct 12x32 (wide 6x64)"};
  return k;
}
const DirectKernel<double>& direct_avx512_f64() {
  static const DirectKernel<double> k{kDirectMr, 16, &direct_kernel<double, false>, &direct_kernel<double, true>,
                                      32, &direct_wide<double>, "avx512 direct 12x16 (wide 6x32)"};
  return k;
}

}  // namespace parray::cpu
