// Batches of GEMMs. gemm_batched, a strided batch: C_i = alpha A_i B_i + beta C_i for i < batch,
// where A_i is `a` moved by i * stride_a elements (likewise B_i, C_i). Every
// matrix keeps the view's layout, any Parray layout; a stride of 0 gives every
// product the same A or B (a broadcast, as NumPy's matmul broadcasts a 2-D
// operand over a stack). The C_i must not overlap. Options as for gemm().
//
// On the CPU a batch of small products runs one product per thread, each on
// one core (a product too small to share among threads still fills them
// together); a batch of large products runs one product at a time on all the
// threads. On the GPU the products run in turn on the options' stream.
//
// gemm_grouped, a group: a list of products of any shapes and layouts, each
// with its own alpha and beta; no two C's may overlap. Scheduled as a batch.
#pragma once

#include <span>

#include "parray/gemm.hpp"

namespace parray {

struct BatchStrides {
  index_t a = 0, b = 0, c = 0;  // elements between consecutive matrices; a, b: 0 broadcasts
};

template <class T>
void gemm_batched(index_t batch, T alpha, MatrixView<const T> a, MatrixView<const T> b, T beta, MatrixView<T> c,
                  BatchStrides strides, const GemmOptions& options = {});

// One product of a group: c = alpha a b + beta c.
template <class T>
struct GroupedGemm {
  T alpha = T(1);
  MatrixView<const T> a, b;
  T beta = T(0);
  MatrixView<T> c;
};

template <class T>
void gemm_grouped(std::span<const GroupedGemm<T>> problems, const GemmOptions& options = {});

extern template void gemm_grouped<float>(std::span<const GroupedGemm<float>>, const GemmOptions&);
extern template void gemm_grouped<double>(std::span<const GroupedGemm<double>>, const GemmOptions&);
extern template void gemm_batched<float>(index_t, float, MatrixView<const float>, MatrixView<const float>, float,
                                         MatrixView<float>, BatchStrides, const GemmOptions&);
extern template void gemm_batched<double>(index_t, double, MatrixView<const double>, MatrixView<const double>, double,
                                          MatrixView<double>, BatchStrides, const GemmOptions&);

}  // namespace parray
