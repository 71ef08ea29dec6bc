// The CLI: bad input gets one line on stderr and exit status 2; good input runs.
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

using namespace parray_test;

TEST(Cli, BadInputExitsWithStatusTwo) {
  expect_cli_bad_input("gemm -m 8 -n 8 -k -5", "negative");
  expect_cli_bad_input("gemm -m 8 -n abc -k 5", "not a whole number");
  expect_cli_bad_input("gemm --impl nosuch -m 8 -n 8 -k 8", "unknown implementation 'nosuch'");
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --layout-a diagonal", "unknown matrix layout 'diagonal'");
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --dtype f16", "unknown dtype 'f16'");
  expect_cli_bad_input("gemm -m 1000000 -n 1000000 -k 1000000", "this machine has");
  expect_cli_bad_input("gemm -m 8 -n 8", "-k is required");
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --threads -2", "negative");
  expect_cli_bad_input("gemm -m 200 -n 200 -k 200 --print", "--print is for small matrices");
  expect_cli_bad_input("bench gemm --impl gold --shapes 3x4", "is not MxKxN");
  expect_cli_bad_input("bench gemm --impl gold", "give --sizes or --shapes");
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --threads 2000", "out of range");
  // Misspelt commands are named, with the commands there are; an option's value is not taken for one.
  expect_cli_bad_input("gemmm -m 8", "unknown command 'gemmm' (commands: list, gemm, bench");
  expect_cli_bad_input("bench gemmx", "unknown command 'gemmx' of 'bench' (commands: gemm,");
  expect_cli_bad_input("bench", "'bench' needs a command (commands: gemm,");
  expect_cli_bad_input("--isa portable lst", "unknown command 'lst'");
  // Output files that cannot be written are refused before the run, which never starts.
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --csv /nonexistent-dir/t.csv", "--csv /nonexistent-dir/t.csv: cannot be written");
  expect_cli_bad_input("dist --synthetic 10,4 --csv /nonexistent-dir/t.csv", "cannot be written");
  expect_cli_bad_input("knn --synthetic 10,4,2 --k 1 --out /nonexistent-dir/t.ivecs", "--out /nonexistent-dir/t.ivecs: cannot be written");
  // Synthetic data too large for this machine: the size, before any allocation.
  expect_cli_bad_input("knn --synthetic 2000000000,128,10 --k 5", "needs about");
  expect_cli_bad_input("bench knn --synthetic 2000000000,128,10 --k 5", "needs about");
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --stat mean", "use median or min");
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --rounds 0", "--rounds 0 is out of range");
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --pin-cpu x", "--pin-cpu (auto, off or a CPU) 'x' is not a whole number");
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --pin-cpu 4095", "CPU 4095 is not one this process may run on");
  expect_cli_bad_input("bench gemm16 --type int8", "unknown --type 'int8'");
  expect_cli_bad_input("bench gemm16 --c-type f64", "unknown --c-type 'f64'");
  expect_cli_bad_input("bench gemm16 --sizes 64x64", "is neither N nor MxKxN");
  expect_cli_bad_input("bench gemm16 --sizes 0", "out of range");
  expect_cli_bad_input("bench gemm16 --reps 0", "--reps");
  expect_cli_bad_input("bench gemm8 --type-a e4m4", "unknown --type-a 'e4m4' (e4m3 or e5m2)");
  expect_cli_bad_input("bench gemm8 --type-b int8", "unknown --type-b 'int8'");
  expect_cli_bad_input("bench gemm8 --out f64", "unknown --out 'f64' (bf16, fp16 or f32)");
  expect_cli_bad_input("bench gemm8 --scaling channel", "unknown --scaling 'channel' (tensor or blockwise)");
  expect_cli_bad_input("bench gemm8 --sizes 64x64", "is neither N nor MxKxN");
  expect_cli_bad_input("bench gemm8 --sizes 64 --csv /nonexistent-dir/t.csv", "cannot be written");
  expect_cli_bad_input("frobnicate", "unknown command 'frobnicate'");
  // The argument parser's errors in the project's words.
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --bogus", "unknown option '--bogus'");
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 extra", "unexpected argument 'extra'");
  expect_cli_bad_input("knn --k", "--k needs a value");
  expect_cli_bad_input("bench gemm --impl gold --sizes 8 --reps x", "--reps 'x' is not a value it takes");
  expect_cli_bad_input("list --format xml", "unknown format");
  expect_cli_bad_input("--isa sse9 list", "unknown instruction set 'sse9'");
  expect_cli_bad_input("plan -m 0 -n 8 -k 8 --gpu h100", "must be >= 1");
  expect_cli_bad_input("plan -m 8 -n 8 -k 8 --gpu a100", "unknown --gpu 'a100'");
  expect_cli_bad_input("plan -m 8 -n 8 -k 8 --gpu h100 --precision fp8", "unknown precision 'fp8'");
  expect_cli_bad_input("plan -m 8 -n 8 -k 8 --gpu h100 --precision fp64", "plans FP32 data");
  expect_cli_bad_input("bench shapes --device tpu", "--device is gpu or cpu");
  expect_cli_bad_input("bench shapes --count 0", "--count must be");
  expect_cli_bad_input("bench shapes --count 5 --from 6", "--from must be");
  expect_cli_bad_input("bench shapes --device cpu --precision tf32", "the CPU suite runs fp32 and fp64");
  expect_cli_bad_input("bench calls --calls 0", "--calls must be");
  expect_cli_bad_input("bench calls --threads 0 --timeline t.csv", "--threads must be");
  expect_cli_bad_input("bench calls --impl no-such-gemm", "unknown implementation");
}

// parray plan on a model (no GPU needed): the class of kernel a class of
// shape gets, and every kernel listed with its time or why it cannot run.
TEST(Cli, PlanPrintsTheChoiceAndTheAlternatives) {
  const CliResult gemv = run_cli("plan -m 1 -n 4096 -k 4096 --gpu h100");
  ASSERT_EQ(gemv.status, 0) << gemv.err;
  EXPECT_NE(gemv.out.find("plan: gemv"), std::string::npos) << gemv.out;
  const CliResult big = run_cli("plan -m 4096 -n 4096 -k 4096 --gpu h200 --precision tf32");
  ASSERT_EQ(big.status, 0) << big.err;
  EXPECT_NE(big.out.find("plan: tensor-tf32 (cuda-15-tf32)"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("cannot: delivers bf16, the call asks for tf32"), std::string::npos) << big.out;
  const CliResult split = run_cli("plan -m 96 -n 96 -k 12288 --gpu h100");
  ASSERT_EQ(split.status, 0) << split.err;
  EXPECT_EQ(split.out.find("K split 1,"), std::string::npos) << split.out;
}

TEST(Cli, ListShowsTheLadderAndMissingParts) {
  const CliResult r = run_cli("list");
  EXPECT_EQ(r.status, 0);
  for (const char* name : {"gold", "gold-omp", "transpose", "pack-single", "pack-double", "tile-4x4", "parray-pthd-2x2"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  const CliResult csv = run_cli("list --format csv");
  EXPECT_EQ(csv.status, 0);
  EXPECT_EQ(csv.out.rfind("name,device,dtypes,baseline,tags,description,preconditions,inputs\n", 0), 0u);
  EXPECT_NE(csv.out.find("gold,cpu,\"f32,f64\""), std::string::npos);
}

// --precision: a call never gets less accuracy than it asks; a bench row of an
// implementation that delivers less says why instead of running.
TEST(Cli, PrecisionIsNeverLowered) {
  expect_cli_bad_input("gemm --impl gold -m 8 -n 8 -k 8 --precision fp64",
                       "'gold' delivers fp32 products of f32 data, the call asks for fp64");
  expect_cli_bad_input("gemm --impl gold -m 8 -n 8 -k 8 --precision fp8", "unknown precision 'fp8'");
  const CliResult ok = run_cli("gemm --impl gold -m 8 -n 8 -k 8 --reps 1 --precision tf32");
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("check OK"), std::string::npos);
  const CliResult f64 = run_cli("gemm --impl gold -m 8 -n 8 -k 8 --reps 1 --dtype f64 --precision fp64");
  EXPECT_EQ(f64.status, 0) << f64.err;
  const CliResult bench = run_cli("bench gemm --impl gold --sizes 8 --reps 1 --precision fp64");
  EXPECT_EQ(bench.status, 0) << bench.err;
  EXPECT_NE(bench.out.find("delivers fp32 products"), std::string::npos) << bench.out;
}

// --threads 0 is every core (OMP_NUM_THREADS where set) in bench gemm, as in gemm and knn.
TEST(Cli, BenchThreadsZeroIsAllCores) {
  const CliResult r = run_cli("bench gemm --impl gold --sizes 8 --reps 1 --threads 0");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("gold"), std::string::npos) << r.out;
}

// --batch B: a strided batch (parray::gemm_batched), every product checked against FP64.
TEST(Cli, GemmBatchVerifies) {
  for (const char* args : {"gemm --impl cpu -m 17 -n 13 -k 29 --batch 37 --reps 1",
                           "gemm --impl cpu -m 40 -n 30 -k 50 --batch 3 --dtype f64 --alpha -1 --beta 0.5 --reps 1",
                           "gemm --impl cpu -m 21 -n 30 -k 40 --batch 9 --broadcast-b --beta 0.5 --reps 1"}) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
    EXPECT_NE(r.out.find("check OK"), std::string::npos) << args << "\n" << r.out;
  }
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --batch 3 --layout-a col", "--batch takes row-major operands");
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --batch -1", "--batch -1 must be >= 1");
  expect_cli_bad_input("gemm -m 8 -n 8 -k 8 --broadcast-b", "--broadcast-b needs --batch");
}

TEST(Cli, GemmVerifies) {
  const CliResult r = run_cli("gemm --impl gold -m 37 -n 29 -k 41 --reps 1");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("check OK"), std::string::npos) << r.out;
  const CliResult f = run_cli("gemm --impl tile-4x4 -m 33 -n 30 -k 20 --layout-a fig17 --layout-b fig18 --layout-c col "
                       "--dtype f64 --alpha -1 --beta 0.5 --reps 1");
  EXPECT_EQ(f.status, 0) << f.err;
  EXPECT_NE(f.out.find("check OK"), std::string::npos) << f.out;
}

// --layout-X takes a Parray type, over a storage type named S by --storage-X:
// the paper's fig 17 storage of A written out, B transposed by a type.
TEST(Cli, LayoutsAsParrayTypes) {
  CliResult r = run_cli("gemm --impl cpu -m 64 -n 32 -k 48 --reps 1 --storage-a \"[2][64][24]\" "
                        "--layout-a \"[#S_1][[#S_0][#S_2]]\" --storage-b \"[32][48]\" --layout-b \"[#S_1][#S_0]\" "
                        "--layout-c \"[64][32]\"");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("check OK"), std::string::npos) << r.out;
  expect_cli_bad_input("gemm -m 64 -n 32 -k 48 --storage-a \"[2][64][24]\" --layout-a \"[#S_1][[#S_0][#S_9]]\"",
                       "at position 16");
  expect_cli_bad_input("gemm -m 64 -n 32 -k 50 --storage-a \"[2][64][24]\" --layout-a \"[#S_1][[#S_0][#S_2]]\"",
                       "is 64x48, the operand is 64x50");
  expect_cli_bad_input("gemm -m 64 -n 32 -k 48 --layout-b \"[48][32\"", "expected ']' at position 7");
  expect_cli_bad_input("gemm -m 64 -n 32 -k 48 --storage-b \"[48][32]\"", "--storage-b needs --layout-b");
}

TEST(Cli, IsaOverrideSelectsTheMicrokernel) {
  const CliResult r = run_cli("--isa portable list");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("parray-cpu uses the portable microkernel"), std::string::npos) << r.out;
}

TEST(Cli, PrintShowsASmallIntegerProduct) {
  const CliResult r = run_cli("gemm --impl gold -m 8 -n 8 -k 8 --print --reps 1");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("A (8x8):"), std::string::npos);
  EXPECT_NE(r.out.find("C (8x8):"), std::string::npos);
  EXPECT_NE(r.out.find("sum_abs_err 0.000e+00"), std::string::npos) << r.out;  // integers: exact
}

TEST(Cli, BenchWritesCsv) {
  const std::string csv = testing::TempDir() + "parray_bench.csv";
  const CliResult r = run_cli("bench gemm --impl gold,tile-4x4 --shapes 40x30x20 --threads 1,2 --reps 2 --csv " + csv);
  EXPECT_EQ(r.status, 0) << r.err;
  FILE* f = std::fopen(csv.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::array<char, 512> line{};
  ASSERT_NE(std::fgets(line.data(), line.size(), f), nullptr);
  EXPECT_EQ(std::string(line.data()).rfind("impl,device,dtype,m,n,k,layout,threads,ms,gflops", 0), 0u);
  int rows = 0;
  while (std::fgets(line.data(), line.size(), f)) ++rows;
  std::fclose(f);
  EXPECT_EQ(rows, 3);  // gold once (single-threaded), tile-4x4 at 1 and 2 threads
}

// Rounds: the implementations of a thread count take turns, the order
// reversed every other round, and every row counts its rounds.
TEST(Cli, BenchRoundsTakeTurnsInAlternatingOrder) {
  const std::string csv = testing::TempDir() + "parray_bench_rounds.csv";
  const CliResult r =
      run_cli("bench gemm --impl gold,tile-4x4 --shapes 40x30x20 --threads 1 --reps 1 --rounds 3 --csv " + csv);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> order;
  for (std::size_t at = 0; (at = r.err.find("] ", at)) != std::string::npos; at += 2) {
    const std::size_t end = r.err.find(',', at);
    if (r.err.compare(at - 6, 6, "[bench") == 0 || end == std::string::npos) continue;  // not a timing line
    order.push_back(r.err.substr(at + 2, end - at - 2));
  }
  const std::vector<std::string> want = {"gold", "tile-4x4", "tile-4x4", "gold", "gold", "tile-4x4"};
  EXPECT_EQ(order, want) << r.err;
  FILE* f = std::fopen(csv.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::array<char, 512> line{};
  ASSERT_NE(std::fgets(line.data(), line.size(), f), nullptr);
  const std::string head = line.data();
  EXPECT_NE(head.find(",pct_best_baseline,rounds,pct_best_round_min,"), std::string::npos) << head;
  int rows = 0;
  while (std::fgets(line.data(), line.size(), f)) {
    ++rows;
    EXPECT_NE(std::string(line.data()).find(",row,1,"), std::string::npos) << line.data();
    // ..., pct_best_baseline, rounds: no baseline here, so 0 then 3.
    EXPECT_NE(std::string(line.data()).find(",0.0,3,"), std::string::npos) << line.data();
  }
  std::fclose(f);
  EXPECT_EQ(rows, 2);
}

// The direct path's non-temporal stores of C (chosen for large C written once;
// PARRAY_CPU_STREAM=1 forces them here on small problems): full rows streamed,
// edge columns and edge rows through masked stores, then verified.
TEST(Cli, StreamingStoresOfCVerify) {
  setenv("PARRAY_CPU_STREAM", "1", 1);
  const CliResult r = run_cli("bench gemm --impl parray-cpu --dtype f32,f64 --shapes 100x64x64,37x48x70,256x200x128 "
                              "--threads 1,2 --reps 1");
  unsetenv("PARRAY_CPU_STREAM");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

// --interleave: each round goes over every problem (here two layouts of one
// shape) before the next round, the problems' order reversed every other
// round; each problem keeps its own row with all its rounds.
TEST(Cli, BenchInterleavedRoundsGoOverEveryProblem) {
  const std::string csv = testing::TempDir() + "parray_bench_interleave.csv";
  const CliResult r = run_cli("bench gemm --impl gold --shapes 40x30x20 --layout row,col --threads 1 --reps 1 "
                              "--rounds 3 --interleave --csv " + csv);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> order;  // "LAYOUT, round R/3" of each timing line
  std::istringstream lines(r.err);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("[bench ", 0) == 0 && l.find("round") != std::string::npos && l.find("x20 ") != std::string::npos)
      order.push_back(l.substr(l.find("x20 ") + 4));
  const std::vector<std::string> want = {"row, round 1/3", "col, round 1/3", "col, round 2/3",
                                         "row, round 2/3", "row, round 3/3", "col, round 3/3"};
  EXPECT_EQ(order, want) << r.err;
  FILE* f = std::fopen(csv.c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::array<char, 512> line{};
  ASSERT_NE(std::fgets(line.data(), line.size(), f), nullptr);
  std::vector<std::string> layouts;
  while (std::fgets(line.data(), line.size(), f)) {
    const std::string row = line.data();
    EXPECT_NE(row.find(",0.0,3,"), std::string::npos) << row;  // no baseline; three rounds
    layouts.push_back(row.find(",row,1,") != std::string::npos ? "row" : row.find(",col,1,") != std::string::npos ? "col" : row);
  }
  std::fclose(f);
  EXPECT_EQ(layouts, (std::vector<std::string>{"row", "col"}));
}

// The packed path's block sizes: the rule PARRAY_CPU_BLOCKING names is the one
// `parray list` reports, and parray-cpu verifies under each (K of 1100 is one
// K block stretched past KC 1024 under the L2 rule, three blocks under the L1
// one; 1200 is two under the L2 rule, 1024 + 176); PARRAY_CPU_TUNING adds one
// implementation per KCxMC, whose small blocks take many K steps and row
// blocks (MC 9 rounds down to the 8-row tile; K 264 at KC 64 ends in a
// stretched block of 72), and a malformed entry is bad input.
TEST(Cli, BlockingRulesAndTuningBlocksVerify) {
  const ScopedEnv packed("PARRAY_CPU_DIRECT", "0");
  for (const char* rule : {"l1", "l2"}) {
    const ScopedEnv env("PARRAY_CPU_BLOCKING", rule);
    const CliResult l = run_cli("list");
    EXPECT_NE(l.out.find(std::string("cpu blocking: ") + rule + " rule"), std::string::npos) << l.out;
    for (const char* dtype : {"f32", "f64"})
      for (const char* k : {"1100", "1200"}) {
        const CliResult g = run_cli(std::string("gemm --impl parray-cpu -m 67 -n 53 -k ") + k +
                                    " --threads 2 --reps 1 --beta 0.5 --dtype " + dtype);
        EXPECT_EQ(g.status, 0) << rule << " " << dtype << " k " << k << ": " << g.err;
        EXPECT_NE(g.out.find("check OK"), std::string::npos) << rule << " " << dtype << " k " << k << ": " << g.out;
      }
  }
  {
    // NC 96 and 5 (raised to one micro-panel): several column blocks of B.
    const ScopedEnv env("PARRAY_CPU_TUNING", "64x16,40x9,64x16x96,40x9x5");
    for (const char* impl :
         {"parray-cpu-kc64-mc16", "parray-cpu-kc40-mc9", "parray-cpu-kc64-mc16-nc96", "parray-cpu-kc40-mc9-nc5"})
      for (const char* k : {"300", "264"}) {
        const CliResult g = run_cli(std::string("gemm --impl ") + impl + " -m 97 -n 101 -k " + k +
                                    " --threads 2 --layout-a col --dtype f64 --reps 1");
        EXPECT_EQ(g.status, 0) << impl << " k " << k << ": " << g.err;
        EXPECT_NE(g.out.find("check OK"), std::string::npos) << impl << " k " << k << ": " << g.out;
      }
  }
  {
    const ScopedEnv bad("PARRAY_CPU_TUNING", "1024");
    expect_cli_bad_input("list", "PARRAY_CPU_TUNING: '1024' is not KCxMC");
    const ScopedEnv bad_nc("PARRAY_CPU_TUNING", "1024x128x0");
    expect_cli_bad_input("list", "PARRAY_CPU_TUNING: '1024x128x0' is not KCxMC or KCxMCxNC");
    const ScopedEnv bad_tail("PARRAY_CPU_TUNING", "1024x128x");
    expect_cli_bad_input("list", "PARRAY_CPU_TUNING: '1024x128x' is not KCxMC or KCxMCxNC");
  }
  {
    const ScopedEnv bad_order("PARRAY_CPU_ORDER", "diagonal");
    expect_cli_bad_input("gemm --impl parray-cpu -m 64 -n 64 -k 64 --reps 1",
                         "PARRAY_CPU_ORDER: unknown order 'diagonal'");
  }
  const ScopedEnv bad_rule("PARRAY_CPU_BLOCKING", "zen5");
  expect_cli_bad_input("list", "PARRAY_CPU_BLOCKING: unknown rule 'zen5'");
}

// --tune KEY=VALUE sets a tuning key after the environment, before or after
// the command's name; `parray list` shows the value; an unknown key, a
// missing '=' and a bad value are bad input.
TEST(Cli, TuneSetsKeysAfterTheEnvironment) {
  const ScopedEnv env("PARRAY_CPU_BLOCKING", "l1");
  const CliResult l = run_cli("--tune cpu.blocking=l2 list");
  EXPECT_EQ(l.status, 0) << l.err;
  EXPECT_NE(l.out.find("cpu blocking: l2 rule"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("PARRAY_CPU_BLOCKING"), std::string::npos) << l.out;
  const CliResult g = run_cli("gemm --impl parray-cpu-kc64-mc16 -m 40 -n 30 -k 300 --reps 1 --dtype f64 "
                              "--tune cpu.candidates=64x16 --tune cpu.direct=0");
  EXPECT_EQ(g.status, 0) << g.err;
  EXPECT_NE(g.out.find("check OK"), std::string::npos) << g.out;
  expect_cli_bad_input("--tune cpu.nothing=1 list", "--tune: unknown key 'cpu.nothing'");
  expect_cli_bad_input("--tune cpu.kc list", "--tune 'cpu.kc' is not key=value");
  expect_cli_bad_input("--tune cpu.order=diagonal list", "--tune cpu.order: unknown order 'diagonal'");
  expect_cli_bad_input("--tune cpu.kc=-1 list", "--tune cpu.kc: '-1' is not an integer in 0..65536");
}

// A short K and a C larger than the caches (64 MiB here) take the packed
// path's along-rows tile order by default (src/cpu/gemm/blocked.cpp, choose_tile_order);
// rows and columns not multiples of the tiles, two threads, beta accumulating.
TEST(Cli, ShortKLargeCVerifies) {
  for (const char* dtype : {"f64", "f32"}) {
    const CliResult g = run_cli(std::string("gemm --impl parray-cpu -m 4101 -n 2053 -k 37 --threads 2 --reps 1 "
                                            "--beta 0.5 --dtype ") + dtype);
    EXPECT_EQ(g.status, 0) << dtype << ": " << g.err;
    EXPECT_NE(g.out.find("check OK"), std::string::npos) << dtype << ": " << g.out;
  }
}
