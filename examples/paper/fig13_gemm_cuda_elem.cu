// Figs 12-13: one CUDA thread per element of C. Against fig 11 only the
// types change: the thread array is cuda [N][N], and M is written
// [[N][1]][[N][1]] (fig 12: each thread's quadrant is one element) or, with
// the dimensions of size 1 dropped, [N][N] (fig 13); the body is the same
// function, whose loops over i and j then run once.
//
//   #parray {dmem float [[1024][1]][[1024][1]]} M      (fig 12)
//   #parray {dmem float [1024][1024]} M                (fig 13)
//   #parray {cuda(float a, float b, float c) [1024][1024]} MY_TA
#include <cuda_runtime.h>

#include "paper_gemm.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"

using parray::cuda::CudaThread;
using parray::cuda::CudaThreadArray;

namespace {
int run(int argc, char** argv) {
  if (paper::no_gpu("figs 12-13")) return paper::kSkipped;
  const auto N = paper::size_from(argc, argv);
  const CudaThreadArray MY_TA({int(N.at("N")), int(N.at("N"))});
  int status = 0;
  for (const char* text : {"[[N][1]][[N][1]]", "[N][N]"}) {
    const parray::ArrayType<float, parray::dmem> M(text, {}, N);
    paper::Operands x(M);
    const parray::DeviceLayout m = parray::DeviceLayout::from(M.layout());
    float *a = x.a.data(), *b = x.b.data(), *c = x.c.data();

    MY_TA.detour([=] __device__(const CudaThread& t) { paper::gemm_body(t, m, a, b, c); });
    PARRAY_CUDA_CHECK(cudaDeviceSynchronize());

    status |= x.check(text[1] == '[' ? "fig 12 (cuda [N][N])" : "fig 13 (cuda [N][N])", M.layout());
  }
  return status;
}
}  // namespace

int main(int argc, char** argv) {
  return paper::guarded("figs 12-13", [&] { return run(argc, argv); });
}
