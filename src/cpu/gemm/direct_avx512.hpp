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
  static type set1(float x) { return _mm512_set1_ps(x); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  static type mul(type a, type b) { return _mm512_mul_ps(a, b); }
  static void store(mask m, float* p, type v) { _mm512_mask_storeu_ps(p, m, v); }
  static void stream(float* p, type v) { _mm512_stream_ps(p, v); }
};
template <>
struct Vec<double> {
  using type = __m512d;
  using mask = __mmask8;
  static constexpr int lanes = 8;
  static type zero() { return _mm512_setzero_pd(); }
  static type load(mask m, const double* p) { return _mm512_maskz_loadu_pd(m, p); }
  static type set1(double x) { return _mm512_set1_pd(x); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_pd(a, b, c); }
  static type mul(type a, type b) { return _mm512_mul_pd(a, b); }
  static void store(mask m, double* p, type v) { _mm512_mask_storeu_pd(p, m, v); }
  static void stream(double* p, type v) { _mm512_stream_pd(p, v); }
};

// MR rows x up to 2 * lanes columns. kUnitACol: A's columns are adjacent
// (row-major A: each row a stream); otherwise A's rows are (column-major A:
// the MR elements of one k step are adjacent).
template <class T, int MR, bool kUnitACol, bool kStream>
void direct_rows(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                 index_t c_rs, int cols) {
  using V = Vec<T>;
  using R = typename V::type;
  using M = typename V::mask;
  constexpr int L = V::lanes;
  const M all = static_cast<M>(~0u);
  const M m0 = cols >= L ? all : static_cast<M>((1u << cols) - 1);
  const M m1 = cols >= 2 * L ? all : cols > L ? static_cast<M>((1u << (cols - L)) - 1) : M(0);
  R c0[MR], c1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = V::zero();
  if constexpr (kUnitACol) {
    const T* rows[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) rows[i] = a + i * a_rs;
    for (index_t p = 0; p < k; ++p) {
      const R b0 = V::load(m0, b), b1 = V::load(m1, b + L);
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
      const R b0 = V::load(m0, b), b1 = V::load(m1, b + L);
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
        V::store(m0, row, V::mul(va, c0[i]));
        V::store(m1, row + L, V::mul(va, c1[i]));
      }
    }
  } else {
    const R vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      T* row = c + i * c_rs;
      V::store(m0, row, V::fma(va, c0[i], V::mul(vb, V::load(m0, row))));
      V::store(m1, row + L, V::fma(va, c1[i], V::mul(vb, V::load(m1, row + L))));
    }
  }
}

constexpr int kDirectMr = 12;

// rows (1..12) as a 12-, 8-, 4-, 2- and 1-row tiles.
template <class T, bool kUnitACol, bool kStream>
void direct_tile(index_t k, const T* a, index_t a_rs, index_t a_cs, const T* b, index_t b_rs, T alpha, T beta, T* c,
                 index_t c_rs, int rows, int cols) {
  auto part = [&](auto mr_constant) {
    constexpr int mr = decltype(mr_constant)::value;
    while (rows >= mr) {
      direct_rows<T, mr, kUnitACol, kStream>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, cols);
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
  if (a_cs == 1) direct_tile<T, true, kStream>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, rows, cols);
  else direct_tile<T, false, kStream>(k, a, a_rs, a_cs, b, b_rs, alpha, beta, c, c_rs, rows, cols);
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
