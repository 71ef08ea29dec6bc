// parray bench gemm16: GEMM on 16-bit data in device memory (gemm16.hpp),
// parray's default (gpu), step 16 and, for a batch, step 18 against cuBLAS in
// the same run.
//
//   parray bench gemm16 [--type bf16|fp16] [--c-type same|f32] [--sizes 4096,8192,1037x1055x1031]
//                       [--trans-a] [--trans-b] [--alpha A] [--beta B] [--pad P] [--batch B [--broadcast-b]]
//                       [--reps R] [--csv FILE]
//
// Each size is N (N^3) or MxKxN. --batch B: a strided batch of B products of
// that size in one call (cuBLAS: cublasGemmStridedBatchedEx), --broadcast-b
// one B for them all. Every implementation is checked against the
// FP64 reference (gemm16_case.hpp) before it is timed (CUDA events, median of
// --reps after a warm-up); a failed check is reported and not timed.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/config.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#include "checked_timing.hpp"
#include "harness/gemm16_case.hpp"
#endif

namespace parray {
namespace {

struct Gemm16BenchArgs {
  std::string type = "bf16", c_type = "same", sizes = "4096,8192", csv;
  bool trans_a = false, trans_b = false;
  float alpha = 1.f, beta = 0.f;
  index_t pad = 0, batch = 1;
  bool broadcast_b = false;
  int reps = 20;
};

int run_gemm16_bench(const Gemm16BenchArgs& a) {
  if (a.type != "bf16" && a.type != "fp16") throw Error("unknown --type '" + a.type + "' (bf16 or fp16)");
  if (a.c_type != "same" && a.c_type != "f32") throw Error("unknown --c-type '" + a.c_type + "' (same or f32)");
  const std::vector<std::vector<index_t>> shapes = tools::cube_or_mkn_list(a.sizes);
#if PARRAY_HAVE_CUDA
  Gemm16Problem base;
  base.type = a.type == "bf16" ? Type16::bf16 : Type16::fp16;
  base.c_f32 = a.c_type == "f32";
  base.trans_a = a.trans_a ? Trans::yes : Trans::no;
  base.trans_b = a.trans_b ? Trans::yes : Trans::no;
  base.alpha = a.alpha, base.beta = a.beta, base.pad = a.pad;
  base.batch = a.batch, base.broadcast_b = a.broadcast_b;
  std::cerr << cuda::device_description() << "\n";
  std::string csv = "type,c_type,trans_a,trans_b,batch,m,k,n,pad,impl,ms,tflops,pct_cublas,frobenius,worst,ok,note\n";
  bool all_passed = true;
  for (const std::vector<index_t>& d : shapes) {
    Gemm16Problem p = base;
    p.m = d[0], p.k = d[1], p.n = d[2];
    Gemm16Case c(p);
    // cuBLAS first: its figure is the denominator of the others.
    // gpu: the planner's choice; step 18 on its own only for a batch.
    std::vector<std::string> impls = {"cublas", "gpu", "cuda-16"};
    if (p.batch > 1) impls.push_back("cuda-18");
    const double flops = 2.0 * double(p.batch) * double(p.m) * double(p.n) * double(p.k);
    for (const tools::CheckedTiming& t : tools::check_then_time_each(c, impls, gemm16_unsupported, flops, a.reps)) {
      all_passed = all_passed && !t.failed;
      csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.4f},{:.1f},{:.1f},{:.2e},{:.3f},{},\"{}\"\n", a.type,
                         a.c_type, int(a.trans_a), int(a.trans_b), p.batch, p.m, p.k, p.n, p.pad, t.impl, t.ms,
                         t.tflops, t.pct_of_baseline, t.check.frobenius, t.check.worst, t.check.passed ? 1 : 0, t.note);
    }
  }
  std::cout << csv;
  tools::write_output(a.csv, csv);
  return all_passed ? 0 : 1;
#else
  (void)a;
  throw Error("bench gemm16: this build has no CUDA backend");
#endif
}

std::vector<tools::CliCommand> add_gemm16_commands(CLI::App&, CLI::App& bench) {
  auto args = std::make_shared<Gemm16BenchArgs>();
  CLI::App* c = bench.add_subcommand("gemm16", "GEMM on BF16/FP16 data in device memory: parray's step 16 against cuBLAS");
  c->add_option("--type", args->type, "A and B's type: bf16 or fp16")->capture_default_str();
  c->add_option("--c-type", args->c_type, "C's type: same (as A and B) or f32")->capture_default_str();
  tools::add_cube_or_mkn_sizes(*c, args->sizes);
  tools::add_transpose_flags(*c, args->trans_a, args->trans_b);
  tools::add_alpha_beta(*c, args->alpha, args->beta).show_defaults();
  c->add_option("--pad", args->pad, "extra elements per stored row of A, B and C")->check(CLI::Range(0, 1 << 16));
  c->add_option("--batch", args->batch, "products of each size in one strided-batched call")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  c->add_flag("--broadcast-b", args->broadcast_b, "one B for every product of the batch (batch stride 0)");
  tools::add_median_reps(*c, args->reps);
  tools::add_csv_option(*c, args->csv);
  return {{c, [args] { return run_gemm16_bench(*args); }}};
}

const tools::RegisterCommands registered_gemm16(&add_gemm16_commands);

}  // namespace
}  // namespace parray
