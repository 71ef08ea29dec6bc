// The baseline of the host-resident case: cublasXt, NVIDIA's own
// out-of-core multi-GPU GEMM (square BlockDim x BlockDim tiles of every
// matrix, dealt round-robin to the GPUs, one host thread per GPU).
#include <chrono>
#include <map>
#include <memory>
#include <mutex>

#include "common.hpp"
#include "common/cublas_library.hpp"

namespace parray::multigpu {

namespace {
void xt_check(cublasStatus_t s, const char* what) {
  cuda::cublas().check(s, "cublasXt", what);
}
}  // namespace

double cublasxt_sgemm(const std::vector<int>& devices, int block_dim, float alpha, MatrixView<const float> a,
                      MatrixView<const float> b, float beta, MatrixView<float> c, int* used_block_dim) {
  const index_t M = c.rows(), N = c.cols(), K = a.cols();
  if (a.rows() != M || b.rows() != K || b.cols() != N) throw Error("cublasXt: shapes do not agree");
  if (block_dim < 0) throw Error("cublasXt: the block dimension must be >= 0");
  const detail::Rows A = detail::host_rows(a, "A"), B = detail::host_rows(b, "B"), C = detail::host_rows(c, "C");
  // One handle per (GPUs, block dimension), kept: creating it starts cublasXt's
  // worker threads and per-GPU state, which is not part of a GEMM's time.
  static std::mutex mu;
  static auto* handles = new std::map<std::pair<std::vector<int>, int>, cublasXtHandle_t>;  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  cublasXtHandle_t& h = (*handles)[{devices, block_dim}];
  if (!h) {
    xt_check(cuda::cublas().XtCreate(&h), "cublasXtCreate");
    std::vector<int> devs = devices;
    xt_check(cuda::cublas().XtDeviceSelect(h, int(devs.size()), devs.data()), "cublasXtDeviceSelect");
    if (block_dim > 0) xt_check(cuda::cublas().XtSetBlockDim(h, block_dim), "cublasXtSetBlockDim");
  }
  if (used_block_dim) xt_check(cuda::cublas().XtGetBlockDim(h, used_block_dim), "cublasXtGetBlockDim");
  // Row-major C = A B is column-major C^T = B^T A^T: pass B as the first operand.
  const auto t0 = std::chrono::steady_clock::now();
  xt_check(cuda::cublas().XtSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, size_t(N), size_t(M), size_t(K), &alpha, B.p, size_t(B.ld), A.p,
                         size_t(A.ld), &beta, C.p, size_t(C.ld)),
           "cublasXtSgemm");
  // cublasXt returns when C is back on the host (a blocking API).
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace parray::multigpu
