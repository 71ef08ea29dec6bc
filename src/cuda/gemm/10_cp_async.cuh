// Step 10 — multi-stage pipelining with cp.async: tiles go from global to
// shared memory asynchronously (no register staging), STAGES = 3 k-tiles in
// flight, so the loads of tile k+2 overlap the FMAs of tile k. Compute is
// step 9's warp tiling.
//
// Over step 9: step 9 waited for each tile's loads before computing
// (load -> sync -> compute -> sync): latency exposed once per k-tile.
// cp.async cannot transpose, so A (row-major: k contiguous) is copied 4 bytes
// at a time with lanes mapped 8 (k) x 4 (m): each lane group still reads whole
// 32-byte sectors, and with rows padded to BM + 4 words the transposed
// stores hit 32 distinct banks. B (n contiguous) goes 16 bytes at a time when
// aligned and inside the matrix, else 4 bytes with zero-fill (src-size 0),
// which is also how the edges are predicated.
//
// The loader is written against separable offsets, offset(x, k) = fx(x) +
// fk(k) (true of every MatrixLayout), so the same code takes strided and
// nested (figure 17/18) layouts; step 12 reuses it with other tile shapes.
#pragma once

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

__device__ __forceinline__ void cp_async4(float* smem, const float* g, bool pred) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(s), "l"(g), "r"(pred ? 4 : 0));
}
__device__ __forceinline__ void cp_async16(float* smem, const float* g) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// An operand seen as (x, k): x is m for A and n for B; offsets separate.
template <class Op, bool IsB>
struct XK {
  Op op;
  __device__ index_t x(index_t i) const { return IsB ? op.col(i) : op.row(i); }
  __device__ index_t k(index_t i) const { return IsB ? op.row(i) : op.col(i); }
};

// Issues the cp.asyncs for one (BK, BX) tile into dst[kk][x] (row length
// BX + 4). ContigK: the operand is contiguous along k (lanes 8 k x 4 x);
// else along x (16-byte copies when `vec` and the tile is inside).
template <int BX, int BK, int NT, bool ContigK, class Src>
__device__ __forceinline__ void load_tile(float* dst, const Src& src, int x0, int X, int k0, int K, bool vec) {
  constexpr int LD = BX + 4;
  const float* base = src.op.p;
  if constexpr (ContigK) {
    static_assert(NT % 8 == 0 && BK % 8 == 0 && (BX * BK) % NT == 0, "tile/thread mismatch");
    constexpr int XSTEP = NT / 8, P = BX * BK / NT, KP = BK / 8;
    const int t = threadIdx.x;
    index_t ko[KP];
    bool kin[KP];
#pragma unroll
    for (int q = 0; q < KP; ++q) {
      const int k = k0 + t % 8 + 8 * q;
      kin[q] = k < K;
      ko[q] = kin[q] ? src.k(k) : 0;
    }
#pragma unroll
    for (int px = 0; px < P / KP; ++px) {  // one x offset per KP copies
      const int x = t / 8 + XSTEP * px;
      const bool xin = x0 + x < X;
      const index_t xo = xin ? src.x(x0 + x) : 0;
#pragma unroll
      for (int q = 0; q < KP; ++q) {
        const bool in = kin[q] && xin;
        cp_async4(&dst[(t % 8 + 8 * q) * LD + x], in ? base + xo + ko[q] : base, in);
      }
    }
  } else {
    static_assert(NT % (BX / 4) == 0, "tile/thread mismatch");
    constexpr int KSTEP = NT / (BX / 4), P = BK / KSTEP;
    const int x = (threadIdx.x % (BX / 4)) * 4, kb = threadIdx.x / (BX / 4);
    if (vec && x0 + BX <= X && k0 + BK <= K) {
      const float* px = base + src.x(x0 + x);
#pragma unroll
      for (int p = 0; p < P; ++p) cp_async16(&dst[(kb + KSTEP * p) * LD + x], px + src.k(k0 + kb + KSTEP * p));
    } else {  // offsets separate: 4 along x and P along k per tile, not 4 P of each
      index_t xo[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) xo[e] = x0 + x + e < X ? src.x(x0 + x + e) : 0;
#pragma unroll
      for (int p = 0; p < P; ++p) {
        const int k = k0 + kb + KSTEP * p;
        const index_t ko = k < K ? src.k(k) : 0;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const bool in = k < K && x0 + x + e < X;
          cp_async4(&dst[(kb + KSTEP * p) * LD + x + e], in ? base + xo[e] + ko : base, in);
        }
      }
    }
  }
}

// The pipelined main loop over k-tiles [kt0, kt1): acc += A(m0.., k) B(k, n0..).
template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int STAGES, bool AK, bool BK_,
          class SA, class SB>
__device__ __forceinline__ void mainloop(float* smem, const SA& sa, const SB& sb, int M, int N, int K, int m0, int n0,
                                         int kt0, int kt1, bool veca, bool vecb,
                                         float (&acc)[WM * WN / (32 * TM * TN * WNITER) * TM][WNITER * TN]) {
  constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER), WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  constexpr int ASZ = BK * (BM + 4), BSZ = BK * (BN + 4);
  float* As = smem;                 // STAGES x (BK, BM + 4): A transposed
  float* Bs = smem + STAGES * ASZ;  // STAGES x (BK, BN + 4)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
  const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
  const int nkt = kt1 - kt0;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < nkt) {
      load_tile<BM, BK, NT, AK>(As + s * ASZ, sa, m0, M, (kt0 + s) * BK, K, veca);
      load_tile<BN, BK, NT, BK_>(Bs + s * BSZ, sb, n0, N, (kt0 + s) * BK, K, vecb);
    }
    cp_async_commit();
  }
  float ra[WMITER * TM], rb[WNITER * TN];
  for (int t = 0; t < nkt; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile t visible to all; tile t-1's buffer free to refill
    const int nt = t + STAGES - 1;
    if (nt < nkt) {
      load_tile<BM, BK, NT, AK>(As + (nt % STAGES) * ASZ, sa, m0, M, (kt0 + nt) * BK, K, veca);
      load_tile<BN, BK, NT, BK_>(Bs + (nt % STAGES) * BSZ, sb, n0, N, (kt0 + nt) * BK, K, vecb);
    }
    cp_async_commit();
    const float* a = As + (t % STAGES) * ASZ;
    const float* b = Bs + (t % STAGES) * BSZ;
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
#pragma unroll
      for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
        for (int q = 0; q < TM; q += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&a[kk * (BM + 4) + wrow * WM + wm * WSUBM + trow * TM + q]);
          ra[wm * TM + q] = v.x, ra[wm * TM + q + 1] = v.y, ra[wm * TM + q + 2] = v.z, ra[wm * TM + q + 3] = v.w;
        }
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn)
#pragma unroll
        for (int q = 0; q < TN; q += 4) {
          const float4 v = *reinterpret_cast<const float4*>(&b[kk * (BN + 4) + wcol * WN + wn * WSUBN + tcol * TN + q]);
          rb[wn * TN + q] = v.x, rb[wn * TN + q + 1] = v.y, rb[wn * TN + q + 2] = v.z, rb[wn * TN + q + 3] = v.w;
        }
#pragma unroll
      for (int i = 0; i < WMITER * TM; ++i)
#pragma unroll
        for (int j = 0; j < WNITER * TN; ++j) acc[i][j] += ra[i] * rb[j];
    }
  }
  cp_async_wait<0>();
}

// Writes alpha * acc (+ beta C) through C's layout; 16-byte stores when C is
// row-major with aligned rows (cvec) and the 4 columns are inside. Add: adds
// alpha * acc into C atomically instead (AddOperand; beta is not applied).
template <int BM, int BN, int WM, int WN, int WNITER, int TM, int TN, bool Add = false, class OpC>
__device__ __forceinline__ void epilogue(const OpC& c, int M, int N, int m0, int n0, float alpha, float beta,
                                         bool cvec, float (&acc)[WM * WN / (32 * TM * TN * WNITER) * TM][WNITER * TN]) {
  constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER), WSUBM = WM / WMITER, WSUBN = WN / WNITER;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int wrow = warp / (BN / WN), wcol = warp % (BN / WN);
  const int trow = lane / (WSUBN / TN), tcol = lane % (WSUBN / TN);
#pragma unroll
  for (int wm = 0; wm < WMITER; ++wm)
#pragma unroll
    for (int t = 0; t < TM; ++t) {
      const int i = m0 + wrow * WM + wm * WSUBM + trow * TM + t;
      if (i >= M) continue;
#pragma unroll
      for (int wn = 0; wn < WNITER; ++wn) {
        const int j = n0 + wcol * WN + wn * WSUBN + tcol * TN;
        const float* r = &acc[wm * TM + t][wn * TN];
        if (OpC::strided && TN % 4 == 0 && cvec && j + TN <= N) {
#pragma unroll
          for (int q = 0; q < TN; q += 4) {
            float4* p = reinterpret_cast<float4*>(&c(i, j + q));
            float4 v = make_float4(alpha * r[q], alpha * r[q + 1], alpha * r[q + 2], alpha * r[q + 3]);
            if constexpr (Add) {
#if __CUDA_ARCH__ >= 900
              atomicAdd(p, v);  // one 16-byte reduction (compute capability 9.x)
#else
              atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w);
#endif
              continue;
            }
            if (beta != 0.f) {
              const float4 o = *p;
              v.x += beta * o.x, v.y += beta * o.y, v.z += beta * o.z, v.w += beta * o.w;
            }
            *p = v;
          }
        } else {
#pragma unroll
          for (int u = 0; u < TN; ++u)
            if (j + u < N) {
              if constexpr (Add)
                atomicAdd(&c(i, j + u), alpha * r[u]);
              else
                store_c(c(i, j + u), alpha * r[u], beta);
            }
        }
      }
    }
}

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int STAGES, bool AK, bool BK_,
          class OpA, class OpB, class OpC>
__global__ __launch_bounds__(NT) void cp_async_pipelined(int M, int N, int K, float alpha, OpA a, OpB b, float beta,
                                                         OpC c, bool veca, bool vecb, bool cvec) {
  extern __shared__ __align__(16) float smem[];
  constexpr int WMITER = WM * WN / (32 * TM * TN * WNITER);
  float acc[WMITER * TM][WNITER * TN] = {};
  const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
  mainloop<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, STAGES, AK, BK_>(
      smem, XK<OpA, false>{a}, XK<OpB, true>{b}, M, N, K, m0, n0, 0, (K + BK - 1) / BK, veca, vecb, acc);
  epilogue<BM, BN, WM, WN, WNITER, TM, TN>(c, M, N, m0, n0, alpha, beta, cvec, acc);
}

}  // namespace parray::cuda::ladder
