// Step 4, pack-single: a group of four B columns packed, then used by every row.
//
// Adds reuse of A (the CPU/GPU GEMM report's "Single packing"). Step 3 reads a whole row of
// A for every single element of C. Here each OpenMP task takes four columns
// of B, packs them side by side into a K x 4 panel (panel[k * 4 + c]), and
// then computes those four columns of C for all rows: each A(i, k) read now
// feeds four multiply-adds, and the panel (K x 4 elements) stays in cache for
// all M rows. The packing reads B through its layout once, so no separate
// transposed copy of B is needed.
#include "common.hpp"

namespace parray::ladder {

namespace {

constexpr int kCols = 4;  // columns of B (and C) per group

struct PackSingle {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    const index_t m = call.c.rows(), n = call.c.cols(), k_size = call.a.cols();
#pragma omp parallel num_threads(call.threads)
    {
      std::vector<T> panel(static_cast<std::size_t>(k_size * kCols));  // (K, 4) columns j0..j0+3 of B
#pragma omp for schedule(dynamic)
      for (index_t j0 = 0; j0 < n; j0 += kCols) {
        pack_cols<kCols>(b, n, 0, k_size, j0, panel.data());
        const index_t nc = std::min<index_t>(kCols, n - j0);
        for (index_t i = 0; i < m; ++i) {
          const index_t row = a.row(i);
          T acc[1][kCols] = {};
          for (index_t k = 0; k < k_size; ++k) {
            const T aik = a.data[row + a.col(k)];
            for (int col = 0; col < kCols; ++col)
              acc[0][col] += aik * panel[static_cast<std::size_t>(k * kCols + col)];
          }
          store_tile(c, i, j0, 1, nc, acc, call.alpha, call.beta);
        }
      }
    }
  }
};

}  // namespace

GemmImpl pack_single() {
  return ladder_step<PackSingle>(
      "pack-single",
      "groups of 4 B columns packed contiguous, each used by all rows of A, OpenMP over groups", true,
      "any layout, any M, N, K");
}

}  // namespace parray::ladder
