// AVX2 + FMA dot-product kernels (dots.hpp), compiled with -mavx2 -mfma:
// 8 floats or 4 doubles a register, the tail through a masked load
// (vmaskmov: lanes whose mask is clear are not read, so nothing past the
// row's end is touched); tiles of 2 x 4 and 4 x 2 dot products (8
// accumulators and 6 loaded vectors of the 16 registers).
#include "dot_rows.hpp"

namespace parray::cpu {
namespace {

// All-ones in the first `count` 32-bit lanes.
inline __m256i first_lanes32(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m256;
  static constexpr int lanes = 8;
  static type zero() { return _mm256_setzero_ps(); }
  static type load(const float* p) { return _mm256_loadu_ps(p); }
  static type load_first(const float* p, int count) { return _mm256_maskload_ps(p, first_lanes32(count)); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
  static type add(type a, type b) { return _mm256_add_ps(a, b); }
  static float sum(type a) { return sum_of_lanes(a); }
  static void sum4(type v0, type v1, type v2, type v3, float* out) { sum4_of_eight_lanes(v0, v1, v2, v3, out); }
};
template <>
struct Vec<double> {
  using type = __m256d;
  static constexpr int lanes = 4;
  static type zero() { return _mm256_setzero_pd(); }
  static type load(const double* p) { return _mm256_loadu_pd(p); }
  static type load_first(const double* p, int count) {
    // Each double's mask is its two 32-bit halves' (both set or both clear).
    const __m256i lanes64 = _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), _mm256_setr_epi64x(0, 1, 2, 3));
    return _mm256_maskload_pd(p, lanes64);
  }
  static type fma(type a, type b, type c) { return _mm256_fmadd_pd(a, b, c); }
  static type add(type a, type b) { return _mm256_add_pd(a, b); }
  static double sum(type a) { return sum_of_lanes(a); }
  static void sum4(type v0, type v1, type v2, type v3, double* out) {
    const type a = __builtin_shufflevector(v0, v1, 0, 1, 4, 5) + __builtin_shufflevector(v0, v1, 2, 3, 6, 7);
    const type b = __builtin_shufflevector(v2, v3, 0, 1, 4, 5) + __builtin_shufflevector(v2, v3, 2, 3, 6, 7);
    _mm256_storeu_pd(out, __builtin_shufflevector(a, b, 0, 2, 4, 6) + __builtin_shufflevector(a, b, 1, 3, 5, 7));
  }
};

}  // namespace

const DotKernel<float>& dot_kernel_avx2_f32() {
  static const DotKernel<float> k = make_dot_kernel<Vec<float>, 4, 2, 4, float>("avx2 dots");
  return k;
}
const DotKernel<double>& dot_kernel_avx2_f64() {
  static const DotKernel<double> k = make_dot_kernel<Vec<double>, 4, 2, 4, double>("avx2 dots");
  return k;
}

}  // namespace parray::cpu
