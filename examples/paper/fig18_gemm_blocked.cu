// Fig 18: two more storages for the GEMM of fig 13, body and thread array
// unchanged: (a) four column blocks of N x N/4, [4][N][N/4] viewed as
// [#A_1][[#A_0][#A_2]]; (b) 2 x 2 square blocks, [2][2][N/2][N/2] viewed as
// [[#A_0][#A_2]][[#A_1][#A_3]].
//
//   #parray {dmem float [4][1024][256]} A        #parray {float [#A_1][[#A_0][#A_2]]} M
//   #parray {dmem float [2][2][512][512]} A      #parray {float [[#A_0][#A_2]][[#A_1][#A_3]]} M
#include <cuda_runtime.h>

#include "paper_gemm.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"

using parray::cuda::CudaThread;
using parray::cuda::CudaThreadArray;

namespace {
int run(int argc, char** argv) {
  if (paper::no_gpu("fig 18")) return paper::kSkipped;
  const auto N = paper::size_from(argc, argv);
  const CudaThreadArray MY_TA({int(N.at("N")), int(N.at("N"))});
  const struct {
    const char* figure;
    const char* storage;
    const char* view;
  } storages[] = {{"fig 18(a) (storage [4][N][N/4])", "[4][N][N/4]", "[#A_1][[#A_0][#A_2]]"},
                  {"fig 18(b) (storage [2][2][N/2][N/2])", "[2][2][N/2][N/2]", "[[#A_0][#A_2]][[#A_1][#A_3]]"}};
  int status = 0;
  for (const auto& s : storages) {
    const parray::ArrayType<float, parray::dmem> A(s.storage, {}, N);
    const parray::Layout M = parray::Layout::parse(s.view, {{"A", A.layout()}});
    paper::Operands x(A);
    const parray::DeviceLayout m = parray::DeviceLayout::from(M);
    float *a = x.a.data(), *b = x.b.data(), *c = x.c.data();

    MY_TA.detour([=] __device__(const CudaThread& t) { paper::gemm_body(t, m, a, b, c); });
    PARRAY_CUDA_CHECK(cudaDeviceSynchronize());

    status |= x.check(s.figure, M);
  }
  return status;
}
}  // namespace

int main(int argc, char** argv) {
  return paper::guarded("fig 18", [&] { return run(argc, argv); });
}
