// GEMM on FP8 data in device memory: C = alpha (sa A)(sb B)^T + beta C with A
// and B in E4M3 or E5M2 and their scales sa, sb in FP32, the products summed
// in FP32, C in BF16, FP16 or FP32. The scaled inputs are the dequantised
// values a user quantised: A(i, k) stands for sa(i, k) * A_stored(i, k).
//
// Layout: FP8 tensor cores read K-contiguous operands only (so does
// cuBLASLt's FP8 matmul), so A is M x K row-major (lda >= K) and B is stored
// N x K row-major (ldb >= K), i.e. C = A B^T of the stored arrays; C is
// M x N row-major (ldc >= N). Rows must be 16-byte aligned (lda, ldb
// multiples of 16, the pointers 16-byte aligned): the copy engine's rule.
//
// Scales (device pointers to FP32):
//   per_tensor  scale_a and scale_b one value each.
//   blockwise   DeepSeek-style fine-grained scales: scale_a one value per row
//               and 128 values of K (1 x 128 blocks), ceil(K/128) x M,
//               row kb = K block, M contiguous; scale_b one value per
//               128 x 128 block of B, ceil(K/128) x ceil(N/128), row kb.
//
// Hopper's tensor cores add FP8 products in an accumulator with fewer
// mantissa bits than FP32, so the kernel adds each 128 values of K into an
// FP32 sum on the CUDA cores (applying the block scales there): the error
// grows with K as an FP32 sum's, not as the short accumulator's.
//
// Implementations (gemm8_impls): gpu (the default: step 20), cuda-20 (ladder
// step 20, src/cuda/gemm/20_wgmma_fp8.cuh; Hopper), cublaslt (cuBLASLt's FP8
// matmul, the baseline; per-tensor scales only). Bad arguments throw
// parray::Error with the reason. Queued on Gemm8Args::stream.
#pragma once

#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/gemm.hpp"

namespace parray {

enum class Fp8 { e4m3, e5m2 };
enum class Fp8Out { bf16, fp16, f32 };
enum class Fp8Scaling { per_tensor, blockwise };

inline const char* fp8_name(Fp8 t) { return t == Fp8::e4m3 ? "e4m3" : "e5m2"; }
inline const char* fp8_out_name(Fp8Out t) { return t == Fp8Out::bf16 ? "bf16" : t == Fp8Out::fp16 ? "fp16" : "f32"; }

// What an FP8 call computes, apart from where its operands are.
struct Gemm8Shape {
  Fp8 type_a = Fp8::e4m3, type_b = Fp8::e4m3;
  Fp8Out out = Fp8Out::bf16;
  Fp8Scaling scaling = Fp8Scaling::per_tensor;
  index_t m = 0, n = 0, k = 0;
  float alpha = 1.f, beta = 0.f;
};

struct Gemm8Args : Gemm8Shape {
  const void* a = nullptr;  // M x K
  index_t lda = 0;
  const void* b = nullptr;  // N x K
  index_t ldb = 0;
  void* c = nullptr;  // M x N
  index_t ldc = 0;
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  GpuStream stream = nullptr;  // nullptr: the calling thread's default stream
};

// The scale block of the blockwise form (values of K per scale of A, and the
// side of B's square blocks).
constexpr index_t kFp8ScaleBlock = 128;

const std::vector<std::string>& gemm8_impls();
// Why `impl` cannot run this call on the current GPU, or "" when it can.
std::string gemm8_unsupported(const std::string& impl, const Gemm8Args& args);
void gemm8(const Gemm8Args& args, const std::string& impl = "gpu");

}  // namespace parray
