// AVX-512 microkernels (Skylake-X and later, Zen 4), compiled with -mavx512f.
//
// FP32: 12 x 32 — each row of the tile is two zmm registers (32 floats), 24
// accumulators in all, plus two for the B row and one broadcast of A: 27 of the
// 32 zmm registers. Per k step: 2 loads of B, 12 broadcasts of A, 24 FMAs; with
// two 512-bit FMA ports that is 12 cycles of FMAs against 14 loads, so the FMA
// ports stay the bottleneck, which is what a GEMM microkernel wants. 24
// independent accumulators hide the 4-cycle FMA latency on two ports (8 needed).
// FP64: 12 x 16, the same shape with 8 doubles per register.
#include <immintrin.h>

#include "microkernel.hpp"
#include "microkernel_tile.hpp"

namespace parray::cpu {

namespace {

constexpr int kMr = 12;

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = __m512;
  static constexpr int lanes = 16;
  static type zero() { return _mm512_setzero_ps(); }
  static type load(const float* p) { return _mm512_loadu_ps(p); }
  static type set1(float x) { return _mm512_set1_ps(x); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_ps(a, b, c); }
  static type mul(type a, type b) { return _mm512_mul_ps(a, b); }
  static void store(float* p, type v) { _mm512_storeu_ps(p, v); }
};
template <>
struct Vec<double> {
  using type = __m512d;
  static constexpr int lanes = 8;
  static type zero() { return _mm512_setzero_pd(); }
  static type load(const double* p) { return _mm512_loadu_pd(p); }
  static type set1(double x) { return _mm512_set1_pd(x); }
  static type fma(type a, type b, type c) { return _mm512_fmadd_pd(a, b, c); }
  static type mul(type a, type b) { return _mm512_mul_pd(a, b); }
  static void store(double* p, type v) { _mm512_storeu_pd(p, v); }
};

}  // namespace

const MicroKernel<float>& microkernel_avx512_f32() {
  static const MicroKernel<float> k{kMr, 32, &tile_kernel<Vec<float>, kMr, float>, "avx512 12x32"};
  return k;
}
const MicroKernel<double>& microkernel_avx512_f64() {
  static const MicroKernel<double> k{kMr, 16, &tile_kernel<Vec<double>, kMr, double>, "avx512 12x16"};
  return k;
}

}  // namespace parray::cpu
