// `parray multigpu`: one GEMM over several GPUs (include/parray/multigpu.hpp),
// verified, timed, and compared with its baseline in the same run.
//
//   parray multigpu --gpus G [--devices LIST] [--grid PxQ] -m M -n N -k K
//          --variant 2d|ksplit|ooc --operands device|gpu0|host [--baseline]
//          [--xt-block B] [--budget-mib X] [--tile MxNxK] [--panel W] [--chunks C]
//          [--local step12|cublas|3xtf32]
//          [--alpha A] [--beta B] [--reps R] [--seed S] [--csv FILE]
//
// Operands "device": distributed over the GPUs before the clock starts (the
// multi-GPU analogue of a single GPU's device-resident operands); "gpu0": A,
// B and C on the first GPU, the time includes scattering the blocks from it
// and gathering C back to it (GPU to GPU). For both, the baseline is the
// local GEMM's kernel alone on the first GPU, operands on it (cuda-12-best,
// cublas or cuda-13-3xtf32: a schedule is compared with its own kernel on one
// GPU). Operands "host": pinned host memory, the time includes
// every transfer; the baseline is cublasXt on the same GPUs. Verification:
// the full FP64 product up to 2^31 multiply-adds, else a random-sign checksum
// of every row plus 4096 sampled elements (multigpu::verify). Bad input: one
// line on stderr and exit status 2; a failed check: exit status 1. --local
// picks the GEMM each GPU runs (parray's step 12; cuBLAS, to compare the
// schedule alone with cublasXt's; or step 13, 3xTF32 on the tensor cores). Every timed repetition is printed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <limits>

#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/config.hpp"
#include "harness/harness.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda/memory.hpp"
#include "parray/cuda_runtime.hpp"
#include "parray/multigpu.hpp"
#endif

namespace {

using namespace parray;

struct Args {
  int gpus = 1;
  std::string devices, grid, variant = "2d", operands = "device", tile, csv, local = "step12";
  long long m = 4096, n = 4096, k = 4096, panel = 0, budget_mib = 0;
  int chunks = 0, xt_block = 0, reps = 3;
  double alpha = 1.0, beta = 0.0;
  bool baseline = false;
  std::uint64_t seed = 42;
};

#if PARRAY_HAVE_CUDA

// Operand values in [-1, 1) from a hash of (seed, matrix, row, column), filled
// in parallel (matrices of several GiB).
float element(std::uint64_t seed, int which, index_t i, index_t j) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ULL ^ (std::uint64_t(which) << 56) ^
                    (std::uint64_t(i) * 0xD1B54A32D192ED03ULL) ^ (std::uint64_t(j) * 0xC2B2AE3D27D4EB4FULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return float(double(z >> 40) * (2.0 / 16777216.0) - 1.0);
}
void fill(MatrixView<float> v, std::uint64_t seed, int which) {
  const index_t ld = v.layout.rows.stride[0];
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < v.rows(); ++i)
    for (index_t j = 0; j < v.cols(); ++j) v.data[i * ld + j] = element(seed, which, i, j);
}
void fill_value(MatrixView<float> v, float x) {
  const index_t ld = v.layout.rows.stride[0];
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < v.rows(); ++i) std::fill(v.data + i * ld, v.data + i * ld + v.cols(), x);
}
void copy_matrix(MatrixView<const float> src, MatrixView<float> dst) {
  const index_t ls = src.layout.rows.stride[0], ld = dst.layout.rows.stride[0];
#pragma omp parallel for schedule(static)
  for (index_t i = 0; i < src.rows(); ++i) std::copy(src.data + i * ls, src.data + i * ls + src.cols(), dst.data + i * ld);
}

std::pair<int, int> parse_grid(const std::string& s) {
  const auto x = s.find('x');
  if (x == std::string::npos) throw Error("multigpu: --grid '" + s + "' is not PxQ");
  return {int(tools::whole(s.substr(0, x), "--grid rows", 1, 4096)),
          int(tools::whole(s.substr(x + 1), "--grid columns", 1, 4096))};
}

struct Row {
  std::string impl;
  double ms = 0;
  multigpu::Check check;
  std::string detail;
  std::vector<double> runs;  // every timed repetition, ms
};

multigpu::Plan make_plan(const Args& a, multigpu::Variant variant, multigpu::LocalGemm local) {
  multigpu::Plan plan;
  plan.variant = variant;
  plan.local = local;
  plan.devices.clear();
  if (a.devices.empty())
    for (int g = 0; g < a.gpus; ++g) plan.devices.push_back(g);
  else
    for (index_t d : tools::whole_list(a.devices, "--devices", 0, 1023)) plan.devices.push_back(int(d));
  if (int(plan.devices.size()) != a.gpus)
    throw Error("multigpu: --devices lists " + std::to_string(plan.devices.size()) + " GPUs, --gpus says " +
                std::to_string(a.gpus));
  if (!a.grid.empty()) {
    std::tie(plan.grid_rows, plan.grid_cols) = parse_grid(a.grid);
  } else if (variant == multigpu::Variant::summa_2d) {  // as square as possible, P >= Q
    int q = 1;
    for (int x = 1; x * x <= a.gpus; ++x)
      if (a.gpus % x == 0) q = x;
    plan.grid_rows = a.gpus / q, plan.grid_cols = q;
  } else {
    plan.grid_rows = a.gpus, plan.grid_cols = 1;
  }
  plan.panel = a.panel, plan.chunks = a.chunks;
  if (a.budget_mib < 0) throw Error("multigpu: --budget-mib must be >= 0");
  plan.budget_bytes = std::size_t(a.budget_mib) << 20;
  if (!a.tile.empty()) {
    const std::vector<std::string> t = tools::split_list(a.tile, 'x');
    if (t.size() != 3) throw Error("multigpu: --tile '" + a.tile + "' is not MxNxK");
    plan.tile_m = tools::whole(t[0], "--tile M", 1), plan.tile_n = tools::whole(t[1], "--tile N", 1),
    plan.tile_k = tools::whole(t[2], "--tile K", 1);
  }
  return plan;
}

// The operands in pinned host memory, filled from the seed, and C's state
// before a verified run.
struct Operands {
  Operands(index_t M, index_t N, index_t K, float alpha_, float beta_, std::uint64_t seed_)
      : M(M), N(N), K(K), alpha(alpha_), beta(beta_), seed(seed_), A(dense(M, K), Memory::pinned),
        B(dense(K, N), Memory::pinned), C(dense(M, N), Memory::pinned),
        C0(dense(beta != 0.f ? M : 1, beta != 0.f ? N : 1), Memory::pinned) {
    fill(A.view(), seed, 0);
    fill(B.view(), seed, 1);
    if (beta != 0.f) fill(C0.view(), seed, 2);
  }
  static Layout dense(index_t r, index_t c) { return Layout::dense({r, c}); }
  MatrixView<const float> a() const { return A.view(); }
  MatrixView<const float> b() const { return B.view(); }
  MatrixView<const float> c() const { return C.view(); }
  MatrixView<const float> c0() const { return C0.view(); }
  // C0 where beta != 0, else nullptr (valid while c0_view lives).
  const MatrixView<const float>* c0_or_null(const MatrixView<const float>& c0_view) const {
    return beta != 0.f ? &c0_view : nullptr;
  }
  // C before a verified run: NaN when beta == 0 (unwritten elements show), C0 otherwise.
  void reset_c() {
    if (beta == 0.f) fill_value(C.view(), std::numeric_limits<float>::quiet_NaN());
    else copy_matrix(c0(), C.view());
  }
  multigpu::Check verify() const {
    const MatrixView<const float> c0v = c0();
    return multigpu::verify(alpha, a(), b(), beta, c0_or_null(c0v), c(), seed);
  }

  const index_t M, N, K;
  const float alpha, beta;
  const std::uint64_t seed;
  Array<float> A, B, C, C0;
};

// The check of a run into the row, as a verdict.
Verdict checked(Row& row, const Operands& x) {
  row.check = x.verify();
  return {row.check.ok ? Outcome::passed : Outcome::failed, row.check.rel_err, row.check.reason};
}

// Verifies the trial's run, then times `reps` calls of its time_one (every
// one kept in row.runs); a failed check leaves the row untimed.
void measure(Row& row, int reps, Trial t) {
  t.time_one = [&row, once = t.time_one] {
    row.runs.push_back(once());
    return row.runs.back();
  };
  TimingPlan plan;
  plan.warmup = 0, plan.min_reps = plan.max_reps = reps, plan.target_seconds = 0;
  const Measurement m = verify_then_time(t, plan);
  if (!m.verdict.passed()) {
    row.check.ok = false;
    if (row.check.reason.empty()) row.check.reason = m.verdict.note;
  }
  row.ms = m.timing.median_ms;
}

// A, B (and C0) start on the first GPU and C ends there: every timed call
// scatters the blocks from it, multiplies, and gathers C back.
multigpu::Stats time_from_gpu0(const multigpu::Plan& plan, Operands& x, int reps, Row& row) {
  multigpu::bind_device(plan.devices[0]);
  x.reset_c();
  const Array<float> dA = cuda::to_device(x.A), dB = cuda::to_device(x.B), dC0 = cuda::to_device(x.C0);
  Array<float> dC = cuda::to_device(x.C);
  const MatrixView<const float> dav = dA.view(), dbv = dB.view(), dc0v = dC0.view();
  multigpu::Distributed d(plan, x.M, x.N, x.K);
  auto call = [&](bool poison) {
    const auto t0 = std::chrono::steady_clock::now();
    d.scatter(dav, dbv, x.beta != 0.f ? &dc0v : nullptr);
    if (poison) d.poison_c();
    multigpu::Stats s = d.run(x.alpha, x.beta);
    d.gather(dC.view());
    s.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return s;
  };
  multigpu::Stats st;
  Trial t;
  t.run = [&] { st = call(x.beta == 0.f); };
  t.check = [&] {
    copy_bytes(x.C.data(), Memory::pinned, dC.data(), Memory::device, std::size_t(x.M * x.N) * sizeof(float));
    return checked(row, x);
  };
  t.time_one = [&] { return call(false).ms; };
  measure(row, reps, t);
  return st;
}

multigpu::Stats time_on_devices(const multigpu::Plan& plan, Operands& x, int reps, Row& row) {
  multigpu::Distributed d(plan, x.M, x.N, x.K);
  const MatrixView<const float> c0v = x.c0();
  multigpu::Stats st;
  Trial t;
  t.reset = [&] {
    d.scatter(x.a(), x.b(), x.c0_or_null(c0v));
    if (x.beta == 0.f) d.poison_c();
  };
  t.run = [&] { st = d.run(x.alpha, x.beta); };
  t.check = [&] {
    d.gather(x.C.view());
    return checked(row, x);
  };
  t.time_one = [&] { return d.run(x.alpha, x.beta).ms; };
  measure(row, reps, t);
  return st;
}

multigpu::Stats time_from_host(const multigpu::Plan& plan, Operands& x, int reps, Row& row) {
  multigpu::Stats st;
  Trial t;
  t.reset = [&] { x.reset_c(); };
  t.run = [&] { st = multigpu::gemm_host(plan, x.alpha, x.a(), x.b(), x.beta, x.C.view()); };
  t.check = [&] { return checked(row, x); };
  t.time_one = [&] {
    const multigpu::Stats s = multigpu::gemm_host(plan, x.alpha, x.a(), x.b(), x.beta, x.C.view());
    if (!s.trace.empty()) st.trace = s.trace;  // the last repetition's (multigpu.trace=1)
    return s.ms;
  };
  measure(row, reps, t);
  return st;
}

// parray's variant: verified once, then timed.
Row time_variant(const Args& a, const multigpu::Plan& plan, Operands& x) {
  const bool on_device = a.operands != "host", from_gpu0 = a.operands == "gpu0";
  Row mine;
  mine.impl = "parray-" + a.variant +
              (plan.local != multigpu::LocalGemm::step12
                   ? std::string("-") + multigpu::local_gemm_name(plan.local) + "-local"
                   : "");
  const multigpu::Stats st = from_gpu0   ? time_from_gpu0(plan, x, a.reps, mine)
                             : on_device ? time_on_devices(plan, x, a.reps, mine)
                                         : time_from_host(plan, x, a.reps, mine);
  mine.detail = st.detail + fmt::format("; per GPU {:.0f} MiB of buffers", double(st.device_bytes) / 1048576.0);
  if (st.comm_bytes > 0) mine.detail += fmt::format("; NCCL {:.2f} GB received", st.comm_bytes / 1e9);
  if (!on_device || plan.variant == multigpu::Variant::out_of_core)
    mine.detail += fmt::format("; PCIe {:.2f} GB in, {:.2f} GB out", st.h2d_bytes / 1e9, st.d2h_bytes / 1e9);
  if (!st.trace.empty()) mine.detail += "; trace: " + st.trace;
  return mine;
}

// The local GEMM's kernel alone on the first GPU, operands on it; GPU time from CUDA events.
Row time_one_gpu(const Args& a, const multigpu::Plan& plan, Operands& x) {
  const index_t M = x.M, N = x.N, K = x.K;
  const MatrixLayout one = MatrixLayout::row_major(1, 1, 1);
  const bool own_tensor_kernel = registry().find("cuda-14-3xtf32").why_not(one, one, one).empty();
  const GemmImpl& impl = registry().find(plan.local == multigpu::LocalGemm::step12   ? "cuda-12-best"
                                         : plan.local == multigpu::LocalGemm::cublas ? "cublas"
                                         : own_tensor_kernel                         ? "cuda-14-3xtf32"
                                                                                     : "cuda-13-3xtf32");
  Row base;
  base.impl = impl.name + "-gpu" + std::to_string(plan.devices[0]);
  multigpu::bind_device(plan.devices[0]);
  Array<float> dA(Operands::dense(M, K), Memory::device), dB(Operands::dense(K, N), Memory::device),
      dC(Operands::dense(M, N), Memory::device);
  copy_bytes(dA.data(), Memory::device, x.A.data(), Memory::pinned, std::size_t(M * K) * sizeof(float));
  copy_bytes(dB.data(), Memory::device, x.B.data(), Memory::pinned, std::size_t(K * N) * sizeof(float));
  const GemmCall<float> call{x.alpha, std::as_const(dA).view(), std::as_const(dB).view(), x.beta, dC.view(), 1};
  Trial t;
  t.reset = [&] {
    x.reset_c();
    copy_bytes(dC.data(), Memory::device, x.C.data(), Memory::pinned, std::size_t(M * N) * sizeof(float));
  };
  t.run = [&] { impl.run_f32(call); };
  t.finish = [] { cuda::synchronize(); };
  t.check = [&] {
    copy_bytes(x.C.data(), Memory::pinned, dC.data(), Memory::device, std::size_t(M * N) * sizeof(float));
    return checked(base, x);
  };
  t.time_one = [&] { return cuda::event_time_ms([&] { impl.run_f32(call); }); };
  measure(base, a.reps, t);
  base.detail = "one GPU, operands on it";
  return base;
}

// cublasXt on the same GPUs, host operands.
Row time_cublasxt(const Args& a, const multigpu::Plan& plan, Operands& x, const std::string& devs) {
  Row base;
  int used = 0;
  Trial t;
  t.reset = [&] { x.reset_c(); };
  t.run = [&] { multigpu::cublasxt_sgemm(plan.devices, a.xt_block, x.alpha, x.a(), x.b(), x.beta, x.C.view(), &used); };
  t.check = [&] { return checked(base, x); };
  t.time_one = [&] {
    return multigpu::cublasxt_sgemm(plan.devices, a.xt_block, x.alpha, x.a(), x.b(), x.beta, x.C.view());
  };
  measure(base, a.reps, t);
  base.impl = "cublasxt";
  base.detail = "block dim " + std::to_string(used) + ", GPUs " + devs;
  return base;
}

// The rows on stdout (and the ratio), and as CSV; 1 if a check failed.
int report(const Args& a, const multigpu::Plan& plan, const Operands& x, const std::vector<Row>& rows) {
  const bool on_device = a.operands != "host";
  const double flops = 2.0 * double(x.M) * double(x.N) * double(x.K);
  int status = 0;
  std::string csv = "impl,variant,operands,gpus,grid,m,n,k,ms,tflops,ratio,rel_err,ok,detail\n";
  for (const Row& r : rows) {
    if (!r.check.ok) status = 1;
    const double tf = r.ms > 0 ? flops / (r.ms * 1e9) : 0;
    const double ratio = rows.size() > 1 && r.ms > 0 ? rows.back().ms / r.ms : 0;
    std::string runs;
    for (double t : r.runs) {
      if (!runs.empty()) runs += ' ';
      runs += fmt::format("{:.1f}", t);
    }
    fmt::print("  {:<22} {:>10.2f} ms {:>7.2f} TFLOP/s  check {} ({}, rel err {:.2e} <= {:.2e}){}{}\n", r.impl, r.ms,
               tf, r.check.ok ? "ok" : "FAILED", r.check.method, r.check.rel_err, r.check.tolerance,
               r.detail.empty() ? "" : "; " + r.detail, runs.empty() ? "" : "; runs " + runs + " ms");
    if (!r.check.ok) std::cerr << "multigpu: " << r.impl << " failed the check: " << r.check.reason << "\n";
    std::string detail = r.detail + (runs.empty() ? "" : "; runs " + runs + " ms");
    std::replace(detail.begin(), detail.end(), ',', ' ');
    csv += fmt::format("{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.4f},{:.3e},{},{}\n", r.impl, a.variant, a.operands,
                       a.gpus, plan.grid(), x.M, x.N, x.K, r.ms, tf, ratio, r.check.rel_err, r.check.ok ? 1 : 0,
                       detail);
  }
  if (rows.size() > 1 && rows[0].ms > 0)
    fmt::print("  {} is {:.2f}x {} ({} ms / {} ms)\n", rows[0].impl, rows[1].ms / rows[0].ms,
               on_device ? "the speed of the single GPU" : "the speed of cublasXt", rows[1].ms, rows[0].ms);
  tools::write_output(a.csv, csv, "multigpu");
  return status;
}

int run(const Args& a) {
  const multigpu::Variant variant = multigpu::parse_variant(a.variant);
  const multigpu::LocalGemm local = multigpu::parse_local_gemm(a.local);
  if (a.operands != "device" && a.operands != "gpu0" && a.operands != "host")
    throw Error("multigpu: --operands '" + a.operands + "' (use device, gpu0 or host)");
  // device and gpu0: on the GPUs, compared with one GPU; host: with cublasXt.
  const bool on_device = a.operands != "host", from_gpu0 = a.operands == "gpu0";
  if (variant == multigpu::Variant::out_of_core && on_device)
    throw Error("multigpu: the ooc variant streams host-resident operands: use --operands host");
  if (a.reps < 1) throw Error("multigpu: --reps must be >= 1");
  if (a.gpus < 1) throw Error("multigpu: --gpus must be >= 1");
  const int present = multigpu::device_count();
  if (a.gpus > present)
    throw Error("multigpu: --gpus " + std::to_string(a.gpus) + " but " + std::to_string(present) +
                (present == 1 ? " GPU is" : " GPUs are") + " present");
  const multigpu::Plan plan = make_plan(a, variant, local);
  if (a.xt_block < 0) throw Error("multigpu: --xt-block must be >= 0");
  const index_t M = a.m, N = a.n, K = a.k;
  multigpu::validate(plan, M, N, K);

  Operands x(M, N, K, float(a.alpha), float(a.beta), a.seed);
  std::string devs;
  for (int d : plan.devices) devs += (devs.empty() ? "" : ",") + std::to_string(d);
  fmt::print("multigpu {} on GPUs {} (grid {}), {}x{}x{} FP32, operands {}\n", a.variant, devs, plan.grid(), M, N, K,
             from_gpu0 ? "on GPU " + std::to_string(plan.devices[0]) + " (scattered and gathered in the time)"
             : on_device ? "on the GPUs" : "on the host (pinned)");
  std::vector<Row> rows;
  rows.push_back(time_variant(a, plan, x));
  if (a.baseline) rows.push_back(on_device ? time_one_gpu(a, plan, x) : time_cublasxt(a, plan, x, devs));
  return report(a, plan, x, rows);
}

#else

int run(const Args&) { throw Error("multigpu: needs a GPU, and parray was built without CUDA"); }

#endif

std::vector<tools::CliCommand> add_multigpu_commands(CLI::App& app, CLI::App&) {
  static Args args;
  CLI::App* c = app.add_subcommand("multigpu", "GEMM over several GPUs (SUMMA, K split with NCCL, out-of-core), "
                                               "verified and timed beside its baseline");
  c->add_option("--gpus", args.gpus, "number of GPUs")->capture_default_str();
  c->add_option("--devices", args.devices, "the GPUs' ids (default 0..G-1)");
  c->add_option("--grid", args.grid, "PxQ GPU array for 2d (default as square as possible; others Gx1)");
  tools::add_gemm_extents(*c, args.m, args.n, args.k).show_defaults();
  c->add_option("--variant", args.variant, "2d, ksplit or ooc")->capture_default_str();
  c->add_option("--operands", args.operands,
                "device (distributed over the GPUs), gpu0 (all on the first GPU; scatter and gather timed) or host (pinned)")
      ->capture_default_str();
  c->add_flag("--baseline", args.baseline, "also time the baseline: one GPU (device) or cublasXt (host)");
  c->add_option("--xt-block", args.xt_block, "cublasXt block dimension (0: its default)")->capture_default_str();
  c->add_option("--budget-mib", args.budget_mib, "ooc: device buffers per GPU, MiB (0: 8 GiB, <= 3/4 of free)")
      ->capture_default_str();
  c->add_option("--tile", args.tile, "ooc: force C blocks and K chunk, MxNxK");
  c->add_option("--local", args.local,
                "the GEMM each GPU runs: step12 (parray's), cublas, or 3xtf32 (ladder step 13: FP32 accuracy on "
                "tensor cores)")
      ->capture_default_str();
  c->add_option("--panel", args.panel, "2d: K panel width (0: automatic)")->capture_default_str();
  c->add_option("--chunks", args.chunks, "ksplit: row chunks overlapped with the reduce-scatter (0: automatic)")
      ->capture_default_str();
  tools::add_alpha_beta(*c, args.alpha, args.beta).show_defaults();
  c->add_option("--reps", args.reps, "timed repeats (median)")->capture_default_str();
  c->add_option("--seed", args.seed, "operand seed")->capture_default_str();
  tools::add_csv_option(*c, args.csv);
  return {{c, [] { return run(args); }}};
}

const parray::tools::RegisterCommands registered_multigpu(&add_multigpu_commands);

}  // namespace
