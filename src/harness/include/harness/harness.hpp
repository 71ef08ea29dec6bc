// The measurement side shared by the CLI, the tests and the benchmarks:
// operands in any named layout, the FP64 reference, verification, timing.
//
// Verification (docs/verification.md):
//   * inputs are seeded uniform random numbers in [-1, 1) (or small integers
//     0..8 for hand-checkable printouts), never all zeros;
//   * C is poisoned with NaN before the run when beta == 0 (so unwritten
//     elements and reads of C show), and so is the padding of every operand's
//     storage (so reads outside the logical matrix show);
//   * the reference is computed in FP64 from the same inputs;
//   * a result passes when it holds no NaN/Inf, its relative Frobenius error
//     ||C - C_ref||_F / ||C_ref||_F is at most 4 u (sqrt(K) + 4), and every
//     element is within the forward-error bound 2 (K + 4) u (|alpha| |A||B| +
//     |beta| |C0|) of the reference, u being the unit roundoff of the dtype.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "parray/array.hpp"
#include "parray/gemm_check.hpp"
#include "parray/measure.hpp"
#include "parray/named_layouts.hpp"
#include "parray/registry.hpp"

namespace parray {

struct GemmProblem {
  Dtype dtype = Dtype::f32;
  index_t m = 0, n = 0, k = 0;
  std::string layout_a = "row", layout_b = "row", layout_c = "row";
  double alpha = 1.0, beta = 0.0;
  std::uint64_t seed = 42;
  bool int_inputs = false;  // values 0..8 instead of [-1, 1)
  // The least accuracy asked of the products (unset: the dtype's own); an
  // implementation that delivers less is not run (its row says why).
  std::optional<Precision> precision = std::nullopt;
  // Compute the FP64 reference on the GPU when the problem is large (above
  // 2.2e9 multiply-adds) and a GPU is present; the bench sets it when every
  // implementation being checked is a GPU one.
  bool reference_on_device = false;
  // No FP64 reference (a benchmark child that only runs and hands C back to
  // the parent, which checks it): check_c() and run_and_check() then throw.
  bool skip_reference = false;

  std::string layouts() const;  // "row" if all three agree, else "a/b/c"
};

struct CheckResult {
  bool ok = false;
  double rel_err = 0;       // ||C - C_ref||_F / ||C_ref||_F
  double max_abs_err = 0;   // max |C - C_ref|
  double sum_abs_err = 0;   // the CPU/GPU GEMM report's metric: sum |C_ref - C|
  double tolerance = 0;     // for rel_err
  std::string reason;       // why it failed, empty when ok
};

// Operands for one problem, in host memory, with the FP64 reference computed
// once and shared by every implementation that runs on it.
class GemmCase {
 public:
  explicit GemmCase(const GemmProblem& problem);
  ~GemmCase();
  GemmCase(const GemmCase&) = delete;
  GemmCase& operator=(const GemmCase&) = delete;

  const GemmProblem& problem() const { return problem_; }

  // Restores C to its initial contents (poisoned, or C0 when beta != 0),
  // runs the implementation once through parray::gemm() and verifies.
  CheckResult run_and_check(const GemmImpl& impl, int threads);
  // Runs once without checking (for timing); C is not restored.
  void run(const GemmImpl& impl, int threads);
  // The verify-then-time trial of one implementation on this case (C
  // restored, run, checked against the reference; GPU calls timed with CUDA
  // events). `result`, when given, receives the check's details. The case and
  // `impl` must outlive the trial.
  Trial trial(const GemmImpl& impl, int threads, CheckResult* result = nullptr);
  // C's whole storage (padding included), in host memory, as the last run left it.
  const void* c_storage() const;
  std::size_t c_storage_bytes() const;
  // Restores C, runs once and leaves the result in c_storage() (no check).
  void run_fresh(const GemmImpl& impl, int threads);
  // Verifies a C storage image of c_storage_bytes() bytes that another
  // process computed from the same problem (same seed, layouts).
  CheckResult check_c(const void* storage);
  // Why this implementation cannot run this problem, or "".
  std::string why_not(const GemmImpl& impl) const;

  // Hand-checkable printout of A, B and C (the CUDA lab report's 8x8 integer product).
  std::string print() const;

  struct Impl;  // the typed operands (src/harness/gemm_case.cpp)

 private:
  GemmProblem problem_;
  std::unique_ptr<Impl> impl_;
};

// One-thread timings on one CPU. On the shared 2-vCPU VM one vCPU at times
// ran a 64^3 or 512^3 product markedly slower than the other for seconds at a
// time (host contention that the steal counter does not show), so a
// one-thread row timed here on one vCPU and a baseline's child on the other
// compared the vCPUs, not the libraries.
// The highest CPU this process may run on (CPU 0 takes most interrupts), or
// -1 where affinity cannot be read.
int default_single_thread_cpu();
// Pins the calling thread to `cpu` for its lifetime and restores its mask
// after; a child spawned meanwhile inherits the pin. cpu < 0: does nothing.
// Throws Error for a CPU this process may not run on.
class ScopedCpuPin {
 public:
  explicit ScopedCpuPin(int cpu);
  ~ScopedCpuPin();
  ScopedCpuPin(const ScopedCpuPin&) = delete;
  ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
  std::vector<unsigned char> saved_;  // the cpu_set_t it replaced
};

// The FMA peak of this CPU in GFLOP/s, measured with a register-resident FMA
// loop on `threads` threads with the widest vector unit cpuid reports.
// Measured once per (dtype, threads) and kept.
double measured_cpu_peak_gflops(Dtype dtype, int threads);
// Measures again and keeps the highest peak seen (bench rounds: a
// measurement taken while the VM steals a core understates the peak, and
// every % of it would then be overstated).
double remeasured_cpu_peak_gflops(Dtype dtype, int threads);
// The peak once a product has run at gflops_seen: where the kept peak is
// below it, measured again (up to three times), and at least gflops_seen
// (no product outruns the hardware: a peak below it was measured in a slow
// moment), so that a % of peak never passes 100.
double cpu_peak_at_least(Dtype dtype, int threads, double gflops_seen);
std::string cpu_vector_isa();  // "avx512", "avx2" or "scalar"

// Baselines (OpenBLAS, BLIS) live outside the library; this adds those found
// at configure time and loadable now, and records the missing ones.
void register_baselines(Registry& r);

// A baseline library's own cblas_?gemm ("openblas", "blis" or "mkl"), opened
// as register_baselines() opens it and called with raw CBLAS arguments: for
// tests that hold a CBLAS interface against it. baseline_missing() says why
// the library cannot be used, without loading it ("" when it can);
// baseline_cblas_gemm() throws Error when it cannot.
std::string baseline_missing(const std::string& library);
template <class T>
void baseline_cblas_gemm(const std::string& library, int order, int trans_a, int trans_b, int m, int n, int k,
                         T alpha, const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc);

// One row of a benchmark table.
struct BenchRow {
  std::string impl, device, dtype, layout;
  index_t m = 0, n = 0, k = 0;
  int threads = 1;
  double ms = 0, gflops = 0, pct_peak = 0, pct_best_baseline = 0;
  // With BenchOptions::rounds > 1: the rounds timed, and the least, median
  // and greatest of the ratios to the best baseline of the same round (%).
  int rounds = 0;
  double round_pct_min = 0, round_pct_median = 0, round_pct_max = 0;
  double rel_err = 0, max_abs_err = 0;
  Outcome outcome = Outcome::failed;
  bool ok() const { return outcome == Outcome::passed; }
  std::string note;  // why skipped or failed
};

struct BenchOptions {
  std::vector<std::string> impls;      // names; "all" expanded by the caller
  std::vector<GemmProblem> problems;
  std::vector<int> threads = {1};
  int warmup = 1, min_reps = 3, max_reps = 15;
  double target_seconds = 0.5;
  // CPU implementations warm up for at least this long (time_repeated): a
  // small threaded product timed right after a pause runs far below its
  // speed on a VM, every rep waiting for a woken vCPU (docs/perf-notes.md).
  double min_warmup_seconds = 0.02;
  bool progress = true;                // progress lines on stderr
  // Implementations marked own_process (OpenBLAS, BLIS) are timed in a child
  // process: this executable started as `EXE __bench-child ...` (see
  // bench_child_main). Empty: every implementation runs in this process.
  std::string child_exe;
  // The time a row reports: the median of the timed repeats (default), or the
  // fastest (best_of), which a preemption or a stolen vCPU cannot inflate.
  bool best_of = false;
  // Rounds: every implementation of a problem and thread count is verified
  // and timed once per round, in turn (the order reversed every other round);
  // a row then reports the same statistic over its rounds.
  int rounds = 1;
  // Rounds over all the problems in turn (the problems' order reversed every
  // other round) instead of one problem after another: ratios between problems
  // (one shape in several layouts) then come from the same minutes of a
  // machine whose speed drifts. Every problem's operands stay in memory.
  bool interleave_problems = false;
  double child_timeout_seconds = 600;  // a child still running then is killed
  // One-thread CPU rows (this process and the baselines' children alike) run
  // pinned to this CPU (ScopedCpuPin): -2 default_single_thread_cpu(), -1 not pinned.
  int single_thread_cpu = -2;
  // Called with every row finished so far, each time a problem's rows are
  // (one problem at a time; interleaved, once at the end; the last call has
  // them all): the CLI rewrites --csv with them, so that a run cut short by a
  // time limit keeps the problems it finished (a GPU machine's ten-minute calls).
  std::function<void(const std::vector<BenchRow>&)> on_rows;
  // Called once per problem with its case (operands, FP64 reference) before
  // any row is timed: the CLI's --print shows a verified product from the
  // case the table then times, instead of building the problem twice.
  std::function<void(GemmCase&)> on_case;
};

std::vector<BenchRow> run_gemm_bench(const BenchOptions& options);

// ---- baselines in a child process (src/harness/bench_child.cpp) -------------
// What a child hands back on its stdout: its timing, or why it failed.
struct ChildResult {
  TimingStats timing;
  std::string error;   // empty: C was written and timed
  std::string kernel;  // GemmImpl::kernel_info in the child, without spaces; may be empty
};
// The time a row reports from a set of timings (BenchOptions::best_of).
inline double reported_ms(const TimingStats& t, const BenchOptions& o) { return o.best_of ? t.min_ms : t.median_ms; }
std::string child_result_line(const ChildResult& r);  // one line, ends in '\n'
// Parses the child's whole stdout; false (and `error` set) when it holds no result line.
bool parse_child_result(const std::string& out, ChildResult& r);
// The child's command line (after the executable) for one implementation,
// problem and thread count; `c_fd` is the file descriptor it writes C to.
std::vector<std::string> child_args(const std::string& impl, const GemmProblem& p, int threads,
                                    const BenchOptions& o, int c_fd);
// The environment a baseline child runs with: this one, with OMP_NUM_THREADS,
// OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS (and GOTO_NUM_THREADS) set to `threads`.
std::vector<std::string> child_environment(int threads);
// Runs `impl` on `gcase`'s problem in a child (o.child_exe), checks the C it
// hands back against gcase's reference, and fills row.ok/ms/notes. Never
// hangs: a child still running after o.child_timeout_seconds is killed.
void time_in_child(GemmCase& gcase, const GemmImpl& impl, int threads, const BenchOptions& o, BenchRow& row);
// The child side: argv[1] == "__bench-child". Returns the exit status.
int bench_child_main(int argc, char** argv);
std::string bench_csv(const std::vector<BenchRow>& rows);
std::string bench_json(const std::vector<BenchRow>& rows);
std::string bench_table(const std::vector<BenchRow>& rows);

}  // namespace parray
