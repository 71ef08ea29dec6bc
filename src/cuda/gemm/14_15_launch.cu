// Launcher of ladder steps 14 and 15 (gemm/14_wgmma_tma.cuh,
// gemm/15_wgmma_persistent.cuh): the split pass writes K-contiguous copies of
// A and B (TF32 big parts, and small ones for FP32 accuracy; or BF16 / FP16
// values), tensor maps describe them to the copy engine, and one kernel
// computes C through C's layout (step 15: a persistent grid, K split into a
// workspace summed in a fixed order when the tiles are too few). Also step
// 21's TF32 product of TF32 values with its sums promoted to FP32.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>

#include "gemm/15_wgmma_persistent.cuh"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/cuda/wgmma_plan.hpp"
#include "parray/tuning.hpp"
#include "common/smem_opt_in.hpp"
#include "gemm/cluster_launch.hpp"
#include "gemm/split_pass.cuh"
#include "gemm/strided_blocks.hpp"
#include "gemm/tensor_map.hpp"

namespace parray::cuda {

namespace {

// TF32, BF16, FP16: 128 x 256 tiles, 4 slots of 48 KB. FP32-accurate: 128 x
// 128 tiles (a partial and a full accumulator per thread), 3 slots of 64 KB.
using Tf32Tiles = ladder::WgmmaTiles<256, 4, 1>;
using Bf16Tiles = ladder::WgmmaTiles<256, 4, 1, ladder::Bf16Format>;
using Fp16Tiles = ladder::WgmmaTiles<256, 4, 1, ladder::Fp16Format>;
using Fp32Tiles = ladder::WgmmaTiles<128, 3, 3>;
// A C of at most 64 columns (gpu.wgmma_narrow): 128 x 64 tiles, wgmma N =
// 64, a deeper ring of the smaller slots (24 KB; FP32 accuracy's two parts 48).
using Tf32NarrowTiles = ladder::WgmmaTiles<64, 6, 1>;
using Bf16NarrowTiles = ladder::WgmmaTiles<64, 6, 1, ladder::Bf16Format>;
using Fp16NarrowTiles = ladder::WgmmaTiles<64, 6, 1, ladder::Fp16Format>;
using Fp32NarrowTiles = ladder::WgmmaTiles<64, 3, 3>;
constexpr index_t kNarrowMaxN = 64;
// Step 21's one TF32 product of TF32 values at FP32 accuracy: 128 x 128 tiles
// (a partial and a full accumulator per thread), 5 slots of 32 KB, the
// partial sums promoted to FP32 every 256 of K.
using Tf32SumsTiles = ladder::WgmmaTiles<128, 5, 1, ladder::Tf32Format, 1, true>;
// The same in clusters of two blocks along M, B multicast (gpu.wgmma_cluster).
template <class Cfg>
using InPairs = ladder::WgmmaTiles<Cfg::BN, Cfg::Stages, Cfg::Products, typename Cfg::Format, 2>;
// K-tiles (of 32) per partial sum before it joins the FP32 accumulator: the
// tensor cores' truncation error is that of 3 x 256 terms whatever K.
constexpr int kPromoteTiles = 8;
// By default (gpu.wgmma_a_registers) step 15 reads A where it lies for TF32
// whatever N, and for FP32 accuracy up to this N: the kernel with A in
// registers runs longer there (three products per A value split), which
// outweighs the pass over A beyond it (docs/perf-notes.md).
constexpr index_t kRegisterAMaxN = 2048;
// B is read where it lies (computing C^T = B^T A^T) up to this M.
constexpr index_t kSwapMaxM = 512;

// Whether Cfg's step-15 kernel that reads A where it lies (from) is built:
// each is a separate kernel, and in clusters only TF32's row-major one is
// (A of the other kinds goes through the pass there; the producer's threads
// copy A for one block only).
template <class Cfg>
constexpr bool a_in_place_built(ladder::AOperand from) {
  return Cfg::kCluster == 1 || (Cfg::Products == 1 && from == ladder::AOperand::rows);
}

// The copies' element type and its tensor-map data type, by format.
template <class Format>
struct CopyOf;
template <>
struct CopyOf<ladder::Tf32Format> {
  using type = float;
  static constexpr CUtensorMapDataType map_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
};
template <>
struct CopyOf<ladder::Bf16Format> {
  using type = __nv_bfloat16;
  static constexpr CUtensorMapDataType map_type = CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
};
template <>
struct CopyOf<ladder::Fp16Format> {
  using type = __half;
  static constexpr CUtensorMapDataType map_type = CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
};

// Tensor map of a rows x K row-major copy (rows ld elements apart) read as
// boxes of box_rows x (128 bytes of K), 128-byte swizzled; reads past rows or
// K give zeros.
template <class Format>
CUtensorMap k_major_map(const void* base, index_t rows, index_t K, index_t ld, int box_rows) {
  constexpr int kBytes = Format::kBytes;
  return tensor_map_2d(CopyOf<Format>::map_type, base, K, rows, ld * kBytes, 128 / kBytes, box_rows, true);
}

// b (M x N) as the copy engine addresses it, where it can: rows contiguous,
// row and block strides positive multiples of 16 bytes, and 16-byte aligned.
template <class T>
std::optional<BlockedMatrix> tma_blocks(const BlockedOperand<T>& b, index_t M, index_t N) {
  constexpr index_t kAlign = 16 / sizeof(T);
  const auto fits = [&](index_t stride) { return stride > 0 && stride % kAlign == 0; };
  const index_t down = ceil_div(M, b.block_rows), across = ceil_div(N, b.block_cols);
  if (b.cs != 1 || !fits(b.rs) || (down > 1 && !fits(b.block_rs)) || (across > 1 && !fits(b.block_cs)) ||
      reinterpret_cast<std::uintptr_t>(b.p) % 16 != 0)
    return std::nullopt;
  constexpr index_t kBytes = sizeof(T);
  return BlockedMatrix{b.p, b.block_rows, b.block_cols, down, across, b.rs * kBytes, b.block_rs * kBytes,
                       b.block_cs * kBytes};
}

// Step 14: one block per tile of C.
struct OneTilePerBlock {
  static constexpr bool kBlockedC = false;
  static constexpr bool kAInRegisters = false;
  template <class Cfg, class OpC>
  static void launch(cudaStream_t s, const ladder::WgmmaMaps& maps, int M, int N, int K, float alpha, float beta,
                     const OpC& c, ladder::AOperand, bool) {
    // gpu.wgmma_read_early: the TF32 kernel with its pipeline broken on
    // purpose (for the tests), one more instantiation.
    constexpr bool kCanBreak = std::is_same_v<Cfg, Tf32Tiles> && std::is_same_v<OpC, StridedOperand<float>>;
    if constexpr (kCanBreak)
      if (gpu_tuning().wgmma_read_early)
        return run<Cfg>(ladder::gemm_wgmma_tma<Cfg, OpC, true>, s, maps, M, N, K, alpha, beta, c);
    run<Cfg>(ladder::gemm_wgmma_tma<Cfg, OpC>, s, maps, M, N, K, alpha, beta, c);
  }
  template <class Cfg, class Kernel, class OpC>
  static void run(Kernel kernel, cudaStream_t s, const ladder::WgmmaMaps& maps, int M, int N, int K, float alpha,
                  float beta, const OpC& c) {
    allow_smem_on_current_device(kernel, Cfg::kSmemBytes);
    const index_t tiles = index_t(ceil_div(M, Cfg::BM)) * ceil_div(N, Cfg::BN);
    if (tiles > 0x7fffffff) throw Error("cuda-14: more than 2^31 tiles of C");
    kernel<<<unsigned(tiles), Cfg::kThreads, Cfg::kSmemBytes, s>>>(maps, M, N, K, alpha, beta, c, kPromoteTiles);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
};

// Step 15: a persistent grid of one block per SM over plan_wgmma_work's
// units. Its kernels take C as a grid of strided blocks (tile_blocks: a
// strided C, or figs 17 / 18 whose blocks hold whole tiles); any other C goes
// through a row-major copy.
struct Persistent {
  static constexpr bool kBlockedC = true;
  // A full-wave k-tile step of one block: the tile's multiply-adds at a
  // Hopper SM's dense tensor rate (H100: ~3.7 TFLOP/s per SM in TF32, twice
  // that in BF16/FP16).
  template <class Cfg>
  static double step_us() {
    return wgmma_step_us(Cfg::Format::kBytes, Cfg::BM, Cfg::BN, Cfg::BK, Cfg::Products);
  }
  static constexpr bool kAInRegisters = true;  // A can be wgmma's register operand
  using OpC = BlockedOperand<float>;
  // A strided batch's products and C's stride between them (count 1: one
  // product); the operand maps then have the batch as their block rows.
  struct Batch {
    index_t count = 1, c_stride = 0;
  };
  template <class Cfg>
  static void launch(cudaStream_t s, const ladder::WgmmaMaps& maps, int M, int N, int K, float alpha, float beta,
                     const OpC& c, ladder::AOperand a_from, bool keep_small, Batch batch = {}) {
    using ladder::AOperand;
    if constexpr (Cfg::Format::kBytes == 4 && a_in_place_built<Cfg>(AOperand::rows)) {
      if (a_from == AOperand::rows)
        return run<Cfg>(ladder::gemm_wgmma_persistent<Cfg, AOperand::rows>, s, maps, M, N, K, alpha, beta, c,
                        keep_small, batch);
    }
    if constexpr (Cfg::Format::kBytes == 4 && a_in_place_built<Cfg>(AOperand::threads)) {
      if (a_from == AOperand::threads)
        return run<Cfg>(ladder::gemm_wgmma_persistent<Cfg, AOperand::threads>, s, maps, M, N, K, alpha, beta, c,
                        keep_small, batch);
    }
    if constexpr (Cfg::Format::kBytes == 4 && a_in_place_built<Cfg>(AOperand::columns)) {
      if (a_from == AOperand::columns)
        return run<Cfg>(ladder::gemm_wgmma_persistent<Cfg, AOperand::columns>, s, maps, M, N, K, alpha, beta, c,
                        keep_small, batch);
    }
    run<Cfg>(ladder::gemm_wgmma_persistent<Cfg>, s, maps, M, N, K, alpha, beta, c, keep_small, batch);
  }
  // C's TMA view: C's blocks, or a batch's C with its products as block rows;
  // none where the copy engine cannot address it, or where a block's rows
  // are not whole 16-byte chunks. Rows then leave a line at a time.
  static std::optional<BlockedMatrix> c_for_tma(const OpC& c, int M, int N, const Batch& batch) {
    if (!tma_stores_whole_rows(std::min<index_t>(N, c.block_cols), 4)) return std::nullopt;
    const std::optional<BlockedMatrix> one = tma_blocks(c, M, N);
    if (!one || batch.count == 1) return one;
    if (batch.c_stride % 4 != 0) return std::nullopt;
    return BlockedMatrix{one->base, M, N, batch.count, 1, one->row_stride, batch.c_stride * index_t(sizeof(float)), 0};
  }
  template <class Cfg, class Kernel>
  static void run(Kernel kernel, cudaStream_t s, const ladder::WgmmaMaps& maps, int M, int N, int K, float alpha,
                  float beta, const OpC& c, bool keep_small, const Batch& batch) {
    constexpr int kSmem = ladder::kPersistentSmem<Cfg>, kCluster = Cfg::kCluster;
    allow_smem_on_current_device(kernel, kSmem);
    // A cluster's unit is kCluster tiles down M, computed side by side.
    const int workers = kCluster == 1 ? sm_count() : max_clusters<Cfg>(kernel, kSmem, sm_count());
    // A batch fills the SMs with its products' tiles: K is not split there.
    WgmmaWork work = plan_wgmma_work(M, N, K, Cfg::BM * kCluster, Cfg::BN, Cfg::BK, batch.count > 1 ? 0 : workers,
                                     step_us<Cfg>());
    work.batch = int(batch.count);
    work.c_stride = batch.c_stride;
    if (work.units() > 0x7fffffff) throw Error("cuda-15: more than 2^31 tiles of C");
    // A K split writes its parts into a workspace (one row-major M x N slice
    // each, seen by the kernel as C of one block) that sum_k_parts adds up.
    std::optional<PoolBuffer> parts;
    OpC out = c;
    if (work.splits > 1) {
      work.slice = static_cast<long long>(M) * N;
      parts.emplace(std::size_t(work.splits) * std::size_t(work.slice), s);
      out = OpC{parts->p, N, 1, 0, 0, index_t(work.tiles_m) * Cfg::BM * kCluster, index_t(work.tiles_n) * Cfg::BN};
    }
    // C's blocks, row-major, leave staged: by TMA where their rows are 16-byte aligned.
    using ladder::CStores;
    const bool rows = c.cs == 1 || N == 1;
    const std::optional<BlockedMatrix> tma = c_for_tma(c, M, N, batch);
    const CStores stores = !rows ? CStores::per_thread : tma ? CStores::staged_tma : CStores::staged_rows;
    const CUtensorMap c_map = stores == CStores::staged_tma
                                  ? tensor_map_blocked(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, *tma,
                                                       ladder::StagedC::kCols<float>, 64, true)
                                  : CUtensorMap{};
    const unsigned grid = unsigned(std::min<long long>(work.units(), workers) * kCluster);
    if constexpr (kCluster == 1) {
      kernel<<<grid, Cfg::kThreads, kSmem, s>>>(maps, c_map, stores, M, N, alpha, beta, out, kPromoteTiles, work,
                                                keep_small ? 1 : 0);
      PARRAY_CUDA_CHECK_LAUNCH();
    } else {
      cudaLaunchAttribute cluster{};
      const cudaLaunchConfig_t config = cluster_config(kCluster, grid, Cfg::kThreads, kSmem, s, cluster);
      PARRAY_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, maps, c_map, stores, M, N, alpha, beta, out,
                                           kPromoteTiles, work, keep_small ? 1 : 0));
    }
    if (parts) {
      const unsigned blocks = unsigned(std::min<index_t>(ceil_div(index_t(M) * N, 256), 8 * sm_count()));
      ladder::sum_k_parts<<<blocks, 256, 0, s>>>(c, M, N, work.splits, parts->p, work.slice, alpha, beta);
      PARRAY_CUDA_CHECK_LAUNCH();
    }
  }
};

// A row-major device copy of an operand in a nested (figs 17/18) layout,
// made by the device #copy (64 x 64 tiles, 16-byte runs). The split pass and
// the epilogue can read and write a nested layout directly, but compute each
// element's offset digit by digit, which costs far more than the copies
// (docs/perf-notes.md).
struct RowMajorCopy {
  PoolBuffer buf;
  MatrixView<float> view;
  RowMajorCopy(index_t rows, index_t cols, cudaStream_t s)
      : buf(std::size_t(rows) * cols, s),
        view{buf.p, MatrixLayout::row_major(rows, cols, std::max<index_t>(cols, 1)), Memory::device} {}
};

// How step 15 can read A where it lies: row-major or a grid of row-major
// blocks holding whole k-tiles and tiles of rows (rows_and_k_tiles), or
// column-major; lines 16-byte aligned as TMA requires (else through the
// split pass's copy).
template <class Cfg>
std::optional<BlockedOperand<const float>> rows_and_k_tiles(const MatrixView<const float>& a) {
  return tile_blocks(a, Cfg::BM, Cfg::BK);
}
template <class Cfg>
ladder::AOperand a_unsplit(const MatrixView<const float>& a) {
  using ladder::AOperand;
  const MatrixLayout& l = a.layout;
  if (const auto blocks = rows_and_k_tiles<Cfg>(a);
      a_in_place_built<Cfg>(AOperand::rows) && blocks && tma_blocks(*blocks, a.rows(), a.cols()))
    return AOperand::rows;
  if (reinterpret_cast<std::uintptr_t>(&a(0, 0)) % 16 != 0) return AOperand::copy;
  if (a_in_place_built<Cfg>(AOperand::columns) && l.is_col_major() && l.cols.stride[0] > 0 &&
      l.cols.stride[0] % 4 == 0)
    return AOperand::columns;
  return AOperand::copy;
}

// Whether step 15's producer threads copy A's tiles (row-major, its rows off
// the 16-byte grid TMA needs; one product without clusters) instead of the
// split pass copying all of A first (load_k_tiles_a_by_threads).
template <class Cfg, class Schedule>
bool a_by_threads(const MatrixView<const float>& a) {
  const MatrixLayout& l = a.layout;
  return Schedule::kAInRegisters && Cfg::kCluster == 1 && Cfg::Format::kBytes == 4 &&
         a_in_place_built<Cfg>(ladder::AOperand::threads) && l.is_strided() && a.rows() > 0 && a.cols() > 0 &&
         (l.cols.stride[0] == 1 || a.cols() == 1) && l.rows.stride[0] >= a.cols();
}

// Whether those copies cost the kernel less than the split pass over A
// (a_threads_pay: the pass reads A and writes its TF32 copy, or FP32
// accuracy's two parts, at the model's bandwidth).
template <class Cfg, class Schedule>
bool a_threads_pay_here(index_t M, index_t N, index_t K) {
  const double step_us = Schedule::template step_us<Cfg>();
  const WgmmaWork w = plan_wgmma_work(M, N, K, Cfg::BM, Cfg::BN, Cfg::BK, sm_count(), step_us);
  const double pass_bytes = Cfg::Products == 3 ? 12.0 : 8.0;
  return a_threads_pay(w, sm_count(), step_us, M, K, pass_bytes, current_gpu_model().dram_gbs * 1e3);
}

// Whether step 15 takes A in registers (gpu.wgmma_a_registers; auto: where
// the pass over A would cost more than the register operand costs the kernel).
bool a_in_registers(index_t N, bool fp32_accurate) {
  const int mode = gpu_tuning().wgmma_a_registers;
  return mode == 1 || (mode < 0 && (!fp32_accurate || N <= kRegisterAMaxN));
}

// Whether step 15 runs in clusters of two (gpu.wgmma_cluster; auto: FP32
// accuracy where M, N >= kPairsMin). B's multicast halves its reads from L2.
// On an H200 pairs are never slower and gain only with FP32 accuracy (B's
// two parts) at 8192^3; at 4096^3 and for one product (TF32, BF16) they run
// level (docs/perf-notes.md).
constexpr index_t kPairsMin = 8192;
bool in_pairs(const GemmCall<float>& call, bool fp32_accurate) {
  const int mode = gpu_tuning().wgmma_cluster;
  if (mode != 0) return mode == 2;
  return fp32_accurate && call.c.rows() >= kPairsMin && call.c.cols() >= kPairsMin;
}

// Whether step 15 computes C^T = B^T A^T instead, B^T the operand in
// registers: where B is the larger operand, A has few rows (C^T, column-major
// where C is row-major, is then stored by each thread) and B lies as TMA reads.
template <class Cfg>
bool swap_for_registers(const GemmCall<float>& call, bool fp32_accurate) {
  const index_t M = call.c.rows(), N = call.c.cols();
  return N > M && M <= kSwapMaxM && a_in_registers(M, fp32_accurate) &&
         a_unsplit<Cfg>(call.b.t()) != ladder::AOperand::copy;
}

// Tensor map of a column-major M x K operand (columns ld elements apart) read
// as boxes of 32 rows x 32 k, 128-byte swizzled: a k-tile of 128 rows is 4.
CUtensorMap m_major_map(const void* base, index_t M, index_t K, index_t ld) {
  return tensor_map_2d(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, base, M, K, ld * 4, 32, 32, true);
}

// Whether to copy first: a nested layout and room for the copy.
bool copy_first(const MatrixLayout& l) {
  return !l.is_strided() && workspace_fits(std::size_t(l.rows.size) * std::size_t(l.cols.size) * sizeof(float));
}

// A nested layout of a few large strided blocks (figs 17 / 17x4 / 18), which
// the split pass reads block by block at the strided pass's speed.
constexpr std::size_t kMaxSplitBlocks = 64;
constexpr index_t kMinSplitBlock = 32;
bool few_strided_blocks(const MatrixView<const float>& v) {
  return !v.layout.is_strided() && for_each_strided_block(v, kMaxSplitBlocks, kMinSplitBlock, [](auto...) {});
}

// v (A as M x K, or B as K x N) split into its copy: out_at(x, k) is the
// copy's destination from row x, column k of the copy on. A nested v of few
// strided blocks goes block by block, each through the strided pass; other
// nested layouts through the layout (never for the 16-bit formats, which
// copy those first).
template <bool kStridedOnly, class OutAt>
void split_into(cudaStream_t s, const MatrixView<const float>& v, bool is_b, OutAt&& out_at, const char* impl) {
  if (v.layout.is_strided()) return split_through(s, strided_operand(v), v, is_b, out_at(0, 0), impl);
  const auto split_block = [&](index_t r0, index_t nr, index_t c0, index_t nc) {
    const MatrixView<const float> block = strided_block(v, r0, nr, c0, nc);
    split_through(s, strided_operand(block), block, is_b, is_b ? out_at(c0, r0) : out_at(r0, c0), impl);
  };
  if (for_each_strided_block(v, kMaxSplitBlocks, kMinSplitBlock, split_block)) return;
  if constexpr (kStridedOnly) throw Error(std::string(impl) + ": a nested operand was not copied before the split");
  else split_through(s, layout_operand(v), v, is_b, out_at(0, 0), impl);
}

// The split pass's K-contiguous copies (rows ld elements apart, 16-byte
// aligned as TMA requires): of A unless step 15 reads it where it lies, and
// of B; big and small TF32 parts for FP32 accuracy, one part for TF32, one
// rounded copy for BF16 / FP16. One allocation carved into the four: each
// allocation is host time inside the call, and at a small K the whole GEMM
// takes a few hundred microseconds.
template <class Cfg>
struct SplitCopies {
  static constexpr int kBytes = Cfg::Format::kBytes;
  static constexpr bool kSmall = Cfg::Products == 3;
  static constexpr std::size_t kAlignWords = 64;  // copies 256 bytes apart
  bool a_direct;
  index_t ld;
  // Floats of one product's copy of A, of B (256-byte multiples), and of all
  // of them: a_count and b_count products of a batch (1 for one product or a
  // broadcast operand).
  std::size_t a_each, b_each, a_words, b_words;
  PoolBuffer all;
  float* a_big;
  float* b_big;
  float* a_small;
  float* b_small;
  SplitCopies(cudaStream_t s, index_t M, index_t N, index_t K, bool a_in_place, index_t a_count = 1,
              index_t b_count = 1)
      : a_direct(a_in_place),
        ld(line(K)),
        a_each(a_direct ? 0 : words(M, ld)),
        b_each(words(N, ld)),
        a_words(a_each * std::size_t(a_count)),
        b_words(b_each * std::size_t(b_count)),
        all((a_words + b_words) * (kSmall ? 2 : 1), s),
        a_big(a_words ? all.p : nullptr),
        b_big(all.p + a_words),
        a_small(kSmall && a_words ? b_big + b_words : nullptr),
        b_small(kSmall ? b_big + b_words + a_words : nullptr) {}
  // A copy's line: K rounded up to 16 bytes (TMA's row alignment).
  static index_t line(index_t K) { return (K + 16 / kBytes - 1) / (16 / kBytes) * (16 / kBytes); }
  static std::size_t words(index_t rows, index_t ld) {
    const std::size_t w = std::size_t(rows) * ld * kBytes / sizeof(float);
    return (w + kAlignWords - 1) / kAlignWords * kAlignWords;
  }
  // The bytes the copies take, before they are made.
  static std::size_t bytes(index_t M, index_t N, index_t K, bool a_in_place, index_t a_count, index_t b_count) {
    const index_t ld = line(K);
    const std::size_t a = a_in_place ? 0 : words(M, ld) * std::size_t(a_count);
    const std::size_t floats = a + words(N, ld) * std::size_t(b_count);
    return floats * (kSmall ? 2 : 1) * sizeof(float);
  }
};

// A (unless read in place) and B split into their copies: by one launch
// where both are strided, else each through split_into.
template <class Cfg>
void split_operands(cudaStream_t s, const MatrixView<const float>& a, const MatrixView<const float>& b,
                    const SplitCopies<Cfg>& copies, bool keep_small, const char* impl) {
  constexpr bool kStridedOnly = Cfg::Format::kBytes == 2;
  const auto split = [&](const auto& out_a, const auto& out_b) {  // out_x(x, k): the copy from row x, column k on
    if (!copies.a_direct && split_pair_through(s, a, b, out_a(0, 0), out_b(0, 0))) return;
    if (!copies.a_direct) split_into<kStridedOnly>(s, a, false, out_a, impl);
    split_into<kStridedOnly>(s, b, true, out_b, impl);
  };
  const index_t ld = copies.ld;
  if constexpr (Cfg::Format::kBytes == 4) {
    const auto paired = [&](float* big, float* small) {
      return [=](index_t x, index_t k) {
        const index_t at = x * ld + k;
        return ladder::PairedSplit{big + at, small ? small + at : nullptr, ld, keep_small};
      };
    };
    split(paired(copies.a_big, copies.a_small), paired(copies.b_big, copies.b_small));
  } else {
    using Half = typename CopyOf<typename Cfg::Format>::type;
    const auto rounded = [&](float* copy) {
      return [=](index_t x, index_t k) { return ladder::RoundedCopy<Half>{reinterpret_cast<Half*>(copy) + x * ld + k, ld}; };
    };
    split(rounded(copies.a_big), rounded(copies.b_big));
  }
}

// The kernels' tensor maps: A where it lies (a_from) or its copies, B's copies.
template <class Cfg>
ladder::WgmmaMaps operand_maps(const MatrixView<const float>& a, ladder::AOperand a_from,
                               const SplitCopies<Cfg>& copies, index_t M, index_t N, index_t K) {
  using Format = typename Cfg::Format;
  const index_t ld = copies.ld;
  ladder::WgmmaMaps maps{};
  if (a_from == ladder::AOperand::threads) {  // the producer's threads read A's rows where they lie
    maps.a_lines = &a(0, 0);
    maps.a_ld = a.rows() > 1 ? a.layout.rows.stride[0] : K;
    maps.a_rows = int(M), maps.a_k = int(K);
  } else if (a_from == ladder::AOperand::rows) {
    const BlockedOperand<const float> blocks = *rows_and_k_tiles<Cfg>(a);
    if (blocks.block_rows == M && blocks.block_cols == K) {  // row-major
      maps.a_big = k_major_map<Format>(blocks.p, M, K, blocks.rs, Cfg::BM);
    } else {
      maps.a_big = tensor_map_blocked(CU_TENSOR_MAP_DATA_TYPE_FLOAT32, *tma_blocks(blocks, M, K), Cfg::BK, Cfg::BM,
                                      true);
      maps.a_block_rows = int(blocks.block_rows);
      maps.a_block_k = int(blocks.block_cols);
    }
  } else if (a_from == ladder::AOperand::columns) {
    maps.a_big = m_major_map(&a(0, 0), M, K, a.layout.cols.stride[0]);
  } else {
    maps.a_big = k_major_map<Format>(copies.a_big, M, K, ld, Cfg::BM);
  }
  maps.b_big = k_major_map<Format>(copies.b_big, N, K, ld, Cfg::kBoxB);
  maps.a_small = copies.a_small ? k_major_map<Format>(copies.a_small, M, K, ld, Cfg::BM) : maps.a_big;
  maps.b_small = copies.b_small ? k_major_map<Format>(copies.b_small, N, K, ld, Cfg::kBoxB) : maps.b_big;
  return maps;
}

template <class Cfg, class Schedule = OneTilePerBlock>
void gemm_wgmma_on_stream(cudaStream_t s, const GemmCall<float>& call, const char* impl) {
  check_int_sizes(call, impl);
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  if (M == 0 || N == 0 || K == 0) throw Error(std::string(impl) + ": empty product (the dispatcher handles those)");
  using Format = typename Cfg::Format;
  if constexpr (Schedule::kAInRegisters && Format::kBytes == 4) {
    if (swap_for_registers<Cfg>(call, Cfg::Products == 3)) {
      GemmCall<float> t = call;  // C^T = B^T A^T, on the call's stream
      t.a = call.b.t(), t.b = call.a.t(), t.c = call.c.t();
      return gemm_wgmma_on_stream<Cfg, Schedule>(s, t, impl);
    }
  }
  // A nested operand is read in place where it is a few strided blocks (A and
  // B by the split pass block by block, or A by TMA; C by step 15's epilogue
  // where its blocks hold whole tiles), else through a row-major copy: the
  // 16-bit formats' passes and step 14's 16-bit epilogue are built for
  // strided operands alone (half the instantiations to compile), and the
  // per-element layout addressing costs far more than the copies
  // (docs/perf-notes.md).
  constexpr bool kStridedOnly = Format::kBytes == 2;
  const auto copied_first = [&](const MatrixView<const float>& v) {
    return !v.layout.is_strided() && !few_strided_blocks(v) && (kStridedOnly || copy_first(v.layout));
  };
  const auto c_copied_first = [&](const MatrixView<float>& v) {
    if constexpr (Schedule::kBlockedC) return !tile_blocks(v, Cfg::BM, Cfg::BN);
    return !v.layout.is_strided() && (kStridedOnly || copy_first(v.layout));
  };
  std::optional<RowMajorCopy> a_rows, b_rows, c_rows;
  MatrixView<const float> a = call.a, b = call.b;
  MatrixView<float> c = call.c;
  if (copied_first(a)) {
    cuda::copy<float>(a, a_rows.emplace(M, K, s).view, s);
    a = a_rows->view;
  }
  if (copied_first(b)) {
    cuda::copy<float>(b, b_rows.emplace(K, N, s).view, s);
    b = b_rows->view;
  }
  if (c_copied_first(c)) {
    c = c_rows.emplace(M, N, s).view;
    if (call.beta != 0.f) cuda::copy<float>(call.c, c, s);  // beta = 0: C is not read
  }
  constexpr bool kSmall = Cfg::Products == 3;
  const bool registers = Schedule::kAInRegisters && Format::kBytes == 4 && a_in_registers(N, kSmall);
  ladder::AOperand a_from = registers ? a_unsplit<Cfg>(a) : ladder::AOperand::copy;
  // Rows TMA cannot address: copied by the producer's threads, no pass over A.
  if constexpr (Schedule::kAInRegisters)
    if (registers && a_from == ladder::AOperand::copy && a_by_threads<Cfg, Schedule>(a) &&
        a_threads_pay_here<Cfg, Schedule>(M, N, K))
      a_from = ladder::AOperand::threads;
  const bool keep = gpu_tuning().tf32x3_small;
  SplitCopies<Cfg> split(s, M, N, K, a_from != ladder::AOperand::copy);
  split_operands(s, a, b, split, keep, impl);
  const ladder::WgmmaMaps maps = operand_maps(a, a_from, split, M, N, K);
  if constexpr (Schedule::kBlockedC)
    Schedule::template launch<Cfg>(s, maps, int(M), int(N), int(K), call.alpha, call.beta,
                                   *tile_blocks(c, Cfg::BM, Cfg::BN), a_from, keep);
  else if (kStridedOnly || c.layout.is_strided())
    Schedule::template launch<Cfg>(s, maps, int(M), int(N), int(K), call.alpha, call.beta, strided_operand(c),
                                   a_from, keep);
  else if constexpr (!kStridedOnly)
    Schedule::template launch<Cfg>(s, maps, int(M), int(N), int(K), call.alpha, call.beta, layout_operand(c),
                                   a_from, keep);
  if (c_rows) cuda::copy<float>(c, call.c, s);
}

// ---- Step 15 over a strided batch ------------------------------------------

// The split pass over a strided batch's operand v (A as M x K, or B as K x N,
// both strided): `count` products `stride` elements apart (count 1: one
// operand broadcast over the batch), each product's copy `out_stride` copy
// elements after the one before. One launch per 65535 products (the grid's
// z limit).
template <bool IsB, class Out>
void split_batch_through(cudaStream_t s, const MatrixView<const float>& v, index_t count, index_t stride,
                         const Out& out, index_t out_stride, const char* impl) {
  const index_t X = IsB ? v.cols() : v.rows(), K = IsB ? v.rows() : v.cols();
  if (X > 65535 * 32) throw Error(std::string(impl) + ": more than 2097120 rows of A or columns of B");
  const bool along_k = split_detail::k_contiguous(v.layout, IsB);
  const StridedOperand<const float> op = strided_operand(v);
  constexpr index_t kMaxZ = 65535;
  for (index_t z0 = 0; z0 < count; z0 += kMaxZ) {
    const dim3 grid(ceil_div(K, 32), ceil_div(X, 32), unsigned(std::min(count - z0, kMaxZ))), block(32, 8);
    if (along_k)
      ladder::split_batch<IsB, true><<<grid, block, 0, s>>>(op, stride, int(X), int(K), out, out_stride, int(z0));
    else
      ladder::split_batch<IsB, false><<<grid, block, 0, s>>>(op, stride, int(X), int(K), out, out_stride, int(z0));
    PARRAY_CUDA_CHECK_LAUNCH();
  }
}

// A batch's operands into their copies (A unless read in place): TF32 parts,
// or 16-bit values rounded to nearest.
template <class Cfg>
void split_batch_operands(cudaStream_t s, const GemmBatchCall<float>& call, const SplitCopies<Cfg>& copies,
                          index_t a_count, index_t b_count, bool keep_small, const char* impl) {
  const GemmCall<float>& f = call.first;
  const index_t ld = copies.ld;
  if constexpr (Cfg::Format::kBytes == 4) {
    const auto paired = [&](float* big, float* small) { return ladder::PairedSplit{big, small, ld, keep_small}; };
    if (!copies.a_direct)
      split_batch_through<false>(s, f.a, a_count, call.stride_a, paired(copies.a_big, copies.a_small),
                                 index_t(copies.a_each), impl);
    split_batch_through<true>(s, f.b, b_count, call.stride_b, paired(copies.b_big, copies.b_small),
                              index_t(copies.b_each), impl);
  } else {
    using Half = typename CopyOf<typename Cfg::Format>::type;
    constexpr index_t kPerFloat = index_t(sizeof(float) / sizeof(Half));
    const auto rounded = [&](float* copy) { return ladder::RoundedCopy<Half>{reinterpret_cast<Half*>(copy), ld}; };
    split_batch_through<false>(s, f.a, a_count, call.stride_a, rounded(copies.a_big),
                               index_t(copies.a_each) * kPerFloat, impl);
    split_batch_through<true>(s, f.b, b_count, call.stride_b, rounded(copies.b_big),
                              index_t(copies.b_each) * kPerFloat, impl);
  }
}

// A batch's operand (or its copies) as tensor_map_batch's map, 128-byte
// swizzled: `count` products (1: broadcast) of `lines` lines of `inner`
// contiguous elements, ld elements apart, products `stride` elements apart.
template <class Format>
CUtensorMap batch_map(const void* base, index_t lines, index_t inner, index_t ld, index_t count, index_t stride,
                      int box_inner, int box_lines) {
  return tensor_map_batch(CopyOf<Format>::map_type, base, lines, inner, ld, count, count > 1 ? stride : 0,
                          Format::kBytes, box_inner, box_lines, true);
}

template <class Cfg>
ladder::WgmmaMaps batch_operand_maps(const GemmBatchCall<float>& call, ladder::AOperand a_from,
                                     const SplitCopies<Cfg>& copies, index_t a_count, index_t b_count) {
  using Format = typename Cfg::Format;
  using ladder::AOperand;
  constexpr int kBox = 128 / Format::kBytes;
  const MatrixView<const float>& a = call.first.a;
  const index_t M = call.first.c.rows(), N = call.first.c.cols(), K = a.cols(), ld = copies.ld;
  constexpr index_t kPerFloat = 4 / Format::kBytes;  // copy elements in a float's bytes
  const index_t a_each = index_t(copies.a_each) * kPerFloat, b_each = index_t(copies.b_each) * kPerFloat;
  ladder::WgmmaMaps maps{};
  maps.batched = 1;
  maps.a_batched = a_count > 1, maps.b_batched = b_count > 1;
  if (a_from == AOperand::rows)
    maps.a_big = batch_map<Format>(&a(0, 0), M, K, a.layout.rows.stride[0], a_count, call.stride_a, kBox, Cfg::BM);
  else if (a_from == AOperand::columns)
    maps.a_big = batch_map<Format>(&a(0, 0), K, M, a.layout.cols.stride[0], a_count, call.stride_a, 32, 32);
  else
    maps.a_big = batch_map<Format>(copies.a_big, M, K, ld, a_count, a_each, kBox, Cfg::BM);
  maps.b_big = batch_map<Format>(copies.b_big, N, K, ld, b_count, b_each, kBox, Cfg::kBoxB);
  maps.a_small = copies.a_small ? batch_map<Format>(copies.a_small, M, K, ld, a_count, a_each, kBox, Cfg::BM)
                                : maps.a_big;
  maps.b_small = copies.b_small ? batch_map<Format>(copies.b_small, N, K, ld, b_count, b_each, kBox, Cfg::kBoxB)
                                : maps.b_big;
  return maps;
}

// A strided batch (strided layouts) as one persistent launch over its
// products' tiles: the split pass writes every product's copies by one
// launch per operand (a broadcast operand once), the kernel reads product z
// through the maps' block row z and writes C at z times C's stride. A is
// read in place as for one product where its stride keeps TMA's 16-byte
// alignment. False where the batch is not strided or its copies would not
// fit (the products then run in turn).
template <class Cfg>
bool gemm_wgmma_batch_on_stream(cudaStream_t s, const GemmBatchCall<float>& call, const char* impl) {
  static_assert(Cfg::kCluster == 1, "a batch runs without clusters");
  using ladder::AOperand;
  const GemmCall<float>& f = call.first;
  if (!f.a.layout.is_strided() || !f.b.layout.is_strided() || !f.c.layout.is_strided() || call.batch > 0x7fffffff)
    return false;
  check_int_sizes(f, impl);
  const index_t M = f.c.rows(), N = f.c.cols(), K = f.a.cols();
  if (M == 0 || N == 0 || K == 0) throw Error(std::string(impl) + ": empty product (the dispatcher handles those)");
  constexpr bool kSmall = Cfg::Products == 3;
  const index_t a_count = call.stride_a ? call.batch : 1, b_count = call.stride_b ? call.batch : 1;
  AOperand a_from = Cfg::Format::kBytes == 4 && a_in_registers(N, kSmall) ? a_unsplit<Cfg>(f.a) : AOperand::copy;
  if (a_count > 1 && call.stride_a % 4 != 0) a_from = AOperand::copy;  // a product's A 16-byte aligned
  // Every product's copies at once; where they would not fit beside what the
  // GPU holds, the products run in turn, each with copies of its own.
  if (!workspace_fits(SplitCopies<Cfg>::bytes(M, N, K, a_from != AOperand::copy, a_count, b_count))) return false;
  const bool keep = gpu_tuning().tf32x3_small;
  SplitCopies<Cfg> copies(s, M, N, K, a_from != AOperand::copy, a_count, b_count);
  split_batch_operands(s, call, copies, a_count, b_count, keep, impl);
  const ladder::WgmmaMaps maps = batch_operand_maps(call, a_from, copies, a_count, b_count);
  Persistent::launch<Cfg>(s, maps, int(M), int(N), int(K), f.alpha, f.beta, *tile_blocks(f.c, Cfg::BM, Cfg::BN),
                          a_from, keep, Persistent::Batch{call.batch, call.stride_c});
  return true;
}

std::string wgmma_unsupported_here() {
  int d = 0, major = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&d));
  PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d));
  if (major != 9) return "wgmma and TMA need a Hopper GPU (compute capability 9.x)";
  cudaFuncAttributes attr{};
  PARRAY_CUDA_CHECK(cudaFuncGetAttributes(&attr, ladder::gemm_wgmma_tma<Tf32Tiles, StridedOperand<float>>));
  if (attr.binaryVersion != 90) return "parray was not built for sm_90a (PARRAY_CUDA_ARCHITECTURES=90a)";
  return "";
}

}  // namespace

namespace {
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static const auto fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
    PARRAY_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || !p) throw Error("cuda-14: the driver has no cuTensorMapEncodeTiled");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

CUtensorMap encode_map(CUtensorMapDataType type, const void* base, cuuint32_t rank, const cuuint64_t* dims,
                       const cuuint64_t* strides, const cuuint32_t* box, bool swizzle_128b) {
  CUtensorMap map{};
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult r = encode_tiled()(&map, type, rank, const_cast<void*>(base), dims, strides, box, element_strides,
                                    CU_TENSOR_MAP_INTERLEAVE_NONE,
                                    swizzle_128b ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) throw Error("cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ")");
  return map;
}
}  // namespace

CUtensorMap tensor_map_2d(CUtensorMapDataType type, const void* base, index_t inner, index_t outer,
                          index_t outer_stride_bytes, int box_inner, int box_outer, bool swizzle_128b) {
  const cuuint64_t dims[2] = {cuuint64_t(inner), cuuint64_t(outer)}, strides[1] = {cuuint64_t(outer_stride_bytes)};
  const cuuint32_t box[2] = {cuuint32_t(box_inner), cuuint32_t(box_outer)};
  return encode_map(type, base, 2, dims, strides, box, swizzle_128b);
}

CUtensorMap tensor_map_blocked(CUtensorMapDataType type, const BlockedMatrix& m, int box_cols, int box_rows,
                               bool swizzle_128b) {
  // A block stride that is never used (one block that way) takes the row
  // stride: any multiple of 16 will do.
  const auto used = [&](index_t blocks, index_t stride) { return cuuint64_t(blocks > 1 ? stride : m.row_stride); };
  const cuuint64_t dims[4] = {cuuint64_t(m.block_cols), cuuint64_t(m.block_rows), cuuint64_t(m.blocks_across),
                              cuuint64_t(m.blocks_down)};
  const cuuint64_t strides[3] = {cuuint64_t(m.row_stride), used(m.blocks_across, m.block_col_stride),
                                 used(m.blocks_down, m.block_row_stride)};
  const cuuint32_t box[4] = {cuuint32_t(box_cols), cuuint32_t(box_rows), 1, 1};
  return encode_map(type, m.base, 4, dims, strides, box, swizzle_128b);
}

CUtensorMap tensor_map_batch(CUtensorMapDataType type, const void* base, index_t rows, index_t cols, index_t ld,
                             index_t batch, index_t stride, int elem_bytes, int box_cols, int box_rows,
                             bool swizzle_128b) {
  const index_t blocks = stride == 0 ? 1 : batch;
  const BlockedMatrix m{base, rows, cols, blocks, 1, ld * elem_bytes, stride * elem_bytes, 0};
  return tensor_map_blocked(type, m, box_cols, box_rows, swizzle_128b);
}

std::string wgmma_unsupported() {
  static const std::string why = wgmma_unsupported_here();  // the GPUs of one host are alike
  return why;
}

void gemm_wgmma_tf32(const GemmCall<float>& call) {
  gemm_wgmma_on_stream<Tf32Tiles>(on_stream(call.stream), call, "cuda-14-tf32");
}
void gemm_wgmma_bf16(const GemmCall<float>& call) {
  gemm_wgmma_on_stream<Bf16Tiles>(on_stream(call.stream), call, "cuda-14-bf16");
}
void gemm_wgmma_fp16(const GemmCall<float>& call) {
  gemm_wgmma_on_stream<Fp16Tiles>(on_stream(call.stream), call, "cuda-14-fp16");
}
void gemm_wgmma_3xtf32(const GemmCall<float>& call) {
  gemm_wgmma_on_stream<Fp32Tiles>(on_stream(call.stream), call, "cuda-14-3xtf32");
}
void gemm_wgmma_3xtf32_on_stream(cudaStream_t stream, const GemmCall<float>& call) {
  gemm_wgmma_on_stream<Fp32Tiles>(stream, call, "cuda-14-3xtf32");
}
// Whether step 15 takes its 128 x 64 tiles: gpu.wgmma_narrow, C of at most
// 64 columns, and no C^T computed instead (C's rows at least its columns).
bool narrow_tiles(const GemmCall<float>& call) {
  return gpu_tuning().wgmma_narrow && call.c.cols() <= kNarrowMaxN && call.c.rows() >= call.c.cols();
}

void gemm_persistent_tf32(const GemmCall<float>& call) {
  if (narrow_tiles(call))
    return gemm_wgmma_on_stream<Tf32NarrowTiles, Persistent>(on_stream(call.stream), call, "cuda-15-tf32");
  if (in_pairs(call, false))
    return gemm_wgmma_on_stream<InPairs<Tf32Tiles>, Persistent>(on_stream(call.stream), call, "cuda-15-tf32");
  gemm_wgmma_on_stream<Tf32Tiles, Persistent>(on_stream(call.stream), call, "cuda-15-tf32");
}
void gemm_persistent_bf16(const GemmCall<float>& call) {
  if (narrow_tiles(call))
    return gemm_wgmma_on_stream<Bf16NarrowTiles, Persistent>(on_stream(call.stream), call, "cuda-15-bf16");
  if (in_pairs(call, false))
    return gemm_wgmma_on_stream<InPairs<Bf16Tiles>, Persistent>(on_stream(call.stream), call, "cuda-15-bf16");
  gemm_wgmma_on_stream<Bf16Tiles, Persistent>(on_stream(call.stream), call, "cuda-15-bf16");
}
void gemm_persistent_fp16(const GemmCall<float>& call) {
  if (narrow_tiles(call))
    return gemm_wgmma_on_stream<Fp16NarrowTiles, Persistent>(on_stream(call.stream), call, "cuda-15-fp16");
  if (in_pairs(call, false))
    return gemm_wgmma_on_stream<InPairs<Fp16Tiles>, Persistent>(on_stream(call.stream), call, "cuda-15-fp16");
  gemm_wgmma_on_stream<Fp16Tiles, Persistent>(on_stream(call.stream), call, "cuda-15-fp16");
}
void gemm_persistent_tf32_fp32_sums(const GemmCall<float>& call) {
  gemm_wgmma_on_stream<Tf32SumsTiles, Persistent>(on_stream(call.stream), call, "cuda-21-tf32-bf16");
}
void gemm_persistent_3xtf32(const GemmCall<float>& call) {
  if (narrow_tiles(call))
    return gemm_wgmma_on_stream<Fp32NarrowTiles, Persistent>(on_stream(call.stream), call, "cuda-15-3xtf32");
  if (in_pairs(call, true))
    return gemm_wgmma_on_stream<InPairs<Fp32Tiles>, Persistent>(on_stream(call.stream), call, "cuda-15-3xtf32");
  gemm_wgmma_on_stream<Fp32Tiles, Persistent>(on_stream(call.stream), call, "cuda-15-3xtf32");
}

// Step 15 over a strided batch, one launch (false where it is not strided).
bool gemm_persistent_tf32_batch(const GemmBatchCall<float>& b) {
  return gemm_wgmma_batch_on_stream<Tf32Tiles>(on_stream(b.first.stream), b, "cuda-15-tf32");
}
bool gemm_persistent_bf16_batch(const GemmBatchCall<float>& b) {
  return gemm_wgmma_batch_on_stream<Bf16Tiles>(on_stream(b.first.stream), b, "cuda-15-bf16");
}
bool gemm_persistent_fp16_batch(const GemmBatchCall<float>& b) {
  return gemm_wgmma_batch_on_stream<Fp16Tiles>(on_stream(b.first.stream), b, "cuda-15-fp16");
}
bool gemm_persistent_3xtf32_batch(const GemmBatchCall<float>& b) {
  return gemm_wgmma_batch_on_stream<Fp32Tiles>(on_stream(b.first.stream), b, "cuda-15-3xtf32");
}

}  // namespace parray::cuda
