// Step 12 — the best FP32 CUDA-core SGEMM here, for Hopper.
//
// Over step 10 (whose cp.async pipeline and loader it reuses):
//  * tuned tiles: 256 threads (8 warps as 2 x 4) on a 128 x 128 x 16 tile,
//    warp tile 64 x 32, 8 x 8 accumulators per thread, so ~128 registers and
//    two blocks (16 warps) per SM, 3 stages (~100 KB of shared memory per SM);
//  * every transpose case at full speed: the loader is chosen per operand by
//    which dimension is contiguous (A k-contiguous: 4-byte copies mapped 8 k x
//    4 m; A m-contiguous: 16-byte copies), the shared tiles are always
//    (k, m) and (k, n) with rows padded by 4 words (16 bytes), which keeps
//    16-byte alignment and makes both store patterns conflict-free (padding
//    where a swizzle would do the same job);
//  * figure 17/18 layouts run through the layout itself (LayoutOperand): the
//    separable offsets fx(x) + fk(k) are computed once per thread per tile;
//  * a grouped (swizzled) tile order: consecutive blocks walk down GROUP = 8
//    tile rows before moving right, so the A and B panels they share stay in
//    L2;
//  * split-K for shapes with too few tiles to fill 132 SMs (e.g. 1037^3 has
//    81 tiles): blockIdx.z takes a slice of K, partial sums go to a
//    workspace and a second kernel adds them and applies alpha/beta.
#pragma once

#include "10_cp_async.cuh"

namespace parray::cuda::ladder {

template <int BM, int BN, int BK, int WM, int WN, int WNITER, int TM, int TN, int NT, int STAGES, bool AK, bool BK_,
          class OpA, class OpB, class OpC>
__global__ __launch_bounds__(NT, (BM * BN / NT <= 64) ? 2 : 1) void best_sgemm(int M, int N, int K, float alpha, OpA a, OpB b, float beta, OpC c,
                                                    bool veca, bool vecb, bool cvec, int kt_per_split,
                                                    float* workspace) {
  constexpr int GROUP = 8, WMITER = WM * WN / (32 * TM * TN * WNITER);
  extern __shared__ __align__(16) float smem[];
  // Grouped tile order (blockIdx.x is linear).
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
  const int pid = blockIdx.x, per_group = GROUP * tiles_n, first_m = (pid / per_group) * GROUP;
  const int gsz = min(tiles_m - first_m, GROUP);
  const int tm = first_m + (pid % per_group) % gsz, tn = (pid % per_group) / gsz;
  const int m0 = tm * BM, n0 = tn * BN;
  const int kts = (K + BK - 1) / BK, kt0 = blockIdx.z * kt_per_split, kt1 = min(kts, kt0 + kt_per_split);
  float acc[WMITER * TM][WNITER * TN] = {};
  mainloop<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, STAGES, AK, BK_>(smem, XK<OpA, false>{a}, XK<OpB, true>{b}, M, N,
                                                                     K, m0, n0, kt0, kt1, veca, vecb, acc);
  if (workspace == nullptr) {
    epilogue<BM, BN, WM, WN, WNITER, TM, TN>(c, M, N, m0, n0, alpha, beta, cvec, acc);
  } else {  // split-K: raw partial sums, row-major M x N per slice
    StridedOperand<float> w{workspace + size_t(blockIdx.z) * M * N, N, 1};
    epilogue<BM, BN, WM, WN, WNITER, TM, TN>(w, M, N, m0, n0, 1.f, 0.f, N % 4 == 0, acc);
  }
}

// C = alpha * sum over slices + beta * C.
template <class OpC>
__global__ __launch_bounds__(256) void splitk_reduce(int M, int N, int splits, const float* workspace, float alpha,
                                                     float beta, OpC c) {
  const size_t mn = size_t(M) * N;
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < mn; e += size_t(gridDim.x) * blockDim.x) {
    float s = 0.f;
    for (int z = 0; z < splits; ++z) s += workspace[z * mn + e];
    store_c(c(int(e / N), int(e % N)), alpha * s, beta);
  }
}

}  // namespace parray::cuda::ladder
