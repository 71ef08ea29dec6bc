// The CPU GEMM's paths built on the GEMV (gemv.cpp): a C of one column or
// row, and a C of a few columns. Called by parray-cpu (src/cpu/gemm/gemm.cpp)
// directly, not through the GEMV registry, whose table may grow (and move)
// while a reference to one of its entries is kept.
#pragma once

#include "parray/gemv.hpp"
#include "parray/registry.hpp"

namespace parray::cpu {

// gemv-cpu's kernels on one call.
template <class T>
void gemv_cpu(const GemvCall<T>& call);

// The most columns of C the few-columns path takes.
constexpr index_t kFewColumns = 8;
// The shortest rows it takes for n columns. Each dot product ends in about
// two shuffles of its tile's reduction, which its row's FMAs must repay
// against the direct kernel, whose 32-column tile does n columns' useful
// work: the break-even K grows with n (docs/cpu-gemm.md has the figures).
constexpr index_t few_columns_min_k(index_t n) { return 8 * n + 8; }

// C = alpha A B + beta C with each row of A (contiguous along k) read once per
// two or four columns of C, for 2..kFewColumns columns, K >= few_columns_min_k(n)
// and at least 2^14 multiply-adds; false, nothing done, otherwise.
template <class T>
bool gemm_few_columns(const GemmCall<T>& call);

}  // namespace parray::cpu
