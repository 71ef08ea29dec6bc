// The 16-bit and FP8 GEMM grids' check of one case: every implementation
// that runs here (the others skipped with their reason), each against the
// case's FP64 reference.
#pragma once

#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

namespace parray_test {

// Case: run(impl) and check() (a Gemm16Check); why_not(impl): why it cannot
// run this case here, or "".
template <class Case, class WhyNot>
void expect_every_impl_passes(Case& c, const std::vector<std::string>& impls, WhyNot why_not) {
  for (const std::string& impl : impls) {
    const std::string why = why_not(impl);
    if (!why.empty()) {
      std::cout << "[ SKIPPED  ] " << impl << ": " << why << "\n";
      continue;
    }
    c.run(impl);
    const auto r = c.check();
    EXPECT_TRUE(r.passed) << impl << ": " << r.note << " (Frobenius " << r.frobenius << " tol " << r.frobenius_tol
                          << ", worst element " << r.worst << " of its bound)";
  }
}

}  // namespace parray_test
