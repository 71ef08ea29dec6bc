// The CPU's FMA peak, measured: each thread runs independent chains of vector
// FMAs that stay in registers (12 chains: enough to cover 4-cycle latency on
// two FMA ports), for about 0.1 s; peak = total FLOPs / slowest thread's time.
// The best of three tries counts. Measured rather than computed because clock
// speeds under vector load and the number of 512-bit FMA units differ between
// CPUs of the same family.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>

#include "harness/harness.hpp"

namespace parray {

namespace {

constexpr int kChains = 12;

// One function per ISA and dtype: target attributes do not reach into
// templates or lambdas, so the loop is spelled out four times.
#define PARRAY_FMA_CHAINS(V, SET1, FMA, LANE_T)                        \
  V acc[kChains];                                                      \
  const V a = SET1(static_cast<LANE_T>(0.999));                        \
  const V b = SET1(static_cast<LANE_T>(0.001));                        \
  for (int c = 0; c < kChains; ++c) acc[c] = b;                        \
  for (long i = 0; i < iters; ++i)                                     \
    for (int c = 0; c < kChains; ++c) acc[c] = FMA(acc[c], a, b);      \
  double s = 0;                                                        \
  for (int c = 0; c < kChains; ++c) {                                  \
    LANE_T lane;                                                       \
    std::memcpy(&lane, &acc[c], sizeof lane);                          \
    s += lane;                                                         \
  }                                                                    \
  *sink = s;  // keeps the loop alive

__attribute__((target("avx512f"))) void avx512_f32(long iters, double* sink) {
  PARRAY_FMA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps, float)
}
__attribute__((target("avx512f"))) void avx512_f64(long iters, double* sink) {
  PARRAY_FMA_CHAINS(__m512d, _mm512_set1_pd, _mm512_fmadd_pd, double)
}
__attribute__((target("avx2,fma"))) void avx2_f32(long iters, double* sink) {
  PARRAY_FMA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps, float)
}
__attribute__((target("avx2,fma"))) void avx2_f64(long iters, double* sink) {
  PARRAY_FMA_CHAINS(__m256d, _mm256_set1_pd, _mm256_fmadd_pd, double)
}
#undef PARRAY_FMA_CHAINS

void run_avx512(Dtype d, long iters, double* sink) {
  d == Dtype::f32 ? avx512_f32(iters, sink) : avx512_f64(iters, sink);
}
void run_avx2(Dtype d, long iters, double* sink) {
  d == Dtype::f32 ? avx2_f32(iters, sink) : avx2_f64(iters, sink);
}

void run_scalar(Dtype, long iters, double* sink) {
  double acc[kChains];
  for (double& x : acc) x = 0.001;
  for (long i = 0; i < iters; ++i)
    for (double& x : acc) x = x * 0.999 + 0.001;
  *sink = acc[0];
}

}  // namespace

std::string cpu_vector_isa() {
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  return "scalar";
}

namespace {

// One measurement: the best of three tries (a try that loses its core to
// another process for a moment would understate the peak and overstate
// every % of it).
double measure_cpu_peak_gflops(Dtype dtype, int threads) {
  const std::string isa = cpu_vector_isa();
  const int bytes = isa == "avx512" ? 64 : isa == "avx2" ? 32 : 8;
  const int lanes = isa == "scalar" ? 1 : bytes / (dtype == Dtype::f32 ? 4 : 8);
  const long iters = 4'000'000;
  double sink = 0;
  double fastest = 1e300;
  for (int attempt = 0; attempt < 3; ++attempt) {
    double slowest = 0;
#pragma omp parallel num_threads(threads) reduction(max : slowest) reduction(+ : sink)
    {
      double local = 0;
      auto body = [&] {
        if (isa == "avx512") run_avx512(dtype, iters, &local);
        else if (isa == "avx2") run_avx2(dtype, iters, &local);
        else run_scalar(dtype, iters, &local);
      };
      body();  // warm-up: brings the core to its vector clock
#pragma omp barrier
      const auto t0 = std::chrono::steady_clock::now();
      body();
      slowest = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      sink += local;
    }
    fastest = std::min(fastest, slowest);
  }
  const double flops = 2.0 * kChains * lanes * static_cast<double>(iters) * threads;
  return flops / fastest * 1e-9 + 0.0 * sink;
}

std::mutex peak_mutex;
std::map<std::pair<int, int>, double> peak_cache;  // (dtype, threads): the highest measured

}  // namespace

double measured_cpu_peak_gflops(Dtype dtype, int threads) {
  std::lock_guard<std::mutex> lock(peak_mutex);
  const auto key = std::make_pair(static_cast<int>(dtype), threads);
  if (auto it = peak_cache.find(key); it != peak_cache.end()) return it->second;
  return peak_cache[key] = measure_cpu_peak_gflops(dtype, threads);
}

double remeasured_cpu_peak_gflops(Dtype dtype, int threads) {
  std::lock_guard<std::mutex> lock(peak_mutex);
  const auto key = std::make_pair(static_cast<int>(dtype), threads);
  const double now = measure_cpu_peak_gflops(dtype, threads);
  auto it = peak_cache.find(key);
  if (it == peak_cache.end()) return peak_cache[key] = now;
  return it->second = std::max(it->second, now);
}

double cpu_peak_at_least(Dtype dtype, int threads, double gflops_seen) {
  std::lock_guard<std::mutex> lock(peak_mutex);
  const auto key = std::make_pair(static_cast<int>(dtype), threads);
  auto it = peak_cache.find(key);
  double peak = it == peak_cache.end() ? 0.0 : it->second;
  for (int attempt = 0; attempt < 3 && peak < gflops_seen; ++attempt)
    peak = std::max(peak, measure_cpu_peak_gflops(dtype, threads));
  // Still below: every measurement fell in slow moments; the hardware's peak
  // is at least what the product reached.
  return peak_cache[key] = std::max(peak, gflops_seen);
}

}  // namespace parray
