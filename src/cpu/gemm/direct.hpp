// The direct path of parray's CPU GEMM: the AVX-512 direct kernels read the
// operands where they lie, no packing (direct_avx512.hpp).
#pragma once

#include <cstddef>

#include "blocking.hpp"
#include "microkernel.hpp"
#include "parray/registry.hpp"

namespace parray::cpu {

// Whether the direct kernel can read the operands as they are: every axis a
// single stride, B's and C's columns adjacent, A's rows or columns adjacent.
template <class T>
bool direct_applicable(const GemmCall<T>& call) {
  const MatrixLayout &a = call.a.layout, &b = call.b.layout, &c = call.c.layout;
  for (const Axis* axis : {&a.rows, &a.cols, &b.rows, &b.cols, &c.rows, &c.cols})
    if (!axis->is_strided()) return false;
  return b.cols.stride[0] == 1 && c.cols.stride[0] == 1 && (a.cols.stride[0] == 1 || a.rows.stride[0] == 1);
}

// Whether an M x N x K product is faster on the direct path than packed
// (cpu.direct forces the answer); bs: the direct kernel's block sizes.
bool prefer_direct(index_t m, index_t n, index_t k, std::size_t element_bytes, const BlockSizes& bs);

// C = alpha A B + beta C on the direct path; call must be direct_applicable.
template <class T>
void direct_gemm(const GemmCall<T>& call, const DirectKernel<T>& dk, const BlockSizes& bs);

extern template void direct_gemm<float>(const GemmCall<float>&, const DirectKernel<float>&, const BlockSizes&);
extern template void direct_gemm<double>(const GemmCall<double>&, const DirectKernel<double>&, const BlockSizes&);

}  // namespace parray::cpu
