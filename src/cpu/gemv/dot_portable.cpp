// Portable dot-product kernels (dots.hpp): plain C++ for the baseline
// instruction set, four partial sums a row so that the compiler may
// interleave them; it exists so that parray runs on any CPU, not to be fast.
#include "dots.hpp"

namespace parray::cpu {
namespace {

template <int R, class T>
void dot_rows_portable(const T* const* a, const T* x, index_t n, T* out) {
  T s[R][4] = {};
  index_t j = 0;
  for (; j + 4 <= n; j += 4)
    for (int r = 0; r < R; ++r)
      for (int q = 0; q < 4; ++q) s[r][q] += a[r][j + q] * x[j + q];
  for (; j < n; ++j)
    for (int r = 0; r < R; ++r) s[r][0] += a[r][j] * x[j];
  for (int r = 0; r < R; ++r) out[r] = (s[r][0] + s[r][1]) + (s[r][2] + s[r][3]);
}

// One row of a against the Cols rows of b.
template <int Cols, class T>
void dot_block_portable(const T* const* a, const T* const* b, index_t n, T* out) {
  dot_rows_portable<Cols, T>(b, a[0], n, out);
}

template <class T>
DotKernel<T> portable_kernel() {
  return DotKernel<T>{{&dot_rows_portable<1, T>, &dot_rows_portable<2, T>, &dot_rows_portable<4, T>},
                      4,
                      &dot_rows_portable<4, T>,
                      {{1, &dot_block_portable<4, T>}, {1, &dot_block_portable<2, T>}},
                      "portable dots"};
}

}  // namespace

const DotKernel<float>& dot_kernel_portable_f32() {
  static const DotKernel<float> k = portable_kernel<float>();
  return k;
}
const DotKernel<double>& dot_kernel_portable_f64() {
  static const DotKernel<double> k = portable_kernel<double>();
  return k;
}

template <>
const DotKernel<float>& dot_kernel<float>(Isa isa) {
  return isa == Isa::avx512 ? dot_kernel_avx512_f32() : isa == Isa::avx2 ? dot_kernel_avx2_f32() : dot_kernel_portable_f32();
}
template <>
const DotKernel<double>& dot_kernel<double>(Isa isa) {
  return isa == Isa::avx512 ? dot_kernel_avx512_f64() : isa == Isa::avx2 ? dot_kernel_avx2_f64() : dot_kernel_portable_f64();
}

}  // namespace parray::cpu
