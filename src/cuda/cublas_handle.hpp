// The cuBLAS handle of the current GPU, created on first use and kept (shared
// by step 13 and the 16-bit GEMM's baseline). A caller sets the handle's
// stream before each use: another caller may have left a different one.
#pragma once

#include <cublas_v2.h>

namespace parray::cuda {

cublasHandle_t cublas_handle_for_current_device();

}  // namespace parray::cuda
