// How the CPU and GPU GEMM test grids name their cases and print a problem in
// failure messages (shared so both grids read alike).
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>

#include <fmt/format.h>

#include "harness/harness.hpp"

namespace parray {

// gtest prints a parameter through this instead of dumping its bytes.
inline void PrintTo(const GemmProblem& p, std::ostream* os) {
  *os << dtype_name(p.dtype) << " " << p.m << "x" << p.k << "x" << p.n << " " << p.layouts() << " alpha " << p.alpha
      << " beta " << p.beta;
}

// A test name carrying the problem: f32_37x41x43_row_row_row_a1_b0_7.
inline std::string gemm_case_name(const testing::TestParamInfo<GemmProblem>& info) {
  const GemmProblem& p = info.param;
  std::string s = fmt::format("{}_{}x{}x{}_{}_{}_{}_a{}_b{}", dtype_name(p.dtype), p.m, p.k, p.n, p.layout_a,
                              p.layout_b, p.layout_c, p.alpha, p.beta);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s + "_" + std::to_string(info.index);
}

}  // namespace parray
