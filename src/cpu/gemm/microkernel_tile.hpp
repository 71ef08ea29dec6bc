// The register tile shared by the vector microkernels: MR rows x VECS vectors,
// reading packed B rows BVECS vectors apart. AVX2's microkernel is the 6 x 2-vector
// tile over its own panels (BVECS = VECS = 2); AVX-512 uses the 8 x 1- and 8 x
// 2-vector tiles for the last micro-panel of a block when it holds only one or
// two vectors of columns (its panels are 3 vectors wide), so that the columns
// past the edge are not computed.
// Included by microkernel_avx512.cpp and microkernel_avx2.cpp after they define
// their vector traits V (type, lanes, zero, load, set1, fma, mul, store). It
// lives in an anonymous namespace so each ISA's translation unit keeps its own
// copy, compiled for its own instruction set (see microkernel.hpp).
#pragma once

namespace parray::cpu {
namespace {

// Everything is unrolled so the VECS * MR accumulators live in registers.
//
// The k loop is unrolled by kTileUnroll steps and prefetches A one cache line at a
// time kTilePrefetchSteps steps ahead: A streams from L2 (the B micro-panel stays in
// L1), and a line per prefetch instead of one prefetch per step keeps the
// non-FMA instructions that compete for the FMA ports' issue slots to a minimum.
// The prefetch distance (16 steps, ~190 cycles) covers an L2 hit with room for
// a late L3 refill. docs/perf-notes.md (CPU section) has the measurements.
constexpr int kTileUnroll = 4;
constexpr int kTilePrefetchSteps = 16;

// PREFETCH_NEXT: one line of b_next into L2 per unrolled iteration (k / 4 lines,
// the contract in microkernel.hpp), as the AVX-512 assembly tile does; the
// narrow tiles run the last panel of a row block, whose b_next is the first
// panel of the next row block. AVX2's tile does not prefetch it.
template <class V, int MR, int VECS, int BVECS, bool PREFETCH_NEXT, class T>
void vector_tile_kernel(index_t k, const T* __restrict a, const T* __restrict b, T alpha, T beta, T* c,
                        const index_t* row_offset, const T* b_next) {
  static_assert(VECS >= 1 && VECS <= 2 && VECS <= BVECS, "a tile of one or two vectors of a panel's row");
  using R = typename V::type;
  constexpr int L = V::lanes;
  constexpr int kBRow = BVECS * L;  // elements per packed row of B
  // Cache lines of A consumed per unrolled iteration.
  constexpr int kALines = (kTileUnroll * MR * static_cast<int>(sizeof(T)) + 63) / 64;
  R acc[VECS][MR];
  // C's rows are read (or written) only after the k loop; fetch them now so
  // that their cache misses overlap the FMAs instead of stalling after them.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + row_offset[i]), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + row_offset[i] + VECS * L - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
    for (int v = 0; v < VECS; ++v) acc[v][i] = V::zero();
  // One k step: VECS vectors of B against MR broadcasts of A.
  auto step = [&](const T* ap, const T* bp) __attribute__((always_inline)) {
    R bv[VECS];
#pragma GCC unroll 2
    for (int v = 0; v < VECS; ++v) bv[v] = V::load(bp + v * L);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const R ai = V::set1(ap[i]);
#pragma GCC unroll 2
      for (int v = 0; v < VECS; ++v) acc[v][i] = V::fma(ai, bv[v], acc[v][i]);
    }
  };
  index_t p = 0;
  for (; p + kTileUnroll <= k; p += kTileUnroll) {
#pragma GCC unroll 8
    for (int line = 0; line < kALines; ++line)
      _mm_prefetch(reinterpret_cast<const char*>(a + kTilePrefetchSteps * MR) + 64 * line, _MM_HINT_T0);
    if constexpr (PREFETCH_NEXT) {
      if (b_next) {
        _mm_prefetch(reinterpret_cast<const char*>(b_next), _MM_HINT_T1);
        b_next += 64 / sizeof(T);
      }
    }
#pragma GCC unroll 8
    for (int u = 0; u < kTileUnroll; ++u) {
      step(a + u * MR, b + u * kBRow);
      // A compiler barrier between steps: without it GCC hoists the next
      // steps' broadcasts above this step's FMAs, runs out of the 32 vector
      // registers and spills accumulators inside the loop.
      asm volatile("" ::: "memory");
    }
    a += kTileUnroll * MR;
    b += kTileUnroll * kBRow;
  }
  for (; p < k; ++p) {
    step(a, b);
    a += MR;
    b += kBRow;
  }
  const R va = V::set1(alpha);
  if (beta == T(0)) {  // C is not read
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < VECS; ++v) V::store(c + row_offset[i] + v * L, V::mul(va, acc[v][i]));
  } else {
    const R vb = V::set1(beta);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 2
      for (int v = 0; v < VECS; ++v) {
        T* out = c + row_offset[i] + v * L;
        V::store(out, V::fma(va, acc[v][i], V::mul(vb, V::load(out))));
      }
  }
}

}  // namespace
}  // namespace parray::cpu
