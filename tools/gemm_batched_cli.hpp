// `parray gemm --batch B`: a strided batch of B products (parray::gemm_batched)
// verified against FP64 and timed, as `parray gemm` does one product; and
// `parray bench gemm --batch B`: implementations side by side on such
// batches, cuBLAS's strided-batched calls among them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/precision.hpp"

namespace parray::tools {

struct BatchedGemmArgs {
  std::string impl;
  Dtype dtype = Dtype::f32;
  index_t batch = 0, m = 0, n = 0, k = 0;
  bool broadcast_b = false;  // one B for every product (batch stride 0)
  double alpha = 1, beta = 0;
  std::uint64_t seed = 42;
  int threads = 0, reps = 0;
  std::optional<Precision> precision;
};

// Prints the row and the check; 0 when it passed, 1 when it failed.
int run_batched_gemm(const BatchedGemmArgs& a);

struct BatchedBenchArgs {
  std::vector<BatchedGemmArgs> problems;  // impl, threads and reps of these unused
  std::vector<std::string> impls;         // registry names ("gpu", "cpu": the device's default)
  int threads = 0, reps = 0;
  std::string csv;
};

// One CSV row per problem and implementation (also written to csv after
// each problem): time, GFLOP/s, % of the fastest baseline that passed, the
// check. 0 when every check that ran passed.
int run_batched_bench(const BatchedBenchArgs& b);

}  // namespace parray::tools
