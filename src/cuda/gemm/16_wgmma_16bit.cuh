// Step 16 — 16-bit operands straight from memory in either major order, and C
// written through shared memory by TMA stores (Hopper, sm_90a).
//
// What it adds over step 15: no pass over the operands. A and B are BF16 or
// FP16 matrices in device memory and TMA reads their tiles from where they
// are: a K-major tile (row-major A, column-major B) as step 14 reads its
// copies, an MN-major one (column-major A, row-major B) as boxes of 64 values
// of M or N by 64 of K, which wgmma reads through its transpose bit. C (BF16,
// FP16 or FP32) leaves as whole lines (wgmma_staged_c.cuh): each consumer
// warpgroup writes its 64 rows, a chunk of columns at a time, into a 128-byte
// swizzled staging buffer (the swizzle puts the 8 rows of one store
// instruction in 8 different bank groups), and one thread of the warpgroup
// hands the chunk to the copy engine.
// The last chunk's store runs while the warpgroup starts the next tile's
// k-tiles, so the tensor cores wait on C only for the register-to-shared
// writes. The persistent grid walks the tiles as step 15 does, without the K
// split (a 16-bit C has no atomic add here).
//
// Batches: a strided batch of products is one launch. Every operand's map is
// rank 4 (tensor_map_blocked) with the batch as its block rows, so a box
// never reads or writes past its own matrix (the copy engine zero-fills at
// each matrix's edges, as at one matrix's); a broadcast operand is one block
// read at block 0. The work list runs over batch x tiles, a matrix's tiles
// after the previous one's, so the producer's copies of the next matrix
// overlap the current one's last tile whatever the matrices' size.
#pragma once

#include <cuda.h>  // CUtensorMap

#include <cstdint>

#include "14_wgmma_tma.cuh"
#include "wgmma_staged_c.cuh"

namespace parray::cuda::ladder {

// Tiles of 128 x 256 with k-tiles of 64 values of K (128 bytes per row of a
// K-major tile), Stages slots, and two staging buffers for C. AMn / BMn: A's
// or B's tile is MN-major. Out: C's element type.
template <class Format_, bool AMn, bool BMn, class Out_, int Stages_ = 4>
struct Wgmma16Tiles {
  using Format = Format_;
  using Out = Out_;
  static constexpr bool kAMn = AMn, kBMn = BMn;
  static constexpr int kRowBytes = 128;
  static constexpr int BM = 128, BN = 256, BK = kRowBytes / 2, Stages = Stages_, Products = 1;
  static constexpr int kCluster = 1;    // one block (step 14's ring without B's multicast)
  static constexpr bool kPromote = false;  // FP32 sums over all of K, as cuBLAS on 16-bit data
  static constexpr int kThreads = 384;  // producer + 2 consumer warpgroups
  static constexpr int kBox = 64 * kRowBytes;  // an MN-major box (64 x 64 values), or a staging box of C
  static constexpr int kTileA = BM * kRowBytes, kTileB = BN * kRowBytes;
  static constexpr int kSteps = 4;  // wgmma k16 per k-tile
  static constexpr int kStageBytes = kTileA + kTileB;
  static constexpr int kSmemBytes = StagedC::smem_bytes(Stages * kStageBytes);
  static constexpr int kAccum = BN / 2;
  static_assert(Format::kBytes == 2, "16-bit operands");
  static_assert(2 * Stages * 8 <= StagedC::kBarrierBytes);
  static_assert(kSmemBytes <= 227 * 1024, "shared memory of one block");

  // K slice `step` (16 values of K) of the warpgroup's 64 rows of A (rows_off
  // bytes in: 64 K-major rows or one MN-major box, 8 KB either way) and of B.
  static __device__ __forceinline__ std::uint64_t desc_a(const std::uint8_t* tile, std::uint32_t rows_off, int step) {
#ifdef PARRAY_HOPPER_MMA
    if constexpr (kAMn) return hopper::sw128_mn_desc(tile, rows_off + step * 16 * kRowBytes, kBox);
    else return hopper::sw128_desc(tile, rows_off + step * 32);
#else
    return 0;
#endif
  }
  static __device__ __forceinline__ std::uint64_t desc_b(const std::uint8_t* tile, int step) {
#ifdef PARRAY_HOPPER_MMA
    if constexpr (kBMn) return hopper::sw128_mn_desc(tile, step * 16 * kRowBytes, kBox);
    else return hopper::sw128_desc(tile, step * 32);
#else
    return 0;
#endif
  }
  template <class Acc>
  static __device__ __forceinline__ void mma(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {
    Format::template mma<BN, kAMn ? 1 : 0, kBMn ? 1 : 0>(d, a, b, scale_d);
  }
};

// Everything the kernel reads: the operands' and C's tensor maps (rank 4,
// the batch as block rows), C itself for beta != 0 and for the stores a row
// at a time when C cannot be a tensor map (its rows not 16-byte aligned).
// a_batched / b_batched: 0 where the operand is broadcast over the batch.
template <class Out>
struct Wgmma16Params {
  CUtensorMap a, b, c;
  Out* c_data;
  long long ldc, c_stride;
  int M, N, k_tiles, tiles_m, tiles_n, batch;
  float alpha, beta;
  int c_by_tma, a_batched, b_batched;
};

// Unit u of the work list: matrix z of the batch, tile (tm, tn) of its C.
template <class Out>
__device__ __forceinline__ void batch_tile(const Wgmma16Params<Out>& p, int u, int& z, int& tm, int& tn) {
  const int per_matrix = p.tiles_m * p.tiles_n;
  z = u / per_matrix;
  grouped_tile(u - z * per_matrix, p.tiles_m, p.tiles_n, tm, tn);
}

#ifdef PARRAY_HOPPER_MMA

// Producer (one thread): k-tiles [0, k_tiles) of tile (tm, tn) into the ring,
// each operand as one K-major box or as MN-major boxes of 64 columns.
template <class Cfg, class Out>
__device__ __forceinline__ void load_16bit_k_tiles(const Wgmma16Params<Out>& p, const WgmmaRing<Cfg>& ring, int z,
                                                   int tm, int tn, int& it) {
  using namespace hopper;
  const int za = p.a_batched ? z : 0, zb = p.b_batched ? z : 0;
  for (int kt = 0; kt < p.k_tiles; ++kt, ++it) {
    const int s = it % Cfg::Stages, k0 = kt * Cfg::BK;
    mbar_wait(&ring.empty[s], ((it / Cfg::Stages) & 1) ^ 1);
    mbar_arrive_expect_bytes(&ring.full[s], Cfg::kStageBytes);
    std::uint8_t *a = ring.slot(s, 0, false), *b = ring.slot(s, 0, true);
    if constexpr (Cfg::kAMn) {
      for (int h = 0; h < Cfg::BM / 64; ++h)
        tma_load_4d(a + h * Cfg::kBox, &p.a, &ring.full[s], tm * Cfg::BM + 64 * h, k0, 0, za);
    } else {
      tma_load_4d(a, &p.a, &ring.full[s], k0, tm * Cfg::BM, 0, za);
    }
    if constexpr (Cfg::kBMn) {
      for (int q = 0; q < Cfg::BN / 64; ++q)
        tma_load_4d(b + q * Cfg::kBox, &p.b, &ring.full[s], tn * Cfg::BN + 64 * q, k0, 0, zb);
    } else {
      tma_load_4d(b, &p.b, &ring.full[s], k0, tn * Cfg::BN, 0, zb);
    }
  }
}

// alpha acc + beta C(i, j) of matrix c, C read only for beta != 0 and inside
// the matrix.
template <class Out>
__device__ __forceinline__ float epilogue_value(const Wgmma16Params<Out>& p, const Out* c, float acc, int i, int j) {
  float v = p.alpha * acc;
  if (p.beta != 0.f && i < p.M && j < p.N) v += p.beta * as_float(c[static_cast<long long>(i) * p.ldc + j]);
  return v;
}

// Epilogue of matrix z through the staging buffer (wgmma_staged_c.cuh): by
// TMA, or a row at a time where C's rows are not 16-byte aligned.
template <class Cfg, class Out>
__device__ __forceinline__ void store_16bit_staged(const Wgmma16Params<Out>& p, const WgmmaAccumulators<Cfg>& r,
                                                   std::uint8_t* staging, int z, int tm, int tn) {
  Out* c = p.c_data + z * p.c_stride;
  const StagedTarget<Out> t{p.c_by_tma ? &p.c : nullptr, c, p.ldc, p.M, p.N, z, 0};
  store_staged<Cfg, Out>(t, r, staging, tm, tn, [&](float acc, int i, int j) { return epilogue_value(p, c, acc, i, j); });
}

#endif  // PARRAY_HOPPER_MMA

template <class Cfg>
__global__ __launch_bounds__(Cfg::kThreads, 1) void gemm_wgmma_16bit(
    const __grid_constant__ Wgmma16Params<typename Cfg::Out> p) {
#ifdef PARRAY_HOPPER_MMA
  extern __shared__ std::uint8_t smem_raw[];
  const WgmmaRing<Cfg> ring(smem_raw);
  init_ring(ring);
  const int units = p.batch * p.tiles_m * p.tiles_n;  // < 2^31 (the launcher checks)
  int z, tm, tn, it = 0;
  if (threadIdx.x / 128 == 0) {  // producer
    hopper::release_registers<hopper::kProducerRegisters>();
    if (threadIdx.x != 0) return;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      batch_tile(p, u, z, tm, tn);
      load_16bit_k_tiles(p, ring, z, tm, tn, it);
    }
    return;
  }
  hopper::claim_registers<hopper::kConsumerRegisters>();
  const int wg = threadIdx.x / 128 - 1;
  const std::uint32_t rows_off = wg * Cfg::kBox;
  std::uint8_t* staging = StagedC::buffer(ring.base, Cfg::Stages * Cfg::kStageBytes, wg);
  WgmmaAccumulators<Cfg> r;
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    batch_tile(p, u, z, tm, tn);
    multiply_k_tiles(ring, r, p.k_tiles, 1, rows_off, it);
    store_16bit_staged(p, r, staging, z, tm, tn);
  }
  if (threadIdx.x % 128 == 0) hopper::bulk_wait<0>();  // C's last stores complete before the block ends
#else
  __trap();  // built without sm_90a: the launcher refuses before this
#endif
}

}  // namespace parray::cuda::ladder
