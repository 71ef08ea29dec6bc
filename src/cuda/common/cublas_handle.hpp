// The calling thread's cuBLAS handle of the current GPU, created on first use
// (it costs milliseconds) and kept until the thread ends, in the default math
// mode (FP32 on CUDA cores unless a call names a compute type). Shared by
// step 13, the 16-bit GEMM's baseline and the multi-GPU GEMMs: a caller sets
// the handle's stream before each use (cublasSetStream), as another caller on
// the same thread may have left a different one. One per thread, so that two
// threads' calls never race on a handle's stream.
#pragma once

#include "common/cublas_library.hpp"

namespace parray::cuda {

cublasHandle_t cublas_handle_for_current_device();

}  // namespace parray::cuda
