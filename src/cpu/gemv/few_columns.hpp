// The CPU GEMM's path for a C of a few columns, built on the GEMV's dot
// products (gemv.cpp): called by parray-cpu (src/cpu/gemm/gemm.cpp).
#pragma once

#include "parray/registry.hpp"

namespace parray::cpu {

// The most columns of C the few-columns path takes.
constexpr index_t kFewColumns = 8;

// C = alpha A B + beta C with each row of A (contiguous along k) read once per
// four columns of C, for 2..kFewColumns columns, K >= 128 and at least 2^14
// multiply-adds; false, nothing done, otherwise.
template <class T>
bool gemm_few_columns(const GemmCall<T>& call);

}  // namespace parray::cpu
