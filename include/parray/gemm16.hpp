// GEMM on 16-bit data in device memory: C = alpha op(A) op(B) + beta C with A
// and B in BF16 or FP16, C in the same 16-bit type or in FP32, the products
// accumulated in FP32 — what cublasGemmEx computes with CUBLAS_COMPUTE_32F on
// such data. Row-major, as the rest of parray's pointer API: C is M x N (row
// i at c + i * ldc, ldc >= N); op(A) is M x K, stored M x K (lda >= K) or, with
// trans_a, K x M (lda >= M); op(B) is K x N, stored K x N (ldb >= N) or, with
// trans_b, N x K (ldb >= K). beta = 0: C is not read.
//
// Implementations (gemm16_impls):
//   gpu      the default: step 16, or step 18 for a batch of small matrices
//            where the planner (plan.hpp: plan_batched_small) predicts it
//            faster; Hopper
//   cuda-16  ladder step 16 (src/cuda/gemm/16_wgmma_16bit.cuh): TMA straight
//            from the operands in either major order, C stored by TMA; a
//            batch in one launch; Hopper
//   cuda-18  ladder step 18 (src/cuda/gemm/18_batched_small.cuh): a batch of
//            small products in one launch on the CUDA cores, FP32 sums
//   cublas   cublasGemmEx (a batch: cublasGemmStridedBatchedEx), the baseline
// Bad arguments throw parray::Error with the reason; so does an implementation
// that cannot run on this GPU (gemm16_unsupported says why beforehand).
// Queued on Gemm16Args::stream (nullptr: the calling thread's default stream),
// asynchronous like a kernel launch.
#pragma once

#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/gemm.hpp"

namespace parray {

enum class Type16 { bf16, fp16 };

inline const char* type16_name(Type16 t) { return t == Type16::bf16 ? "bf16" : "fp16"; }

// What a 16-bit call computes, apart from where its operands are.
struct Gemm16Shape {
  Type16 type = Type16::bf16;  // of A and B, and of C unless c_f32
  bool c_f32 = false;
  Trans trans_a = Trans::no, trans_b = Trans::no;
  index_t m = 0, n = 0, k = 0;
  float alpha = 1.f, beta = 0.f;
};

struct Gemm16Args : Gemm16Shape {
  const void* a = nullptr;
  index_t lda = 0;
  const void* b = nullptr;
  index_t ldb = 0;
  void* c = nullptr;
  index_t ldc = 0;
  // A strided batch: `batch` products, matrix i of A at a + i * stride_a
  // elements (likewise B and C). A stride of 0 broadcasts A or B; C's
  // matrices must not overlap (stride_c >= one C's extent). batch 0: nothing.
  index_t batch = 1;
  index_t stride_a = 0, stride_b = 0, stride_c = 0;
  // The CUDA stream of the work (nullptr: the calling thread's default
  // stream), as GemmOptions::stream.
  GpuStream stream = nullptr;
};

const std::vector<std::string>& gemm16_impls();
// Why `impl` cannot run on the current GPU, or "" when it can.
std::string gemm16_unsupported(const std::string& impl);
void gemm16(const Gemm16Args& args, const std::string& impl = "gpu");

}  // namespace parray
