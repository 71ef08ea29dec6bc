// Step 19 — FP64 on the tensor cores: DGEMM with Hopper's double-precision
// mma (DMMA), fed by a cp.async ring.
//
// What it adds: steps 1–12 compute FP64 on the CUDA cores (half the FP32
// rate); Hopper's tensor cores also multiply doubles, at twice that rate
// (mma.sync m16n8k4/k8/k16 .f64: a warp's 16 x 8 block of C gains a rank-4, 8 or 16 update,
// each product and sum an IEEE FP64 fused multiply-add as on the CUDA
// cores, so the result is as accurate as an FP64 GEMM). A block computes a
// 128 x 128 tile of C with 8 warps of 64 x 32 (4 x 4 mma blocks: 64 doubles
// of accumulators per thread); k-tiles of 16 doubles of A (128 x 16) and B
// (16 x 128) go through a ring of Stages slots in shared memory by 16-byte
// cp.async, Stages - 1 k-tiles ahead of the products, zeros past the edges
// (the copy's source size cut to what lies inside). Rows are padded by 4
// doubles so that a warp's fragment reads (8 rows x 4 doubles of A, 4 rows x
// 8 doubles of B) fall in different banks. Operands whose rows are not
// 16-byte aligned, or whose k (A) or n (B) is not their contiguous
// direction, are copied a double at a time (8-byte cp.async) into the same
// tiles. Blocks walk
// the tiles in groups of 8 tile rows (neighbouring blocks share panels of A
// and B in L2); blockIdx.z is a product of a strided batch.
#pragma once

#include <cstdint>

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <int BM_, int BN_, int BK_, int Stages_>
struct DmmaTilesOf {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, Stages = Stages_;
  static constexpr int WM = 64, WN = 32;                       // a warp's block of C
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;  // 2 x 4
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kMi = WM / 16, kNi = WN / 8;           // mma blocks per warp
  static constexpr int kLdA = BK + 4, kLdB = BN + 4;          // padded rows (doubles)
  static constexpr int kStageA = BM * kLdA, kStageB = BK * kLdB;
  static constexpr int kSmemBytes = Stages * (kStageA + kStageB) * 8;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one block");
};
using DmmaTiles = DmmaTilesOf<128, 128, 16, 4>;

// A strided batch (blockIdx.z: product z at these element offsets).
struct DmmaBatch {
  long long a = 0, b = 0, c = 0;
};

// Fast copies: the operand's k (A) or n (B) direction contiguous and rows
// 16-byte aligned (the launcher checks), so a 16-byte cp.async moves 2 doubles.
struct DmmaParams {
  StridedOperand<const double> a, b;
  StridedOperand<double> c;
  int M, N, K;
  double alpha, beta;
  int a_fast, b_fast, group;
  DmmaBatch batch;
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem, int bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(gmem), "r"(bytes) : "memory");
}
// One double (cp.async's 8-byte form goes through L1: .ca).
__device__ __forceinline__ void cp_async_8(void* smem, const void* gmem, int bytes) {
  const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(Pending) : "memory");
}

// d += a b on a 16 x 8 block of C over KS values of K (4, 8 or 16): a thread
// holds a[2j] = A(g, t + 4j), a[2j + 1] = A(g + 8, t + 4j) and b[j] =
// B(t + 4j, g) for lane = 4 g + t, and d = C(g, 2t .. 2t + 1), C(g + 8, ...).
template <int KS>
__device__ __forceinline__ void dmma_16x8(double (&d)[4], const double (&a)[KS / 2], const double (&b)[KS / 4]) {
  if constexpr (KS == 4) {
    asm volatile(
        "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(b[0]));
  } else if constexpr (KS == 8) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, %11}, "
        "{%12, %13, %14, %15}, {%0, %1, %2, %3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), "d"(b[0]),
          "d"(b[1]), "d"(b[2]), "d"(b[3]));
  }
}

// An Outer x Inner tile of an operand (element (o, i) at src[o * so + i * si])
// into dst[o * Ld + i], zeros past (olim, ilim). fast: si = 1 and rows 16-byte
// aligned, so each 16-byte cp.async moves 2 doubles (its source size cut to
// what lies inside); otherwise an 8-byte cp.async a double, along the rows
// where si = 1 and down Outer otherwise (the contiguous direction of a
// column-major A or B), so that these copies too run behind the products.
template <int Outer, int Inner, int Ld, int Threads>
__device__ __forceinline__ void dmma_load_tile(double* dst, const double* src, long long so, long long si, int o0,
                                               int i0, int olim, int ilim, bool fast) {
  if (fast) {
    for (int e = threadIdx.x; e < Outer * Inner / 2; e += Threads) {
      const int o = e / (Inner / 2), i = 2 * (e % (Inner / 2));
      const int row = o0 + o, col = i0 + i;
      const int inside = row < olim ? min(2, max(0, ilim - col)) : 0;
      cp_async_16(dst + o * Ld + i, inside ? src + row * so + col : src, 8 * inside);
    }
  } else {
    for (int e = threadIdx.x; e < Outer * Inner; e += Threads) {
      const int o = si == 1 ? e / Inner : e % Outer, i = si == 1 ? e % Inner : e / Outer;
      const int row = o0 + o, col = i0 + i;
      const bool inside = row < olim && col < ilim;
      cp_async_8(dst + o * Ld + i, inside ? src + row * so + col * si : src, inside ? 8 : 0);
    }
  }
}

// k-tile kt of A (rows m0.., k kt*BK..) and of B (k kt*BK.., columns n0..)
// into slot (sa, sb).
template <class T>
__device__ __forceinline__ void dmma_load_k_tile(const DmmaParams& p, const double* a, const double* b, double* sa,
                                                 double* sb, int m0, int n0, int kt) {
  const int k0 = kt * T::BK;
  dmma_load_tile<T::BM, T::BK, T::kLdA, T::kThreads>(sa, a, p.a.rs, p.a.cs, m0, k0, p.M, p.K, p.a_fast);
  dmma_load_tile<T::BK, T::BN, T::kLdB, T::kThreads>(sb, b, p.b.rs, p.b.cs, k0, n0, p.K, p.N, p.b_fast);
}

// One k-tile of products from slot (sa, sb) into the warp's accumulators, in
// mma steps of KS values of K.
template <class T, int KS>
__device__ __forceinline__ void dmma_k_tile(const double* sa, const double* sb, int wm0, int wn0,
                                            double (&acc)[T::kMi][T::kNi][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kk = 0; kk < T::BK; kk += KS) {
    double af[T::kMi][KS / 2], bf[T::kNi][KS / 4];
#pragma unroll
    for (int i = 0; i < T::kMi; ++i)
#pragma unroll
      for (int q = 0; q < KS / 4; ++q) {
        af[i][2 * q] = sa[(wm0 + 16 * i + g) * T::kLdA + kk + t + 4 * q];
        af[i][2 * q + 1] = sa[(wm0 + 16 * i + g + 8) * T::kLdA + kk + t + 4 * q];
      }
#pragma unroll
    for (int j = 0; j < T::kNi; ++j)
#pragma unroll
      for (int q = 0; q < KS / 4; ++q) bf[j][q] = sb[(kk + t + 4 * q) * T::kLdB + wn0 + 8 * j + g];
#pragma unroll
    for (int i = 0; i < T::kMi; ++i)
#pragma unroll
      for (int j = 0; j < T::kNi; ++j) dmma_16x8<KS>(acc[i][j], af[i], bf[j]);
  }
}

#endif  // __CUDA_ARCH__ >= 900

// KS: the mma's K (4, 8 or 16; gpu.dmma_k).
template <class T, int KS>
__global__ __launch_bounds__(T::kThreads, 1) void gemm_dmma(const DmmaParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) double dmma_smem[];
  double* ring_a = dmma_smem;
  double* ring_b = dmma_smem + T::Stages * T::kStageA;
  const double* a = p.a.p + blockIdx.z * p.batch.a;
  const double* b = p.b.p + blockIdx.z * p.batch.b;
  double* c = p.c.p + blockIdx.z * p.batch.c;
  const int tiles_m = (p.M + T::BM - 1) / T::BM, tiles_n = (p.N + T::BN - 1) / T::BN;
  // Grouped order: `group` tile rows walked before moving right.
  const int pid = int(blockIdx.x), per_group = p.group * tiles_n, first_m = pid / per_group * p.group;
  const int rows_here = min(tiles_m - first_m, p.group);
  const int tm = first_m + pid % per_group % rows_here, tn = pid % per_group / rows_here;
  const int m0 = tm * T::BM, n0 = tn * T::BN;
  const int warp = threadIdx.x / 32, wm0 = warp / T::kWarpsN * T::WM, wn0 = warp % T::kWarpsN * T::WN;
  double acc[T::kMi][T::kNi][4] = {};
  const int k_tiles = (p.K + T::BK - 1) / T::BK;
#pragma unroll 1
  for (int s = 0; s < T::Stages - 1; ++s) {
    if (s < k_tiles) dmma_load_k_tile<T>(p, a, b, ring_a + s * T::kStageA, ring_b + s * T::kStageB, m0, n0, s);
    cp_async_commit();
  }
#pragma unroll 1
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<T::Stages - 2>();
    __syncthreads();  // slot kt % Stages is in; the slot refilled below was read by every warp
    const int next = kt + T::Stages - 1, ns = next % T::Stages;
    if (next < k_tiles) dmma_load_k_tile<T>(p, a, b, ring_a + ns * T::kStageA, ring_b + ns * T::kStageB, m0, n0, next);
    cp_async_commit();
    const int s = kt % T::Stages;
    dmma_k_tile<T, KS>(ring_a + s * T::kStageA, ring_b + s * T::kStageB, wm0, wn0, acc);
  }
  cp_async_wait<0>();
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int i = 0; i < T::kMi; ++i)
#pragma unroll
    for (int j = 0; j < T::kNi; ++j)
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int row = m0 + wm0 + 16 * i + g + 8 * (h / 2), col = n0 + wn0 + 8 * j + 2 * t + h % 2;
        if (row >= p.M || col >= p.N) continue;
        double& out = c[row * p.c.rs + col * p.c.cs];
        out = p.beta == 0.0 ? p.alpha * acc[i][j][h] : fma(p.alpha, acc[i][j][h], p.beta * out);
      }
#else
  __trap();  // built without sm_90: the launcher refuses before this
#endif
}

}  // namespace parray::cuda::ladder
