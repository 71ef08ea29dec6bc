// Step 20 — FP8 operands (E4M3, E5M2) with scales, FP32 sums (Hopper, sm_90a).
//
// What it adds over step 16: 8-bit operands and the two things they need.
// wgmma k32 reads 32 values of K per instruction from K-major tiles (FP8 has
// no transpose bit), so a k-tile of 128 bytes holds 128 values of K, the
// length of one scale block. The tensor cores add FP8 products in a
// shortened accumulator: each consumer warpgroup lets them sum one k-tile
// into `part` (its first wgmma overwriting it), waits for them, and adds part
// into its FP32 sum `acc` on the CUDA cores — times the k-tile's scales
// (A's per row, B's per 128 x 128 block) in the blockwise form. The error
// then grows with K as an FP32 sum's.
//
// The tile is 128 x 128 (N = 128: acc and part fit in a consumer's 240
// registers, and B's 128 x 128 scale blocks line up with it); a ring of six
// 32 KB slots; C leaves through the staging buffers as in step 16. While one
// consumer warpgroup promotes its part, the other's wgmma can keep the tensor
// cores busy.
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "14_wgmma_tma.cuh"
#include "wgmma_staged_c.cuh"

namespace parray::cuda::ladder {

// The FP8 operands' wgmma (k32, K-major tiles only). A5 / B5: the operand is
// E5M2 (else E4M3).
template <int A5, int B5>
struct Fp8Format {
  static constexpr int kBytes = 1;
  template <int N, class Acc>
  static __device__ __forceinline__ void mma(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {
#ifdef PARRAY_HOPPER_MMA
    hopper::Wgmma<N>::template fp8<A5, B5>(d, a, b, scale_d);
#endif
  }
};

// Step 14's tiles (K-major A and B, 128-byte rows: BK = 128 values) at
// 128 x 128 with six slots, plus the staging buffers of C. Out: C's type.
template <class Out_, int A5, int B5, bool Blockwise_>
struct Fp8Tiles : WgmmaTiles<128, 6, 1, Fp8Format<A5, B5>> {
  using Base = WgmmaTiles<128, 6, 1, Fp8Format<A5, B5>>;
  using Out = Out_;
  static constexpr bool kBlockwise = Blockwise_;
  static constexpr int kSmemBytes = StagedC::smem_bytes(Base::Stages * Base::kStageBytes);
  static_assert(2 * Base::Stages * 8 <= StagedC::kBarrierBytes);
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one block");
};

// What the kernel reads. Per-tensor: scale_a[0] * scale_b[0] multiplies the
// sum once, in the epilogue. Blockwise: scale_a[kb * M + i] for row i and K
// block kb, scale_b[kb * scale_b_cols + j / 128] for column j.
template <class Out>
struct Fp8Params {
  CUtensorMap a, b, c;
  Out* c_data;
  long long ldc;
  int M, N, k_tiles, tiles_m, tiles_n, scale_b_cols;
  float alpha, beta;
  const float *scale_a, *scale_b;
  int c_by_tma;
};

#ifdef PARRAY_HOPPER_MMA

// Producer (one thread): the k-tiles of tile (tm, tn) into the ring.
template <class Cfg, class Out>
__device__ __forceinline__ void load_fp8_k_tiles(const Fp8Params<Out>& p, const WgmmaRing<Cfg>& ring, int tm, int tn,
                                                 int& it) {
  using namespace hopper;
  for (int kt = 0; kt < p.k_tiles; ++kt, ++it) {
    const int s = it % Cfg::Stages, k0 = kt * Cfg::BK;
    mbar_wait(&ring.empty[s], ((it / Cfg::Stages) & 1) ^ 1);
    mbar_arrive_expect_bytes(&ring.full[s], Cfg::kStageBytes);
    tma_load_2d(ring.slot(s, 0, false), &p.a, &ring.full[s], k0, tm * Cfg::BM);
    tma_load_2d(ring.slot(s, 0, true), &p.b, &ring.full[s], k0, tn * Cfg::BN);
  }
}

// The factors of k-tile kt for a consumer thread's two rows (row0, row0 + 8)
// of the warpgroup's 64: A's row scales times B's block scale. Rows past M
// get 0 (their A values are TMA's zeros; the scale array ends at M).
template <class Out>
__device__ __forceinline__ float2 block_scales(const Fp8Params<Out>& p, int kt, int row0, int tn) {
  const float sb = p.scale_b[static_cast<long long>(kt) * p.scale_b_cols + tn];
  const float* sa = p.scale_a + static_cast<long long>(kt) * p.M;
  return {row0 < p.M ? sa[row0] * sb : 0.f, row0 + 8 < p.M ? sa[row0 + 8] * sb : 0.f};
}

// Consumers: acc = the scaled sum over the tile's k-tiles, one k-tile at a
// time through part. Result i of a thread lies in row 16 w + l / 4 + 8 ((i / 2) % 2)
// of the warpgroup's rows (wgmma's accumulator layout).
template <class Cfg, class Out>
__device__ __forceinline__ void multiply_fp8_k_tiles(const Fp8Params<Out>& p, const WgmmaRing<Cfg>& ring,
                                                     WgmmaAccumulators<Cfg>& r, float (&part)[Cfg::kAccum],
                                                     std::uint32_t rows_off, int row0, int tn, int& it) {
  using namespace hopper;
#pragma unroll
  for (int i = 0; i < Cfg::kAccum; ++i) r.acc[i] = 0.f;
  float2 f = {1.f, 1.f};
  for (int kt = 0; kt < p.k_tiles; ++kt, ++it) {
    const int s = it % Cfg::Stages;
    if constexpr (Cfg::kBlockwise) f = block_scales(p, kt, row0, tn);  // global loads in flight with the wgmma
    mbar_wait(&ring.full[s], (it / Cfg::Stages) & 1);
    wgmma_fence();
#pragma unroll
    for (int step = 0; step < Cfg::kSteps; ++step)
      Cfg::mma(part, Cfg::desc_a(ring.slot(s, 0, false), rows_off, step), Cfg::desc_b(ring.slot(s, 0, true), step),
               step == 0 ? 0 : 1);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(part);
    release_slot(ring, s);
#pragma unroll
    for (int i = 0; i < Cfg::kAccum; ++i) r.acc[i] = fmaf(part[i], (i / 2) % 2 ? f.y : f.x, r.acc[i]);
  }
}

template <class Out>
__device__ __forceinline__ float epilogue_value(const Fp8Params<Out>& p, const Out* c, float scale, float acc, int i,
                                                int j) {
  float v = scale * acc;
  if (p.beta != 0.f && i < p.M && j < p.N) v += p.beta * as_float(c[static_cast<long long>(i) * p.ldc + j]);
  return v;
}

#endif  // PARRAY_HOPPER_MMA

template <class Cfg>
__global__ __launch_bounds__(Cfg::kThreads, 1) void gemm_wgmma_fp8(
    const __grid_constant__ Fp8Params<typename Cfg::Out> p) {
#ifdef PARRAY_HOPPER_MMA
  using Out = typename Cfg::Out;
  extern __shared__ std::uint8_t smem_raw[];
  const WgmmaRing<Cfg> ring(smem_raw);
  init_ring(ring);
  const int units = p.tiles_m * p.tiles_n;
  int tm, tn, it = 0;
  if (threadIdx.x / 128 == 0) {  // producer
    hopper::release_registers<hopper::kProducerRegisters>();
    if (threadIdx.x != 0) return;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      grouped_tile(u, p.tiles_m, p.tiles_n, tm, tn);
      load_fp8_k_tiles(p, ring, tm, tn, it);
    }
    return;
  }
  hopper::claim_registers<hopper::kConsumerRegisters>();
  const int wg = threadIdx.x / 128 - 1, w = threadIdx.x % 128 / 32, l = threadIdx.x % 32;
  const std::uint32_t rows_off = wg * 64 * Cfg::kRowBytes;
  std::uint8_t* staging = StagedC::buffer(ring.base, Cfg::Stages * Cfg::kStageBytes, wg);
  const float scale = Cfg::kBlockwise ? p.alpha : p.alpha * p.scale_a[0] * p.scale_b[0];
  WgmmaAccumulators<Cfg> r;
  float part[Cfg::kAccum];
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    grouped_tile(u, p.tiles_m, p.tiles_n, tm, tn);
    const int row0 = tm * Cfg::BM + 64 * wg + 16 * w + l / 4;
    multiply_fp8_k_tiles(p, ring, r, part, rows_off, row0, tn, it);
    const StagedTarget<Out> t{p.c_by_tma ? &p.c : nullptr, p.c_data, p.ldc, p.M, p.N, 0, 0};
    store_staged<Cfg, Out>(t, r, staging, tm, tn,
                           [&](float acc, int i, int j) { return epilogue_value(p, p.c_data, scale, acc, i, j); });
  }
  if (threadIdx.x % 128 == 0) hopper::bulk_wait<0>();  // C's last stores complete before the block ends
#else
  __trap();  // built without sm_90a: the launcher refuses before this
#endif
}

}  // namespace parray::cuda::ladder
