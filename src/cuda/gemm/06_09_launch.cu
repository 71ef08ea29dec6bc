// Launchers of ladder steps 6-9 (FP32).
#include "gemm/06_blocktile_1d.cuh"
#include "gemm/07_blocktile_2d.cuh"
#include "gemm/08_vectorized.cuh"
#include "gemm/09_warptile.cuh"
#include "parray/cuda/gemm_launchers.hpp"

namespace parray::cuda {

namespace {
struct Dims {
  int M, N, K;
};
Dims dims_of(const GemmCall<float>& call, const char* impl, int bm) {
  check_int_sizes(call, impl);
  if (ceil_div(call.c.rows(), bm) > 65535) throw Error(std::string(impl) + ": M too large for grid y");
  return {int(call.c.rows()), int(call.c.cols()), int(call.a.cols())};
}
// float4 loads along rows of A and B: both row-major, 16-byte aligned rows.
template <class OpA, class OpB>
bool rows_vectorizable(const OpA& a, const OpB& b) {
  if constexpr (OpA::strided && OpB::strided)
    return a.cs == 1 && b.cs == 1 && a.rs % 4 == 0 && b.rs % 4 == 0 && aligned16(a.p) && aligned16(b.p);
  else
    return false;
}
}  // namespace

void gemm_blocktile_1d(const GemmCall<float>& call) {
  const cudaStream_t s = on_stream(call.stream);
  const auto [M, N, K] = dims_of(call, "cuda-06-blocktile-1d", 64);
  with_operands(call, [&](auto a, auto b, auto c) {
    ladder::blocktile_1d<64, 64, 8, 8>
        <<<dim3(ceil_div(N, 64), ceil_div(M, 64)), 512, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

void gemm_blocktile_2d(const GemmCall<float>& call) {
  const cudaStream_t s = on_stream(call.stream);
  const auto [M, N, K] = dims_of(call, "cuda-07-blocktile-2d", 128);
  with_operands(call, [&](auto a, auto b, auto c) {
    ladder::blocktile_2d<128, 128, 8, 8, 8>
        <<<dim3(ceil_div(N, 128), ceil_div(M, 128)), 256, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

void gemm_vectorized(const GemmCall<float>& call) {
  const cudaStream_t s = on_stream(call.stream);
  const auto [M, N, K] = dims_of(call, "cuda-08-vectorized", 128);
  with_operands(call, [&](auto a, auto b, auto c) {
    const dim3 grid(ceil_div(N, 128), ceil_div(M, 128));
    if (rows_vectorizable(a, b))
      ladder::vectorized<true, 128, 128, 8, 8, 8><<<grid, 256, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    else ladder::vectorized<false, 128, 128, 8, 8, 8><<<grid, 256, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

void gemm_warptile(const GemmCall<float>& call) {
  const cudaStream_t s = on_stream(call.stream);
  const auto [M, N, K] = dims_of(call, "cuda-09-warptile", 128);
  with_operands(call, [&](auto a, auto b, auto c) {
    const dim3 grid(ceil_div(N, 128), ceil_div(M, 128));
    if (rows_vectorizable(a, b))
      ladder::warptile<true, 128, 128, 16, 64, 64, 4, 8, 4, 128>
          <<<grid, 128, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    else
      ladder::warptile<false, 128, 128, 16, 64, 64, 4, 8, 4, 128>
          <<<grid, 128, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace parray::cuda
