// Run-time tuning of parray's backends, in one place: one plain struct per
// backend, filled once from the environment (the PARRAY_* variables below) and
// then from the CLI's `--tune key=value`, read by the library through
// cpu_tuning(), gpu_tuning() and multigpu_tuning(). Every key has a default
// that is what the library does without it; `parray list` prints them all
// with their values and docs/tuning.md explains each.
#pragma once

#include <string>
#include <vector>

namespace parray {

// A choice the library makes by its own rule unless told: automatic, or
// forced off / on.
enum class Choice { automatic, off, on };

// One KC x MC [x NC] candidate of cpu.candidates (0: the rule's size).
struct BlockCandidate {
  long kc = 0, mc = 0, nc = 0;
};

// parray's CPU GEMM (src/cpu/gemm).
struct CpuTuning {
  // cpu.isa, PARRAY_CPU_ISA: the microkernel of parray-cpu (the widest this CPU runs).
  enum class Isa { automatic, portable, avx2, avx512 } isa = Isa::automatic;
  // cpu.blocking, PARRAY_CPU_BLOCKING: which row of the block-size table
  // (src/cpu/gemm/config_table.hpp) applies; l1: the cache-size rule, l2:
  // this CPU's L2-rule row (or the AVX-512 one where it has none).
  enum class Blocking { automatic, l1, l2 } blocking = Blocking::automatic;
  // cpu.kc / cpu.mc, PARRAY_CPU_KC / PARRAY_CPU_MC: the packed path's KC (the
  // direct path's K block too) and MC instead of the table's (0: the table's).
  long kc = 0, mc = 0;
  // cpu.direct, PARRAY_CPU_DIRECT: the direct (unpacked) path where it applies.
  Choice direct = Choice::automatic;
  // cpu.stream, PARRAY_CPU_STREAM: non-temporal stores of C on the direct path.
  Choice stream = Choice::automatic;
  // cpu.order, PARRAY_CPU_ORDER: the packed path's tile order.
  enum class Order { automatic, rows, columns } order = Order::automatic;
  // cpu.candidates, PARRAY_CPU_TUNING: one extra implementation per entry,
  // parray-cpu with those block sizes (timed against each other in one process).
  std::vector<BlockCandidate> candidates;
};

// The single-GPU kernels (src/cuda).
struct GpuTuning {
  // gpu.best_shape, PARRAY_CUDA_BEST_SHAPE: one of cuda-12-best's candidate
  // tile shapes (gemm/12_best_candidates.cu) instead of the chosen ones (-1: chosen).
  int best_shape = -1;
  // gpu.best_group, PARRAY_CUDA_BEST_GROUP: tiles per group of the tile order (1: row by row).
  int best_group = 8;
  // gpu.best_splits, PARRAY_CUDA_BEST_SPLITS: a fixed split of K (0: chosen).
  int best_splits = 0;
  // gpu.best_streamk, PARRAY_CUDA_BEST_STREAMK: the stream-K tail planned for
  // this many block slots whatever the grid (-1: planned from the GPU, 0: off).
  int best_streamk = -1;
  // gpu.best_wide, PARRAY_CUDA_BEST_WIDE: the 128 x 256 tile wherever A runs along k.
  bool best_wide = false;
  // gpu.3xtf32_small, PARRAY_3XTF32_SMALL: cuda-13-3xtf32's small parts (false:
  // one TF32 product, which fails the FP32 check; for showing that it does).
  bool tf32x3_small = true;
  // gpu.wgmma_a_registers, PARRAY_WGMMA_A_REGISTERS: step 15 reads A where
  // it lies (row- or column-major, or blocks holding whole tiles) and splits
  // it in registers, wgmma's register operand: 1 wherever A allows, 0 never
  // (A through the split pass's copy, as B), -1 (auto) for TF32 always and
  // for FP32 accuracy where N <= 2048.
  int wgmma_a_registers = -1;
  // gpu.wgmma_narrow, PARRAY_WGMMA_NARROW: step 15 in 128 x 64 tiles (wgmma
  // N = 64) where C has at most 64 columns, so that a thin C does not leave
  // most of a 128- or 256-wide tile's products idle. Off until measured.
  bool wgmma_narrow = false;
  // gpu.wgmma_read_early, PARRAY_WGMMA_READ_EARLY: step 14's TF32 kernel
  // (cuda-14-tf32) issues a slot's wgmma before waiting for its copies: a
  // pipeline broken on purpose, wrong results; for showing that the checks
  // catch it.
  bool wgmma_read_early = false;
  // gpu.wgmma_cluster, PARRAY_WGMMA_CLUSTER: step 15's blocks in clusters of
  // this many (1 or 2) along M, each k-tile of B copied once per cluster and
  // multicast to its blocks by TMA (A from the pass, or TF32's row-major A in
  // place); 0: auto (pairs for FP32 accuracy where M, N >= 8192).
  int wgmma_cluster = 0;
  // gpu.gemv_tree_slices, PARRAY_GEMV_TREE_SLICES: slices per group of GEMV
  // step 6's two-level sum of its partial sums (0: auto, one level for short
  // chains, else 16; a count at least the slices': one level).
  int gemv_tree_slices = 0;
  // gpu.dist_rank, PARRAY_DIST_RANK: the sorted distances of one query to at
  // most 1024 vectors placed by rank over several blocks (auto, 1) or sorted
  // by one block's bitonic network (0).
  Choice dist_rank = Choice::automatic;
  // gpu.gemv_column_slices, PARRAY_GEMV_COLUMN_SLICES: slices a SM of GEMV
  // step 6's column-major kernel (0: auto, 4).
  int gemv_column_slices = 0;
  // gpu.gemv_tall_cols, PARRAY_GEMV_TALL_COLS: column-major A of more than
  // 256 * kVec rows too few to fill the GPU by 64-row blocks: step 6's sliced
  // one-kernel block with a ticket per row block (auto, 1) or step 5's kernels (0).
  Choice gemv_tall_cols = Choice::automatic;
  // gpu.dmma_tile, PARRAY_DMMA_TILE: step 22's tile (0: auto, 1); 1: 128 x
  // 128 x 32 in 3 stages, one block an SM; 2: 128 x 64 x 16 in 4 stages, two
  // blocks an SM; 3: tile 1, each warp releasing a slot on an mbarrier
  // instead of a __syncthreads a k-tile.
  int dmma_tile = 0;
  // gpu.knn_gemm, PARRAY_KNN_GEMM: the GEMM of the GPU k-NN's filter ("": the
  // default GPU GEMM asked for TF32 products).
  std::string knn_gemm;
  // gpu.speed_table, PARRAY_GPU_SPEED_TABLE: the CSV of `parray tune` (a bench
  // gemm table) the default GPU GEMM chooses its kernel from ("": built-in).
  std::string speed_table;
};

// Several GPUs: the multi-GPU GEMMs (src/cuda/multigpu) and the multilevel
// splits (src/cuda/multilevel).
struct MultiGpuTuning {
  // multigpu.pcie_gbs, PARRAY_MULTIGPU_PCIE_GBS: the host link's rate in GB/s
  // each way that the out-of-core model plans with.
  double pcie_gbs = 40;
  // multigpu.trace, PARRAY_MULTIGPU_TRACE: per-GPU timings of the out-of-core GEMM in its Stats.
  bool trace = false;
  // multilevel.ksplit_tail, PARRAY_ML_KSPLIT_TAIL: the K split's stream-K tail
  // (0: none, 1: shared out whatever its size, 2: where it is small enough).
  int ksplit_tail = 2;
  // multilevel.ksplit_at, PARRAY_ML_KSPLIT_AT: column-major A in the K split's
  // parts (0: never, 1: where the wide tile fits, 2: always).
  int ksplit_at = 1;
  // multilevel.ksplit_sum, PARRAY_ML_KSPLIT_SUM: how the K split's parts are
  // summed (true: added into C atomically; false: a deterministic pass).
  bool ksplit_adds = true;
  // multilevel.driver, PARRAY_ML_DRIVER: the parts on device operands are
  // enqueued in turn by the calling thread (true) or from a thread each (false).
  bool parts_in_turn = true;
};

// The tuning in force. The first call of any of them reads the environment;
// a bad value there throws parray::Error (`PARRAY_CPU_ORDER: unknown order ...`).
const CpuTuning& cpu_tuning();
const GpuTuning& gpu_tuning();
const MultiGpuTuning& multigpu_tuning();

// Reads the environment now (if not yet done), so that its errors come
// before any work: the CLI calls it first.
void load_tuning();

// Sets one key from text, after the environment: `--tune key=value`. Throws
// parray::Error for an unknown key or a bad value; `source` names where the
// value came from in that message (default: "--tune KEY"). Not to be called
// while a GEMM runs.
void set_tuning(const std::string& key, const std::string& value, const std::string& source = "");
// The same from "key=value".
void set_tuning(const std::string& key_value);

// One key of the registry with its value now, for `parray list` and the docs.
struct TuningKeyInfo {
  std::string key, env, backend, default_value, value, description;
};
std::vector<TuningKeyInfo> tuning_keys();

}  // namespace parray
