// The dot-product kernel shared by the vector instruction sets (dots.hpp).
// Included by dot_avx512.cpp and dot_avx2.cpp after they define their vector
// traits V (type, lanes, zero, load, load_first(p, count), fma, add, sum); it
// lives in an anonymous namespace so each ISA's translation unit keeps its own
// copy, compiled for its own instruction set.
#pragma once

#include "dots.hpp"

namespace parray::cpu {
namespace {

template <class V, int R, class T>
void dot_rows(const T* const* a, const T* x, index_t n, T* out) {
  using Reg = typename V::type;
  constexpr int L = V::lanes;
  Reg s0[R], s1[R];
  for (int r = 0; r < R; ++r) s0[r] = V::zero(), s1[r] = V::zero();
  index_t j = 0;
  for (; j + 2 * L <= n; j += 2 * L) {
    const Reg x0 = V::load(x + j), x1 = V::load(x + j + L);
    for (int r = 0; r < R; ++r) {
      s0[r] = V::fma(V::load(a[r] + j), x0, s0[r]);
      s1[r] = V::fma(V::load(a[r] + j + L), x1, s1[r]);
    }
  }
  if (j + L <= n) {
    const Reg x0 = V::load(x + j);
    for (int r = 0; r < R; ++r) s0[r] = V::fma(V::load(a[r] + j), x0, s0[r]);
    j += L;
  }
  if (j < n) {  // the last n - j < L elements: lanes past n are neither read nor added
    const int rest = static_cast<int>(n - j);
    const Reg x0 = V::load_first(x + j, rest);
    for (int r = 0; r < R; ++r) s1[r] = V::fma(V::load_first(a[r] + j, rest), x0, s1[r]);
  }
  for (int r = 0; r < R; ++r) out[r] = V::sum(V::add(s0[r], s1[r]));
}

template <class V, class T>
DotKernel<T> make_dot_kernel(const char* name) {
  return DotKernel<T>{{&dot_rows<V, 1, T>, &dot_rows<V, 2, T>, &dot_rows<V, 4, T>}, name};
}

}  // namespace
}  // namespace parray::cpu
