// A simple FP64 GEMM on the device, for verifying large GPU runs without an
// hours-long host reference:
//
//   out(i, j) = alpha * sum_k a(i, k) * b(k, j) + beta * c0(i, j)
//
// computed in double from T inputs (float or double), every view in device
// memory and of any layout. When beta == 0, c0 is not read (its data may be
// null). `out` is an M x N double matrix in device memory (any layout).
// Asynchronous on the calling thread's default stream (cudaStreamPerThread);
// errors are checked.
#pragma once

#include "parray/matrix.hpp"

namespace parray::cuda {

template <class T>
void reference_gemm_f64(double alpha, MatrixView<const T> a, MatrixView<const T> b, double beta,
                        MatrixView<const T> c0, MatrixView<double> out);

extern template void reference_gemm_f64<float>(double, MatrixView<const float>, MatrixView<const float>,
                                               double, MatrixView<const float>, MatrixView<double>);
extern template void reference_gemm_f64<double>(double, MatrixView<const double>, MatrixView<const double>,
                                                double, MatrixView<const double>, MatrixView<double>);

}  // namespace parray::cuda
