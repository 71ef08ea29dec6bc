// The default GPU GEMM's planner: for one call — M, N, K, the operands'
// layouts, the precision asked — and one GPU, the kernel, tile, K split and
// cluster with the least predicted time among the kernels that deliver that
// precision. A cost model, not a table of shapes: each kernel is described by
// what it costs (KernelCosts: its tile, its main loop's share of the SM's
// peak, the passes over its operands before and after), the GPU by its
// properties (GpuModel: SMs, clock, DRAM bandwidth); the time of a plan is
// the waves of tiles on the SMs, the passes over memory and the launches.
// docs/dispatch.md explains the model and gives its constants' sources.
//
// Plain C++ (no CUDA): the CPU tests check the choices on the host, and
// `parray plan` prints them for any GPU model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/precision.hpp"

namespace parray {

// What the planner knows of a GPU.
struct GpuModel {
  std::string name;
  int sms = 0;
  double clock_ghz = 0;       // the SM clock under load
  double dram_gbs = 0;        // DRAM bandwidth a streaming kernel reaches, GB/s
  double launch_us = 0;       // the GPU's gap between two dependent kernels
  bool tensor_kernels = false;  // steps 15's wgmma/TMA kernels run here (Hopper, sm_90a build)

  // Peak dense rate of one SM in FLOP per microsecond: CUDA cores (FP32 FMA)
  // or the tensor cores for inputs of precision p (TF32, BF16, FP16).
  double sm_flops_per_us(Precision p) const;

  // The models `parray plan --gpu` offers without a GPU: an H100 SXM and an H200.
  static GpuModel h100();
  static GpuModel h200();
};

// The kernels the planner chooses among (FP32 data in device memory).
enum class PlanKernel {
  gemv,           // M = 1 or N = 1: the GEMV (bandwidth-bound)
  few_vectors,    // M or N <= 8: GEMV step 7, A read once for all the columns (bandwidth-bound)
  short_k,        // K <= 32: step 17, C written once at the bandwidth (its traffic, not its arithmetic)
  cuda_small,     // step 12's 64 x 64 tile on the CUDA cores: small problems
  cuda_best,      // step 12: 128 x 128 (128 x 256 where it fills the GPU), split-K, stream-K tail
  cuda_thin,      // step 12's thin tiles (thin_tile): C of 9-64 columns or rows, split-K, stream-K tail
  tc_3xtf32,      // step 15, FP32-accurate: three TF32 products of split operands
  tc_tf32,        // step 15, TF32
  tc_bf16,        // step 15, inputs rounded to BF16
  tc_fp16,        // step 15, inputs rounded to FP16
};

const char* plan_kernel_name(PlanKernel k);

// What one kernel costs, in the model's terms.
struct KernelCosts {
  PlanKernel kernel;
  const char* impl;        // the registry's implementation that runs it
  Precision delivers;      // the accuracy of its products
  Precision rate;          // the SM rate its main loop runs at (fp32: CUDA cores)
  int bm, bn, bk;          // tile and k-step
  int blocks_per_sm;       // blocks sharing one SM
  double efficiency;       // the main loop's share of the SM's peak at that rate
  int products;            // products per k-step (3xTF32: three)
  int fixed_steps;         // a tile's first copies and epilogue, in k-steps
  double pass_bytes_a;     // bytes moved per element of A before the product (split/round pass)
  double pass_bytes_b;     // the same for B
  int launches;            // kernels launched (passes, product)
  double host_us;          // host work per call beyond a launch (tensor maps, workspace look-ups)
  double alone;            // a lone block's rate against a full SM's, where the grid leaves SMs idle
  bool persistent;         // one block per SM walking the tiles (step 15)
  bool needs_tensor;       // only where GpuModel::tensor_kernels
};

// The classes' bounds: C of at most kFewVectorsMax columns (rows) for GEMV
// step 7 (src/cuda/gemv/06_07_launch.hpp), K of at most kShortKMax for step
// 17 (src/cuda/gemm/17_short_k.cuh).
constexpr index_t kFewVectorsMax = 8;
constexpr index_t kShortKMax = 32;

// Step 12's thin tiles: for C of at most kThinMax columns (rows), a tile of
// 256 rows (columns) and 16, 32 or 64 columns (rows), the fewest that hold
// C's, so that a narrow C does not leave most of a 128-wide tile idle.
constexpr index_t kThinMax = 64;
struct ThinTile {
  int bm, bn, bk;
};
ThinTile thin_tile(index_t m, index_t n);

// Every kernel's costs: the one table the planner, `parray plan` and
// docs/dispatch.md read.
const std::vector<KernelCosts>& kernel_costs();

// A call as the planner sees it.
struct PlanProblem {
  index_t m = 0, n = 0, k = 0;
  Precision precision = Precision::fp32;  // the least accuracy asked
  bool a_unit_stride = true;  // A row- or column-major (the 64 x 64 tile needs it)
  bool b_unit_stride = true;
  bool gemv_ok = true;        // the vector operand and C are contiguous (GEMV takes M = 1 / N = 1)
  bool few_ok = true;         // all three strided, the many-row operand along k or m (GEMV step 7)
  bool all_strided = true;    // A, B and C strided layouts (step 17)
  // Step 15 reads A where it lies: row-major (its copy engine, or its
  // producer threads where the rows are not 16 bytes apart), or column-major
  // with its columns 16-byte aligned; otherwise A goes through the split
  // pass as B does.
  bool a_in_place = true;
  // Of those, a row-major A with rows off the 16-byte grid: step 15's
  // producer threads copy it where that costs less than the pass
  // (cuda::a_threads_pay).
  bool a_by_threads = false;
};

struct MatrixLayout;

// Sets p.a_in_place and p.a_by_threads for an A of layout `a` whose first
// element is (base_aligned) or is not on a 16-byte boundary.
void set_step15_a(PlanProblem& p, const MatrixLayout& a, bool base_aligned);

struct PlanOption {
  PlanKernel kernel;
  std::string impl;
  Precision delivers;
  int bm = 0, bn = 0;   // tile (0 for GEMV)
  int splits = 1;       // K split
  long long tiles = 0;  // tiles of C
  double waves = 0;     // tiles (x splits) over the GPU's block slots
  double predicted_us = 0;
  std::string note;     // why not, where it cannot run ("" when it can)
};

struct GemmPlan {
  PlanOption chosen;
  std::vector<PlanOption> options;  // every kernel considered, chosen included
};

// The plan of a call on a GPU: every kernel that delivers at least the
// precision asked and is no slower, ranked by predicted time. Kernels that
// deliver less than asked are listed with the reason and never chosen.
GemmPlan plan_gemm(const GpuModel& gpu, const PlanProblem& p);

// A strided batch of products of one shape, as the batch planner sees it.
struct BatchProblem {
  index_t batch = 1, m = 0, n = 0, k = 0;
  int in_bytes = 4, out_bytes = 4;      // an element of A and B, of C
  bool reads_c = false;                 // beta != 0
  bool broadcast_a = false, broadcast_b = false;
};

// Step 18 on a batch: one launch, a block per T x T tile of a matrix, FP32
// on the CUDA cores; the time of whichever bounds it, DRAM (every matrix
// read once, C written once) or the CUDA cores on the padded tiles, each at
// the share step 18 reaches of it.
struct BatchSmallPlan {
  int tile = 0;  // T: 32 where M and N fit it, else 64
  double predicted_us = 0;
};
BatchSmallPlan plan_batched_small(const GpuModel& gpu, const BatchProblem& p);

// Step 16's batch on 16-bit data: one persistent launch over batch x tiles of
// 128 x 256, rounds of units on the SMs (each the padded tile's products at
// 70 % of the tensor cores' peak and a fixed time), or DRAM where it bounds.
double predict_batched_16bit_us(const GpuModel& gpu, const BatchProblem& p);

// Step 15's batch on FP32 data with the tensor-core kernel of `kernel`
// (TF32, BF16, FP16; otherwise 3xTF32): the split pass over B (and A for the
// 16-bit formats), then one persistent launch over batch x tiles of 128 x BN
// (256; 128 for 3xTF32), rounds of units on the SMs as step 16's batch, or
// DRAM where it bounds.
double predict_batched_tensor_us(const GpuModel& gpu, const BatchProblem& p, Precision kernel);

// The host's time per call of the default GEMM, a little under what `parray
// bench calls` measures (docs/dispatch.md, "Host time and threads"): products
// run in turn cost at least this each.
constexpr double kHostUsPerCall = 5.0;

// The K split a tile kernel of `tiles` tiles of `kts` k-steps takes on
// `slots` block slots: 1 when the tiles fill the slots, else the split with
// the least estimated time, each part >= 4 k-steps, at most max_splits parts.
// Its partial products go to a workspace and are summed in a fixed order
// (the result does not depend on timing).
int plan_k_splits(long long tiles, int kts, long long slots, index_t m, index_t n, double step_us,
                  double dram_bytes_per_us, double launch_us, int max_splits = 16);

}  // namespace parray
