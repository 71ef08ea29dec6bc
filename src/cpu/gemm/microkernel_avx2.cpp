// AVX2 + FMA microkernels (Haswell and later, Zen 1-3), compiled with -mavx2 -mfma.
//
// FP32: 6 x 16 — each row of the tile is two ymm registers (16 floats), 12
// accumulators, two for the B row and one broadcast of A: 15 of the 16 ymm
// registers. Per k step 12 FMAs on two 256-bit ports (6 cycles) against 2 loads
// and 6 broadcasts. 12 independent accumulators cover the FMA latency (5 cycles
// x 2 ports = 10 needed). FP64: 6 x 8, the same shape with 4 doubles per register.
#include <immintrin.h>

#include "microkernel.hpp"
#include "microkernel_tile.hpp"

namespace parray::cpu {

namespace {

constexpr int kMr = 6;

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m256;
  static constexpr int lanes = 8;
  static type zero() { return _mm256_setzero_ps(); }
  static type load(const float* p) { return _mm256_loadu_ps(p); }
  static type set1(float x) { return _mm256_set1_ps(x); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_ps(a, b, c); }
  static type mul(type a, type b) { return _mm256_mul_ps(a, b); }
  static void store(float* p, type v) { _mm256_storeu_ps(p, v); }
};
template <>
struct Vec<double> {
  using type = __m256d;
  static constexpr int lanes = 4;
  static type zero() { return _mm256_setzero_pd(); }
  static type load(const double* p) { return _mm256_loadu_pd(p); }
  static type set1(double x) { return _mm256_set1_pd(x); }
  static type fma(type a, type b, type c) { return _mm256_fmadd_pd(a, b, c); }
  static type mul(type a, type b) { return _mm256_mul_pd(a, b); }
  static void store(double* p, type v) { _mm256_storeu_pd(p, v); }
};

}  // namespace

const MicroKernel<float>& microkernel_avx2_f32() {
  static const MicroKernel<float> k{kMr, 16, &vector_tile_kernel<Vec<float>, kMr, 2, 2, false, float>, "avx2 6x16"};
  return k;
}
const MicroKernel<double>& microkernel_avx2_f64() {
  static const MicroKernel<double> k{kMr, 8, &vector_tile_kernel<Vec<double>, kMr, 2, 2, false, double>, "avx2 6x8"};
  return k;
}

}  // namespace parray::cpu
