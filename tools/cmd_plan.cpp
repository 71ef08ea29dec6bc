// parray plan: the default GPU GEMM's plan for one call (include/parray/plan.hpp,
// docs/dispatch.md).
//
//   parray plan -m M -n N -k K [--precision fp32|tf32|bf16|fp16]
//               [--gpu current|h100|h200] [--layout-a L] [--layout-b L]
//
// Prints the kernel chosen, its tile, K split, waves and predicted time, then
// every kernel considered with its predicted time or why it cannot run.
// --gpu current (the default where a GPU is present) models the GPU this
// process sees; h100 / h200 the planner's models of those cards.
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <string>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/matrix.hpp"
#include "parray/named_layouts.hpp"
#include "parray/plan.hpp"
#include "parray/precision.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda/gemm_launchers.hpp"
#endif

namespace parray {
namespace {

struct PlanArgs {
  index_t m = 0, n = 0, k = 0;
  std::string precision = "fp32", gpu = "current", layout_a = "row", layout_b = "row";
};

GpuModel model_named(const std::string& name) {
  if (name == "h100") return GpuModel::h100();
  if (name == "h200") return GpuModel::h200();
  if (name != "current") throw Error("plan: unknown --gpu '" + name + "' (current, h100 or h200)");
#if PARRAY_HAVE_CUDA
  if (cuda_available()) return cuda::current_gpu_model();
#endif
  throw Error("plan: no GPU here; name a model with --gpu h100 or --gpu h200");
}

// Whether a named layout is row- or column-major (what the 64 x 64 tile reads).
bool unit_stride_layout(const std::string& name, index_t rows, index_t cols) {
  const MatrixLayout l = MatrixLayout::from(make_matrix_type(name, rows, cols).view);
  return l.is_strided() && (l.rows.stride[0] == 1 || l.cols.stride[0] == 1 || rows == 1 || cols == 1);
}

bool strided_layout(const std::string& name, index_t rows, index_t cols) {
  return MatrixLayout::from(make_matrix_type(name, rows, cols).view).is_strided();
}

std::string tile_text(const PlanOption& o) {
  if (o.bm == 0) return "-";
  return fmt::format("{}x{}", o.bm, o.bn);
}

int run_plan(const PlanArgs& a) {
  if (a.m < 1 || a.n < 1 || a.k < 1) throw Error("plan: -m, -n and -k must be >= 1");
  const GpuModel gpu = model_named(a.gpu);
  PlanProblem p;
  p.m = a.m, p.n = a.n, p.k = a.k;
  p.precision = parse_precision(a.precision);
  if (p.precision == Precision::fp64) throw Error("plan: the GPU planner plans FP32 data (fp32, tf32, bf16, fp16)");
  p.a_unit_stride = unit_stride_layout(a.layout_a, a.m, a.k);
  p.b_unit_stride = unit_stride_layout(a.layout_b, a.k, a.n);
  p.all_strided = strided_layout(a.layout_a, a.m, a.k) && strided_layout(a.layout_b, a.k, a.n);  // C row-major
  p.few_ok = p.all_strided && (p.n <= 8 ? p.a_unit_stride : p.m <= 8 && p.b_unit_stride);
  // An allocation's first element is 16-byte aligned.
  set_step15_a(p, MatrixLayout::from(make_matrix_type(a.layout_a, a.m, a.k).view), true);
  const GemmPlan plan = plan_gemm(gpu, p);
  const PlanOption& c = plan.chosen;
  std::cout << fmt::format("GPU {}: {} SMs, {:.3f} GHz under load, {:.0f} GB/s, tensor-core kernels {}\n", gpu.name,
                           gpu.sms, gpu.clock_ghz, gpu.dram_gbs, gpu.tensor_kernels ? "yes" : "no");
  std::cout << fmt::format("C[{}x{}] = A[{}x{}] B[{}x{}], precision {} (A {}, B {})\n", a.m, a.n, a.m, a.k, a.k, a.n,
                           precision_name(p.precision), a.layout_a, a.layout_b);
  std::cout << fmt::format("plan: {} ({}), delivers {}, tile {}, K split {}, {:.2f} waves, predicted {:.1f} us "
                           "({:.1f} TFLOP/s)\n",
                           plan_kernel_name(c.kernel), c.impl, precision_name(c.delivers), tile_text(c), c.splits,
                           c.waves, c.predicted_us, 2.0 * double(a.m) * double(a.n) * double(a.k) / c.predicted_us * 1e-6);
  std::cout << fmt::format("\n{:<18} {:<16} {:<9} {:<9} {:>5} {:>8} {:>12}  {}\n", "kernel", "impl", "delivers", "tile",
                           "split", "waves", "predicted us", "note");
  for (const PlanOption& o : plan.options)
    std::cout << fmt::format("{:<18} {:<16} {:<9} {:<9} {:>5} {:>8.2f} {:>12.1f}  {}\n", plan_kernel_name(o.kernel),
                             o.impl, precision_name(o.delivers), tile_text(o), o.splits, o.waves, o.predicted_us,
                             o.note.empty() ? "" : "cannot: " + o.note);
  return 0;
}

std::vector<tools::CliCommand> add_plan_commands(CLI::App& app, CLI::App&) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* c = app.add_subcommand("plan", "the default GPU GEMM's plan for one call: kernel, tile, K split, predicted time");
  tools::add_gemm_extents(*c, a->m, a->n, a->k).required();
  tools::add_gpu_precision(*c, a->precision);
  c->add_option("--gpu", a->gpu, "current (this process's GPU), h100 or h200 (the planner's models)")
      ->capture_default_str();
  c->add_option("--layout-a", a->layout_a, "layout of A (row, col, fig17, ...)")->capture_default_str();
  c->add_option("--layout-b", a->layout_b, "layout of B")->capture_default_str();
  return {{c, [a] { return run_plan(*a); }}};
}

const tools::RegisterCommands registered_plan(&add_plan_commands);

}  // namespace
}  // namespace parray
