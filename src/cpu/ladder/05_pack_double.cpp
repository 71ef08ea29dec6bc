// Step 5, pack-double: a 4x4 block of C from four packed rows of A and four
// packed columns of B.
//
// Adds reuse of B as well (the CPU/GPU GEMM report's "Double packing"). Step 4 reuses each
// A value four times but each B value only once per row. Here a thread holds
// a 4x4 block of C in sixteen register accumulators; per k it reads four
// values of A and four of B and does sixteen multiply-adds, so each load now
// feeds four of them on both sides. Both operands are packed k-major first:
// all of B once, as K x 4 column panels shared by every thread, and the four
// rows of A once per row block, so the inner loop reads two short contiguous
// streams whatever the layouts are. Edge blocks (M or N not a multiple of 4)
// are packed with zeros and only their valid corner is written back.
#include "common.hpp"

namespace parray::ladder {

namespace {

constexpr int kBlock = 4;  // the block of C is kBlock x kBlock

struct PackDouble {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    const index_t m = call.c.rows(), n = call.c.cols(), k_size = call.a.cols();
    const index_t col_blocks = ceil_div(n, kBlock);
    const auto panel_size = static_cast<std::size_t>(k_size * kBlock);
    std::vector<T> b_panels(panel_size * static_cast<std::size_t>(col_blocks));  // col_blocks x (K, 4)
#pragma omp parallel num_threads(call.threads)
    {
#pragma omp for schedule(static)
      for (index_t jb = 0; jb < col_blocks; ++jb)
        pack_cols<kBlock>(b, n, 0, k_size, jb * kBlock, b_panels.data() + jb * panel_size);
      std::vector<T> a_panel(panel_size);  // (K, 4): rows i0..i0+3 of A
#pragma omp for schedule(dynamic)
      for (index_t i0 = 0; i0 < m; i0 += kBlock) {
        pack_rows<kBlock>(a, m, i0, 0, k_size, a_panel.data());
        const index_t mr = std::min<index_t>(kBlock, m - i0);
        for (index_t jb = 0; jb < col_blocks; ++jb) {
          T acc[kBlock][kBlock] = {};
          tile_product(k_size, a_panel.data(), b_panels.data() + jb * panel_size, acc);
          store_tile(c, i0, jb * kBlock, mr, std::min<index_t>(kBlock, n - jb * kBlock), acc, call.alpha,
                     call.beta);
        }
      }
    }
  }
};

}  // namespace

GemmImpl pack_double() {
  return ladder_step<PackDouble>(
      "pack-double",
      "4x4 blocks of C from 4 packed rows of A x 4 packed columns of B, OpenMP over row blocks", true,
      "any layout, any M, N, K; an extra K x N buffer");
}

}  // namespace parray::ladder
