// Baselines timed in a child process (src/harness/bench_child.cpp): the
// result line's round trip, the child's command line and environment, and
// through the CLI a good run, a library that cannot be loaded and a time-out.
// No test here asserts a speed.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.hpp"
#include "harness/harness.hpp"

using namespace parray;
using namespace parray_test;

namespace {

bool has_baseline(const std::string& name) {
  const CliResult r = run_cli("list --format csv");
  return r.out.find("\n" + name + ",cpu,") != std::string::npos;
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

std::string read_command(const std::string& cmd) {
  std::string out;
  if (FILE* f = popen(cmd.c_str(), "r")) {
    std::array<char, 256> buf{};
    while (std::fgets(buf.data(), static_cast<int>(buf.size()), f)) out += buf.data();
    pclose(f);
  }
  return out;
}

}  // namespace

// One-thread rows run pinned (BenchOptions::single_thread_cpu): the thread
// and a child it starts run on that CPU only, and the old mask comes back.
TEST(BenchPin, PinsTheThreadAndItsChildrenThenRestores) {
  const std::vector<int> before = allowed_cpus();
  const int cpu = default_single_thread_cpu();
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(cpu, before.back());
  {
    const ScopedCpuPin pin(cpu);
    EXPECT_TRUE(pin.active());
    EXPECT_EQ(allowed_cpus(), std::vector<int>{cpu});
    EXPECT_EQ(sched_getcpu(), cpu);
    const std::string child = read_command("grep Cpus_allowed_list /proc/self/status");
    EXPECT_NE(child.find(":\t" + std::to_string(cpu) + "\n"), std::string::npos) << child;
  }
  EXPECT_EQ(allowed_cpus(), before);
}

TEST(BenchPin, ACpuOutsideTheMaskIsAnErrorAndMinusOneIsNoPin) {
  const std::vector<int> before = allowed_cpus();
  EXPECT_THROW(ScopedCpuPin{CPU_SETSIZE + 1}, Error);
  EXPECT_THROW(ScopedCpuPin{before.back() + 1}, Error);
  {
    const ScopedCpuPin none(-1);
    EXPECT_FALSE(none.active());
    EXPECT_EQ(allowed_cpus(), before);
  }
  EXPECT_EQ(allowed_cpus(), before);
}

TEST(BenchChild, ResultLineRoundTrips) {
  ChildResult r;
  r.timing.median_ms = 1.2345678901234567;
  r.timing.min_ms = 0.5;
  r.timing.max_ms = 3e-5;
  r.timing.reps = 7;
  // A library may print to stdout before the result line.
  const std::string out = "OpenBLAS WARNING - something\n" + child_result_line(r);
  ChildResult back;
  ASSERT_TRUE(parse_child_result(out, back)) << back.error;
  EXPECT_TRUE(back.error.empty());
  EXPECT_DOUBLE_EQ(back.timing.median_ms, r.timing.median_ms);
  EXPECT_DOUBLE_EQ(back.timing.min_ms, r.timing.min_ms);
  EXPECT_DOUBLE_EQ(back.timing.max_ms, r.timing.max_ms);
  EXPECT_EQ(back.timing.reps, 7);
}

TEST(BenchChild, KernelNameRoundTripsWithoutSpaces) {
  ChildResult r;
  r.timing = {1.0, 1.0, 1.0, 1};
  r.kernel = "Cooper lake";
  ChildResult back;
  ASSERT_TRUE(parse_child_result(child_result_line(r), back)) << back.error;
  EXPECT_EQ(back.kernel, "Cooper_lake");
  r.kernel.clear();
  ASSERT_TRUE(parse_child_result(child_result_line(r), back));
  EXPECT_EQ(back.kernel, "");
}

TEST(BenchChild, ErrorLineRoundTripsOnOneLine) {
  ChildResult r;
  r.error = "blis: dlopen failed:\nno such file";
  const std::string line = child_result_line(r);
  EXPECT_EQ(line.find('\n'), line.size() - 1);  // one line
  ChildResult back;
  ASSERT_TRUE(parse_child_result(line, back));
  EXPECT_EQ(back.error, "blis: dlopen failed: no such file");
}

TEST(BenchChild, NoOrMalformedResultIsAnError) {
  ChildResult r;
  EXPECT_FALSE(parse_child_result("", r));
  EXPECT_NE(r.error.find("no result line"), std::string::npos);
  EXPECT_FALSE(parse_child_result("parray-bench-child median_ms=abc min_ms=1 max_ms=1 reps=1\n", r));
  EXPECT_NE(r.error.find("malformed"), std::string::npos) << r.error;
  EXPECT_FALSE(parse_child_result("parray-bench-child median_ms=1\n", r));
  EXPECT_NE(r.error.find("min_ms"), std::string::npos) << r.error;
}

TEST(BenchChild, EnvironmentSetsEveryThreadCount) {
  setenv("OMP_NUM_THREADS", "7", 1);
  setenv("MKL_NUM_THREADS", "5", 1);
  const std::vector<std::string> env = child_environment(1);
  unsetenv("OMP_NUM_THREADS");
  unsetenv("MKL_NUM_THREADS");
  for (const char* var : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS", "MKL_NUM_THREADS"}) {
    int found = 0;
    for (const std::string& e : env)
      if (e.rfind(std::string(var) + "=", 0) == 0) {
        ++found;
        EXPECT_EQ(e, std::string(var) + "=1");
      }
    EXPECT_EQ(found, 1) << var;
  }
}

TEST(BenchChild, ArgumentsCarryTheProblem) {
  GemmProblem p;
  p.dtype = Dtype::f64;
  p.m = 3, p.n = 5, p.k = 7;
  p.layout_b = "fig17";
  p.alpha = 0.1;
  BenchOptions o;
  const std::vector<std::string> args = child_args("blis", p, 2, o, 9);
  ASSERT_FALSE(args.empty());
  EXPECT_EQ(args.front(), "__bench-child");
  for (const char* want : {"impl=blis", "dtype=f64", "m=3", "n=5", "k=7", "layout_b=fig17", "threads=2", "c_fd=9",
                           "alpha=0.10000000000000001"})
    EXPECT_NE(std::find(args.begin(), args.end(), want), args.end()) << want;
}

TEST(BenchChild, BaselinesRunVerifiedInAChild) {
  for (const char* name : {"openblas", "blis", "mkl"}) {
    if (!has_baseline(name)) continue;
    const CliResult r = run_cli(std::string("bench gemm --impl ") + name +
                                " --dtype f32,f64 --shapes 33x17x29 --threads 1,2 --reps 1 --layout row,col");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("(in a child process)"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  }
}

// A baseline's row names the kernel the library picked: with OPENBLAS_CORETYPE
// in the child's environment OpenBLAS reports that core (a dynamic-arch build
// honours it), and the row says so, in the table and in the CSV.
TEST(BenchChild, BaselineRowNamesItsKernel) {
  if (!has_baseline("openblas")) GTEST_SKIP() << "OpenBLAS not installed";
  for (const char* core : {"Haswell", "Sandybridge"}) {
    const ScopedEnv env("OPENBLAS_CORETYPE", core);
    const CliResult r = run_cli("bench gemm --impl openblas --shapes 33x17x29 --threads 1 --reps 1");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(std::string("kernel ") + core), std::string::npos) << r.out;
  }
}

// With rounds, each round's ratio is to the best baseline of that round: the
// only baseline is then 100 % in every round, and another implementation's
// least, median and greatest ratios are in order and agree with the rounds.
TEST(BenchChild, RoundsRatioEachRoundToItsBestBaseline) {
  if (!has_baseline("openblas")) GTEST_SKIP() << "OpenBLAS not installed";
  const std::string csv = testing::TempDir() + "parray_bench_child_rounds.csv";
  const CliResult r = run_cli("bench gemm --impl parray-cpu,openblas --shapes 65x33x47 --threads 1 --reps 1 "
                              "--rounds 3 --stat min --csv " + csv);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  FILE* f = std::fopen(csv.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::array<char, 1024> line{};
  ASSERT_NE(std::fgets(line.data(), line.size(), f), nullptr);
  std::map<std::string, std::vector<double>> ratios;  // impl: pct_best_baseline, rounds, min, median, max
  while (std::fgets(line.data(), line.size(), f)) {
    std::vector<std::string> cells;
    std::string cell;
    for (const char* c = line.data(); *c && *c != '\n'; ++c) {
      if (*c == ',') cells.push_back(cell), cell.clear();
      else cell += *c;
    }
    cells.push_back(cell);
    ASSERT_GE(cells.size(), 16u) << line.data();
    for (int col = 11; col <= 15; ++col) ratios[cells[0]].push_back(std::stod(cells[col]));
  }
  std::fclose(f);
  ASSERT_EQ(ratios.size(), 2u);
  EXPECT_EQ(ratios["openblas"], (std::vector<double>{100.0, 3, 100.0, 100.0, 100.0}));
  const std::vector<double>& p = ratios["parray-cpu"];
  EXPECT_EQ(p[1], 3);
  EXPECT_GT(p[2], 0);
  EXPECT_LE(p[2], p[3]);
  EXPECT_LE(p[3], p[4]);
  // With --stat min the row's ratio, max over rounds of parray's speed over
  // max of the baseline's, lies between the least and greatest round ratios
  // (each bound is attained at one of the two maxima's rounds); 0.15: the
  // CSV's rounding to 0.1.
  EXPECT_GE(p[0], p[2] - 0.15);
  EXPECT_LE(p[0], p[4] + 0.15);
}

TEST(BenchChild, AnUnloadableLibraryGivesAClearRow) {
  if (!has_baseline("blis")) GTEST_SKIP() << "BLIS not installed";
  ScopedEnv env("PARRAY_BLIS_LIB", PARRAY_CLI_PATH);  // a file, but no shared library
  const CliResult r = run_cli("bench gemm --impl parray-cpu,blis --sizes 16 --reps 1");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("FAILED: blis in a child process: blis: dlopen failed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("parray-cpu"), std::string::npos) << r.out;  // the other rows still run
}

TEST(BenchChild, AMissingLibraryIsListedAsMissing) {
  for (const std::string name : {"openblas", "blis", "mkl"}) {
    std::string var = "PARRAY_" + name + "_LIB";
    std::transform(var.begin(), var.end(), var.begin(), [](unsigned char c) { return std::toupper(c); });
    const std::string missing = "/nonexistent/lib" + name + ".so";
    ScopedEnv env(var.c_str(), missing.c_str());
    const CliResult r = run_cli("list");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("missing: " + name + ": cannot read " + missing), std::string::npos) << r.out;
    // A missing library is never offered as an implementation.
    EXPECT_NE(run_cli("bench gemm --impl " + name + " --sizes 16 --reps 1").status, 0) << name;
  }
}

// MKL, where it is found (scripts/mkl-fetch, PARRAY_MKL_LIB), names its version
// and follows the row's thread count through the GNU OpenMP layer parray picks.
TEST(BenchChild, MklRowNamesItsVersion) {
  if (!has_baseline("mkl")) GTEST_SKIP() << "MKL not found (scripts/mkl-fetch, then PARRAY_MKL_LIB)";
  const CliResult r = run_cli("bench gemm --impl mkl --shapes 33x17x29 --threads 1,2 --reps 1");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("kernel MKL-20"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

TEST(BenchChild, AChildPastItsTimeLimitIsKilled) {
  if (!has_baseline("openblas")) GTEST_SKIP() << "OpenBLAS not installed";
  ScopedEnv env("PARRAY_BENCH_CHILD_TIMEOUT", "0.001");
  const CliResult r = run_cli("bench gemm --impl openblas --sizes 64 --reps 1");
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("timed out after 0.001 s (child killed)"), std::string::npos) << r.out;
}

// The CPU peak is measured once and kept; bench rounds measure it again and
// keep the highest (a measurement during a stolen core understates it).
TEST(BenchPeak, RemeasuringKeepsTheHighestPeak) {
  const double first = measured_cpu_peak_gflops(Dtype::f32, 1);
  EXPECT_GT(first, 0);
  EXPECT_EQ(measured_cpu_peak_gflops(Dtype::f32, 1), first);  // kept, not measured again
  const double highest = remeasured_cpu_peak_gflops(Dtype::f32, 1);
  EXPECT_GE(highest, first);
  EXPECT_EQ(measured_cpu_peak_gflops(Dtype::f32, 1), highest);
}

// A product faster than the kept peak raises it (measured again, else to the
// product's own rate): a % of peak never passes 100.
TEST(BenchPeak, NoProductOutrunsThePeak) {
  const double kept = measured_cpu_peak_gflops(Dtype::f64, 1);
  EXPECT_EQ(cpu_peak_at_least(Dtype::f64, 1, kept * 0.5), kept);  // below the peak: nothing changes
  const double impossible = kept * 1000.0;  // no measurement reaches it
  EXPECT_EQ(cpu_peak_at_least(Dtype::f64, 1, impossible), impossible);
  EXPECT_EQ(measured_cpu_peak_gflops(Dtype::f64, 1), impossible);  // kept for the rows after
}

// The warm-up lasts min_warmup_seconds before the timed repeats (woken
// workers after the bench's pause); no warm-up asked for means none.
TEST(BenchTiming, WarmUpLastsItsMinimumTime) {
  using clock = std::chrono::steady_clock;
  std::vector<clock::time_point> starts, ends;
  auto run = [&] {
    starts.push_back(clock::now());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ends.push_back(clock::now());
  };
  const TimingStats t = time_repeated(run, 1, 3, 3, 0.0, {}, 0.015);
  EXPECT_EQ(t.reps, 3);
  ASSERT_GE(starts.size(), 5u);  // at least two warm-up runs of ~1 ms each
  // The warm-up's span runs from its first call's start to the start of the
  // first timed repeat. The timer's own clock reads sit just outside the
  // callable's, so the span may fall short of the sum it keeps by a few
  // microseconds: 50 us of slack, far below one 1 ms call.
  const std::size_t first_timed = starts.size() - 3;
  const double warm_ms =
      std::chrono::duration<double, std::milli>(starts[first_timed] - starts[0]).count();
  EXPECT_GE(warm_ms, 15.0 - 0.05);
  starts.clear();
  time_repeated(run, 0, 3, 3, 0.0, {}, 0.015);
  EXPECT_EQ(starts.size(), 3u);
  starts.clear();
  time_repeated(run, 2, 3, 3, 0.0);
  EXPECT_EQ(starts.size(), 5u);
}

TEST(BenchChild, ArgumentsCarryTheWarmUpTime) {
  GemmProblem p;
  BenchOptions o;
  o.min_warmup_seconds = 0.125;
  const std::vector<std::string> args = child_args("openblas", p, 2, o, 3);
  EXPECT_NE(std::find(args.begin(), args.end(), "min_warmup_seconds=0.125"), args.end());
}

// The CLI pins one-thread rows to the CPU it is given, and not with "off".
TEST(BenchPin, OneThreadRowsSayWhereTheyRan) {
  const std::string cpu = std::to_string(allowed_cpus().front());
  const CliResult pinned = run_cli("bench gemm --impl gold --sizes 16 --reps 1 --pin-cpu " + cpu);
  ASSERT_EQ(pinned.status, 0) << pinned.err;
  EXPECT_NE(pinned.err.find("gold, 1 thread(s) on CPU " + cpu), std::string::npos) << pinned.err;
  const CliResult off = run_cli("bench gemm --impl gold --sizes 16 --reps 1 --pin-cpu off");
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_EQ(off.err.find(" on CPU "), std::string::npos) << off.err;
}

// The rows so far are handed out after each problem (the CLI rewrites --csv
// with them), so that a run stopped by a time limit keeps what it finished;
// interleaved rounds hand them out once, at the end.
TEST(Bench, RowsHandedOutAfterEachProblem) {
  for (const bool interleave : {false, true}) {
    BenchOptions o;
    o.impls = {"gold", "tile-4x4"};
    o.threads = {1};
    o.min_reps = o.max_reps = 1;
    o.warmup = 0;
    o.progress = false;
    o.interleave_problems = interleave;
    for (const index_t m : {20, 12}) {
      GemmProblem p;
      p.m = m, p.k = 10, p.n = 15;
      o.problems.push_back(p);
    }
    std::vector<std::vector<index_t>> calls;  // each call's rows, by M
    o.on_rows = [&](const std::vector<BenchRow>& rows) {
      std::vector<index_t> ms;
      for (const BenchRow& r : rows) ms.push_back(r.m);
      calls.push_back(ms);
    };
    const std::vector<BenchRow> rows = run_gemm_bench(o);
    ASSERT_EQ(rows.size(), 4u);
    for (const BenchRow& r : rows) EXPECT_TRUE(r.ok()) << r.impl << " " << r.note;
    const std::vector<std::vector<index_t>> want =
        interleave ? std::vector<std::vector<index_t>>{{20, 20, 12, 12}}
                   : std::vector<std::vector<index_t>>{{20, 20}, {20, 20, 12, 12}};
    EXPECT_EQ(calls, want) << "interleave " << interleave;
  }
}
