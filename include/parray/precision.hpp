// The accuracy a GEMM's products keep — what cuBLAS says with its compute
// types. A caller asks for a precision (GemmOptions::precision, the CLI's
// --precision); an implementation delivers one (GemmImpl::delivers); the call
// runs only when what is delivered meets what is asked, so a caller never
// gets less than it asked for without an error saying so.
//
//   fp64   inputs and products in FP64
//   fp32   FP32 inputs used at full precision (CUDA cores, or tensor cores with
//          split operands, as 3xTF32): FP32 accuracy
//   tf32   inputs rounded to TF32 (10-bit mantissa, FP32 range) before the
//          products, FP32 accumulation
//   fp16   inputs rounded to FP16 (10-bit mantissa, 5-bit exponent)
//   bf16   inputs rounded to BF16 (7-bit mantissa, FP32 range)
//
// "Meets" is a partial order on the inputs' format: no fewer mantissa bits
// and no narrower exponent range. tf32 meets fp16 and bf16; fp16 and bf16
// do not meet each other (fp16 has the longer mantissa, bf16 the wider range).
#pragma once

#include <string>
#include <string_view>

#include "parray/core.hpp"

namespace parray {

enum class Precision { fp64, fp32, tf32, fp16, bf16 };

struct FloatFormat {
  int mantissa_bits;  // stored, without the implicit bit
  int exponent_bits;
};

constexpr FloatFormat format_of(Precision p) {
  switch (p) {
    case Precision::fp64: return {52, 11};
    case Precision::fp32: return {23, 8};
    case Precision::tf32: return {10, 8};
    case Precision::fp16: return {10, 5};
    case Precision::bf16: return {7, 8};
  }
  return {0, 0};
}

// True when products at `delivered` are at least as accurate as `requested`.
constexpr bool meets(Precision delivered, Precision requested) {
  const FloatFormat d = format_of(delivered), r = format_of(requested);
  return d.mantissa_bits >= r.mantissa_bits && d.exponent_bits >= r.exponent_bits;
}

inline const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp64: return "fp64";
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
  }
  return "?";
}

inline Precision parse_precision(std::string_view text) {
  for (Precision p : {Precision::fp64, Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (text == precision_name(p)) return p;
  throw Error("unknown precision '" + std::string(text) + "' (fp64, fp32, tf32, fp16, bf16)");
}

// The precision of a dtype's own inputs: what a call asks when it says nothing.
constexpr Precision precision_of(Dtype d) { return d == Dtype::f64 ? Precision::fp64 : Precision::fp32; }

}  // namespace parray
