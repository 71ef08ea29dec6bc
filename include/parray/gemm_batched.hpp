// A strided batch of GEMMs: C_i = alpha A_i B_i + beta C_i for i < batch,
// where A_i is `a` moved by i * stride_a elements (likewise B_i, C_i). Every
// matrix keeps the view's layout, any Parray layout; a stride of 0 gives every
// product the same A or B (a broadcast, as NumPy's matmul broadcasts a 2-D
// operand over a stack). The C_i must not overlap. Options as for gemm().
//
// On the CPU a batch of small products runs one product per thread, each on
// one core (a product too small to share among threads still fills them
// together); a batch of large products runs one product at a time on all the
// threads. On the GPU the products run in turn on the options' stream.
#pragma once

#include "parray/gemm.hpp"

namespace parray {

struct BatchStrides {
  index_t a = 0, b = 0, c = 0;  // elements between consecutive matrices; a, b: 0 broadcasts
};

template <class T>
void gemm_batched(index_t batch, T alpha, MatrixView<const T> a, MatrixView<const T> b, T beta, MatrixView<T> c,
                  BatchStrides strides, const GemmOptions& options = {});

extern template void gemm_batched<float>(index_t, float, MatrixView<const float>, MatrixView<const float>, float,
                                         MatrixView<float>, BatchStrides, const GemmOptions&);
extern template void gemm_batched<double>(index_t, double, MatrixView<const double>, MatrixView<const double>, double,
                                          MatrixView<double>, BatchStrides, const GemmOptions&);

}  // namespace parray
