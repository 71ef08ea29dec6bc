// The GEMV grids of the CPU and GPU tests: every implementation of a device
// verified on each shape, layout and dtype, for two (alpha, beta) pairs.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "harness/knn_bench.hpp"

namespace parray_test {

// Runs o (shapes, layouts, dtypes and implementations set by the caller) once
// verified, untimed, with (alpha, beta) = (1, 0) and (-1.5, 0.5); every row
// that ran must pass, and more than min_checked rows must have run each time.
inline void expect_every_gemv_passes(parray::GemvBenchOptions o, int min_checked) {
  using namespace parray;
  o.min_reps = o.max_reps = 1;
  o.target_seconds = 0;
  o.progress = false;
  for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-1.5, 0.5}}) {
    o.alpha = alpha, o.beta = beta;
    int checked = 0;
    for (const GemvBenchRow& r : run_gemv_bench(o)) {
      if (r.outcome == Outcome::skipped) continue;
      ++checked;
      EXPECT_TRUE(r.ok()) << r.impl << " " << r.dtype << " " << r.layout << " " << r.m << "x" << r.n << " t"
                          << r.threads << " alpha " << alpha << " beta " << beta << ": " << r.note;
    }
    EXPECT_GT(checked, min_checked);
  }
}

}  // namespace parray_test
