// The register tile shared by the vector microkernels: MR rows x two vectors.
// Included by microkernel_avx512.cpp and microkernel_avx2.cpp after they define
// their vector traits V (type, lanes, zero, load, set1, fma, mul, store). It
// lives in an anonymous namespace so each ISA's translation unit keeps its own
// copy, compiled for its own instruction set (see microkernel.hpp).
#pragma once

namespace parray::cpu {
namespace {

// Everything is unrolled so the 2 * MR accumulators live in registers.
template <class V, int MR, class T>
void tile_kernel(index_t k, const T* __restrict a, const T* __restrict b, T alpha, T beta, T* c,
                 const index_t* row_offset) {
  using R = typename V::type;
  constexpr int L = V::lanes;
  R c0[MR], c1[MR];
  // C's rows are read (or written) only after the k loop; fetch them now so
  // that their cache misses overlap the FMAs instead of stalling after them.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + row_offset[i]), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + row_offset[i] + 2 * L - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) c0[i] = c1[i] = V::zero();
  for (index_t p = 0; p < k; ++p) {
    const R b0 = V::load(b), b1 = V::load(b + L);
    _mm_prefetch(reinterpret_cast<const char*>(a + 8 * MR), _MM_HINT_T0);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const R ai = V::set1(a[i]);
      c0[i] = V::fma(ai, b0, c0[i]);
      c1[i] = V::fma(ai, b1, c1[i]);
    }
    a += MR;
    b += 2 * L;
  }
  const R va = V::set1(alpha);
  if (beta == T(0)) {  // C is not read
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      T* row = c + row_offset[i];
      V::store(row, V::mul(va, c0[i]));
      V::store(row + L, V::mul(va, c1[i]));
    }
  } else {
    const R vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      T* row = c + row_offset[i];
      V::store(row, V::fma(va, c0[i], V::mul(vb, V::load(row))));
      V::store(row + L, V::fma(va, c1[i], V::mul(vb, V::load(row + L))));
    }
  }
}

}  // namespace
}  // namespace parray::cpu
