// AVX-512 dot-product kernels (dots.hpp), compiled with -mavx512f -mfma:
// 16 floats or 8 doubles a register, the tail through a masked load; tiles
// of 4 x 4 and 8 x 2 dot products (16 accumulators and 8 or 10 loaded
// vectors of the 32 registers).
#include "dot_rows.hpp"

namespace parray::cpu {
namespace {

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m512;
  static constexpr int lanes = 16;
  static type zero() { return _mm512_setzero_ps(); }
  static type load(const float* p) { return _mm512_loadu_ps(p); }
  static type load_first(const float* p, int count) {
    return _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << count) - 1), p);
  }
  static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  static type add(type a, type b) { return _mm512_add_ps(a, b); }
  static float sum(type a) {
    // Halved by a vector shuffle: GCC 12's _mm512_reduce_add_ps and 512-to-256
    // casts pass an undefined source that its -Wuninitialized reports.
    return sum_of_lanes(__builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7) +
                        __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15));
  }
  // Halves of two registers side by side, then quarters of four, then pairs
  // within each 128-bit lane: lane q ends holding vq's sum.
  static void sum4(type v0, type v1, type v2, type v3, float* out) {
    const type a = __builtin_shufflevector(v0, v1, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                   __builtin_shufflevector(v0, v1, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const type b = __builtin_shufflevector(v2, v3, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23) +
                   __builtin_shufflevector(v2, v3, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31);
    const type c = __builtin_shufflevector(a, b, 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27) +
                   __builtin_shufflevector(a, b, 4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    const type d = c + __builtin_shufflevector(c, c, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13);
    const type e = d + __builtin_shufflevector(d, d, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    _mm_storeu_ps(out, __builtin_shufflevector(e, e, 0, 4, 8, 12));
  }
};
template <>
struct Vec<double> {
  using type = __m512d;
  static constexpr int lanes = 8;
  static type zero() { return _mm512_setzero_pd(); }
  static type load(const double* p) { return _mm512_loadu_pd(p); }
  static type load_first(const double* p, int count) {
    return _mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << count) - 1), p);
  }
  static type fma(type a, type b, type c) { return _mm512_fmadd_pd(a, b, c); }
  static type add(type a, type b) { return _mm512_add_pd(a, b); }
  static double sum(type a) {
    return sum_of_lanes(__builtin_shufflevector(a, a, 0, 1, 2, 3) + __builtin_shufflevector(a, a, 4, 5, 6, 7));
  }
  static void sum4(type v0, type v1, type v2, type v3, double* out) { sum4_of_eight_lanes(v0, v1, v2, v3, out); }
};

}  // namespace

const DotKernel<float>& dot_kernel_avx512_f32() {
  static const DotKernel<float> k = make_dot_kernel<Vec<float>, 8, 4, 8, float>("avx512 dots");
  return k;
}
const DotKernel<double>& dot_kernel_avx512_f64() {
  static const DotKernel<double> k = make_dot_kernel<Vec<double>, 8, 4, 8, double>("avx512 dots");
  return k;
}

}  // namespace parray::cpu
