// Device helpers of the multi-GPU GEMMs (common.hpp): the local GEMM (ladder
// step 12, cuBLAS or ladder step 13 on a stream), y = x + beta y for the K split's beta, NaN
// poisoning.
#include <limits>

#include "common/cublas_handle.hpp"
#include "common/cublas_library.hpp"
#include "multilevel/launch.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "common.hpp"

namespace parray::multigpu::detail {

namespace {
__global__ __launch_bounds__(256) void add_scaled_kernel(index_t rows, index_t cols, const float* x, index_t ldx,
                                                         float beta, float* y, index_t ldy) {
  for (index_t i = blockIdx.y; i < rows; i += gridDim.y)
    for (index_t j = index_t(blockIdx.x) * 256 + threadIdx.x; j < cols; j += index_t(gridDim.x) * 256) {
      float* out = y + i * ldy + j;
      *out = beta == 0.f ? x[i * ldx + j] : x[i * ldx + j] + beta * *out;  // beta == 0: y not read
    }
}
__global__ __launch_bounds__(256) void fill_kernel(float* p, index_t rows, index_t cols, index_t ld, float v) {
  for (index_t i = blockIdx.y; i < rows; i += gridDim.y)
    for (index_t j = index_t(blockIdx.x) * 256 + threadIdx.x; j < cols; j += index_t(gridDim.x) * 256)
      p[i * ld + j] = v;
}
void cublas_check(cublasStatus_t st, const char* what) {
  cuda::cublas().check(st, "multigpu", what);
}

void cublas_row_major(cudaStream_t s, int m, int n, int k, float alpha, const float* a, index_t lda, const float* b,
                      index_t ldb, float beta, float* c, index_t ldc) {
  cublasHandle_t h = cuda::cublas_handle_for_current_device();
  cublas_check(cuda::cublas().SetStream(h, s), "cublasSetStream");
  // Row-major C = A B is column-major C^T = B^T A^T.
  cublas_check(cuda::cublas().Sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, int(ldb), a, int(lda), &beta, c, int(ldc)),
               "cublasSgemm");
}

dim3 grid_for(index_t rows, index_t cols) {
  return dim3(unsigned(std::min<index_t>((cols + 255) / 256, 1024)), unsigned(std::min<index_t>(rows, 65535)));
}
}  // namespace

void local_gemm(LocalGemm how, cudaStream_t s, index_t m, index_t n, index_t k, float alpha, const float* a,
                index_t lda, const float* b, index_t ldb, float beta, float* c, index_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (m > 0x7fffffff || n > 0x7fffffff || k > 0x7fffffff)
    throw Error("multigpu: a local GEMM's M, N and K must each be below 2^31");
  if (k == 0) {  // C = beta C (a GPU whose K slice is empty contributes zeros)
    if (beta == 0.f)
      PARRAY_CUDA_CHECK(cudaMemset2DAsync(c, size_t(ldc) * sizeof(float), 0, size_t(n) * sizeof(float), size_t(m), s));
    else if (beta != 1.f)
      add_scaled(s, m, n, c, ldc, beta - 1.f, c, ldc);  // c + (beta - 1) c, element by element in place
    return;
  }
  if (how == LocalGemm::cublas) {
    if (lda > 0x7fffffff || ldb > 0x7fffffff || ldc > 0x7fffffff)
      throw Error("multigpu: cuBLAS's leading dimensions must be below 2^31");
    cublas_row_major(s, int(m), int(n), int(k), alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (how == LocalGemm::tf32x3) {
    const GemmCall<float> call{alpha,
                               {a, MatrixLayout::row_major(m, k, lda), Memory::device},
                               {b, MatrixLayout::row_major(k, n, ldb), Memory::device},
                               beta,
                               {c, MatrixLayout::row_major(m, n, ldc), Memory::device},
                               1};
    if (cuda::wgmma_unsupported().empty()) cuda::gemm_wgmma_3xtf32_on_stream(s, call);
    else cuda::gemm_3xtf32_on_stream(s, call);
    return;
  }
  cuda::multilevel::gemm_best_on_stream(s, int(m), int(n), int(k), alpha, a, lda, b, ldb, beta, c, ldc);
}

void add_scaled(cudaStream_t s, index_t rows, index_t cols, const float* x, index_t ldx, float beta, float* y,
                index_t ldy) {
  if (rows <= 0 || cols <= 0) return;
  add_scaled_kernel<<<grid_for(rows, cols), 256, 0, s>>>(rows, cols, x, ldx, beta, y, ldy);
  PARRAY_CUDA_CHECK_LAUNCH();
}

void fill_nan(cudaStream_t s, float* p, index_t rows, index_t cols, index_t ld) {
  if (rows <= 0 || cols <= 0) return;
  fill_kernel<<<grid_for(rows, cols), 256, 0, s>>>(p, rows, cols, ld, std::numeric_limits<float>::quiet_NaN());
  PARRAY_CUDA_CHECK_LAUNCH();
}

}  // namespace parray::multigpu::detail
