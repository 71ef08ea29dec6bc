// One implementation's line of `bench gemm16` / `bench gemm8`: the case run
// once and checked against its FP64 reference, timed only when it passes
// (a failed or unsupported one is reported, not timed).
#pragma once

#include <string>
#include <vector>

#include "harness/gemm16_case.hpp"  // Gemm16Check

namespace parray::tools {

struct CheckedTiming {
  std::string impl;
  Gemm16Check check;
  double ms = 0, tflops = 0;
  double pct_of_baseline = 0;  // set by check_then_time_each
  std::string note;  // why it was not timed, or ""
  bool failed = false;  // ran and failed its check
};

// why_not: the implementation's reason not to run here ("" when it can).
template <class Case>
CheckedTiming check_then_time(Case& c, const std::string& impl, const std::string& why_not, double flops, int reps) {
  CheckedTiming t;
  t.impl = impl;
  t.note = why_not;
  if (!t.note.empty()) return t;
  c.run(impl);
  t.check = c.check();
  t.note = t.check.note;
  t.failed = !t.check.passed;
  if (t.check.passed) {
    t.ms = c.time_ms(impl, reps);
    t.tflops = flops / (t.ms * 1e9);
  }
  return t;
}

// Every one of `impls` through check_then_time, the first being the baseline:
// each line's pct_of_baseline is its TFLOP/s as a percentage of the
// baseline's (0 where either was not timed). why_not(impl) as above.
template <class Case, class WhyNot>
std::vector<CheckedTiming> check_then_time_each(Case& c, const std::vector<std::string>& impls, WhyNot why_not,
                                                double flops, int reps) {
  std::vector<CheckedTiming> lines;
  for (const std::string& impl : impls) {
    CheckedTiming t = check_then_time(c, impl, why_not(impl), flops, reps);
    const double baseline = lines.empty() ? t.tflops : lines.front().tflops;
    t.pct_of_baseline = baseline > 0 && t.tflops > 0 ? 100.0 * t.tflops / baseline : 0;
    lines.push_back(t);
  }
  return lines;
}

}  // namespace parray::tools
