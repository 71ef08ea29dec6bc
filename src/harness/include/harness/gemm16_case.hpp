// One 16-bit GEMM problem on the GPU with its FP64 reference, for the tests
// and `parray bench gemm16` alike (docs/verification.md, "16-bit data"):
// A and B hold seeded random values in [-1, 1) rounded to the 16-bit type, the
// storage past each row (the padding of ld) is NaN, C is NaN before every run
// when beta = 0 (C0, random, otherwise); the reference is computed in FP64
// from the same 16-bit values, so it is exact up to FP64 rounding. A batch is
// checked matrix by matrix, every matrix against its own reference.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "parray/gemm16.hpp"

namespace parray {

struct Gemm16Problem : Gemm16Shape {
  index_t pad = 0;  // extra elements per stored row of A, B and C
  // A strided batch of `batch` products, each matrix right after the previous
  // one; a broadcast operand is one matrix (batch stride 0).
  index_t batch = 1;
  bool broadcast_a = false, broadcast_b = false;
  std::uint64_t seed = 42;
};

struct Gemm16Check {
  bool passed = false;
  double frobenius = 0, frobenius_tol = 0;  // relative Frobenius error and its tolerance
  double worst = 0;                         // largest |error| / element bound (fails above 1)
  std::string note;                         // why it failed
};

class Gemm16Case {
 public:
  explicit Gemm16Case(const Gemm16Problem& p);
  ~Gemm16Case();
  Gemm16Case(const Gemm16Case&) = delete;
  Gemm16Case& operator=(const Gemm16Case&) = delete;

  const Gemm16Problem& problem() const;
  // The call's arguments over this case's device buffers.
  Gemm16Args args() const;
  // Resets C (NaN, or C0) and runs `impl` once, synchronously.
  void run(const std::string& impl);
  // The last run against the reference.
  Gemm16Check check() const;
  // Median of `reps` CUDA-event timings of `impl` after one warm-up, in ms
  // (C is not reset in between: a timed run writes what the checked run wrote).
  double time_ms(const std::string& impl, int reps);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace parray
