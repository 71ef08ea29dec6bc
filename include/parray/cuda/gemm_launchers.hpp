// The host-side launchers of the CUDA GEMM ladder (src/cuda/launch_*.cu).
// Each owns its grid/block arithmetic and checks its preconditions; operands
// are already in device memory and the dispatcher has handled M, N, K == 0
// and alpha == 0. Every launch goes to the call's stream (on_stream(
// GemmCall::stream)) and is checked; nothing waits for the GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "parray/plan.hpp"
#include "parray/registry.hpp"

namespace parray::cuda {

template <class T> void gemm_naive_1d(const GemmCall<T>& call, int block_size);     // step 1
template <class T> void gemm_grid_stride_2d(const GemmCall<T>& call);               // step 2
template <class T> void gemm_coalesced(const GemmCall<T>& call);                    // step 3
template <class T> void gemm_smem_tiles(const GemmCall<T>& call);                   // step 4
template <class T> void gemm_smem_transposed_a(const GemmCall<T>& call, bool pad);  // step 5
template <class T> void gemm_paper_2x2(const GemmCall<T>& call);                    // paper fig. 11
template <class T> void gemm_paper_elem(const GemmCall<T>& call);                   // paper figs. 12-13, 17

void gemm_blocktile_1d(const GemmCall<float>& call);   // step 6
void gemm_blocktile_2d(const GemmCall<float>& call);   // step 7
void gemm_vectorized(const GemmCall<float>& call);     // step 8
void gemm_warptile(const GemmCall<float>& call);       // step 9
void gemm_cp_async(const GemmCall<float>& call);       // step 10
void gemm_parray_fig21(const GemmCall<float>& call);   // step 11
void gemm_best(const GemmCall<float>& call);          // step 12
void gemm_3xtf32(const GemmCall<float>& call);        // step 13
// Step 13 on a stream of the current device (operands in its memory).
void gemm_3xtf32_on_stream(cudaStream_t stream, const GemmCall<float>& call);
void gemm_wgmma_tf32(const GemmCall<float>& call);    // step 14, TF32
void gemm_wgmma_bf16(const GemmCall<float>& call);    // step 14, inputs rounded to BF16
void gemm_wgmma_fp16(const GemmCall<float>& call);    // step 14, inputs rounded to FP16
void gemm_wgmma_3xtf32(const GemmCall<float>& call);  // step 14, FP32 accuracy
void gemm_wgmma_3xtf32_on_stream(cudaStream_t stream, const GemmCall<float>& call);
void gemm_persistent_tf32(const GemmCall<float>& call);    // step 15 (persistent, K split), TF32
void gemm_persistent_bf16(const GemmCall<float>& call);    // step 15, inputs rounded to BF16
void gemm_persistent_fp16(const GemmCall<float>& call);    // step 15, inputs rounded to FP16
void gemm_persistent_3xtf32(const GemmCall<float>& call);  // step 15, FP32 accuracy
// Step 15 over a strided batch in one launch (strided layouts; false where
// an operand is not).
bool gemm_persistent_tf32_batch(const GemmBatchCall<float>& call);
bool gemm_persistent_bf16_batch(const GemmBatchCall<float>& call);
bool gemm_persistent_fp16_batch(const GemmBatchCall<float>& call);
bool gemm_persistent_3xtf32_batch(const GemmBatchCall<float>& call);
// Step 21: FP32 accuracy from one TF32 product (step 15) and two BF16 ones
// (step 16); its TF32 product: step 15 with the sums promoted to FP32 every
// 256 of K (exact on operands that are TF32 values).
void gemm_tf32_bf16(const GemmCall<float>& call);
void gemm_persistent_tf32_fp32_sums(const GemmCall<float>& call);
// Step 17 (K <= 32, strided layouts); false where it cannot take the call.
bool gemm_short_k(const GemmCall<float>& call);
bool gemm_short_k(const GemmCall<double>& call);
void gemm_short_k_only(const GemmCall<float>& call);  // the same, an error where it cannot
void gemm_short_k_only(const GemmCall<double>& call);
// Why step 17 cannot take operands of these layouts and this K ("" when it can).
std::string short_k_unsupported(index_t k, const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c);
// Why step 14 cannot run here ("" when it can): not a Hopper GPU, or not built for sm_90a.
std::string wgmma_unsupported();
// Step 12 with candidate tile shape `shape` (tuning, and the default GEMM's
// small products: kBestSmallShape); false when the operands are not a case
// the candidates are built for.
bool gemm_best_candidate(const GemmCall<float>& call, int shape);
// The candidate of step 12 with the 64 x 64 tile (gemm/12_best_candidates.cu).
constexpr int kBestSmallShape = 14;
// The candidate of step 12 with thin_tile(m, n) (parray/plan.hpp).
int best_thin_shape(index_t m, index_t n);

// Step 18: a strided batch of small products in one launch (strided
// layouts; false where an operand is not), and one product through it.
bool gemm_batched_small(const GemmBatchCall<float>& call);
void gemm_batched_small_one(const GemmCall<float>& call);
std::string batched_small_unsupported(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c);
// Step 19: FP64 on the tensor cores (Hopper), one product (any layout: a
// row-major copy of what is not strided) or a strided batch (strided
// layouts; false where it cannot take it).
void gemm_dmma(const GemmCall<double>& call);
bool gemm_dmma_batch(const GemmBatchCall<double>& call);
// Step 22: step 19 with its operands copied by TMA where the copy engine can
// address them (k of A, n of B contiguous, 16-byte aligned rows), step 19
// otherwise; the same entries.
void gemm_dmma_tma(const GemmCall<double>& call);
bool gemm_dmma_tma_batch(const GemmBatchCall<double>& call);
// gpu-auto's FP64 GEMM: the GEMV for M or N = 1 (contiguous vectors), step
// 22 on the tensor cores where they run, else step 5.
void gemm_auto_f64(const GemmCall<double>& call);
// gpu-auto's batch entry: step 18 where the planner predicts it faster than
// the products in turn (false: gemm_batched runs them in turn).
bool gemm_batched_auto(const GemmBatchCall<float>& call);
// gpu-auto, the default: the kernel the planner picks for this call (src/cuda/gemm/auto.cpp).
void gemm_auto(const GemmCall<float>& call);
// The current GPU as the planner models it (include/parray/plan.hpp).
GpuModel current_gpu_model();

int sm_count();  // of the current device, cached

}  // namespace parray::cuda
