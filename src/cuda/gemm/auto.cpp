// gpu-auto, the default GPU GEMM: per call, the kernel the planner
// (include/parray/plan.hpp, docs/dispatch.md) predicts fastest on this GPU
// among those that deliver the precision asked — the GEMV for M = 1 or
// N = 1, GEMV step 7 for M or N <= 8, step 17 for K <= 32, step 12's
// 64 x 64 tile for small products, its thin tiles for C of 9-64 columns or
// rows, step 12 with its deterministic K split, step 15 on the tensor cores
// (TF32, BF16, FP16, or FP32-accurate 3xTF32). A speed table measured by
// `parray tune` (gpu.speed_table) refines the FP32 choice where it has
// measured a shape. FP64 (gemm_auto_f64): the GEMV for M or N = 1, GEMV
// step 7 for M or N <= 8, step 17 for K <= 32, else step 22 on the tensor
// cores (step 19 where TMA cannot read the operands).
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <unordered_map>

#include "gemv/06_07_launch.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/dispatch.hpp"
#include "parray/gemv.hpp"
#include "parray/plan.hpp"
#include "parray/tuning.hpp"

namespace parray::cuda {

namespace {

// The current device as the planner models it: SMs, the SM clock under
// load (the data sheet's boost clock scaled to what a sustained GEMM holds),
// DRAM bandwidth scaled to what a streaming copy reaches (docs/perf-notes.md).
GpuModel model_of(int device) {
  auto attr = [device](cudaDeviceAttr a) {
    int v = 0;
    PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&v, a, device));
    return v;
  };
  cudaDeviceProp prop{};
  PARRAY_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  GpuModel g;
  g.name = prop.name;
  g.sms = attr(cudaDevAttrMultiProcessorCount);
  g.clock_ghz = attr(cudaDevAttrClockRate) * 1e-6 * 0.886;
  g.dram_gbs = 2.0 * attr(cudaDevAttrMemoryClockRate) * 1e3 * attr(cudaDevAttrGlobalMemoryBusWidth) / 8 * 1e-9 * 0.9;
  g.launch_us = 2.0;
  g.tensor_kernels = wgmma_unsupported().empty();
  return g;
}

// Read once per device and thread: no lock on the call's path.
const GpuModel& current_model() {
  thread_local std::vector<std::optional<GpuModel>> models;
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  if (models.size() <= std::size_t(device)) models.resize(std::size_t(device) + 1);
  if (!models[std::size_t(device)]) models[std::size_t(device)] = model_of(device);
  return *models[std::size_t(device)];
}

bool unit_stride(const MatrixLayout& l) {
  return l.is_strided() && (l.rows.stride[0] == 1 || l.cols.stride[0] == 1 || l.rows.size == 1 || l.cols.size == 1);
}

// M = 1: C's row = alpha * B^T (A's row) + beta * C's row; N = 1: C's column
// = alpha * A (B's column) + beta * C's column. The GEMV takes contiguous
// vectors and a row- or column-major matrix.
template <class T>
bool gemv_fits(const GemmCall<T>& c) {
  const index_t m = c.c.rows(), n = c.c.cols();
  auto contiguous_row = [](const auto& v) { return v.cols() <= 1 || (v.layout.is_strided() && v.layout.cols.stride[0] == 1); };
  auto contiguous_col = [](const auto& v) { return v.rows() <= 1 || (v.layout.is_strided() && v.layout.rows.stride[0] == 1); };
  if (m == 1) return contiguous_row(c.a) && contiguous_row(c.c) && unit_stride(c.b.layout);
  if (n == 1) return contiguous_col(c.b) && contiguous_col(c.c) && unit_stride(c.a.layout);
  return false;
}

PlanProblem problem_of(const GemmCall<float>& c) {
  PlanProblem p;
  p.m = c.c.rows();
  p.n = c.c.cols();
  p.k = c.a.cols();
  p.precision = c.precision;
  p.a_unit_stride = unit_stride(c.a.layout);
  p.b_unit_stride = unit_stride(c.b.layout);
  p.gemv_ok = gemv_fits(c);
  // GEMV step 7 reads the operand of many rows along k or m; all three strided.
  const bool strided = c.a.layout.is_strided() && c.b.layout.is_strided() && c.c.layout.is_strided();
  p.all_strided = strided;
  p.few_ok = strided && (p.n <= kFewVectors ? p.a_unit_stride : p.m <= kFewVectors && p.b_unit_stride);
  const bool empty_a = c.a.rows() == 0 || c.a.cols() == 0;
  set_step15_a(p, c.a.layout, !empty_a && reinterpret_cast<std::uintptr_t>(&c.a(0, 0)) % 16 == 0);
  return p;
}

// The speed table's pick among the FP32-accurate kernels, where gpu.speed_table names a file.
const SpeedTable* tuned_table() {
  static const SpeedTable table = [] {
    return gpu_tuning().speed_table.empty() ? SpeedTable{} : SpeedTable::from_file(gpu_tuning().speed_table);
  }();
  return table.empty() ? nullptr : &table;
}

struct PlanKey {
  index_t m, n, k;
  int flags;
  bool operator==(const PlanKey&) const = default;
};
struct PlanKeyHash {
  std::size_t operator()(const PlanKey& x) const {
    std::size_t h = std::size_t(x.m) * 0x9E3779B97F4A7C15ull;
    h ^= std::size_t(x.n) + 0x9E3779B9 + (h << 6) + (h >> 2);
    h ^= std::size_t(x.k) + 0x9E3779B9 + (h << 6) + (h >> 2);
    return h ^ std::size_t(x.flags);
  }
};

// The planned kernel of a call, remembered per thread and device, keyed by
// everything the plan reads (a thread's own map needs no lock).
PlanKernel planned(const GemmCall<float>& call) {
  const PlanProblem p = problem_of(call);
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  const PlanKey key{p.m, p.n, p.k,
                    int(p.precision) | p.a_unit_stride << 4 | p.b_unit_stride << 5 | p.gemv_ok << 6 | p.few_ok << 7 |
                        p.all_strided << 8 | p.a_in_place << 9 | p.a_by_threads << 10 | device << 11};
  thread_local std::unordered_map<PlanKey, PlanKernel, PlanKeyHash> memo;
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  if (memo.size() > 4096) memo.clear();
  PlanKernel kernel = plan_gemm(current_model(), p).chosen.kernel;
  if (const SpeedTable* t = tuned_table(); t && p.precision == Precision::fp32 && kernel != PlanKernel::gemv) {
    const std::string pick = t->fastest(Dtype::f32, p.m, p.n, p.k, {"cuda-12-best", "cuda-15-3xtf32"});
    if (pick == "cuda-12-best" && kernel == PlanKernel::tc_3xtf32) kernel = PlanKernel::cuda_best;
    if (pick == "cuda-15-3xtf32" && current_model().tensor_kernels) kernel = PlanKernel::tc_3xtf32;
  }
  memo.emplace(key, kernel);
  return kernel;
}

template <class T>
void run_gemv(const GemmCall<T>& c) {
  // Looked up on each call: a reference kept in a static would dangle once
  // the registry's table grows (baselines registered later move it).
  const GemvImpl& shapes = gemv_registry().find("gemv-gpu-06-shapes");
  if (c.c.rows() == 1) {  // y^T = x^T B: y = B^T x
    shapes.run<T>(GemvCall<T>{c.alpha, c.b.t(), c.a.data, c.beta, c.c.data, 1, c.stream});
  } else {
    shapes.run<T>(GemvCall<T>{c.alpha, c.a, c.b.data, c.beta, c.c.data, 1, c.stream});
  }
}

}  // namespace

GpuModel current_gpu_model() { return current_model(); }

void gemm_auto(const GemmCall<float>& call) {
  switch (planned(call)) {
    case PlanKernel::gemv: return run_gemv<float>(call);
    case PlanKernel::few_vectors:
      if (!gemm_few_vectors(call)) gemm_best(call);
      return;
    case PlanKernel::short_k:
      if (!gemm_short_k(call)) gemm_best(call);
      return;
    case PlanKernel::cuda_small:
      if (!gemm_best_candidate(call, kBestSmallShape)) gemm_best(call);
      return;
    case PlanKernel::cuda_best: return gemm_best(call);
    case PlanKernel::cuda_thin:
      if (!gemm_best_candidate(call, best_thin_shape(call.c.rows(), call.c.cols()))) gemm_best(call);
      return;
    case PlanKernel::tc_3xtf32: return gemm_persistent_3xtf32(call);
    case PlanKernel::tc_tf32: return gemm_persistent_tf32(call);
    case PlanKernel::tc_bf16: return gemm_persistent_bf16(call);
    case PlanKernel::tc_fp16: return gemm_persistent_fp16(call);
  }
}

void gemm_auto_f64(const GemmCall<double>& call) {
  // The planner's classes where they hold for FP64 as for FP32. M or N = 1:
  // the GEMV reads the matrix once (a tile of C would compute 128 rows or
  // columns for the one); M or N <= 8: GEMV step 7 reads the long operand
  // once; K <= 32: C's traffic is the cost, step 17 writes it coalesced
  // (a DMMA tile's pipeline would never fill).
  const index_t few = std::min(call.c.rows(), call.c.cols());
  if (few == 1 && gemv_fits(call)) return run_gemv<double>(call);
  if (few <= kFewVectorsMax && gemm_few_vectors(call)) return;
  if (call.a.cols() <= kShortKMax && gemm_short_k(call)) return;
  if (wgmma_unsupported().empty()) return gemm_dmma_tma(call);
  gemm_smem_transposed_a<double>(call, true);
}

}  // namespace parray::cuda
