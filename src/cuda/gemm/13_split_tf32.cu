// Launcher of ladder step 13 (gemm/13_split_tf32.cuh): split A and B into
// TF32 big and small parts, then cuBLAS TF32 GEMMs, one per chunk of K (3 kc
// long), each after the first adding into C. Any layout of
// A and B (the split reads through it); C row- or column-major is written by
// cuBLAS directly, any other C through a row-major workspace and one pass.
#include <algorithm>
#include <map>
#include <string>

#include "common/cublas_handle.hpp"
#include "common/cublas_library.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/tuning.hpp"
#include "gemm/split_pass.cuh"

namespace parray::cuda {

cublasHandle_t cublas_handle_for_current_device() {
  // One per host thread and device: a handle's stream is set before each use
  // (cublasSetStream), which two threads sharing one would race on.
  struct Handles {
    std::map<int, cublasHandle_t> per_device;
    ~Handles() {
      for (auto& h : per_device) (void)cuda::cublas().Destroy(h.second);  // errors ignored at exit
    }
  };
  thread_local Handles handles;
  int d = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&d));
  if (const auto it = handles.per_device.find(d); it != handles.per_device.end()) return it->second;
  const auto check = [](cublasStatus_t st, const char* what) {
    cuda::cublas().check(st, "cublas", what);
  };
  cublasHandle_t h = nullptr;
  check(cuda::cublas().Create(&h), "cublasCreate");
  // FP32 on CUDA cores unless a call names a faster compute type: no TF32.
  if (const cublasStatus_t st = cuda::cublas().SetMathMode(h, CUBLAS_DEFAULT_MATH); st != CUBLAS_STATUS_SUCCESS) {
    (void)cuda::cublas().Destroy(h);
    check(st, "cublasSetMathMode");
  }
  return handles.per_device[d] = h;
}

namespace {

void cublas_check(cublasStatus_t s, const char* what) {
  cuda::cublas().check(s, "cuda-13-3xtf32", what);
}

// gpu.3xtf32_small=0: the small parts dropped (one TF32 product), for the
// check that the FP32 tolerance rejects it. Read on every call, so that a
// test can set it (set_tuning) between two products.
bool keep_small_parts() { return gpu_tuning().tf32x3_small; }

// K per GEMM (see 13_split_tf32.cuh: the tensor cores' truncating
// accumulation): the error is that of 3 kc terms whatever K
// (docs/tensor-cores.md has the measured error and speed per kc).
constexpr int kChunkK = 256;

bool unit(const Axis& a) { return a.is_strided() && (a.stride[0] == 1 || a.size <= 1); }

}  // namespace

void gemm_3xtf32_on_stream(cudaStream_t s, const GemmCall<float>& call) {
  check_int_sizes(call, "cuda-13-3xtf32");
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  if (M == 0 || N == 0 || K == 0) throw Error("cuda-13-3xtf32: empty product (the dispatcher handles those)");
  if (3 * K + 3 > 0x7fffffff) throw Error("cuda-13-3xtf32: 3 K must be below 2^31");
  const cublasHandle_t handle = cublas_handle_for_current_device();
  const int kc = int(std::min<index_t>(kChunkK, K));
  // Rows of the split copies 16-byte aligned (an odd 3K made cuBLAS take
  // slower kernels: 1037 x 1055 x 1031 ran at a third of cuBLAS FP32).
  const index_t ld3 = (3 * K + 3) / 4 * 4;
  PoolBuffer a3(std::size_t(M) * std::size_t(ld3), s), b3(std::size_t(N) * std::size_t(ld3), s);
  const bool keep = keep_small_parts();
  split_operand(s, call.a, false, ladder::ChunkedSplit{a3.p, ld3, K, kc, keep}, "cuda-13-3xtf32");
  split_operand(s, call.b, true, ladder::ChunkedSplit{b3.p, ld3, K, kc, keep}, "cuda-13-3xtf32");
  cublas_check(cuda::cublas().SetStream(handle, s), "cublasSetStream");
  const int m = int(M), n = int(N);
  // a3 is M x 3K and b3 N x 3K, both row-major (rows ld3 apart): column-major
  // 3K x M and 3K x N. One TF32 GEMM per chunk of K, the first with the
  // caller's beta, the others adding into C (beta = 1) in cuBLAS's FP32
  // epilogue.
  auto tn_gemms = [&](int rows, int cols, const float* x, const float* y, float alpha, float beta, float* c,
                      long long ldc) {
    const float one = 1.f;
    for (index_t k0 = 0; k0 < K; k0 += kc) {
      const int k3 = int(3 * std::min<index_t>(kc, K - k0));
      cublas_check(cuda::cublas().GemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, rows, cols, k3, &alpha, x + 3 * k0, CUDA_R_32F,
                                int(ld3), y + 3 * k0, CUDA_R_32F, int(ld3), k0 == 0 ? &beta : &one, c, CUDA_R_32F,
                                int(ldc), CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx (TF32)");
    }
  };
  const MatrixLayout& cl = call.c.layout;
  const index_t int_max = 0x7fffffff;
  if (cl.is_strided() && unit(cl.cols) && (M <= 1 || (cl.rows.stride[0] >= N && cl.rows.stride[0] <= int_max))) {
    // Row-major C: column-major C^T (N x M) = B'^T A'^T.
    tn_gemms(n, m, b3.p, a3.p, call.alpha, call.beta, call.c.data, M <= 1 ? N : cl.rows.stride[0]);
  } else if (cl.is_strided() && unit(cl.rows) && (N <= 1 || (cl.cols.stride[0] >= M && cl.cols.stride[0] <= int_max))) {
    tn_gemms(m, n, a3.p, b3.p, call.alpha, call.beta, call.c.data, N <= 1 ? M : cl.cols.stride[0]);
  } else {
    // Any other C: the product into a row-major workspace, then C = alpha W + beta C through C's layout.
    PoolBuffer w(std::size_t(M) * std::size_t(N), s);
    tn_gemms(n, m, b3.p, a3.p, 1.f, 0.f, w.p, N);
    scatter_workspace(s, call, w.p);
  }
}

void gemm_3xtf32(const GemmCall<float>& call) { gemm_3xtf32_on_stream(on_stream(call.stream), call); }

}  // namespace parray::cuda
