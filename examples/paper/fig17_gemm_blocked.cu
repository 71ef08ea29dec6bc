// Fig 17: the GEMM of fig 13 on another physical storage. The matrices
// are stored as two column blocks of N x N/2, one after the other (the
// storage [2][N][N/2]), and M is the matrix view of that storage; the body
// and the thread array are unchanged.
//
//   #parray {dmem float [2][1024][512]} A
//   #parray {float [#A_1][[#A_0][#A_2]]} M
//   #parray {cuda(float a, float b, float c) [1024][1024]} MY_TA
#include <cuda_runtime.h>

#include "paper_gemm.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"

using parray::cuda::CudaThread;
using parray::cuda::CudaThreadArray;

namespace {
int run(int argc, char** argv) {
  if (paper::no_gpu("fig 17")) return paper::kSkipped;
  const auto N = paper::size_from(argc, argv);
  const parray::ArrayType<float, parray::dmem> A("[2][N][N/2]", {}, N);
  const parray::Layout M = parray::Layout::parse("[#A_1][[#A_0][#A_2]]", {{"A", A.layout()}});
  const CudaThreadArray MY_TA({int(N.at("N")), int(N.at("N"))});
  paper::Operands x(A);  // #create A(a), A(b), A(c): the storage
  const parray::DeviceLayout m = parray::DeviceLayout::from(M);
  float *a = x.a.data(), *b = x.b.data(), *c = x.c.data();

  MY_TA.detour([=] __device__(const CudaThread& t) { paper::gemm_body(t, m, a, b, c); });
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());

  return x.check("fig 17 (storage [2][N][N/2])", M);
}
}  // namespace

int main(int argc, char** argv) {
  return paper::guarded("fig 17", [&] { return run(argc, argv); });
}
