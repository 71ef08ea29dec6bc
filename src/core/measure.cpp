#include "parray/measure.hpp"

#include <algorithm>
#include <chrono>
#include <utility>

namespace parray {

TimingStats timing_stats(std::vector<double> ms) {
  if (ms.empty()) throw Error("timing_stats: no timings");
  std::sort(ms.begin(), ms.end());
  TimingStats s;
  s.reps = static_cast<int>(ms.size());
  s.min_ms = ms.front();
  s.max_ms = ms.back();
  const std::size_t h = ms.size() / 2;
  s.median_ms = ms.size() % 2 ? ms[h] : 0.5 * (ms[h - 1] + ms[h]);
  return s;
}

TimingStats time_calls(const std::function<double()>& time_one, const TimingPlan& plan) {
  double warm = 0;
  for (int w = 0; w < plan.warmup || (plan.warmup > 0 && warm < plan.min_warmup_seconds * 1e3); ++w) warm += time_one();
  std::vector<double> ms;
  double total = 0;
  while (static_cast<int>(ms.size()) < plan.max_reps &&
         (static_cast<int>(ms.size()) < plan.min_reps || total < plan.target_seconds * 1e3)) {
    ms.push_back(time_one());
    total += ms.back();
  }
  return timing_stats(std::move(ms));
}

namespace {

std::function<double()> steady_clock_around(const std::function<void()>& run, const std::function<void()>& finish) {
  return [&run, &finish] {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    run();
    if (finish) finish();
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
}

}  // namespace

TimingStats time_repeated(const std::function<void()>& run, const TimingPlan& plan,
                          const std::function<void()>& finish) {
  return time_calls(steady_clock_around(run, finish), plan);
}

TimingStats time_repeated(const std::function<void()>& run, int warmup, int min_reps, int max_reps,
                          double target_seconds, const std::function<void()>& finish, double min_warmup_seconds) {
  TimingPlan plan;
  plan.warmup = warmup, plan.min_reps = min_reps, plan.max_reps = max_reps;
  plan.target_seconds = target_seconds, plan.min_warmup_seconds = min_warmup_seconds;
  return time_repeated(run, plan, finish);
}

Measurement verify_then_time(const Trial& trial, const TimingPlan& plan) {
  Measurement m;
  try {
    if (trial.reset) trial.reset();
    trial.run();
    if (trial.finish) trial.finish();
    m.verdict = trial.check();
    if (!m.verdict.passed()) return m;
    if (trial.before_timing) trial.before_timing();
    m.timing = time_calls(trial.time_one ? trial.time_one : steady_clock_around(trial.run, trial.finish), plan);
  } catch (const Error& e) {
    if (!trial.catch_errors) throw;
    m.verdict.outcome = Outcome::failed;
    m.verdict.note = e.what();
  }
  return m;
}

}  // namespace parray
