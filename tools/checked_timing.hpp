// One implementation's line of `bench gemm16` / `bench gemm8`: the case run
// once and checked against its FP64 reference, timed only when it passes
// (a failed or unsupported one is reported, not timed).
#pragma once

#include <string>

#include "harness/gemm16_case.hpp"  // Gemm16Check

namespace parray::tools {

struct CheckedTiming {
  Gemm16Check check;
  double ms = 0, tflops = 0;
  std::string note;  // why it was not timed, or ""
  bool failed = false;  // ran and failed its check
};

// why_not: the implementation's reason not to run here ("" when it can).
template <class Case>
CheckedTiming check_then_time(Case& c, const std::string& impl, const std::string& why_not, double flops, int reps) {
  CheckedTiming t;
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

}  // namespace parray::tools
