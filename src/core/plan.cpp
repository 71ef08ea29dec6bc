// The default GPU GEMM's cost model (include/parray/plan.hpp,
// docs/dispatch.md). Host code only: the GPU backend feeds it the device's
// properties, the tests and `parray plan` any model.
#include "parray/plan.hpp"

#include "parray/cuda/wgmma_plan.hpp"
#include "parray/matrix.hpp"

#include <algorithm>
#include <cmath>

namespace parray {

namespace {

// FLOP per clock of one Hopper SM: 128 FP32 FMA lanes; dense tensor cores at
// 1024 TF32 and 2048 BF16/FP16 multiply-adds per clock.
constexpr double kFp32FlopsPerClock = 2.0 * 128;
constexpr double kTf32FlopsPerClock = 2.0 * 1024;
constexpr double kHalfFlopsPerClock = 2.0 * 2048;
// A TF32 copy of an FP32 operand: read 4 bytes, write 4.
constexpr double kTf32PassBytes = 8;

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

double GpuModel::sm_flops_per_us(Precision p) const {
  const double per_clock = p == Precision::tf32                            ? kTf32FlopsPerClock
                           : p == Precision::bf16 || p == Precision::fp16 ? kHalfFlopsPerClock
                                                                          : kFp32FlopsPerClock;
  return per_clock * clock_ghz * 1e3;
}

// Clocks under a sustained GEMM load and the bandwidth a streaming copy
// reaches (docs/perf-notes.md).
GpuModel GpuModel::h100() { return {"H100 SXM (model)", 132, 1.755, 3000, 2.0, true}; }
GpuModel GpuModel::h200() { return {"H200 (model)", 132, 1.755, 4300, 2.0, true}; }

const char* plan_kernel_name(PlanKernel k) {
  switch (k) {
    case PlanKernel::gemv: return "gemv";
    case PlanKernel::few_vectors: return "few-vectors";
    case PlanKernel::short_k: return "short-k";
    case PlanKernel::cuda_small: return "cuda-cores-64x64";
    case PlanKernel::cuda_best: return "cuda-cores";
    case PlanKernel::cuda_thin: return "cuda-cores-thin";
    case PlanKernel::tc_3xtf32: return "tensor-3xtf32";
    case PlanKernel::tc_tf32: return "tensor-tf32";
    case PlanKernel::tc_bf16: return "tensor-bf16";
    case PlanKernel::tc_fp16: return "tensor-fp16";
  }
  return "?";
}

// The main loops' efficiencies are what steps 12 and 15 reach on large
// squares, the 64 x 64 tile's its share at 1024^3 and below (docs/dispatch.md
// gives the figures and their files). Passes: the
// FP32-accurate kernel splits A and B into TF32 big and small parts (read 4,
// write 8 bytes an element; A is split in registers instead where N <= 2048,
// see gpu.wgmma_a_registers), TF32 copies B (4 + 4) and reads A in place, the
// 16-bit kernels round both (4 + 2). The tensor-core kernels' host work and
// fixed cost per call is set from products of a short K and a large C, which
// a smaller one predicted well below their time (docs/dispatch.md).
const std::vector<KernelCosts>& kernel_costs() {
  static const std::vector<KernelCosts> table = {
      // kernel, impl, delivers, rate, bm, bn, bk, blocks/SM, efficiency, products, fixed steps,
      // pass bytes of A and B, launches, host us, lone block's rate, persistent, tensor cores
      {PlanKernel::gemv, "gemv-gpu-06-shapes", Precision::fp32, Precision::fp32, 0, 0, 0, 0, 0.92, 1, 0, 0, 0, 1, 0, 1,
       false, false},
      {PlanKernel::few_vectors, "gemv-07-few-vectors", Precision::fp32, Precision::fp32, 0, 0, 0, 0, 0.85, 1, 0, 0, 0,
       1, 0, 1, false, false},
      {PlanKernel::short_k, "cuda-17-short-k", Precision::fp32, Precision::fp32, 64, 128, 32, 4, 0.5, 1, 0, 0, 0, 1,
       0, 1, false, false},
      {PlanKernel::cuda_small, "cuda-12-best", Precision::fp32, Precision::fp32, 64, 64, 16, 4, 0.55, 1, 3, 0, 0, 1, 0,
       0.35, false, false},
      {PlanKernel::cuda_best, "cuda-12-best", Precision::fp32, Precision::fp32, 128, 128, 16, 2, 0.79, 1, 3, 0, 0, 1,
       0, 0.6, false, false},
      // the thin tile's bm, bn, bk: thin_tile's for the call; its efficiency
      // fitted to gpu-shapes' thin-tile rows (docs/dispatch.md)
      {PlanKernel::cuda_thin, "cuda-12-best", Precision::fp32, Precision::fp32, 256, 32, 16, 2, 0.33, 1, 3, 0, 0, 1,
       0, 0.5, false, false},
      {PlanKernel::tc_3xtf32, "cuda-15-3xtf32", Precision::fp32, Precision::tf32, 128, 128, 32, 1, 0.75, 3, 2, 12, 12,
       2, 10, 1, true, true},
      {PlanKernel::tc_tf32, "cuda-15-tf32", Precision::tf32, Precision::tf32, 128, 256, 32, 1, 0.76, 1, 2, 0, 8, 2, 10,
       1, true, true},
      {PlanKernel::tc_bf16, "cuda-15-bf16", Precision::bf16, Precision::bf16, 128, 256, 64, 1, 0.72, 1, 2, 6, 6, 2, 10,
       1, true, true},
      {PlanKernel::tc_fp16, "cuda-15-fp16", Precision::fp16, Precision::fp16, 128, 256, 64, 1, 0.72, 1, 2, 6, 6, 2, 10,
       1, true, true},
  };
  return table;
}

ThinTile thin_tile(index_t m, index_t n) {
  const index_t narrow = std::min(m, n);
  const int w = narrow <= 16 ? 16 : narrow <= 32 ? 32 : 64;
  const int bk = w == 16 ? 32 : 16;  // a 16-wide tile's copies need 32 k's to occupy its threads
  return n <= m ? ThinTile{256, w, bk} : ThinTile{w, 256, bk};
}

int plan_k_splits(long long tiles, int kts, long long slots, index_t m, index_t n, double step_us,
                  double dram_bytes_per_us, double launch_us, int max_splits) {
  constexpr int kMinSteps = 4;
  if (slots <= 0 || tiles >= slots) return 1;
  // Waves of tiles x parts, each part's k-steps, plus the parts written to
  // the workspace, read back once and C written (the sum's own launch).
  auto cost = [&](int s) {
    const double waves = double(ceil_div(tiles * s, slots)), steps = double(ceil_div(kts, s));
    const double sum = s > 1 ? double(2 * s + 1) * double(m) * double(n) * 4.0 / dram_bytes_per_us + launch_us : 0.0;
    return waves * steps * step_us + sum;
  };
  int best = 1;
  double best_cost = cost(1);
  for (int s = 2; s <= max_splits && ceil_div(kts, s) >= kMinSteps; ++s)
    if (const double c = cost(s); c < best_cost) best = s, best_cost = c;
  return best;
}

namespace {

// Why kernel `kc` cannot take this call here, or "".
std::string cannot(const GpuModel& gpu, const PlanProblem& p, const KernelCosts& kc) {
  if (!meets(kc.delivers, p.precision))
    return std::string("delivers ") + precision_name(kc.delivers) + ", the call asks for " + precision_name(p.precision);
  if (kc.needs_tensor && !gpu.tensor_kernels) return "needs a Hopper GPU and an sm_90a build";
  if (kc.kernel == PlanKernel::gemv && !(p.m == 1 || p.n == 1)) return "M and N both > 1";
  if (kc.kernel == PlanKernel::gemv && !p.gemv_ok) return "the vector or C is not contiguous";
  if (kc.kernel == PlanKernel::few_vectors && std::min(p.m, p.n) > kFewVectorsMax) return "M and N both > 8";
  if (kc.kernel == PlanKernel::few_vectors && !p.few_ok) return "an operand is not strided along k or m";
  if (kc.kernel == PlanKernel::short_k && p.k > kShortKMax) return "K > 32";
  if (kc.kernel == PlanKernel::short_k && !p.all_strided) return "an operand is not strided";
  if (kc.kernel == PlanKernel::short_k && std::min(p.m, p.n) <= kFewVectorsMax && (p.gemv_ok || p.few_ok))
    return "M or N <= 8: the GEMV kernels read the long operand once";  // a 64 x 128 tile of 1-8 rows idles
  if (kc.kernel == PlanKernel::cuda_small && !(p.a_unit_stride && p.b_unit_stride))
    return "the 64 x 64 tile takes row- or column-major A and B";
  if (kc.kernel == PlanKernel::cuda_thin && std::min(p.m, p.n) > kThinMax) return "M and N both > 64";
  if (kc.kernel == PlanKernel::cuda_thin && std::min(p.m, p.n) <= kFewVectorsMax && (p.gemv_ok || p.few_ok))
    return "M or N <= 8: the GEMV kernels read the long operand once";
  if (kc.kernel == PlanKernel::cuda_thin && !(p.a_unit_stride && p.b_unit_stride))
    return "the thin tiles take row- or column-major A and B";
  return "";
}

// The time of a bandwidth-bound GEMV: the matrix read once.
PlanOption gemv_option(const GpuModel& gpu, const PlanProblem& p, const KernelCosts& kc) {
  PlanOption o{kc.kernel, kc.impl, kc.delivers, 0, 0, 1, 0, 0, 0, ""};
  const double matrix = 4.0 * double(p.m == 1 ? p.k * p.n : p.m * p.k);
  const double vectors = 4.0 * double(p.m + p.n + p.k);
  o.predicted_us = gpu.launch_us * (kc.launches + 1) + kc.host_us + (matrix + vectors) / (gpu.dram_gbs * 1e3 * kc.efficiency);
  return o;
}

// GEMV step 7: the many-row operand read once (its few columns' sums in
// registers), never faster than the CUDA cores at half their peak; a sliced
// K adds the last block's sum.
PlanOption few_option(const GpuModel& gpu, const PlanProblem& p, const KernelCosts& kc) {
  PlanOption o{kc.kernel, kc.impl, kc.delivers, 0, 0, 1, 0, 0, 0, ""};
  const double rows = double(std::max(p.m, p.n)), cols = double(std::min(p.m, p.n));
  const double bytes = 4.0 * (rows * double(p.k) + double(p.k) * cols + 2.0 * rows * cols);
  const double flops = 2.0 * rows * cols * double(p.k);
  const double compute_us = flops / (gpu.sm_flops_per_us(Precision::fp32) * gpu.sms * 0.5);
  o.predicted_us = gpu.launch_us * (kc.launches + 1) + std::max(bytes / (gpu.dram_gbs * 1e3 * kc.efficiency), compute_us);
  return o;
}

// Step 17 (K <= 32): C's traffic and the panels', never faster than the
// CUDA cores at the kernel's efficiency (a k-loop of at most 32 steps after
// the panels' copy).
PlanOption short_k_option(const GpuModel& gpu, const PlanProblem& p, const KernelCosts& kc) {
  PlanOption o{kc.kernel, kc.impl, kc.delivers, kc.bm, kc.bn, 1, 0, 0, 0, ""};
  o.tiles = ceil_div(p.m, kc.bm) * ceil_div(p.n, kc.bn);
  o.waves = double(o.tiles) / (double(gpu.sms) * kc.blocks_per_sm);
  const double bytes = 4.0 * double(p.m * p.k + p.k * p.n + 2 * p.m * p.n);
  const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
  const double compute_us = flops / (gpu.sm_flops_per_us(Precision::fp32) * gpu.sms * kc.efficiency);
  o.predicted_us = gpu.launch_us * (kc.launches + 1) + std::max(bytes / (gpu.dram_gbs * 1e3), compute_us);
  return o;
}

// The time of a tile kernel: its passes, then the waves of (split) tiles on
// the block slots, never faster than the operands' compulsory traffic.
PlanOption tile_option(const GpuModel& gpu, const PlanProblem& p, const KernelCosts& kc) {
  PlanOption o{kc.kernel, kc.impl, kc.delivers, kc.bm, kc.bn, 1, 0, 0, 0, ""};
  const double bw = gpu.dram_gbs * 1e3;  // bytes per microsecond
  o.tiles = ceil_div(p.m, kc.bm) * ceil_div(p.n, kc.bn);
  const int kts = int(std::min<long long>(ceil_div(p.k, kc.bk), 1ll << 30));
  const long long slots = static_cast<long long>(gpu.sms) * kc.blocks_per_sm;
  // One k-step of one block, its SM shared with blocks_per_sm - 1 others,
  // or alone where the grid leaves SMs idle (a lone block hides less latency).
  const double sm_rate = gpu.sm_flops_per_us(kc.rate) * kc.efficiency;
  const double step_flops = 2.0 * kc.bm * kc.bn * kc.bk * kc.products;
  const double full_step_us = step_flops * kc.blocks_per_sm / sm_rate, lone_step_us = step_flops / (sm_rate * kc.alone);
  cuda::WgmmaWork work;
  const double wgmma_step_us = cuda::wgmma_step_us(kc.rate == Precision::tf32 ? 4 : 2, kc.bm, kc.bn, kc.bk, kc.products);
  if (kc.persistent) {  // step 15 plans its own split: the same rule, so the prediction is of what runs
    work = cuda::plan_wgmma_work(p.m, p.n, p.k, kc.bm, kc.bn, kc.bk, gpu.sms, wgmma_step_us);
    o.splits = work.splits;
  } else {
    o.splits = plan_k_splits(o.tiles, kts, slots, p.m, p.n, std::min(full_step_us, lone_step_us), bw, gpu.launch_us);
  }
  const long long units = o.tiles * o.splits;
  o.waves = double(units) / double(slots);
  const double step_us = units <= gpu.sms ? lone_step_us : full_step_us;
  const double steps = double(ceil_div(kts, o.splits) + kc.fixed_steps);
  const double main_us = double(ceil_div(units, slots)) * steps * step_us;
  const double traffic = 4.0 * double(p.m * p.k + p.k * p.n + 2 * p.m * p.n);
  // Step 15 reads A in place where it can (PlanProblem::a_in_place): TF32
  // always, FP32 accuracy where N <= 2048, splitting A in registers
  // (gpu.wgmma_a_registers). Else A's pass: TF32 reads and writes it once (8
  // bytes an element), FP32 accuracy writes its two parts. Rows off TMA's
  // grid are copied by the producer's threads where that costs less than the
  // pass (a_threads_pay, as the launcher decides).
  const bool registers_a = (kc.kernel == PlanKernel::tc_3xtf32 && p.n <= 2048 && p.a_unit_stride) ||
                           kc.kernel == PlanKernel::tc_tf32;
  const double a_pass_bytes = kc.kernel == PlanKernel::tc_tf32 ? kTf32PassBytes : kc.pass_bytes_a;
  double a_us = a_pass_bytes * double(p.m * p.k) / bw;
  if (registers_a && p.a_in_place)
    a_us = p.a_by_threads ? std::min(a_us, cuda::a_threads_extra_us(work, gpu.sms, wgmma_step_us)) : 0.0;
  const double passes_us = a_us + kc.pass_bytes_b * double(p.k * p.n) / bw;
  const double sum = o.splits > 1 ? double(2 * o.splits + 1) * double(p.m * p.n) * 4.0 / bw + gpu.launch_us : 0.0;
  o.predicted_us = gpu.launch_us * (kc.launches + 1) + kc.host_us + passes_us + std::max(main_us, traffic / bw) + sum;
  return o;
}

// The thin tile the call takes, as a tile kernel of that shape.
PlanOption thin_option(const GpuModel& gpu, const PlanProblem& p, const KernelCosts& kc) {
  KernelCosts shaped = kc;
  const ThinTile t = thin_tile(p.m, p.n);
  shaped.bm = t.bm, shaped.bn = t.bn, shaped.bk = t.bk;
  return tile_option(gpu, p, shaped);
}

}  // namespace

namespace {

// Bytes a batch moves through DRAM: each stored matrix read once, C written
// (and read, for beta != 0) once.
double batch_bytes(const BatchProblem& p) {
  const double a = double(p.broadcast_a ? 1 : p.batch) * double(p.m) * double(p.k);
  const double b = double(p.broadcast_b ? 1 : p.batch) * double(p.k) * double(p.n);
  const double c = double(p.batch) * double(p.m) * double(p.n) * (p.reads_c ? 2 : 1);
  return p.in_bytes * (a + b) + p.out_bytes * c;
}

}  // namespace

// Step 18's shares of DRAM bandwidth and of the CUDA cores' peak, fitted to
// its H100 figures (docs/dispatch.md): a stack of 32^3 moves its bytes at
// 0.35 of the model's bandwidth, a stack of 512^3 runs at 0.3 of the peak.
constexpr double kSmallBatchDram = 0.35, kSmallBatchPeak = 0.3;
// Step 16's batch: its share of DRAM bandwidth, of the tensor cores' peak in
// the main loop, and a work unit's fixed time (its first copies and the
// epilogue of a 128 x 256 tile), fitted to its H100 figures from 32^3 to
// 2048 x 64 x 2048 stacks.
constexpr double kBatch16Dram = 0.6, kBatch16Peak = 0.7, kBatch16UnitUs = 7.0;

BatchSmallPlan plan_batched_small(const GpuModel& gpu, const BatchProblem& p) {
  BatchSmallPlan plan;
  plan.tile = p.m <= 32 && p.n <= 32 ? 32 : 64;
  const double padded = double(ceil_div(p.m, plan.tile) * plan.tile) * double(ceil_div(p.n, plan.tile) * plan.tile) *
                        double(ceil_div(p.k, 32) * 32);
  const double peak = gpu.sm_flops_per_us(Precision::fp32) * gpu.sms * kSmallBatchPeak;
  const double compute_us = 2.0 * double(p.batch) * padded / peak;
  plan.predicted_us = gpu.launch_us + std::max(batch_bytes(p) / (gpu.dram_gbs * 1e3 * kSmallBatchDram), compute_us);
  return plan;
}

double predict_batched_16bit_us(const GpuModel& gpu, const BatchProblem& p) {
  const long long units = p.batch * ceil_div(p.m, 128) * ceil_div(p.n, 256);
  const double unit_flops = 2.0 * 128 * 256 * double(ceil_div(p.k, 64) * 64);
  const double unit_us = unit_flops / (gpu.sm_flops_per_us(Precision::bf16) * kBatch16Peak) + kBatch16UnitUs;
  const double compute_us = double(ceil_div(units, gpu.sms)) * unit_us;
  return gpu.launch_us + std::max(batch_bytes(p) / (gpu.dram_gbs * 1e3 * kBatch16Dram), compute_us);
}

// Step 15's batch: its share of DRAM bandwidth, of the tensor cores' peak,
// and a work unit's fixed time (its first copies and the epilogue, which the
// persistent ring overlaps in part with the next unit's loads), fitted to
// its H100 figures on stacks from 32^3 to 2048 x 64 x 2048 (docs/dispatch.md).
constexpr double kBatch15Dram = 0.8, kBatch15Peak = 0.6, kBatch15UnitUs = 1.5;

double predict_batched_tensor_us(const GpuModel& gpu, const BatchProblem& p, Precision kernel) {
  const bool half = kernel == Precision::bf16 || kernel == Precision::fp16, three = !half && kernel != Precision::tf32;
  const int bn = three ? 128 : 256, bk = half ? 64 : 32, products = three ? 3 : 1;
  const double copy_bytes = (half ? 2.0 : 4.0) * (three ? 2 : 1);  // per element of a copy
  const double a = double(p.broadcast_a ? 1 : p.batch) * double(p.m) * double(p.k);
  const double b = double(p.broadcast_b ? 1 : p.batch) * double(p.k) * double(p.n);
  const double c = double(p.batch) * double(p.m) * double(p.n) * (p.reads_c ? 2 : 1);
  const double bw = gpu.dram_gbs * 1e3 * kBatch15Dram;
  // The split pass: B, and A for the 16-bit formats (TF32 reads A in place).
  const double passed = half ? a + b : b;
  const double pass_us = gpu.launch_us * (half ? 2 : 1) + passed * (p.in_bytes + copy_bytes) / bw;
  const double kernel_bytes = a * (half ? 2.0 : p.in_bytes) + b * copy_bytes + c * p.out_bytes;
  const long long units = p.batch * ceil_div(p.m, 128) * ceil_div(p.n, bn);
  const double unit_flops = 2.0 * 128 * bn * double(ceil_div(p.k, bk) * bk) * products;
  const double unit_us = unit_flops / (gpu.sm_flops_per_us(half ? Precision::bf16 : Precision::tf32) * kBatch15Peak) +
                         kBatch15UnitUs;
  const double compute_us = double(ceil_div(units, gpu.sms)) * unit_us;
  return pass_us + gpu.launch_us + std::max(kernel_bytes / bw, compute_us);
}

void set_step15_a(PlanProblem& p, const MatrixLayout& a, bool base_aligned) {
  p.a_in_place = p.a_by_threads = false;
  if (!a.is_strided() || a.rows.size == 0 || a.cols.size == 0) return;
  if (a.cols.stride[0] == 1) {  // row-major: by TMA where its rows are 16 bytes apart, else by the threads
    p.a_in_place = true;
    p.a_by_threads = !(base_aligned && (a.rows.size == 1 || a.rows.stride[0] % 4 == 0));
    return;
  }
  p.a_in_place = a.rows.stride[0] == 1 && base_aligned && (a.cols.size == 1 || a.cols.stride[0] % 4 == 0);
}

GemmPlan plan_gemm(const GpuModel& gpu, const PlanProblem& p) {
  if (p.m < 1 || p.n < 1 || p.k < 1) throw Error("plan: M, N and K must be >= 1");
  if (gpu.sms < 1 || gpu.clock_ghz <= 0 || gpu.dram_gbs <= 0) throw Error("plan: the GPU model '" + gpu.name + "' is incomplete");
  GemmPlan plan;
  for (const KernelCosts& kc : kernel_costs()) {
    PlanOption o = kc.kernel == PlanKernel::gemv          ? gemv_option(gpu, p, kc)
                   : kc.kernel == PlanKernel::few_vectors ? few_option(gpu, p, kc)
                   : kc.kernel == PlanKernel::short_k     ? short_k_option(gpu, p, kc)
                   : kc.kernel == PlanKernel::cuda_thin   ? thin_option(gpu, p, kc)
                                                          : tile_option(gpu, p, kc);
    o.note = cannot(gpu, p, kc);
    plan.options.push_back(o);
  }
  // The fastest that can run; among equals, the earlier in the table (the
  // more accurate or the simpler).
  const PlanOption* best = nullptr;
  for (const PlanOption& o : plan.options)
    if (o.note.empty() && (!best || o.predicted_us < best->predicted_us)) best = &o;
  if (!best) throw Error(std::string("plan: no GPU kernel delivers ") + precision_name(p.precision));
  plan.chosen = *best;
  std::stable_sort(plan.options.begin(), plan.options.end(), [](const PlanOption& a, const PlanOption& b) {
    if (a.note.empty() != b.note.empty()) return a.note.empty();
    return a.predicted_us < b.predicted_us;
  });
  return plan;
}

}  // namespace parray
