// 16-bit storage of a k-NN base: IEEE binary16 and bfloat16 bit patterns,
// rounded to nearest even on the way in and widened exactly (F16C where the
// CPU has it) on the way out.
#include <immintrin.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "parray/knn.hpp"

namespace parray {

Storage parse_storage(const std::string& s) {
  if (s == "f32") return Storage::f32;
  if (s == "f16") return Storage::f16;
  if (s == "bf16") return Storage::bf16;
  throw Error("unknown storage '" + s + "' (use f32, f16 or bf16)");
}

namespace {

std::uint16_t f32_to_f16(float f) {  // round to nearest even
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return std::uint16_t(sign | 0x7e00u);           // NaN
  if (ax >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);          // rounds to >= 65520: inf
  if (ax < 0x38800000u) {                                               // subnormal half (or zero)
    const float v = std::abs(f) * 16777216.0f;                          // 2^24: units of the smallest subnormal
    return std::uint16_t(sign | std::uint32_t(std::nearbyint(v)));
  }
  const std::uint32_t mant = ax + 0xfffu + ((ax >> 13) & 1u);           // RNE on the 13 dropped bits
  return std::uint16_t(sign | ((mant - 0x38000000u) >> 13));
}

float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  float v;
  if (e == 0) v = std::ldexp(float(m), -24);
  else if (e == 31) v = m ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else v = std::ldexp(float(m | 0x400u), int(e) - 25);
  std::uint32_t x;
  std::memcpy(&x, &v, 4);
  x |= sign;
  std::memcpy(&v, &x, 4);
  return v;
}

std::uint16_t f32_to_bf16(float f) {
  std::uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return std::uint16_t(x >> 16);
}

__attribute__((target("f16c,avx"))) void f16_to_f32_f16c(const std::uint16_t* in, index_t n, float* out) {
  index_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

}  // namespace

std::vector<std::uint16_t> to_16bit(const float* x, index_t count, Storage storage) {
  if (storage == Storage::f32) throw Error("to_16bit: f32 is not a 16-bit storage");
  std::vector<std::uint16_t> out(static_cast<std::size_t>(count));
  for (index_t i = 0; i < count; ++i) out[std::size_t(i)] = storage == Storage::f16 ? f32_to_f16(x[i]) : f32_to_bf16(x[i]);
  return out;
}

void from_16bit(const std::uint16_t* x, index_t count, Storage storage, float* out) {
  if (storage == Storage::bf16) {
#pragma omp simd
    for (index_t i = 0; i < count; ++i) {
      const std::uint32_t b = std::uint32_t(x[i]) << 16;
      std::memcpy(out + i, &b, 4);
    }
  } else if (storage == Storage::f16) {
    static const bool f16c = __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx");
    if (f16c) f16_to_f32_f16c(x, count, out);
    else
      for (index_t i = 0; i < count; ++i) out[i] = f16_to_f32(x[i]);
  } else {
    throw Error("from_16bit: f32 is not a 16-bit storage");
  }
}

}  // namespace parray
