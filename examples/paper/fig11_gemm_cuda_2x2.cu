// Fig 11: the GEMM on 2 x 2 CUDA threads. Against fig 10 only the types
// change: M's memory kind is dmem (the arrays are created on the GPU) and
// the thread array is cuda [2][2]; the body is the same function.
//
//   #parray {dmem float [[2][512]][[2][512]]} M
//   #parray {cuda(float a, float b, float c) [2][2]} MY_TA
#include <cuda_runtime.h>

#include "paper_gemm.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"

using parray::cuda::CudaThread;
using parray::cuda::CudaThreadArray;

namespace {
int run(int argc, char** argv) {
  if (paper::no_gpu("fig 11")) return paper::kSkipped;
  const parray::ArrayType<float, parray::dmem> M("[[2][N/2]][[2][N/2]]", {}, paper::size_from(argc, argv));
  const CudaThreadArray MY_TA({2, 2});
  paper::Operands x(M);
  const parray::DeviceLayout m = parray::DeviceLayout::from(M.layout());
  float *a = x.a.data(), *b = x.b.data(), *c = x.c.data();

  MY_TA.detour([=] __device__(const CudaThread& t) { paper::gemm_body(t, m, a, b, c); });
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());

  return x.check("fig 11 (cuda [2][2])", M.layout());
}
}  // namespace

int main(int argc, char** argv) {
  return paper::guarded("fig 11", [&] { return run(argc, argv); });
}
