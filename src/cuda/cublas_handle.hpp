// The cuBLAS handle of the current GPU, created on first use (it costs
// milliseconds) and kept, in the default math mode (FP32 on CUDA cores unless
// a call names a compute type). Shared by step 13, the 16-bit GEMM's baseline
// and the multi-GPU GEMMs: a caller sets the handle's stream before each use,
// as another caller may have left a different one. A GPU is driven by one
// host thread at a time, so its handle is too.
#pragma once

#include <cublas_v2.h>

namespace parray::cuda {

cublasHandle_t cublas_handle_for_current_device();

}  // namespace parray::cuda
