#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "parray/harness.hpp"

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

TimingStats time_repeated(const std::function<void()>& run, int warmup, int min_reps, int max_reps,
                          double target_seconds, const std::function<void()>& finish, double min_warmup_seconds) {
  using clock = std::chrono::steady_clock;
  auto once = [&] {
    const auto t0 = clock::now();
    run();
    if (finish) finish();
    return std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  };
  double warm = 0;
  for (int w = 0; w < warmup || (warmup > 0 && warm < min_warmup_seconds * 1e3); ++w) warm += once();
  std::vector<double> ms;
  double total = 0;
  while (static_cast<int>(ms.size()) < max_reps &&
         (static_cast<int>(ms.size()) < min_reps || total < target_seconds * 1e3)) {
    ms.push_back(once());
    total += ms.back();
  }
  return timing_stats(std::move(ms));
}

}  // namespace parray
