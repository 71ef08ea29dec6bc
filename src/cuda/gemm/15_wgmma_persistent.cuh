// Step 15 — step 14's kernel made persistent, with a K split for grids that
// leave SMs idle (Hopper, sm_90a).
//
// What it adds over step 14: one block per SM walks a list of work units —
// a tile of C, or one of a tile's K ranges — gridDim.x apart, in step 14's
// grouped order. The ring's position runs on from one unit to the next, so
// the producer loads the next unit's first k-tiles while the consumers are
// still writing the previous one's C: a tile's start (the first copies'
// latency) and its epilogue no longer leave the tensor cores idle in between,
// which is what a grid of short units (thin K, or a wave's worth of tiles)
// is made of. When the tiles are fewer than the SMs would take, K is split
// (WgmmaWork, chosen on the host by plan_wgmma_work): each part adds alpha
// times its partial product into C with atomics, after a pass that scales C
// by beta (writes zeros for beta = 0, without reading C).
#pragma once

#include "14_wgmma_tma.cuh"
#include "parray/cuda/wgmma_plan.hpp"

namespace parray::cuda::ladder {

using cuda::WgmmaWork;

// Unit u: tile (tm, tn) and its k-tiles [kt0, kt1). A tile's parts are
// consecutive units, so they run at once on neighbouring SMs.
__device__ __forceinline__ void work_unit(const WgmmaWork& w, int u, int& tm, int& tn, int& kt0, int& kt1) {
  grouped_tile(u / w.splits, w.tiles_m, w.tiles_n, tm, tn);
  kt0 = u % w.splits * w.k_per;
  kt1 = min(w.k_tiles, kt0 + w.k_per);
}

template <class Cfg, class OpC>
__global__ __launch_bounds__(Cfg::kThreads, 1) void gemm_wgmma_persistent(const __grid_constant__ WgmmaMaps maps,
                                                                          int M, int N, float alpha, float beta,
                                                                          OpC c, int promote_every, WgmmaWork work) {
#ifdef PARRAY_HOPPER_MMA
  extern __shared__ std::uint8_t smem_raw[];
  const WgmmaRing<Cfg> ring(smem_raw);
  init_ring(ring);
  const int units = static_cast<int>(work.units());
  int tm, tn, kt0, kt1, it = 0;
  if (threadIdx.x / 128 == 0) {  // producer
    hopper::release_registers<40>();
    if (threadIdx.x != 0) return;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      work_unit(work, u, tm, tn, kt0, kt1);
      load_k_tiles(maps, ring, tm, tn, kt0, kt1, it);
    }
    return;
  }
  hopper::claim_registers<232>();
  const std::uint32_t rows_off = (threadIdx.x / 128 - 1) * 64 * Cfg::kRowBytes;
  WgmmaAccumulators<Cfg> r;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    work_unit(work, u, tm, tn, kt0, kt1);
    multiply_k_tiles(ring, r, kt1 - kt0, promote_every, rows_off, it);
    if (work.splits > 1) store_tile<Cfg, true>(c, r, tm, tn, M, N, alpha, beta);
    else store_tile<Cfg, false>(c, r, tm, tn, M, N, alpha, beta);
  }
#else
  __trap();  // built without sm_90a: the launcher refuses before this
#endif
}

// C = beta C before a K split's parts add into it; C is not read when
// beta = 0 (NaN there must not propagate).
template <class OpC>
__global__ void scale_c(OpC c, int M, int N, float beta) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
       e < static_cast<long long>(M) * N; e += static_cast<long long>(gridDim.x) * blockDim.x) {
    float& x = c(static_cast<int>(e / N), static_cast<int>(e % N));
    x = beta == 0.f ? 0.f : beta * x;
  }
}

}  // namespace parray::cuda::ladder
