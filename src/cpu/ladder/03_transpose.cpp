// Step 3, transpose: B copied to a contiguous N x K buffer first.
//
// Adds a change of B's layout (the CPU/GPU GEMM report's "Transpose"). The inner loop of
// steps 1-2 walks down a column of B; after the copy, bt[j * K + k] holds
// B(k, j), so the inner loop reads both A's row and B's (former) column along
// consecutive addresses and every cache line fetched is used sixteen times
// (FP32) instead of once. The copy costs K x N reads, against the M x N x K
// multiply-adds it speeds up. In Parray's terms the buffer is B viewed as
// [#B_1][#B_0] and stored in that order, which is exactly what a layout-
// transforming #copy does.
//
// The accumulator is one scalar chain (no reassociation), so latency bounds it.
#include "common.hpp"

namespace parray::ladder {

namespace {

struct Transpose {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    const index_t m = call.c.rows(), n = call.c.cols(), k_size = call.a.cols();
    std::vector<T> bt(static_cast<std::size_t>(n * k_size));  // (N, K): row j is column j of B
#pragma omp parallel num_threads(call.threads)
    {
#pragma omp for schedule(static)
      for (index_t j = 0; j < n; ++j)
        for (index_t k = 0; k < k_size; ++k) bt[static_cast<std::size_t>(j * k_size + k)] = b(k, j);
#pragma omp for schedule(dynamic)
      for (index_t i = 0; i < m; ++i) {
        const index_t row = a.row(i);
        for (index_t j = 0; j < n; ++j) {
          const T* bj = bt.data() + j * k_size;
          T acc = 0;
          for (index_t k = 0; k < k_size; ++k) acc += a.data[row + a.col(k)] * bj[k];
          update(c(i, j), acc, call.alpha, call.beta);
        }
      }
    }
  }
};

}  // namespace

GemmImpl transpose() {
  return ladder_step<Transpose>(
      "transpose", "B transposed into a contiguous buffer, rows of A times rows of B^T, OpenMP over rows",
      true, "any layout, any M, N, K; an extra N x K buffer");
}

}  // namespace parray::ladder
