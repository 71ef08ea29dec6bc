// Step 22 — FP64 on the tensor cores fed by the tensor copy engine: step 19's
// products with its copies into shared memory handed to TMA.
//
// What it adds: in step 19 every thread issues 16 cp.async a k-tile, each
// with its own row, column, bounds and source size computed, against 64 mma
// a warp; here one thread issues a k-tile's ten TMA box copies (zeros past
// the edges come from the copy engine) and the warps only read fragments and
// multiply. The boxes are 16 doubles (128 bytes) wide and 128-byte swizzled
// (16-byte chunk c of row r stored at chunk c ^ (r mod 8)), so the rows need
// no padding: A's k-tile is two boxes of 128 rows x 16 k, B's eight of 32 k
// x 16 columns. The fragment reads are step 19's, 16 bytes each, with the
// swizzle in their offsets; to keep a phase of eight lanes on distinct banks
// the mma's row g is the warp's row sigma(g) = g / 2 + 4 (g mod 2) (lanes g
// and g + 1 a half-atom apart), undone in the epilogue. A slot is full when
// its bytes have landed (an mbarrier with the copies' byte count); it is
// refilled after the k-tile's __syncthreads, as in step 19, or (WarpRelease)
// once every warp has given it back on a second mbarrier. Operands the copy
// engine cannot address (k of A or n of B not contiguous, rows or matrices
// not 16-byte aligned) go to step 19, or through a padded row-major copy
// where the launcher predicts that it pays (gemm/19_dmma.cu).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "gemm/19_dmma.cuh"
#include "gemm/hopper.cuh"

namespace parray::cuda::ladder {

template <int BM_, int BN_, int BK_, int Stages_, int Blocks_, bool WarpRelease_ = false>
struct DmmaTmaTilesOf {
  // Blocks: resident blocks an SM (the launch bounds). WarpRelease: each warp
  // gives a slot back on an mbarrier once it has read it, and the copy into
  // it waits for all of them, instead of a __syncthreads a k-tile.
  static constexpr int BM = BM_, BN = BN_, BK = BK_, Stages = Stages_, kBlocks = Blocks_;
  static constexpr bool kWarpRelease = WarpRelease_;
  static constexpr int WM = 64, WN = 32;
  static constexpr int kWarpsM = BM / WM, kWarpsN = BN / WN;
  static constexpr int kThreads = 32 * kWarpsM * kWarpsN;
  static constexpr int kMi = WM / 16, kNi = WN / 8;
  static constexpr int kKSteps = BK / 8;
  static constexpr int kBox = 16;  // doubles in a 128-byte swizzled row
  static constexpr int kABoxes = BK / kBox, kBBoxes = BN / kBox;
  static constexpr int kABoxBytes = BM * 128, kBBoxBytes = BK * 128;
  static constexpr int kStageABytes = kABoxes * kABoxBytes, kStageBytes = kStageABytes + kBBoxes * kBBoxBytes;
  // Slots, then the barriers; +1024: the slots are aligned by hand (swizzle
  // atoms).
  static constexpr int kSmemBytes = Stages * kStageBytes + 2 * Stages * 8 + 1024;
  static_assert(kKSteps % 2 == 0 && BK % kBox == 0 && BN % kBox == 0 && WN == 32, "whole boxes, step pairs");
  static_assert(kBlocks * (kSmemBytes + 1024) <= 228 * 1024, "shared memory of the blocks of an SM");
};
// One block an SM, 8 warps; two blocks an SM of 4 warps each (the same warp
// tile, half the k-tile, a deeper ring).
using DmmaTmaWide = DmmaTmaTilesOf<128, 128, 32, 3, 1>;
using DmmaTmaNarrow = DmmaTmaTilesOf<128, 64, 16, 4, 2>;
using DmmaTmaWideRelease = DmmaTmaTilesOf<128, 128, 32, 3, 1, true>;

// A and B as rank-4 tensor maps (tensor_map_batch: k or n, then rows, then
// the batch's products as block rows, boxes of 16 x BM for A and 16 x BK for
// B); a_batched / b_batched 0: one matrix broadcast over the batch.
struct DmmaTmaParams {
  CUtensorMap a, b;
  StridedOperand<double> c;
  int M, N, K;
  double alpha, beta;
  int group, a_batched, b_batched;
  long long batch_c;
  int kt_per_part;  // the K split, as DmmaParams
  long long part_stride;
};

#ifdef PARRAY_HOPPER_MMA

// A thread's fragment offsets in a slot (bytes): the mma's row g read at the
// warp's row sigma(g), k pair t at swizzled chunk t ^ (row mod 8) of box 0
// (odd steps: chunk ^ 4, the offset ^ 64); B's row 2t at the first column
// pair of dmma_b_fragments', swizzled by row. The other three B reads follow
// (dmma_tma_b): the second pair is the chunk ^ 1, and row 2t + 1 flips the
// same bit of the swizzle.
struct DmmaTmaOffsets {
  std::uint32_t a, b;
};
template <class T>
__device__ __forceinline__ DmmaTmaOffsets dmma_tma_offsets(int wm0, int wn0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int sg = (g >> 1) | ((g & 1) << 2);
  const int box = (wn0 + 4 * g) / T::kBox, pair = (4 * g) % T::kBox / 2, half = g & 1;
  return {std::uint32_t((wm0 + sg) * 128 + ((t ^ sg) << 4)),
          std::uint32_t(T::kStageABytes + box * T::kBBoxBytes + 2 * t * 128 + (((pair + half) ^ (2 * t)) << 4))};
}

__device__ __forceinline__ double2 dmma_lds(const std::uint8_t* slot, std::uint32_t offset) {
  return *reinterpret_cast<const double2*>(slot + offset);
}

// Step ks's fragments of mma row i of A, and of B, out of a slot.
template <class T>
__device__ __forceinline__ void dmma_tma_a(const std::uint8_t* slot, const DmmaTmaOffsets& o, int ks, int i,
                                           double (&af)[4]) {
  const std::uint8_t* box = slot + (ks / 2) * T::kABoxBytes + 16 * i * 128;
  const std::uint32_t off = o.a ^ (ks % 2 ? 64u : 0u);
  const double2 top = dmma_lds(box, off), bottom = dmma_lds(box, off + 8 * 128);
  af[0] = top.x, af[1] = bottom.x, af[2] = top.y, af[3] = bottom.y;
}
template <class T>
__device__ __forceinline__ void dmma_tma_b(const std::uint8_t* slot, const DmmaTmaOffsets& o, int ks,
                                           double (&bf)[T::kNi][2]) {
  const std::uint8_t* rows = slot + ks * 8 * 128;
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const std::uint32_t row = o.b + 128 * q;
    const double2 first = dmma_lds(rows, row ^ (16u * q)), second = dmma_lds(rows, row ^ (16u * (q ^ 1)));
    bf[0][q] = first.x, bf[1][q] = first.y, bf[2][q] = second.x, bf[3][q] = second.y;
  }
}

// Thread 0: k-tile kt (this part's) into its slot, counted on its barrier.
template <class T>
__device__ __forceinline__ void dmma_tma_issue(const DmmaTmaParams& p, std::uint8_t* ring, std::uint64_t* full, int m0,
                                               int n0, int k0) {
  const int z = int(blockIdx.z);
  hopper::mbar_arrive_expect_bytes(full, T::kStageBytes);
#pragma unroll
  for (int h = 0; h < T::kABoxes; ++h)
    hopper::tma_load_4d(ring + h * T::kABoxBytes, &p.a, full, k0 + h * T::kBox, m0, 0, p.a_batched ? z : 0);
#pragma unroll
  for (int b = 0; b < T::kBBoxes; ++b)
    hopper::tma_load_4d(ring + T::kStageABytes + b * T::kBBoxBytes, &p.b, full, n0 + b * T::kBox, k0, 0,
                        p.b_batched ? z : 0);
}

#endif  // PARRAY_HOPPER_MMA

// The schedule of step 19's kernel (fragments a step ahead, the barrier
// before a k-tile's last step), the slots filled by thread 0.
template <class T>
__global__ __launch_bounds__(T::kThreads, T::kBlocks) void gemm_dmma_tma(const __grid_constant__ DmmaTmaParams p) {
#ifdef PARRAY_HOPPER_MMA
  extern __shared__ std::uint8_t dmma_tma_smem[];
  std::uint8_t* ring = dmma_tma_smem + ((1024 - hopper::smem_addr(dmma_tma_smem) % 1024) % 1024);
  std::uint64_t* full = reinterpret_cast<std::uint64_t*>(ring + T::Stages * T::kStageBytes);
  std::uint64_t* empty = full + T::Stages;  // WarpRelease: one arrival a warp
  double* c = p.c.p + blockIdx.z * p.batch_c + blockIdx.y * p.part_stride;
  int m0, n0;
  dmma_tile_origin<T>(p.M, p.N, p.group, m0, n0);
  const int warp = threadIdx.x / 32, wm0 = warp / T::kWarpsN * T::WM, wn0 = warp % T::kWarpsN * T::WN;
  const DmmaTmaOffsets off = dmma_tma_offsets<T>(wm0, wn0);
  const int kt_first = int(blockIdx.y) * p.kt_per_part;
  const int k_tiles = min((p.K + T::BK - 1) / T::BK - kt_first, p.kt_per_part);
  const bool producer = threadIdx.x == 0;
  if (producer) {
    for (int s = 0; s < T::Stages; ++s) hopper::mbar_init(&full[s], 1), hopper::mbar_init(&empty[s], T::kThreads / 32);
    hopper::fence_barrier_init();
  }
  __syncthreads();
  if (producer)
    for (int s = 0; s < T::Stages - 1 && s < k_tiles; ++s)
      dmma_tma_issue<T>(p, ring + s * T::kStageBytes, &full[s], m0, n0, (kt_first + s) * T::BK);
  double acc[T::kMi][T::kNi][4] = {};
  double af[T::kMi][4], bf[2][T::kNi][2];
  if (k_tiles > 0) {
    hopper::mbar_wait(&full[0], 0);
#pragma unroll
    for (int i = 0; i < T::kMi; ++i) dmma_tma_a<T>(ring, off, 0, i, af[i]);
    dmma_tma_b<T>(ring, off, 0, bf[0]);
  }
#pragma unroll 1
  for (int kt = 0; kt < k_tiles; ++kt) {
    const std::uint8_t* slot = ring + (kt % T::Stages) * T::kStageBytes;
    const int next = kt + 1;
    const std::uint8_t* next_slot = ring + (next % T::Stages) * T::kStageBytes;
    // Two steps an iteration: fully unrolled, the four steps' addresses
    // outgrow the registers the accumulators leave (ptxas spills).
#pragma unroll 2
    for (int ks = 0; ks < T::kKSteps; ++ks) {
      if (ks == (T::kWarpRelease ? 1 : 0) && producer) {
        // The slot of k-tile kt - 1, read by every warp before the last
        // __syncthreads (or released by every warp), takes k-tile kt + Stages - 1.
        const int fill = kt + T::Stages - 1;
        if (fill < k_tiles) {
          if (T::kWarpRelease && kt > 0) hopper::mbar_wait(&empty[fill % T::Stages], ((kt - 1) / T::Stages) & 1);
          dmma_tma_issue<T>(p, ring + (fill % T::Stages) * T::kStageBytes, &full[fill % T::Stages], m0, n0,
                            (kt_first + fill) * T::BK);
        }
      }
      const bool last = ks == T::kKSteps - 1;
      const bool more = !last || next < k_tiles;
      if (last) {
        if (T::kWarpRelease) {
          __syncwarp();  // the warp's reads of slot kt are done
          if (threadIdx.x % 32 == 0) hopper::mbar_arrive(&empty[kt % T::Stages]);
        }
        if (more) hopper::mbar_wait(&full[next % T::Stages], (next / T::Stages) & 1);
        if (!T::kWarpRelease) __syncthreads();  // slot kt is read by every warp
      }
      const std::uint8_t* ns = last ? next_slot : slot;
      const int nks = last ? 0 : ks + 1, cur = ks % 2;
      if (more) dmma_tma_b<T>(ns, off, nks, bf[cur ^ 1]);
#pragma unroll
      for (int i = 0; i < T::kMi; ++i) {
#pragma unroll
        for (int j = 0; j < T::kNi; ++j) dmma_16x8x8(acc[i][j], af[i], bf[cur][j]);
        if (more) dmma_tma_a<T>(ns, off, nks, i, af[i]);
      }
    }
  }
  const int g = threadIdx.x % 32 / 4;
  dmma_store<T>(c, p.c, p.M, p.N, p.alpha, p.beta, m0 + wm0, n0 + wn0, (g >> 1) | ((g & 1) << 2), acc);
#else
  __trap();  // built without sm_90a: the launcher refuses before this
#endif
}

}  // namespace parray::cuda::ladder
