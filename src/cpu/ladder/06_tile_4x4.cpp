// Step 6, tile-4x4: the 4x4 tiling of the CPU/GPU GEMM report, blocked for the caches and
// widened to fill the vector registers.
//
// The CPU/GPU GEMM report's "Tiling" walks K in steps of 4, loads a 4x4 tile of A and a 4x4
// tile of B into local arrays and accumulates their product into a local 4x4
// tile of C. Step 5 already keeps a 4x4 block of C in registers; what it lacks
// is cache reuse: for every block of C it streams a whole K-long panel of A
// and of B from memory. This step adds the two things that make tiling pay:
//
//  * K is cut into slices of kKc, so a packed slice of B (kKc x 16, 16 KiB in
//    FP32) stays in L1 while it is multiplied by every 4-row panel of a packed
//    block of A (kMc x kKc, in L2). Each value brought from memory is reused
//    kMc or 16 times instead of 4.
//  * The register tile is a row of four 4x4 tiles: 4 rows x 16 columns of C.
//    One row of it is a whole number of vector registers, so the compiler
//    turns tile_product into broadcast-and-FMA instructions with no shuffles;
//    a 4x4 tile alone would leave most of each register empty.
//
// The first K slice applies beta (C is not read when beta == 0), the later
// ones add to C. OpenMP shares the kMc-row blocks of A; B's slice is packed
// once per K slice by all threads together. No intrinsics: the compiler
// vectorises tile_product for whatever instruction set it targets, and the
// explicit AVX2/AVX-512 micro-kernels are the next step (src/cpu/gemm).
//
// A build without -march is held to SSE2 (4 lanes, no FMA): much slower
// than with -march=native (docs/perf-notes.md).
#include "common.hpp"

namespace parray::ladder {

namespace {

constexpr int kMr = 4;         // rows of the register tile
constexpr int kNr = 16;        // columns of the register tile: four 4x4 tiles
constexpr index_t kKc = 256;   // K slice: a kKc x kNr panel of B is 16 KiB (FP32), L1-resident
constexpr index_t kMc = 64;    // rows of A per block: kMc x kKc is 64 KiB (FP32), L2-resident
constexpr index_t kNc = 4096;  // columns of B packed at once, bounding the packed buffer

struct Tile4x4 {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    const index_t m = call.c.rows(), n = call.c.cols(), k_size = call.a.cols();
    const index_t nc_max = std::min(kNc, ceil_div(n, kNr) * kNr);
    std::vector<T> b_slice(static_cast<std::size_t>(std::min(kKc, k_size) * nc_max));  // (nc/16) x (kc, 16)
#pragma omp parallel num_threads(call.threads)
    {
      std::vector<T> a_block(static_cast<std::size_t>(kMc * kKc));  // (kMc/4) x (kc, 4)
      for (index_t j0 = 0; j0 < n; j0 += kNc) {
        const index_t nc = std::min(kNc, n - j0), panels = ceil_div(nc, kNr);
        for (index_t k0 = 0; k0 < k_size; k0 += kKc) {
          const index_t kc = std::min(kKc, k_size - k0);
          const T beta = k0 == 0 ? call.beta : T(1);
#pragma omp for schedule(static)
          for (index_t p = 0; p < panels; ++p)
            pack_cols<kNr>(b, n, k0, kc, j0 + p * kNr, b_slice.data() + p * kc * kNr);
            // the implicit barrier: b_slice is complete before anyone reads it
#pragma omp for schedule(dynamic)
          for (index_t i0 = 0; i0 < m; i0 += kMc) {
            const index_t mc = std::min(kMc, m - i0);
            for (index_t r = 0; r < mc; r += kMr)
              pack_rows<kMr>(a, m, i0 + r, k0, kc, a_block.data() + r * kc);
            for (index_t p = 0; p < panels; ++p) {
              const T* bp = b_slice.data() + p * kc * kNr;
              const index_t jp = j0 + p * kNr, nr = std::min<index_t>(kNr, n - jp);
              for (index_t r = 0; r < mc; r += kMr) {
                T acc[kMr][kNr] = {};
                tile_product(kc, a_block.data() + r * kc, bp, acc);
                store_tile(c, i0 + r, jp, std::min<index_t>(kMr, mc - r), nr, acc, call.alpha, beta);
              }
            }
          }
          // the implicit barrier: nobody repacks b_slice while it is in use
        }
      }
    }
  }
};

}  // namespace

GemmImpl tile_4x4() {
  return ladder_step<Tile4x4>("tile-4x4",
                              "4x16 register tiles (four 4x4 tiles) over packed, cache-blocked panels of A "
                              "and B, OpenMP over row blocks",
                              true, "any layout, any M, N, K");
}

}  // namespace parray::ladder
