// Step 21 — FP32 accuracy from one TF32 product and two BF16 products.
//
// What it adds over step 15's three TF32 products: the cross terms in BF16,
// which Hopper's tensor cores multiply at twice TF32's rate, so the products
// cost two TF32 products' time instead of three. Each element x of A and B
// is split into big = tf32(x) and small = bf16(x - big); then
//   A B ~ Ab Bb                     (TF32, step 15 on the big parts,
//                                    its sums promoted to FP32 every 256 of K)
//       + bf16(Ab) Bs + As bf16(Bb) (BF16: one GEMM over 2K, step 16)
// with As Bs (~2^-22 of the rest) dropped. The BF16 roundings of big and
// small leave up to 2^-18 of a product, within the FP32 verifier's
// element-wise bound 2 (K + 4) u from K = 28 on; below K = 64 the launcher
// runs step 15's three TF32 products instead (docs/tensor-cores.md, "FP32
// accuracy from fewer products", has the simulated errors).
//
// This file: the split pass's destination (13_split_tf32.cuh's split_tf32
// kernel reads each operand through its layout and hands it x by x here).
#pragma once

#include <cuda_bf16.h>

#include "13_split_tf32.cuh"

namespace parray::cuda::ladder {

// X x K big parts (TF32 values in FP32, rows ld_big apart) and X x 2K BF16
// values (rows ld_cat apart), the concatenation the BF16 GEMM reads along K:
// A's rows [bf16(big) | small], B's [small | bf16(big)], so that their
// product over 2K is bf16(Ab) Bs + As bf16(Bb).
// keep_small = false drops the small parts (gpu.3xtf32_small = 0: one TF32
// product), for the check that the FP32 tolerance rejects that.
struct Tf32Bf16Split {
  float* big;
  index_t ld_big;
  __nv_bfloat16* cat;
  index_t ld_cat, K;
  bool keep_small;
  template <bool IsB>
  __device__ __forceinline__ void put(index_t x, index_t k, float v) const {
    const float b = to_tf32(v);
    // none for inf or NaN (inf - inf would make a NaN where C is inf)
    const float s = keep_small && isfinite(b) ? v - b : 0.f;
    big[x * ld_big + k] = b;
    __nv_bfloat16* row = cat + x * ld_cat;
    row[IsB ? K + k : k] = __float2bfloat16_rn(b);
    row[IsB ? k : K + k] = __float2bfloat16_rn(s);
  }
};

}  // namespace parray::cuda::ladder
