// Step 12, part 1 — the tile loader and the pipelined main loop of the best
// kernel (12_best.cuh has the kernel around them).
//
// Over step 10's loader: the address of a tile is worked out once per tile,
// not once per element. Each operand is an (x, k) matrix (x = m for A, n for
// B); per block the x-run [x0, x0 + BX) and per k-tile the k-run
// [k0, k0 + BK) are asked for as AxisRun (parray/cuda/operand.cuh): for
// strided layouts always, and for the figure-17/18 layouts whenever the tile
// does not cross a block of the nested axis (always, when the blocks are
// multiples of the tile), the tile is then strided, offset(x0 + dx, k0 + dk)
// = base + dx xs + dk ks, and is copied exactly like a row-major tile,
// 16 bytes at a time where the run is contiguous and aligned — which is also
// how an operand with an unaligned leading dimension keeps its aligned tiles
// fast and only its odd ones on 4-byte copies. A tile that crosses a block
// boundary takes step 10's per-element path (load_tile), the general case.
//
// Operands contiguous along k (row-major A, column-major B) are not copied
// with cp.async: cp.async cannot transpose, so step 10 moves them 4 bytes at a
// time — 8 copy instructions with 64-bit addresses per thread per k-tile for
// a 128 x 16 tile, which left the kernel with row-major A well behind the
// same kernel with column-major A (16-byte cp.async; docs/perf-notes.md).
// KContigStage loads such a tile with 16-byte global loads into
// registers at the top of a k-step and stores it transposed into shared
// memory after that step's FMAs (lanes along x, so the 4-byte stores of a
// warp hit 32 consecutive banks): the load latency is covered by one k-tile
// of FMAs, the other operand keeps its cp.async ring.
#pragma once

#include "10_cp_async.cuh"

namespace parray::cuda::ladder {

// Compile-time shape of step 12: block tile BM x BN x BK, warp tile WM x WN
// split into WMITER x WNITER sub-tiles of TM x TN per thread, STAGES k-tiles
// in flight, at least MINB blocks per SM (bounds the registers).
// KU_: k-steps unrolled in the inner loop (0: all BK of them); a smaller
// body for the instruction cache.
template <int BM_, int BN_, int BK_, int WM_, int WN_, int WMITER_, int WNITER_, int TM_, int TN_, int STAGES_,
          int MINB_, int KU_ = 0>
struct BestShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, WMITER = WMITER_, WNITER = WNITER_;
  static constexpr int TM = TM_, TN = TN_, STAGES = STAGES_, MINB = MINB_, KU = KU_ ? KU_ : BK_;
  static_assert(BK % KU == 0, "KU divides BK");
  static constexpr int NT = (BM / WM) * (BN / WN) * 32;
  static constexpr int WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  static_assert((WSUBM / TM) * (WSUBN / TN) == 32, "a warp sub-tile is 32 threads");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "fragments are read as float4");
  // Shared tiles (BK, BM + 4) of A^T and (BK, BN + 4) of B: the 4-word pad
  // keeps rows 16-byte aligned and makes the 8 k x 4 x transposing stores hit
  // 32 distinct banks (132 = 4 mod 32).
  static constexpr int LDA = BM + 4, LDB = BN + 4, ASZ = BK * LDA, BSZ = BK * LDB;
  static constexpr int smem_bytes = STAGES * (ASZ + BSZ) * 4;
};

// The operand as (x, k), with runs.
template <class Op, bool IsB>
struct XKRuns : XK<Op, IsB> {
  __device__ AxisRun x_run(index_t i0, index_t len) const {
    return IsB ? this->op.col_run(i0, len) : this->op.row_run(i0, len);
  }
  __device__ AxisRun k_run(index_t i0, index_t len) const {
    return IsB ? this->op.row_run(i0, len) : this->op.col_run(i0, len);
  }
};

// One (BK, BX) tile of a strided tile view p[dx * xs + dk * ks] into
// dst[dk][dx] (row length BX + 4); xlen x klen of it inside the matrix.
template <int BX, int BK, int NT, bool ContigK>
__device__ __forceinline__ void load_strided_tile(float* dst, const float* p, index_t xs, index_t ks, int xlen,
                                                  int klen) {
  constexpr int LD = BX + 4;
  if constexpr (ContigK) {  // k contiguous: lanes 8 k x 4 x, 4-byte copies (cp.async cannot transpose)
    constexpr int XSTEP = NT / 8, KP = BK / 8, PX = BX / XSTEP;
    static_assert(NT % 8 == 0 && BK % 8 == 0 && BX % XSTEP == 0, "tile/thread mismatch");
    const int kx = threadIdx.x % 8, x = threadIdx.x / 8;
#pragma unroll
    for (int px = 0; px < PX; ++px) {
      const int xx = x + XSTEP * px;
      const float* row = p + xx * xs;
#pragma unroll
      for (int q = 0; q < KP; ++q) {
        const int k = kx + 8 * q;
        const bool in = xx < xlen && k < klen;
        cp_async4(&dst[k * LD + xx], in ? row + k * ks : p, in);
      }
    }
  } else {  // x contiguous: 16-byte copies when the whole tile is inside and aligned
    constexpr int XL = BX / 4, KSTEP = NT / XL, P = BK / KSTEP;
    static_assert(NT % XL == 0 && BK % KSTEP == 0, "tile/thread mismatch");
    const int x = (threadIdx.x % XL) * 4, kb = threadIdx.x / XL;
    const bool vec = xs == 1 && ks % 4 == 0 && xlen == BX && klen == BK &&
                     (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
    if (vec) {
#pragma unroll
      for (int q = 0; q < P; ++q) cp_async16(&dst[(kb + KSTEP * q) * LD + x], p + x + (kb + KSTEP * q) * ks);
    } else {
#pragma unroll
      for (int q = 0; q < P; ++q) {
        const int k = kb + KSTEP * q;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = x + e < xlen && k < klen;
          cp_async4(&dst[k * LD + x + e], in ? p + (x + e) * xs + k * ks : p, in);
        }
      }
    }
  }
}

// The tile at (x0, k0) by cp.async: strided when both runs are, else per
// element through the layout.
template <int BX, int BK, int NT, bool ContigK, class Src>
__device__ __forceinline__ void load_run_tile(float* dst, const Src& src, const AxisRun& xr, const AxisRun& kr,
                                              int x0, int X, int k0, int K) {
  const int xlen = min(BX, X - x0), klen = min(BK, K - k0);
  if (xr.ok && kr.ok)
    load_strided_tile<BX, BK, NT, ContigK>(dst, src.op.p + xr.base + kr.base, xr.step, kr.step, xlen, klen);
  else
    load_tile<BX, BK, NT, ContigK>(dst, src, x0, X, k0, K, false);
}

// A k-contiguous (BK, BX) tile staged in registers: fetch() issues 16-byte
// global loads, store() writes the tile transposed into dst[k][x] (row
// length BX + 4). Chunk c = threadIdx.x + NT i is x = c / (BK / 4), k =
// 4 (c % (BK / 4)) .. + 3: a warp reads whole 64-byte row segments (8 rows of
// a 16-wide tile), so each load instruction touches 8 lines, not 32 — the
// L1 handles a warp's request line by line, and with 32 rows per request
// (lanes along x) the loads alone took more L1 cycles than the k-tile's
// shared-memory fragment reads. The four scalar stores of a chunk go to rows
// k .. k + 3 of dst; rows 8 apart share banks (the row length is 4 mod 32
// words), so chunks with k = 8, 12 store their elements in the order
// 2, 3, 0, 1: every store instruction of a warp then hits 32 distinct banks.
// Only whole, aligned tiles are staged; edge, unaligned and block-crossing
// tiles keep the 4-byte cp.async path (their registers would be the kernel's
// spills).
template <int BX, int BK, int NT>
struct KContigStage {
  static constexpr int CH = BX * BK / 4 / NT, LD = BX + 4, QK = BK / 4;
  static_assert(NT % 32 == 0 && (BX * BK / 4) % NT == 0 && 32 % QK == 0, "tile/thread mismatch");
  float4 v[CH];
  bool staged = false;

  __device__ __forceinline__ static int chunk_x(int i) { return (threadIdx.x + NT * i) / QK; }
  __device__ __forceinline__ static int chunk_q(int i) { return (threadIdx.x + NT * i) % QK; }
  __device__ __forceinline__ static float part(const float4& f, int j) {
    return j == 0 ? f.x : j == 1 ? f.y : j == 2 ? f.z : f.w;
  }

  // Starts loading k-tile (x0, k0) for buffer dst: into registers when the
  // tile is whole and 16-byte aligned, else by cp.async straight into dst.
  template <class Src>
  __device__ __forceinline__ void fetch(float* dst, const Src& src, const AxisRun& xr, int x0, int X, int k0, int K) {
    const int xlen = min(BX, X - x0), klen = min(BK, K - k0);
    const AxisRun kr = src.k_run(k0, klen);
    const float* p = src.op.p + xr.base + kr.base;
    staged = xr.ok && kr.ok && kr.step == 1 && xr.step % 4 == 0 && xlen == BX && klen == BK &&
             (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0;
    if (staged) {
#pragma unroll
      for (int i = 0; i < CH; ++i)
        v[i] = __ldg(reinterpret_cast<const float4*>(p + chunk_x(i) * xr.step + 4 * chunk_q(i)));
    } else {
      load_run_tile<BX, BK, NT, true>(dst, src, xr, kr, x0, X, k0, K);
    }
  }

  __device__ __forceinline__ void store(float* dst) const {
    if (!staged) return;
#pragma unroll
    for (int i = 0; i < CH; ++i) {
      const int q = chunk_q(i);
      const bool swap = QK == 4 && (q & 2);  // the 16-wide tile's bank rotation (above)
      float* d = dst + 4 * q * LD + chunk_x(i);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int e = swap ? (j ^ 2) : j;
        d[e * LD] = swap ? part(v[i], j ^ 2) : part(v[i], j);
      }
    }
  }
};

// acc += A(m0.., k) B(k, n0..) over k-tiles [kt0, kt1), STAGES - 1 tiles
// ahead; one barrier per k-tile.
template <class S, bool AK, bool BKc, class SA, class SB>
__device__ __forceinline__ void best_mainloop(float* smem, const SA& sa, const SB& sb, int M, int N, int K, int m0,
                                              int n0, int kt0, int kt1,
                                              float (&acc)[S::WMITER * S::TM][S::WNITER * S::TN]) {
  float* As = smem;                    // STAGES x (BK, BM + 4): A transposed
  float* Bs = smem + S::STAGES * S::ASZ;  // STAGES x (BK, BN + 4)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wrow = warp / (S::BN / S::WN), wcol = warp % (S::BN / S::WN);
  const int trow = lane / (S::WSUBN / S::TN), tcol = lane % (S::WSUBN / S::TN);
  const AxisRun ar = sa.x_run(m0, min(S::BM, M - m0)), br = sb.x_run(n0, min(S::BN, N - n0));
  // k-contiguous operands go through registers (KContigStage), the others
  // through the cp.async ring; both land in the same STAGES shared buffers.
  KContigStage<S::BM, S::BK, S::NT> ra_stage;
  KContigStage<S::BN, S::BK, S::NT> rb_stage;
  auto issue = [&](int stage, int kt) {  // start the loads of k-tile kt into buffer `stage`
    const int k0 = kt * S::BK, klen = min(S::BK, K - k0);
    if constexpr (AK) ra_stage.fetch(As + stage * S::ASZ, sa, ar, m0, M, k0, K);
    else load_run_tile<S::BM, S::BK, S::NT, false>(As + stage * S::ASZ, sa, ar, sa.k_run(k0, klen), m0, M, k0, K);
    if constexpr (BKc) rb_stage.fetch(Bs + stage * S::BSZ, sb, br, n0, N, k0, K);
    else load_run_tile<S::BN, S::BK, S::NT, false>(Bs + stage * S::BSZ, sb, br, sb.k_run(k0, klen), n0, N, k0, K);
  };
  auto finish = [&](int stage) {  // the register-staged part of buffer `stage`
    if constexpr (AK) ra_stage.store(As + stage * S::ASZ);
    if constexpr (BKc) rb_stage.store(Bs + stage * S::BSZ);
  };
  const int nkt = kt1 - kt0;
#pragma unroll
  for (int s = 0; s < S::STAGES - 1; ++s) {
    if (s < nkt) {
      issue(s, kt0 + s);
      finish(s);
    }
    cp_async_commit();
  }
  // Fragment origins in the shared tiles.
  const int aoff = wrow * S::WM + trow * S::TM, boff = wcol * S::WN + tcol * S::TN;
  float ra[S::WMITER * S::TM], rb[S::WNITER * S::TN];
  int stage = 0;
  for (int t = 0; t < nkt; ++t) {
    cp_async_wait<S::STAGES - 2>();
    __syncthreads();  // tile t visible to all; the buffer of tile t - 1 is free to refill
    const int nt = t + S::STAGES - 1;
    if (nt < nkt) issue(nt % S::STAGES, kt0 + nt);
    cp_async_commit();
    const float* a = As + stage * S::ASZ + aoff;
    const float* b = Bs + stage * S::BSZ + boff;
#pragma unroll 1
    for (int kk0 = 0; kk0 < S::BK; kk0 += S::KU)
#pragma unroll
    for (int kk1 = 0; kk1 < S::KU; ++kk1) {
      const int kk = kk0 + kk1;
#pragma unroll
      for (int wm = 0; wm < S::WMITER; ++wm)
#pragma unroll
        for (int q = 0; q < S::TM; q += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&a[kk * S::LDA + wm * S::WSUBM + q]);
          float* r = &ra[wm * S::TM + q];
          r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
        }
#pragma unroll
      for (int wn = 0; wn < S::WNITER; ++wn)
#pragma unroll
        for (int q = 0; q < S::TN; q += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&b[kk * S::LDB + wn * S::WSUBN + q]);
          float* r = &rb[wn * S::TN + q];
          r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
        }
#pragma unroll
      for (int i = 0; i < S::WMITER * S::TM; ++i)
#pragma unroll
        for (int j = 0; j < S::WNITER * S::TN; ++j) acc[i][j] += ra[i] * rb[j];
    }
    // Buffer nt % STAGES was last read in step t - 1, before this step's
    // barrier, and is next read in step nt > t, after another barrier.
    if (nt < nkt) finish(nt % S::STAGES);
    stage = stage + 1 == S::STAGES ? 0 : stage + 1;
  }
  cp_async_wait<0>();
}

}  // namespace parray::cuda::ladder
