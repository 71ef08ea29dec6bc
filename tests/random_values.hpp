// Seeded random inputs in [-1, 1) for the tests' FP64 checks (never zeros:
// a product left out or a stale C shows).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace parray::testing {

inline std::vector<float> random_values(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

}  // namespace parray::testing
