// parray bench gemm8: GEMM on FP8 data in device memory (gemm8.hpp), parray's
// step 20 against cuBLASLt's FP8 matmul in the same run.
//
//   parray bench gemm8 [--type-a e4m3|e5m2] [--type-b e4m3|e5m2] [--out bf16|fp16|f32]
//                      [--scaling tensor|blockwise] [--sizes 4096,8192,1037x1055x1031]
//                      [--alpha A] [--beta B] [--reps R] [--csv FILE]
//
// Each size is N (N^3) or MxKxN; A is M x K, B is stored N x K. Every
// implementation is checked against the FP64 product of the dequantised inputs
// (gemm8_case.hpp) before it is timed (CUDA events, median of --reps after a
// warm-up); a failed check is reported and not timed. cuBLASLt's column reads
// "unsupported" where it has no such matmul (blockwise scales, E5M2 x E5M2).
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/config.hpp"
#include "parray/gemm8.hpp"
#if PARRAY_HAVE_CUDA
#include "checked_timing.hpp"
#include "harness/gemm8_case.hpp"
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {
namespace {

struct Gemm8BenchArgs {
  std::string type_a = "e4m3", type_b = "e4m3", out = "bf16", scaling = "tensor", sizes = "4096,8192", csv;
  float alpha = 1.f, beta = 0.f;
  int reps = 20;
};

Fp8 parse_fp8(const std::string& text, const char* option) {
  if (text == "e4m3") return Fp8::e4m3;
  if (text == "e5m2") return Fp8::e5m2;
  throw Error(std::string("unknown ") + option + " '" + text + "' (e4m3 or e5m2)");
}

Fp8Out parse_out(const std::string& text) {
  if (text == "bf16") return Fp8Out::bf16;
  if (text == "fp16") return Fp8Out::fp16;
  if (text == "f32") return Fp8Out::f32;
  throw Error("unknown --out '" + text + "' (bf16, fp16 or f32)");
}

int run_gemm8_bench(const Gemm8BenchArgs& a) {
  const Fp8 type_a = parse_fp8(a.type_a, "--type-a"), type_b = parse_fp8(a.type_b, "--type-b");
  const Fp8Out out = parse_out(a.out);
  if (a.scaling != "tensor" && a.scaling != "blockwise")
    throw Error("unknown --scaling '" + a.scaling + "' (tensor or blockwise)");
  const std::vector<std::vector<index_t>> shapes = tools::cube_or_mkn_list(a.sizes);
#if PARRAY_HAVE_CUDA
  Gemm8Problem base;
  base.type_a = type_a, base.type_b = type_b, base.out = out;
  base.scaling = a.scaling == "blockwise" ? Fp8Scaling::blockwise : Fp8Scaling::per_tensor;
  base.alpha = a.alpha, base.beta = a.beta;
  std::cerr << cuda::device_description() << "\n";
  std::string csv = "type_a,type_b,out,scaling,m,k,n,impl,ms,tflops,pct_cublaslt,frobenius,worst,ok,note\n";
  bool all_passed = true;
  for (const std::vector<index_t>& d : shapes) {
    Gemm8Problem p = base;
    p.m = d[0], p.k = d[1], p.n = d[2];
    Gemm8Case c(p);
    std::vector<std::string> impls = {"cublaslt"};  // first: the denominator
    for (const std::string& impl : gemm8_impls())
      if (impl != "cublaslt") impls.push_back(impl);
    const auto why_not = [&c](const std::string& impl) { return gemm8_unsupported(impl, c.args()); };
    const double flops = 2.0 * double(p.m) * double(p.n) * double(p.k);
    for (const tools::CheckedTiming& t : tools::check_then_time_each(c, impls, why_not, flops, a.reps)) {
      all_passed = all_passed && !t.failed;
      csv += fmt::format("{},{},{},{},{},{},{},{},{:.4f},{:.1f},{:.1f},{:.2e},{:.3f},{},\"{}\"\n", a.type_a, a.type_b,
                         a.out, a.scaling, p.m, p.k, p.n, t.impl, t.ms, t.tflops, t.pct_of_baseline, t.check.frobenius,
                         t.check.worst, t.check.passed ? 1 : 0, t.note);
    }
  }
  std::cout << csv;
  tools::write_output(a.csv, csv);
  return all_passed ? 0 : 1;
#else
  (void)type_a, (void)type_b, (void)out;
  throw Error("bench gemm8: this build has no CUDA backend");
#endif
}

std::vector<tools::CliCommand> add_gemm8_commands(CLI::App&, CLI::App& bench) {
  auto args = std::make_shared<Gemm8BenchArgs>();
  CLI::App* c = bench.add_subcommand("gemm8", "GEMM on FP8 data in device memory: parray's step 20 against cuBLASLt");
  c->add_option("--type-a", args->type_a, "A's type: e4m3 or e5m2")->capture_default_str();
  c->add_option("--type-b", args->type_b, "B's type: e4m3 or e5m2")->capture_default_str();
  c->add_option("--out", args->out, "C's type: bf16, fp16 or f32")->capture_default_str();
  c->add_option("--scaling", args->scaling, "tensor (one scale per operand) or blockwise (1x128 A, 128x128 B)")
      ->capture_default_str();
  tools::add_cube_or_mkn_sizes(*c, args->sizes);
  tools::add_alpha_beta(*c, args->alpha, args->beta).show_defaults();
  tools::add_median_reps(*c, args->reps);
  tools::add_csv_option(*c, args->csv);
  return {{c, [args] { return run_gemm8_bench(*args); }}};
}

const tools::RegisterCommands registered_gemm8(&add_gemm8_commands);

}  // namespace
}  // namespace parray
