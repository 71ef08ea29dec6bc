// Step 19 — FP64 on the tensor cores: DGEMM with Hopper's double-precision
// mma (DMMA), fed by a cp.async ring.
//
// What it adds: steps 1–12 compute FP64 on the CUDA cores (half the FP32
// rate); Hopper's tensor cores also multiply doubles, at twice that rate
// (mma.sync m16n8k8 .f64: a warp's 16 x 8 block of C gains a rank-8 update,
// each product and sum an IEEE FP64 fused multiply-add as on the CUDA cores,
// so the result is as accurate as an FP64 GEMM). A block computes a 128 x
// 128 tile of C with 8 warps of 64 x 32 (4 x 4 mma blocks: 64 doubles of
// accumulators per thread); k-tiles of 32 doubles of A (128 x 32) and B
// (32 x 128) go through a ring of Stages slots in shared memory by 16-byte
// cp.async, Stages - 1 k-tiles ahead of the products, zeros past the edges
// (the copy's source size cut to what lies inside). The mma's operands are
// read from the ring 16 bytes at a time: k is taken in a permuted order
// inside each step so that a thread's two values of A in a row are
// adjacent, and the warp's columns are permuted so that its four values of
// B in a row are; rows are padded so that these reads do not conflict. The
// operands of the next step are read while this step's products run, across
// the k-tile's __syncthreads too. Operands whose rows are not 16-byte
// aligned, or whose k (A) or n (B) is not their contiguous direction, are
// copied a double at a time (8-byte cp.async) into the same tiles. Blocks
// walk the tiles in groups of 8 tile rows (neighbouring blocks share panels
// of A and B in L2); blockIdx.z is a product of a strided batch. A single
// product whose tiles leave SMs idle splits K over blockIdx.y into parts
// written to a workspace and summed in part order (dmma_sum_parts), so the
// result does not depend on timing.
#pragma once

#include <cstdint>

#include "parray/cuda/operand.cuh"

namespace parray::cuda::ladder {

template <int BM_, int BN_, int BK_, int Stages_>
struct DmmaTilesOf {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, Stages = Stages_;
  static constexpr int kBlocks = 1;                            // resident blocks an SM (launch bounds)
  static constexpr int WM = 64, WN = 32;                       // a warp's block of C
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;  // 2 x 4
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kMi = WM / 16, kNi = WN / 8;           // mma blocks per warp
  static constexpr int kKSteps = BK / 8;                      // m16n8k8 steps a k-tile
  // Padded rows (doubles) so that the eight lanes of a 16-byte read phase
  // fall in different banks (dmma_a_fragment, dmma_b_fragments): rows of A
  // 8 mod 16 doubles apart (lanes g and g + 1 half a 128-byte line apart),
  // of B 2 mod 4 (the rows 2t of four lanes t in different quarters of a line).
  static constexpr int kLdA = BK + 8, kLdB = BN + 2;
  static_assert(kKSteps % 2 == 0 && kLdA % 16 == 8 && kLdB % 4 == 2,
                "k-tiles of whole pairs of k8 steps (the fragments' two buffers), conflict-free pads");
  static constexpr int kStageA = BM * kLdA, kStageB = BK * kLdB;
  static constexpr int kSmemBytes = Stages * (kStageA + kStageB) * 8;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one block");
};
using DmmaTiles = DmmaTilesOf<128, 128, 32, 3>;

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
  // K split (blockIdx.y: part y takes k-tiles y * kt_per_part .. and writes
  // its partial product at c + y * part_stride); one part: all of K into C.
  int kt_per_part;
  long long part_stride;
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

// d += a b on a 16 x 8 block of C over 8 values of K (mma.sync m16n8k8
// .f64): for lane = 4 g + t the mma takes a = A(g, t), A(g + 8, t), A(g,
// t + 4), A(g + 8, t + 4), b = B(t, g), B(t + 4, g), and d = C(g, 2t ..
// 2t + 1), C(g + 8, 2t .. 2t + 1).
__device__ __forceinline__ void dmma_16x8x8(double (&d)[4], const double (&a)[4], const double (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
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
#pragma unroll 1
    for (int e = threadIdx.x; e < Outer * Inner / 2; e += Threads) {
      const int o = e / (Inner / 2), i = 2 * (e % (Inner / 2));
      const int row = o0 + o, col = i0 + i;
      const int inside = row < olim ? min(2, max(0, ilim - col)) : 0;
      cp_async_16(dst + o * Ld + i, inside ? src + row * so + col : src, 8 * inside);
    }
  } else {
#pragma unroll 1
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

// One mma step's operands (8 values of K) out of a slot, 16 bytes a read.
// The mma's k index t + 4q is taken as the step's k = 2t + q (a sum is the
// same in any order of k), so a thread's two values of A in a row are
// adjacent: one 16-byte read a row. Its B values lie in two rows, so n is
// permuted instead: the mma block j's column g is the warp's column 4g + (j ^
// 2 (g & 1)), so that a thread's four blocks are four adjacent doubles of a
// row (two 16-byte reads, the odd g starting with the second half so that the
// eight lanes of one read phase hit different banks; dmma_column undoes it).
// sa, sb: the step's first k of the warp's rows of A, columns of B.
template <class T>
__device__ __forceinline__ void dmma_a_fragment(const double* sa, int i, double (&af)[4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const double2 top = *reinterpret_cast<const double2*>(sa + (16 * i + g) * T::kLdA + 2 * t);
  const double2 bottom = *reinterpret_cast<const double2*>(sa + (16 * i + g + 8) * T::kLdA + 2 * t);
  af[0] = top.x, af[1] = bottom.x, af[2] = top.y, af[3] = bottom.y;
}
template <class T>
__device__ __forceinline__ void dmma_b_fragments(const double* sb, double (&bf)[T::kNi][2]) {
  static_assert(T::kNi == 4, "four mma blocks of 8 columns: 4 adjacent doubles a thread");
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, half = 2 * (g & 1);
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const double* row = sb + (2 * t + q) * T::kLdB + 4 * g;
    const double2 first = *reinterpret_cast<const double2*>(row + half);
    const double2 second = *reinterpret_cast<const double2*>(row + (2 - half));
    bf[0][q] = first.x, bf[1][q] = first.y, bf[2][q] = second.x, bf[3][q] = second.y;
  }
}

// The warp's column of C that holds accumulator (j, h) of lane t: column 2t +
// h % 2 of mma block j, permuted as its B column (dmma_b_fragments).
__device__ __forceinline__ int dmma_column(int j, int h, int t) {
  const int e = h % 2;
  return 8 * t + 4 * e + (j ^ (2 * e));
}

#endif  // __CUDA_ARCH__ >= 900

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// A warp's accumulators into C (at c, with C's strides) as alpha acc + beta
// C: accumulator (i, j, h) of lane 4 g + t at row row0 + 16 i + rg + 8 (h /
// 2), where rg is the row of its block that the mma's row g was read from,
// and column col0 + dmma_column(j, h, t); nothing past M or N.
template <class T>
__device__ __forceinline__ void dmma_store(double* c, const StridedOperand<double>& cs, int M, int N, double alpha,
                                           double beta, int row0, int col0, int rg,
                                           const double (&acc)[T::kMi][T::kNi][4]) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int i = 0; i < T::kMi; ++i)
#pragma unroll
    for (int j = 0; j < T::kNi; ++j)
#pragma unroll
      for (int h = 0; h < 4; ++h) {
        const int row = row0 + 16 * i + rg + 8 * (h / 2), col = col0 + dmma_column(j, h, t);
        if (row >= M || col >= N) continue;
        double& out = c[row * cs.rs + col * cs.cs];
        out = beta == 0.0 ? alpha * acc[i][j][h] : fma(alpha, acc[i][j][h], beta * out);
      }
}
#endif

// This block's tile of C (blockIdx.x) in grouped order: `group` tile rows
// walked before moving right, so that neighbouring blocks share panels of A
// and B in L2.
template <class T>
__device__ __forceinline__ void dmma_tile_origin(int M, int N, int group, int& m0, int& n0) {
  const int tiles_m = (M + T::BM - 1) / T::BM, tiles_n = (N + T::BN - 1) / T::BN;
  const int pid = int(blockIdx.x), per_group = group * tiles_n, first_m = pid / per_group * group;
  const int rows_here = min(tiles_m - first_m, group);
  m0 = (first_m + pid % per_group % rows_here) * T::BM, n0 = (pid % per_group / rows_here) * T::BN;
}

// The products run a fragment step ahead: B of step ks + 1 is read before
// step ks's products (two buffers), A of step ks + 1 a row of mma blocks at
// a time as step ks's products free its registers (one buffer), and a
// k-tile's __syncthreads comes before its last step, so that past it every
// warp still has a step of products to issue while its reads of the next
// slot are in flight.
template <class T>
__global__ __launch_bounds__(T::kThreads, T::kBlocks) void gemm_dmma(const DmmaParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(16) double dmma_smem[];
  double* ring_a = dmma_smem;
  double* ring_b = dmma_smem + T::Stages * T::kStageA;
  const double* a = p.a.p + blockIdx.z * p.batch.a;
  const double* b = p.b.p + blockIdx.z * p.batch.b;
  double* c = p.c.p + blockIdx.z * p.batch.c + blockIdx.y * p.part_stride;
  int m0, n0;
  dmma_tile_origin<T>(p.M, p.N, p.group, m0, n0);
  const int warp = threadIdx.x / 32, wm0 = warp / T::kWarpsN * T::WM, wn0 = warp % T::kWarpsN * T::WN;
  // This warp's rows of A and columns of B in slot s at step ks.
  auto warp_a = [&](int s, int ks) { return ring_a + s * T::kStageA + wm0 * T::kLdA + 8 * ks; };
  auto warp_b = [&](int s, int ks) { return ring_b + s * T::kStageB + 8 * ks * T::kLdB + wn0; };
  double acc[T::kMi][T::kNi][4] = {};
  double af[T::kMi][4], bf[2][T::kNi][2];
  // This part's k-tiles: kt_first + 0 .. k_tiles - 1.
  const int kt_first = int(blockIdx.y) * p.kt_per_part;
  const int k_tiles = min((p.K + T::BK - 1) / T::BK - kt_first, p.kt_per_part);
#pragma unroll 1
  for (int s = 0; s < T::Stages - 1; ++s) {
    if (s < k_tiles)
      dmma_load_k_tile<T>(p, a, b, ring_a + s * T::kStageA, ring_b + s * T::kStageB, m0, n0, kt_first + s);
    cp_async_commit();
  }
  cp_async_wait<T::Stages - 2>();
  __syncthreads();
#pragma unroll
  for (int i = 0; i < T::kMi; ++i) dmma_a_fragment<T>(warp_a(0, 0), i, af[i]);
  dmma_b_fragments<T>(warp_b(0, 0), bf[0]);
#pragma unroll 1
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % T::Stages;
#pragma unroll
    for (int ks = 0; ks < T::kKSteps; ++ks) {
      if (ks == 0) {
        // The slot of k-tile kt - 1, read by every warp before the last
        // __syncthreads, takes k-tile kt + Stages - 1.
        const int fill = kt + T::Stages - 1, fs = fill % T::Stages;
        if (fill < k_tiles)
          dmma_load_k_tile<T>(p, a, b, ring_a + fs * T::kStageA, ring_b + fs * T::kStageB, m0, n0, kt_first + fill);
        cp_async_commit();
      }
      const bool last = ks == T::kKSteps - 1;
      if (last) {
        cp_async_wait<T::Stages - 2>();
        __syncthreads();  // k-tile kt + 1 is in its slot; slot s is read
      }
      const bool more = !last || kt + 1 < k_tiles;
      const int ns = last ? (kt + 1) % T::Stages : s, nks = last ? 0 : ks + 1;
      const int cur = ks % 2;
      if (more) dmma_b_fragments<T>(warp_b(ns, nks), bf[cur ^ 1]);
#pragma unroll
      for (int i = 0; i < T::kMi; ++i) {
#pragma unroll
        for (int j = 0; j < T::kNi; ++j) dmma_16x8x8(acc[i][j], af[i], bf[cur][j]);
        if (more) dmma_a_fragment<T>(warp_a(ns, nks), i, af[i]);
      }
    }
  }
  cp_async_wait<0>();
  const int g = threadIdx.x % 32 / 4;
  dmma_store<T>(c, p.c, p.M, p.N, p.alpha, p.beta, m0 + wm0, n0 + wn0, g, acc);
#else
  __trap();  // built without sm_90: the launcher refuses before this
#endif
}

// C = alpha * (the parts' partial products, summed in part order) + beta *
// C; part z is row-major M x N at ws + z * part_stride.
__global__ __launch_bounds__(256) void dmma_sum_parts(int M, int N, int parts, const double* ws, long long part_stride,
                                                      StridedOperand<double> c, double alpha, double beta) {
  const long long total = (long long)M * N;
  for (long long e = blockIdx.x * 256LL + threadIdx.x; e < total; e += (long long)gridDim.x * 256) {
    double sum = 0.0;
    for (int z = 0; z < parts; ++z) sum += ws[z * part_stride + e];
    double& out = c.p[(e / N) * c.rs + (e % N) * c.cs];
    out = beta == 0.0 ? alpha * sum : fma(alpha, sum, beta * out);
  }
}

}  // namespace parray::cuda::ladder
