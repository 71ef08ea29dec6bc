// The FP64 reference GEMM on the device (harness/reference.hpp): 16x16
// shared-memory tiles, double accumulation, operands through their layouts.
#include "parray/cuda/check.hpp"
#include "parray/cuda/operand.cuh"
#include "harness/reference.hpp"

namespace parray::cuda {

namespace {
template <class T>
__global__ __launch_bounds__(256) void reference_kernel(int M, int N, int K, double alpha, MatrixView<const T> a,
                                                        MatrixView<const T> b, double beta, MatrixView<const T> c0,
                                                        MatrixView<double> out) {
  __shared__ double As[16][17], Bs[16][17];
  const int ty = threadIdx.y, tx = threadIdx.x;
  for (int i0 = blockIdx.y * 16; i0 < M; i0 += gridDim.y * 16) {
    const int i = i0 + ty, j = blockIdx.x * 16 + tx;
    double acc = 0;
    for (int k0 = 0; k0 < K; k0 += 16) {
      As[ty][tx] = (i < M && k0 + tx < K) ? double(a(i, k0 + tx)) : 0.0;
      Bs[ty][tx] = (k0 + ty < K && j < N) ? double(b(k0 + ty, j)) : 0.0;
      __syncthreads();
      for (int kk = 0; kk < 16; ++kk) acc += As[ty][kk] * Bs[kk][tx];
      __syncthreads();
    }
    if (i < M && j < N) out(i, j) = alpha * acc + (beta == 0.0 ? 0.0 : beta * double(c0(i, j)));
  }
}
}  // namespace

template <class T>
void reference_gemm_f64(double alpha, MatrixView<const T> a, MatrixView<const T> b, double beta,
                        MatrixView<const T> c0, MatrixView<double> out) {
  const index_t M = out.rows(), N = out.cols(), K = a.cols();
  if (a.rows() != M || b.rows() != K || b.cols() != N || (beta != 0.0 && (c0.rows() != M || c0.cols() != N)))
    throw Error("cuda::reference_gemm_f64: shapes do not match");
  if (M == 0 || N == 0) return;
  if (M > 0x7fffffff || N > 0x7fffffff || K > 0x7fffffff) throw Error("cuda::reference_gemm_f64: size over 2^31");
  const dim3 grid(ceil_div(N, 16), std::min(ceil_div(M, 16), 65535u));
  reference_kernel<T>
      <<<grid, dim3(16, 16), 0, cudaStreamPerThread>>>(int(M), int(N), int(K), alpha, a, b, beta, c0, out);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template void reference_gemm_f64<float>(double, MatrixView<const float>, MatrixView<const float>, double,
                                        MatrixView<const float>, MatrixView<double>);
template void reference_gemm_f64<double>(double, MatrixView<const double>, MatrixView<const double>, double,
                                         MatrixView<const double>, MatrixView<double>);

}  // namespace parray::cuda
