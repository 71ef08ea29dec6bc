// AVX-512 direct kernels: C tiles computed straight
// from strided A and B, without packing, for the problems where packing does
// not pay (small matrices, short K; driver.cpp decides). See microkernel.hpp
// for the contract. Included by microkernel_avx512.cpp only, which is compiled
// with -mavx512f (CMake sets the flag per source file); everything here is in
// an anonymous namespace or exported through the table, as microkernel.hpp asks.
//
// The tile is the packed kernel's (12 rows x two vectors), but A is broadcast
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
template <class T, int MR, bool kUnitACol, bool kStream, bool kFull>
void direct_rows(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                 index_t c_rs, int cols) {
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

constexpr int kDirectMr = 12;

// rows (1..12) as a 12-, 8-, 4-, 2- and 1-row tiles.
template <class T, bool kUnitACol, bool kStream, bool kFull>
void direct_tile(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                 index_t c_rs, int rows, int cols) {
  auto part = [&](auto mr_constant) {
    constexpr int mr = decltype(mr_constant)::value;
    while (rows >= mr) {
      direct_rows<T, mr, kUnitACol, kStream, kFull>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, cols);
      a += mr * a_rs;
      c += mr * c_rs;
      rows -= mr;
    }
  };
  part(std::integral_constant<int, 12>{});
  part(std::integral_constant<int, 8>{});
  part(std::integral_constant<int, 4>{});
  part(std::integral_constant<int, 2>{});
  part(std::integral_constant<int, 1>{});
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

}  // namespace

const DirectKernel<float>& direct_avx512_f32() {
  static const DirectKernel<float> k{kDirectMr, 32, &direct_kernel<float, false>, &direct_kernel<float, true>,
                                     "avx512 direct 12x32"};
  return k;
}
const DirectKernel<double>& direct_avx512_f64() {
  static const DirectKernel<double> k{kDirectMr, 16, &direct_kernel<double, false>, &direct_kernel<double, true>,
                                      "avx512 direct 12x16"};
  return k;
}

}  // namespace parray::cpu
