// GPU exact k-NN: parray's GPU GEMM for the inner products, tile by tile,
// and the fused k-selection of select_topk.cuh after each tile.
//
//   for each query tile (QT = 1024 queries):
//     for each base tile (NT = 16384 vectors, at least k):
//       C (QT x NT) = Q_tile . B_tile^T          parray::gemm(..., "gpu"), device views
//       select_tile<<<QT>>>: keys from C + norms, merge into the k best per query
// Memory: one QT x NT tile (64 MiB) + QT x k state, whatever Q and N are.
// k <= 2048 runs in one pass; larger k is refused (the CPU k-NN takes any k).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "parray/cuda/check.hpp"
#include "parray/gemm.hpp"
#include "parray/knn.hpp"
#include "select_topk.cuh"

namespace parray::cuda {

namespace {

using namespace knn_kernels;

struct Workspace {
  void* p = nullptr;
  std::size_t size = 0;
  void* get(std::size_t bytes) {
    if (bytes > size) {
      if (p) PARRAY_CUDA_CHECK(cudaFree(p));
      PARRAY_CUDA_CHECK(cudaMalloc(&p, bytes));
      size = bytes;
    }
    return p;
  }
};

template <int CAP>
void launch_select(int rows, const float* c, index_t nb, index_t j0, const float* bn, const float* qn, bool l2, int k,
                   float* sk, int* si, bool last, index_t q0, float* od, index_t* oi) {
  select_tile<CAP, 256><<<rows, 256>>>(c, nb, j0, bn, qn, l2, k, sk, si, last, q0, od, oi);
  PARRAY_CUDA_CHECK_LAUNCH();
}

}  // namespace

void knn_device(const float* base, index_t n, const float* queries, index_t q, index_t d, const KnnOptions& o,
                float* distances, index_t* indices) {
  check_knn_problem(n, q, d, o);
  if (q == 0) return;
  if (o.k > 2048)
    throw Error("GPU k-NN: k = " + std::to_string(o.k) + " is above the one-pass limit 2048 (use the CPU k-NN)");
  if (n >= (index_t(1) << 31)) throw Error("GPU k-NN: N >= 2^31 base vectors");
  const int k = int(o.k);
  const bool l2 = o.metric == Metric::l2;
  const index_t qt = std::min<index_t>(q, o.query_tile > 0 ? o.query_tile : 1024);
  const index_t nt = std::min<index_t>(n, std::max<index_t>(o.base_tile > 0 ? o.base_tile : 16384, o.k));
  static Workspace ws_c, ws_norms, ws_state;
  float* c = static_cast<float*>(ws_c.get(std::size_t(qt * nt) * sizeof(float)));
  float* norms = static_cast<float*>(ws_norms.get(std::size_t(n + q) * sizeof(float)));
  float* bn = norms;
  float* qn = norms + n;
  float* sk = static_cast<float*>(ws_state.get(std::size_t(qt) * k * (sizeof(float) + sizeof(int))));
  int* si = reinterpret_cast<int*>(sk + qt * k);
  if (l2) {
    row_norms<<<unsigned((n + 7) / 8), 256>>>(base, n, d, bn);
    PARRAY_CUDA_CHECK_LAUNCH();
    row_norms<<<unsigned((q + 7) / 8), 256>>>(queries, q, d, qn);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  // The GEMM: KnnOptions::gemm, else $PARRAY_KNN_GEMM, else the GPU default.
  std::string gemm_impl = o.gemm;
  if (gemm_impl.empty())
    if (const char* env = std::getenv("PARRAY_KNN_GEMM")) gemm_impl = env;
  const GemmOptions gemm_options{gemm_impl.empty() ? "gpu" : gemm_impl, 1};
  for (index_t q0 = 0; q0 < q; q0 += qt) {
    const index_t qb = std::min(qt, q - q0);
    MatrixView<const float> a{queries + q0 * d, MatrixLayout::row_major(qb, d, d), Memory::device};  // (QT, d)
    for (index_t j0 = 0; j0 < n; j0 += nt) {
      const index_t nb = std::min(nt, n - j0);
      MatrixView<const float> b{base + j0 * d, MatrixLayout::col_major(d, nb, d), Memory::device};  // (d, NT)
      MatrixView<float> cv{c, MatrixLayout::row_major(qb, nb, nb), Memory::device};                // (QT, NT)
      gemm<float>(1.0f, a, b, 0.0f, cv, gemm_options);
      const bool last = j0 + nb >= n;
      const int rows = int(qb);
      if (k <= 256) launch_select<512>(rows, c, nb, j0, bn, qn, l2, k, sk, si, last, q0, distances, indices);
      else if (k <= 768) launch_select<1024>(rows, c, nb, j0, bn, qn, l2, k, sk, si, last, q0, distances, indices);
      else if (k <= 1792) launch_select<2048>(rows, c, nb, j0, bn, qn, l2, k, sk, si, last, q0, distances, indices);
      else launch_select<4096>(rows, c, nb, j0, bn, qn, l2, k, sk, si, last, q0, distances, indices);
    }
  }
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace parray::cuda
