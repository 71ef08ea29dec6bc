// Step 11 — the Parray paper's SGEMM (figure 21, after Volkov & Demmel):
// thread array [[M/16][N/256]][[4][32]] (128 threads as 4 x 32, a
// CudaThreadArray running ParrayFig21 on each), each block
// computes a 16 x 256 tile of C, each thread two columns of it (16 float2 =
// 32 accumulators, Parray's `rmem float [16][2]`). Per step of 32 in K, the
// block copies a 16 x 32 tile of A into a padded shared tile
// `smem float [32][17]` (A transposed: S[k][row]; row length 17 so the
// transposed stores of a warp hit 32 distinct banks), then streams B from
// global memory as float2, 32 FMAs per float2.
//
// Over step 10: nothing, on Hopper: this design (2009, Fermi) keeps only A in
// shared memory and reads B straight from global memory, so every block
// re-reads its 256 columns of B for every 16 rows of C; it reached CUBLAS 4.0
// on Fermi. It is here as the paper's kernel, and for the paper's point: the
// code takes its base offsets from the types once and its inner loops step
// along them, so the same source runs the blocked layouts (figures 17, 18)
// close to the speed of row-major. Per thread, once: the offsets of its four rows
// of A (`a += $A[...]$`), of its two columns of B (`b += $B[...]$`), whether
// they are one float2 (the paper's $cnt(B_1_1_1)$: adjacent and 8-byte
// aligned, from B's column run). Per step of 32 in K: one run along A's
// columns and one along B's rows (AxisRun: base + d * step inside one digit
// of a nested axis), so the 32 x 32 FMAs between two syncs see a pointer and
// a stride, as for row-major operands. Only a step whose run crosses a digit
// (a ragged block of a nested layout) takes offsets per element.
//
// On a nested operand the runs themselves cost: derived from the type each
// step, a 32-bit division per digit level where a strided operand
// multiplies, and the general offsets held the kernel at 96 registers, five
// blocks per SM against row-major's seven. So the launcher computes the runs
// of a nested K axis on the host (KRuns, one base per step of 32, a kernel
// parameter) and, where the grid is more than one wave, launches the build
// bounded to 64 registers, eight blocks per SM (its spills reload four
// values a step); row-major takes that bound only where it makes the grid
// one wave (docs/layouts.md has the figures).
#pragma once

#include "parray/cuda/operand.cuh"
#include "parray/cuda/thread_array.cuh"
#include "parray/static_layout.hpp"

#include <algorithm>
#include <type_traits>

namespace parray::cuda::ladder {

namespace fig21 {

using S = SDense<32, 17>;                                          // smem float [32][17]
using S0 = SNest<SResize<32, S::dim<0>>, SResize<16, S::dim<1>>>;  // [32 #S_0][16 #S_1]
using R = SDense<16, 2>;                                           // rmem float [16][2]

// B[k][j0], B[k][j0 + 1] at p (the second d1 further): one float2 where the
// pair is one ($cnt(B_1_1_1)$), else two loads.
template <bool Pair>
__device__ __forceinline__ float2 load_pair(const float* p, index_t d1) {
  if constexpr (Pair) return *reinterpret_cast<const float2*>(p);
  else return make_float2(p[0], p[d1]);
}

// for j < 16: r[R[j][0]] += b2.x * s[S[m][j]]; r[R[j][1]] += b2.y * s[S[m][j]]
__device__ __forceinline__ void fma_row(float (&r)[R::size], const float* s, int m, float2 b2) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    r[R::offset(j, 0)] += b2.x * s[S::offset(m, j)];
    r[R::offset(j, 1)] += b2.y * s[S::offset(m, j)];
  }
}

// One full step of 32 in K with B's rows a run: p = &B[k0][j0], rows `step`
// apart. Unrolled over all 32 so that each m is a constant: the compiler then
// knows where S's row m starts modulo 16 bytes (rows of 17) and reads its 16
// values with 128-bit shared loads, about half the loads of a rolled loop.
template <bool Pair>
__device__ __forceinline__ void full_step(float (&r)[R::size], const float* s, const float* p, index_t step,
                                          index_t d1) {
#pragma unroll
  for (int m = 0; m < 32; ++m) fma_row(r, s, m, load_pair<Pair>(p + m * step, d1));
}

}  // namespace fig21

// The runs of a nested K axis at every step of 32 (k0 = 32 t, length
// min(32, K - k0)), computed on the host: base[t], or -1 where the run
// crosses a digit (the kernel then takes offsets per element). Up to kMax
// steps (K <= 8192) ride in the kernel's parameters; a longer K leaves
// count = 0 and the kernel derives each run from the type.
struct KRuns {
  static constexpr int kMax = 256;
  int count = 0;
  index_t step = 0;
  index_t base[kMax] = {};

  static KRuns along(const Axis& axis, index_t K) {
    KRuns r;
    if (axis.levels == 1 || K > 32 * index_t(kMax)) return r;
    r.count = int((K + 31) / 32);
    r.step = axis.stride[axis.levels - 1];
    for (int t = 0; t < r.count; ++t) {
      const AxisRun run = axis_run(axis, 32 * index_t(t), std::min<index_t>(32, K - 32 * index_t(t)));
      r.base[t] = run.ok ? run.base : -1;
    }
    return r;
  }
  __device__ AxisRun at(int k0) const {
    const index_t b = base[k0 / 32];
    return {b, step, b >= 0};
  }
};
struct NoKRuns {};
template <class Op>
using KRunsFor = std::conditional_t<Op::strided, NoKRuns, KRuns>;

// The body of one thread of the array [[M/16][N/256]][[4][32]] (the
// paper's CUDA type), run by CudaThreadArray::detour<128>.
template <class OpA, class OpB, class OpC>
struct ParrayFig21 {
  int M, N, K;
  float alpha;
  OpA a;
  OpB b;
  float beta;
  OpC c;
  bool b_pairs;  // every row offset of B even, B 8-byte aligned: see the launcher
  KRunsFor<OpA> a_k;  // A's column runs, for a nested A
  KRunsFor<OpB> b_k;  // B's row runs, for a nested B

  __device__ void operator()(const CudaThread& thread) const;
};

template <class OpA, class OpB, class OpC>
__device__ void ParrayFig21<OpA, OpB, OpC>::operator()(const CudaThread& thread) const {
  using namespace fig21;
  __shared__ __align__(16) float s[S::size];
  float r[R::size];
#pragma unroll
  for (int i = 0; i < R::size; ++i) r[i] = 0.f;
  const int ty = thread.tid(1, 0), tx = thread.tid(1, 1);  // $tid_1_0$, $tid_1_1$
  const int t = thread.tid(1);                              // $tid_1$: column pair within the 256
  const int m0 = thread.tid(0, 0) * 16, j0 = thread.tid(0, 1) * 256 + 2 * t;

  // a += $A[[tid_0_0][[0][tid_1_0]]][[0][tid_1_1]]$: rows 4x + ty of the block's 16.
  const float* arow[4];
  unsigned arow_in = 0;
#pragma unroll
  for (int x = 0; x < 4; ++x) {
    const int i = m0 + 4 * x + ty;
    arow[x] = a.p + a.row(i);
    arow_in |= unsigned(i < M) << x;
  }
  // b += $B[0][[tid_0_1][[tid_1][0]]]$: columns j0, j0 + 1; past N they read
  // column N - 1 (in bounds, never stored), so the loads need no mask.
  const AxisRun bj = b.col_run(j0, 2);
  const bool pair = b_pairs && j0 + 1 < N && bj.ok && bj.step == 1 && bj.base % 2 == 0;
  const index_t bc0 = b.col(min(j0, N - 1)), bd1 = b.col(min(j0 + 1, N - 1)) - bc0;

  // The runs along K at k0: from the launcher's table where it has one.
  auto a_run = [&](int k0) {
    if constexpr (!OpA::strided)
      if (a_k.count) return a_k.at(k0);
    return a.col_run(k0, min(32, K - k0));
  };
  auto b_run = [&](int k0) {
    if constexpr (!OpB::strided)
      if (b_k.count) return b_k.at(k0);
    return b.row_run(k0, min(32, K - k0));
  };

  // A's 16 x 32 tile at k0, this thread's four elements (0 past M or K).
  auto load_a = [&](int k0, float (&v)[4]) {
    const AxisRun ka = a_run(k0);
    const int k = k0 + tx;
    const index_t off = ka.ok ? ka.base + tx * ka.step : a.col(k);
#pragma unroll
    for (int x = 0; x < 4; ++x) v[x] = ((arow_in >> x) & 1u) && k < K ? arow[x][off] : 0.f;
  };

  float an[4];  // the next tile's elements, loaded while this one is multiplied
  if (K > 0) load_a(0, an);
  for (int k0 = 0; k0 < K; k0 += 32) {
    // #copy A_0_1_0 to S0_1_0
#pragma unroll
    for (int x = 0; x < 4; ++x) s[S0::offset(tx, 4 * x + ty)] = an[x];
    __syncthreads();
    if (k0 + 32 < K) load_a(k0 + 32, an);
    const int kl = min(32, K - k0);
    const AxisRun kb = b_run(k0);  // B_0's rows k0 .. k0 + kl
    if (kl == 32 && kb.ok) {
      const float* p = b.p + kb.base + bc0;
      if (pair) full_step<true>(r, s, p, kb.step, bd1);
      else full_step<false>(r, s, p, kb.step, bd1);
    } else {
      for (int m = 0; m < kl; ++m) {
        const float* p = b.p + (kb.ok ? kb.base + m * kb.step : b.row(k0 + m)) + bc0;
        fma_row(r, s, m, pair ? load_pair<true>(p, bd1) : load_pair<false>(p, bd1));
      }
    }
    __syncthreads();
  }

  // #copy R to C0: C's rows as a run where they are one, else per row.
  if (j0 >= N) return;
  const int mlen = min(16, M - m0);
  const AxisRun cr = c.row_run(m0, mlen);
  const index_t cc0 = c.col(j0), cc1 = c.col(min(j0 + 1, N - 1));
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    if (j >= mlen) break;
    float* q = c.p + (cr.ok ? cr.base + j * cr.step : c.row(m0 + j));
    store_c(q[cc0], alpha * r[R::offset(j, 0)], beta);
    if (j0 + 1 < N) store_c(q[cc1], alpha * r[R::offset(j, 1)], beta);
  }
}

}  // namespace parray::cuda::ladder
