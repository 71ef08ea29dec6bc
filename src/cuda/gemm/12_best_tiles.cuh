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
#pragma once

#include "10_cp_async.cuh"

namespace parray::cuda::ladder {

// Compile-time shape of step 12: block tile BM x BN x BK, warp tile WM x WN
// split into WMITER x WNITER sub-tiles of TM x TN per thread, STAGES k-tiles
// in flight, at least MINB blocks per SM (bounds the registers).
template <int BM_, int BN_, int BK_, int WM_, int WN_, int WMITER_, int WNITER_, int TM_, int TN_, int STAGES_,
          int MINB_>
struct BestShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WM = WM_, WN = WN_, WMITER = WMITER_, WNITER = WNITER_;
  static constexpr int TM = TM_, TN = TN_, STAGES = STAGES_, MINB = MINB_;
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

// The tile at (x0, k0): strided when both runs are, else per element.
template <int BX, int BK, int NT, bool ContigK, class Src>
__device__ __forceinline__ void load_run_tile(float* dst, const Src& src, const AxisRun& xr, int x0, int X, int k0,
                                              int K) {
  const int xlen = min(BX, X - x0), klen = min(BK, K - k0);
  const AxisRun kr = src.k_run(k0, klen);
  if (xr.ok && kr.ok)
    load_strided_tile<BX, BK, NT, ContigK>(dst, src.op.p + xr.base + kr.base, xr.step, kr.step, xlen, klen);
  else
    load_tile<BX, BK, NT, ContigK>(dst, src, x0, X, k0, K, false);
}

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
  auto load = [&](int stage, int kt) {
    load_run_tile<S::BM, S::BK, S::NT, AK>(As + stage * S::ASZ, sa, ar, m0, M, kt * S::BK, K);
    load_run_tile<S::BN, S::BK, S::NT, BKc>(Bs + stage * S::BSZ, sb, br, n0, N, kt * S::BK, K);
  };
  const int nkt = kt1 - kt0;
#pragma unroll
  for (int s = 0; s < S::STAGES - 1; ++s) {
    if (s < nkt) load(s, kt0 + s);
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
    if (nt < nkt) load(nt % S::STAGES, kt0 + nt);
    cp_async_commit();
    const float* a = As + stage * S::ASZ + aoff;
    const float* b = Bs + stage * S::BSZ + boff;
#pragma unroll
    for (int kk = 0; kk < S::BK; ++kk) {
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
    stage = stage + 1 == S::STAGES ? 0 : stage + 1;
  }
  cp_async_wait<0>();
}

}  // namespace parray::cuda::ladder
