// GEMV step 6's launcher (gemv/06_07_launch.cu), for the registry's entry in
// gemv/01_05_launch.cu.
#pragma once

#include "parray/gemv.hpp"
#include "parray/registry.hpp"

namespace parray::cuda {

// Runs y = alpha A x + beta y with step 6 where it applies (row-major A of any
// shape, column-major A of up to 256 x 16 bytes of rows); false, nothing
// queued, where step 5's column kernels take it instead.
template <class T>
bool gemv_any_shape(const GemvCall<T>& c);

// The most columns (or, transposed, rows) of C that GEMV step 7 takes.
constexpr index_t kFewVectors = 8;

// C = alpha A B + beta C by GEMV step 7 where C has at most kFewVectors
// columns or rows, A runs along k or m and all three are strided; false,
// nothing queued, otherwise. FP32 and FP64.
template <class T>
bool gemm_few_vectors(const GemmCall<T>& call);

}  // namespace parray::cuda
