// `parray lab ...`: the lab reports' GPU tables, reproduced and verified.
//
//   parray lab table1 [--sizes LIST] [--block-sizes LIST] [--csv F]
//       the CUDA lab report table 1: kernel 1 (one thread per element, 1-D blocks) time
//       in ms for every block size x matrix size;
//   parray lab table4 [--sizes LIST] [--impl LIST] [--csv F]
//       the CUDA lab report table 4: cuBLAS against the hand kernels, ms and % of cuBLAS;
//   parray lab odd [--impl LIST] [--csv F]
//       the odd-size GEMM note: C(1037x1031) = A(1037x1055) B(1055x1031), CPU ("cpu", the
//       default CPU GEMM, and "gold", the lab report's triple loop) against GPU
//       time, kernel only and end to end (device allocation + copies in +
//       kernel + copy out), and the speed-ups.
//
// Every result is verified against the FP64 reference (the harness) before
// its time is reported; the end-to-end product is compared with the verified
// CPU product. Without a GPU each command says so in one line, exit status 2.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/config.hpp"
#include "parray/gemm.hpp"
#include "harness/harness.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace {

using namespace parray;

// Sizes of the source documents' tables: 1 .. 2^20.
std::vector<index_t> parse_sizes(const std::string& s, const std::string& what) {
  return tools::whole_list(s, what, 1, index_t{1} << 20);
}

void require_gpu(const std::string& cmd) {
#if PARRAY_HAVE_CUDA
  if (cuda_available()) return;
  throw Error("lab " + cmd + ": needs a GPU, and none is present");
#else
  throw Error("lab " + cmd + ": needs a GPU, and parray was built without CUDA");
#endif
}

GemmProblem square(index_t n) {
  GemmProblem p;
  p.m = p.n = p.k = n;
  return p;
}

// Fails the command when a benchmarked result did not verify.
int status_of(const std::vector<BenchRow>& rows) {
  for (const BenchRow& r : rows)
    if (!r.ok()) {
      std::fprintf(stderr, "lab: %s %lldx%lldx%lld failed: %s\n", r.impl.c_str(), (long long)r.m, (long long)r.k,
                   (long long)r.n, r.note.c_str());
      return 1;
    }
  return 0;
}

struct LabArgs {
  std::string sizes = "512,1024,2048,4096,8192", block_sizes = "32,64,128,256,512", csv;
  std::string impls = "cublas,cuda-01-naive-bs32,cuda-04-smem-tiles,cuda-05-smem-at,cuda-10-cp-async,cuda-12-best";
  std::string odd_impls = "cublas,cuda-02-grid-stride,cuda-04-smem-tiles,cuda-05-smem-at,cuda-12-best";
  int reps = 0;
};

BenchOptions options(const LabArgs& a) {
  BenchOptions o;
  if (a.reps > 0) o.min_reps = o.max_reps = a.reps;
  return o;
}

// The CUDA lab report, table 1: kernel 1, block size x size, ms.
int table1(const LabArgs& a) {
  require_gpu("table1");
  const std::vector<index_t> sizes = parse_sizes(a.sizes, "--sizes"), bss = parse_sizes(a.block_sizes, "--block-sizes");
  BenchOptions o = options(a);
  for (index_t bs : bss) o.impls.push_back(registry().find("cuda-01-naive-bs" + std::to_string(bs)).name);
  for (index_t n : sizes) o.problems.push_back(square(n));
  const std::vector<BenchRow> rows = run_gemm_bench(o);
  std::string head = fmt::format("{:<12}", "block size"), csv = "block_size,size,ms,gflops,rel_err,ok\n";
  for (index_t n : sizes) head += fmt::format(" {:>10}", n);
  std::cout << "The CUDA lab report table 1: kernel 1 (one thread per element, 1-D blocks), time in ms\n" << head << "\n";
  for (index_t bs : bss) {
    const std::string name = "cuda-01-naive-bs" + std::to_string(bs);
    std::string line = fmt::format("{:<12}", bs);
    for (index_t n : sizes)
      for (const BenchRow& r : rows)
        if (r.impl == name && r.m == n) {
          line += r.ok() ? fmt::format(" {:>10.3f}", r.ms) : fmt::format(" {:>10}", "FAILED");
          csv += fmt::format("{},{},{:.4f},{:.2f},{:.3e},{}\n", bs, n, r.ms, r.gflops, r.rel_err, r.ok() ? 1 : 0);
        }
    std::cout << line << "\n";
  }
  tools::write_output(a.csv, csv, "lab");
  return status_of(rows);
}

// The CUDA lab report, table 4: cuBLAS against the hand kernels, ms (% of cuBLAS).
int table4(const LabArgs& a) {
  require_gpu("table4");
  const std::vector<index_t> sizes = parse_sizes(a.sizes, "--sizes");
  BenchOptions o = options(a);
  for (const std::string& i : tools::split_list(a.impls)) o.impls.push_back(registry().find(i).name);
  if (o.impls.empty()) throw Error("--impl is empty");
  for (index_t n : sizes) o.problems.push_back(square(n));
  const std::vector<BenchRow> rows = run_gemm_bench(o);
  std::string head = fmt::format("{:<22}", "implementation"), csv = "impl,size,ms,gflops,pct_cublas,rel_err,ok\n";
  for (index_t n : sizes) head += fmt::format(" {:>18}", n);
  std::cout << "The CUDA lab report table 4: cuBLAS (FP32, no TF32) and the hand kernels, ms (% of cuBLAS)\n" << head << "\n";
  for (const std::string& name : o.impls) {
    std::string line = fmt::format("{:<22}", name);
    for (index_t n : sizes)
      for (const BenchRow& r : rows)
        if (r.impl == name && r.m == n) {
          line += r.ok() ? fmt::format(" {:>10.3f} ({:>3.0f}%)", r.ms, r.pct_best_baseline)
                       : fmt::format(" {:>18}", "FAILED");
          csv += fmt::format("{},{},{:.4f},{:.2f},{:.1f},{:.3e},{}\n", name, n, r.ms, r.gflops, r.pct_best_baseline,
                             r.rel_err, r.ok() ? 1 : 0);
        }
    std::cout << line << "\n";
  }
  tools::write_output(a.csv, csv, "lab");
  return status_of(rows);
}

#if PARRAY_HAVE_CUDA
// One end-to-end GPU GEMM as the odd-size GEMM note times it: device allocation, copies in,
// the kernel, the copy out (which waits for the kernel). Returns ms.
double end_to_end_ms(const std::string& impl, const Array<float>& a, const Array<float>& b, Array<float>& c) {
  const auto t0 = std::chrono::steady_clock::now();
  {
    Array<float> da(a.type(), Memory::device), db(b.type(), Memory::device), dc(c.type(), Memory::device);
    copy_bytes(da.data(), Memory::device, a.data(), Memory::paged, a.storage_elements() * sizeof(float));
    copy_bytes(db.data(), Memory::device, b.data(), Memory::paged, b.storage_elements() * sizeof(float));
    GemmOptions go;
    go.impl = impl;
    gemm(1.0f, da.view(), db.view(), 0.0f, dc.view(), go);
    copy_bytes(c.data(), Memory::paged, dc.data(), Memory::device, c.storage_elements() * sizeof(float));
  }  // the device arrays are freed here, inside the timed region (the odd-size GEMM note frees them too)
  cuda::synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
#endif

// The odd-size GEMM note: 1037 x 1055 x 1031, CPU against GPU, with and without copies.
int odd(const LabArgs& a) {
  require_gpu("odd");
#if PARRAY_HAVE_CUDA
  const index_t M = 1037, K = 1055, N = 1031;
  GemmProblem p;
  p.m = M, p.k = K, p.n = N;
  const std::vector<std::string> gpu = [&] {
    std::vector<std::string> v;
    for (const std::string& i : tools::split_list(a.odd_impls)) v.push_back(registry().find(i).name);
    return v;
  }();
  if (gpu.empty()) throw Error("--impl is empty");
  const std::string cpu_name = registry().find("cpu").name;
  // Kernel-only and CPU times, each verified against the FP64 reference.
  BenchOptions o = options(a);
  o.impls = gpu;
  o.problems = {p};
  std::vector<BenchRow> rows = run_gemm_bench(o);
  BenchOptions oc = options(a);
  oc.impls = {cpu_name};
  oc.problems = {p};
  oc.threads = {int(std::max(1u, std::thread::hardware_concurrency()))};
  const BenchRow cpu = run_gemm_bench(oc).front();
  BenchOptions og;
  og.impls = {"gold"};
  og.problems = {p};
  og.warmup = 0, og.min_reps = og.max_reps = 1;  // seconds per run
  const BenchRow gold = run_gemm_bench(og).front();
  rows.push_back(cpu);
  rows.push_back(gold);
  if (int rc = status_of(rows)) return rc;

  // End to end, on the same inputs as a verified CPU product.
  Array<float> ha(Layout::dense({M, K})), hb(Layout::dense({K, N})), hc(Layout::dense({M, N})), ref(Layout::dense({M, N}));
  {
    unsigned s = 12345;
    auto next = [&] { return (s = s * 1664525u + 1013904223u) / 4294967296.0f * 2.f - 1.f; };
    for (index_t i = 0; i < M * K; ++i) ha.data()[i] = next();
    for (index_t i = 0; i < K * N; ++i) hb.data()[i] = next();
  }
  GemmOptions cpu_opts;
  cpu_opts.impl = cpu_name;
  gemm(1.0f, ha.view(), hb.view(), 0.0f, ref.view(), cpu_opts);
  auto rel_diff = [&] {
    double num = 0, den = 0;
    for (index_t i = 0; i < M * N; ++i) {
      const double d = double(hc.data()[i]) - ref.data()[i];
      num += d * d, den += double(ref.data()[i]) * ref.data()[i];
    }
    return std::sqrt(num / den);
  };
  const double tol = 2 * gemm_tolerance(Dtype::f32, K);
  std::cout << fmt::format("The odd-size GEMM note: C({}x{}) = A({}x{}) B({}x{}), FP32; {}\n", M, N, M, K, K, N,
                           cuda::device_description());
  std::cout << fmt::format("CPU {:<8} {:>10.3f} ms ({} threads)\nCPU {:<8} {:>10.3f} ms (1 thread)\n", cpu_name, cpu.ms,
                           cpu.threads, "gold", gold.ms);
  std::cout << fmt::format("{:<22} {:>10} {:>12} {:>10} {:>10} {:>12} {:>12}\n", "GPU implementation", "kernel ms",
                           "end-to-end ms", "x cpu", "x gold", "x cpu (e2e)", "x gold (e2e)");
  std::string csv = "impl,m,k,n,kernel_ms,end_to_end_ms,cpu_ms,gold_ms,speedup_cpu,speedup_gold,"
                    "speedup_cpu_e2e,speedup_gold_e2e,rel_err,e2e_rel_diff,ok\n";
  int rc = 0;
  for (const std::string& name : gpu) {
    const BenchRow& r = *std::find_if(rows.begin(), rows.end(), [&](const BenchRow& x) { return x.impl == name; });
    end_to_end_ms(name, ha, hb, hc);  // warm-up (first use of the kernel, the allocator)
    std::vector<double> t;
    for (int i = 0; i < 5; ++i) t.push_back(end_to_end_ms(name, ha, hb, hc));
    std::sort(t.begin(), t.end());
    const double e2e = t[t.size() / 2], diff = rel_diff();
    const bool ok = diff <= tol;
    if (!ok) rc = 1;
    std::cout << fmt::format("{:<22} {:>10.3f} {:>12.3f} {:>10.1f} {:>10.1f} {:>12.1f} {:>12.1f}{}\n", name, r.ms, e2e,
                             cpu.ms / r.ms, gold.ms / r.ms, cpu.ms / e2e, gold.ms / e2e,
                             ok ? "" : fmt::format("  end-to-end result FAILED (rel. diff {:.2e})", diff));
    csv += fmt::format("{},{},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.2f},{:.2f},{:.2f},{:.2f},{:.3e},{:.3e},{}\n", name,
                       M, K, N, r.ms, e2e, cpu.ms, gold.ms, cpu.ms / r.ms, gold.ms / r.ms, cpu.ms / e2e, gold.ms / e2e,
                       r.rel_err, diff, ok ? 1 : 0);
  }
  tools::write_output(a.csv, csv, "lab");
  return rc;
#else
  (void)a;
  return 2;
#endif
}

std::vector<tools::CliCommand> add_lab_commands(CLI::App& app, CLI::App&) {
  auto args = std::make_shared<LabArgs>();
  CLI::App* lab = app.add_subcommand("lab", "The lab reports' GPU tables, reproduced and verified");
  lab->require_subcommand(1);
  CLI::App* t1 = lab->add_subcommand("table1", "The CUDA lab report table 1: kernel 1, 1-D block size x size, ms");
  t1->add_option("--sizes", args->sizes, "matrix sizes, comma list (default 512..8192)");
  t1->add_option("--block-sizes", args->block_sizes, "1-D block sizes, comma list (default 32..512)");
  CLI::App* t4 = lab->add_subcommand("table4", "The CUDA lab report table 4: cuBLAS vs the hand kernels, ms");
  t4->add_option("--sizes", args->sizes, "matrix sizes, comma list (default 512..8192)");
  t4->add_option("--impl", args->impls, "implementations, comma list");
  CLI::App* od = lab->add_subcommand("odd", "The odd-size GEMM note: 1037x1055x1031, CPU vs GPU, with and without copies");
  od->add_option("--impl", args->odd_impls, "GPU implementations, comma list");
  for (CLI::App* c : {t1, t4, od}) {
    c->add_option("--csv", args->csv, "write the table as CSV");
    c->add_option("--reps", args->reps, "timed repeats (default: adaptive)");
  }
  return {{t1, [args] { return table1(*args); }},
          {t4, [args] { return table4(*args); }},
          {od, [args] { return odd(*args); }}};
}

const tools::RegisterCommands registered_lab(&add_lab_commands);

}  // namespace
