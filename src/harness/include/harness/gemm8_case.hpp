// One FP8 GEMM problem on the GPU with its FP64 reference, for the tests and
// `parray bench gemm8` alike (docs/verification.md, "FP8 data"). A and B hold
// seeded random values quantised to their FP8 type (with a magnitude that
// uses its exponent range), the scales are random values with 5 significant
// bits, so that every dequantised value (stored value x scale) is exact in
// FP32; the bytes past each row (the padding of lda, ldb) are NaN, C is NaN
// before every run when beta = 0 (C0, random, otherwise). The reference is the
// FP64 product of the dequantised values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "harness/gemm16_case.hpp"  // Gemm16Check: the same verdict
#include "parray/gemm8.hpp"

namespace parray {

struct Gemm8Problem : Gemm8Shape {
  index_t pad = 0;  // extra bytes per row of A and B past K rounded up to 16; extra elements per row of C
  std::uint64_t seed = 42;
};

class Gemm8Case {
 public:
  explicit Gemm8Case(const Gemm8Problem& p);
  ~Gemm8Case();
  Gemm8Case(const Gemm8Case&) = delete;
  Gemm8Case& operator=(const Gemm8Case&) = delete;

  Gemm8Args args() const;
  // Resets C (NaN, or C0) and runs `impl` once, synchronously, on args() or
  // on `g` (args() changed: the tests' deliberately wrong calls).
  void run(const std::string& impl);
  void run(const std::string& impl, const Gemm8Args& g);
  Gemm16Check check() const;
  // Median of `reps` CUDA-event timings after one warm-up, in ms.
  double time_ms(const std::string& impl, int reps);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace parray
