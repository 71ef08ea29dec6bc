// The register tile shared by the vector microkernels: MR rows x two vectors.
// Included by microkernel_avx512.cpp and microkernel_avx2.cpp after they define
// their vector traits V (type, lanes, zero, load, set1, fma, mul, store). It
// lives in an anonymous namespace so each ISA's translation unit keeps its own
// copy, compiled for its own instruction set (see microkernel.hpp).
#pragma once

namespace parray::cpu {
namespace {

// Everything is unrolled so the 2 * MR accumulators live in registers.
//
// The k loop is unrolled by kUnroll steps and prefetches A one cache line at a
// time kPrefetchSteps steps ahead: A streams from L2 (the B micro-panel stays in
// L1), and a line per prefetch instead of one prefetch per step keeps the
// non-FMA instructions that compete for the FMA ports' issue slots to a minimum.
// The prefetch distance (16 steps, ~190 cycles) covers an L2 hit with room for
// a late L3 refill. docs/perf-notes.md (CPU section) has the measurements.
constexpr int kUnroll = 4;
constexpr int kPrefetchSteps = 16;

template <class V, int MR, class T>
void tile_kernel(index_t k, const T* __restrict a, const T* __restrict b, T alpha, T beta, T* c,
                 const index_t* row_offset, const T* /*b_next: not prefetched by this kernel*/) {
  using R = typename V::type;
  constexpr int L = V::lanes;
  // Cache lines of A consumed per unrolled iteration.
  constexpr int kALines = (kUnroll * MR * static_cast<int>(sizeof(T)) + 63) / 64;
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
  // One k step: two vectors of B against MR broadcasts of A.
  auto step = [&](const T* ap, const T* bp) __attribute__((always_inline)) {
    const R b0 = V::load(bp), b1 = V::load(bp + L);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const R ai = V::set1(ap[i]);
      c0[i] = V::fma(ai, b0, c0[i]);
      c1[i] = V::fma(ai, b1, c1[i]);
    }
  };
  index_t p = 0;
  for (; p + kUnroll <= k; p += kUnroll) {
#pragma GCC unroll 8
    for (int line = 0; line < kALines; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(a + kPrefetchSteps * MR) + 64 * line, _MM_HINT_T0);
#pragma GCC unroll 8
    for (int u = 0; u < kUnroll; ++u) {
      step(a + u * MR, b + u * 2 * L);
      // A compiler barrier between steps: without it GCC hoists the next
      // steps' broadcasts above this step's FMAs, runs out of the 32 vector
      // registers and spills accumulators inside the loop.
      asm volatile("" ::: "memory");
    }
    a += kUnroll * MR;
    b += kUnroll * 2 * L;
  }
  for (; p < k; ++p) {
    step(a, b);
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
