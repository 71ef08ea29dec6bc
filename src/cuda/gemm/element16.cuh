// C's element types of the wgmma kernels (FP32, BF16, FP16) to and from FP32,
// one and two values at a time, rounding to nearest: the epilogues of steps
// 15 and 16 and the 16-bit GEMM's test data (gemm16_case.cu).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace parray::cuda::ladder {

__device__ __forceinline__ void put_pair(float* p, float x, float y) { *reinterpret_cast<float2*>(p) = {x, y}; }
__device__ __forceinline__ void put_pair(__nv_bfloat16* p, float x, float y) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x, y);
}
__device__ __forceinline__ void put_pair(__half* p, float x, float y) {
  *reinterpret_cast<__half2*>(p) = __floats2half2_rn(x, y);
}
__device__ __forceinline__ float as_float(float x) { return x; }
__device__ __forceinline__ float as_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float as_float(__half x) { return __half2float(x); }
__device__ __forceinline__ void put(float* p, float x) { *p = x; }
__device__ __forceinline__ void put(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }
__device__ __forceinline__ void put(__half* p, float x) { *p = __float2half_rn(x); }

}  // namespace parray::cuda::ladder
