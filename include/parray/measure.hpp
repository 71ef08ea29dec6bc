// The one verify-then-time procedure of every benchmark and command that
// reports a speed: GEMM, GEMV, k-NN, multi-GPU GEMM and MPI SUMMA. A Trial
// says how to run one implementation on one problem and how to check its
// result; verify_then_time() runs it once from fresh (poisoned) outputs,
// checks it, and times it only when it passed: a wrong answer has no speed.
// Timing: warm-up runs, then repeats until both a least count and a target
// time are reached (at most max_reps); the median, least and greatest kept.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "parray/core.hpp"

namespace parray {

struct TimingStats {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int reps = 0;
};

// Median, least and greatest of a set of timings (ms; at least one).
TimingStats timing_stats(std::vector<double> ms);

struct TimingPlan {
  int warmup = 1;
  int min_reps = 3, max_reps = 15;
  double target_seconds = 0.5;
  // The warm-up goes on (beyond `warmup` runs, when warmup > 0) until it has
  // lasted this long: after an idle pause a threaded run first waits for its
  // sleeping workers, and on a VM waking an idle vCPU takes far longer than
  // a small product, twice in a row at times (docs/perf-notes.md).
  double min_warmup_seconds = 0;
};

// Times calls of `time_one` (each returns the milliseconds of one call) under `plan`.
TimingStats time_calls(const std::function<double()>& time_one, const TimingPlan& plan);

// A steady clock around run() and finish() (a device synchronisation for
// asynchronous implementations; may be empty), timed under `plan`.
TimingStats time_repeated(const std::function<void()>& run, const TimingPlan& plan,
                          const std::function<void()>& finish = {});
// The same with the plan spelt out.
TimingStats time_repeated(const std::function<void()>& run, int warmup, int min_reps, int max_reps,
                          double target_seconds, const std::function<void()>& finish = {},
                          double min_warmup_seconds = 0);

// What a check found: passed or failed, the error measure it compared with
// its tolerance (relative error, or 1 - recall), and why it failed.
struct Verdict {
  Outcome outcome = Outcome::failed;
  double error = 0;
  std::string note;
  bool passed() const { return outcome == Outcome::passed; }
};

// One implementation on one problem.
struct Trial {
  std::function<void()> reset;    // outputs back to their fresh (poisoned) state; may be empty
  std::function<void()> run;      // one call
  std::function<void()> finish;   // waits for the call to end (device, other ranks); may be empty
  std::function<Verdict()> check; // the checked run's verdict (fetches results it needs)
  std::function<void()> before_timing;  // after a passed check, before the warm-up; may be empty
  // Milliseconds of one call; empty: a steady clock around run() and
  // finish(). GPU kernels time with CUDA events, MPI with the slowest rank.
  std::function<double()> time_one;
  // A parray::Error on the way becomes a failed verdict; false: it propagates
  // (MPI ranks, where one rank's error must reach the thread array's abort
  // instead of leaving the others waiting in a collective).
  bool catch_errors = true;
};

struct Measurement {
  Verdict verdict;
  TimingStats timing;  // reps == 0 when not timed
};

// reset, run, finish, check; then, when the check passed, before_timing and
// the timed calls. A parray::Error thrown on the way becomes a failed verdict
// with its message (unless trial.catch_errors is false).
Measurement verify_then_time(const Trial& trial, const TimingPlan& plan);

}  // namespace parray
