// The dot-product kernels (rows and tiles) shared by the vector instruction sets (dots.hpp).
// Included by dot_avx512.cpp and dot_avx2.cpp after they define their vector
// traits V (type, lanes, zero, load, load_first(p, count), fma, add, sum,
// sum4(v0, v1, v2, v3, out): out[q] = the sum of vq's lanes); it
// lives in an anonymous namespace so each ISA's translation unit keeps its own
// copy, compiled for its own instruction set.
#pragma once

#include <immintrin.h>

#include "dots.hpp"

namespace parray::cpu {
namespace {

// The sum of a 256-bit register's lanes (both includers have AVX): halves,
// then neighbours.
inline float sum_of_lanes(__m256 a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}
inline double sum_of_lanes(__m256d a) {
  const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(a), _mm256_extractf128_pd(a, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

// out[q] = the sum of vq's eight lanes, q < 4 (AVX2's floats, AVX-512's
// doubles): halves of two registers side by side, then pairs, then
// neighbours, so that lanes 0, 2, 4, 6 end holding the four sums.
template <class Reg, class T>
void sum4_of_eight_lanes(Reg v0, Reg v1, Reg v2, Reg v3, T* out) {
  const Reg a = __builtin_shufflevector(v0, v1, 0, 1, 2, 3, 8, 9, 10, 11) +
                __builtin_shufflevector(v0, v1, 4, 5, 6, 7, 12, 13, 14, 15);
  const Reg b = __builtin_shufflevector(v2, v3, 0, 1, 2, 3, 8, 9, 10, 11) +
                __builtin_shufflevector(v2, v3, 4, 5, 6, 7, 12, 13, 14, 15);
  const Reg c = __builtin_shufflevector(a, b, 0, 1, 4, 5, 8, 9, 12, 13) +
                __builtin_shufflevector(a, b, 2, 3, 6, 7, 10, 11, 14, 15);
  const Reg d = c + __builtin_shufflevector(c, c, 1, 0, 3, 2, 5, 4, 7, 6);
  for (int q = 0; q < 4; ++q) out[q] = d[2 * q];
}

template <class V, int R, class T>
void dot_rows(const T* const* a, const T* x, index_t n, T* out) {
  using Reg = typename V::type;
  constexpr int L = V::lanes;
  Reg s0[R], s1[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) s0[r] = V::zero(), s1[r] = V::zero();
  index_t j = 0;
  for (; j + 2 * L <= n; j += 2 * L) {
    const Reg x0 = V::load(x + j), x1 = V::load(x + j + L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      s0[r] = V::fma(V::load(a[r] + j), x0, s0[r]);
      s1[r] = V::fma(V::load(a[r] + j + L), x1, s1[r]);
    }
  }
  if (j + L <= n) {
    const Reg x0 = V::load(x + j);
    for (int r = 0; r < R; ++r) s0[r] = V::fma(V::load(a[r] + j), x0, s0[r]);
    j += L;
  }
  if (j < n) {  // the last n - j < L elements: lanes past n are neither read nor added
    const int rest = static_cast<int>(n - j);
    const Reg x0 = V::load_first(x + j, rest);
    for (int r = 0; r < R; ++r) s1[r] = V::fma(V::load_first(a[r] + j, rest), x0, s1[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = V::sum(V::add(s0[r], s1[r]));
}

template <class V, int RA, int RB, class T>
void dot_block(const T* const* a, const T* const* b, index_t n, T* out) {
  static_assert(RA * RB % 4 == 0, "the sums are reduced four at a time");
  using Reg = typename V::type;
  constexpr int L = V::lanes;
  // Every loop over the tile unrolled, so that the accumulators stay in
  // registers (a plain zeroing loop becomes a memset of them in memory).
  Reg s[RA * RB];  // s[r * RB + c]: a[r] . b[c]
#pragma GCC unroll 32
  for (int q = 0; q < RA * RB; ++q) s[q] = V::zero();
  const auto step = [&](index_t j, auto load) {
    Reg bv[RB];
#pragma GCC unroll 8
    for (int c = 0; c < RB; ++c) bv[c] = load(b[c] + j);
#pragma GCC unroll 8
    for (int r = 0; r < RA; ++r) {
      const Reg av = load(a[r] + j);
#pragma GCC unroll 8
      for (int c = 0; c < RB; ++c) s[r * RB + c] = V::fma(av, bv[c], s[r * RB + c]);
    }
  };
  index_t j = 0;
  for (; j + L <= n; j += L) step(j, [](const T* p) { return V::load(p); });
  if (j < n) {  // the last n - j < L elements through masked loads
    const int rest = static_cast<int>(n - j);
    step(j, [rest](const T* p) { return V::load_first(p, rest); });
  }
#pragma GCC unroll 8
  for (int q = 0; q < RA * RB; q += 4) V::sum4(s[q], s[q + 1], s[q + 2], s[q + 3], out + q);
}

// Up to Widest rows at once; RA4 x 4 and RA2 x 2 tiles.
template <class V, int Widest, int RA4, int RA2, class T>
DotKernel<T> make_dot_kernel(const char* name) {
  return DotKernel<T>{{&dot_rows<V, 1, T>, &dot_rows<V, 2, T>, &dot_rows<V, 4, T>},
                      Widest,
                      &dot_rows<V, Widest, T>,
                      {{RA4, &dot_block<V, RA4, 4, T>}, {RA2, &dot_block<V, RA2, 2, T>}},
                      name};
}

}  // namespace
}  // namespace parray::cpu
