// The direct path: row blocks of C (MC x N, each thread its own), then K in
// KC blocks, then NR columns at a time, the kernels reading A and B where
// they lie. The B micro-panel (KC x NR, strided rows) stays in L1 across the
// row tiles of one block, the A block (MC x KC) in L2.
#include "direct.hpp"

#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>

#include "parray/tuning.hpp"

namespace parray::cpu {

namespace {

// C of at least this many bytes, written once by the direct path, is written
// with non-temporal stores (cpu.stream forces the choice).
constexpr double kStreamBytes = 16.0 * (1 << 20);

// Below this many multiply-adds a second thread costs more (the fork and the
// barrier, a few microseconds) than it saves.
constexpr double kDirectThreadWork = 128.0 * 128 * 128;

}  // namespace

// Packing costs a pass over A and B plus the driver's set-up (a large share
// of a small product's time); it pays back when each packed panel is reused enough
// and the B micro-panel, read straight from strided rows, would miss the TLB
// (one page per row for wide B). Direct: up to BlockSizes::direct_work
// multiply-adds (config_table.hpp), and any problem whose K fits one KC block
// (every element of A and B is then read once per row/column block either
// way). Measured: docs/perf-notes.md, CPU section.
bool prefer_direct(index_t m, index_t n, index_t k, std::size_t element_bytes, const BlockSizes& bs) {
  const Choice force = cpu_tuning().direct;
  if (force != Choice::automatic) return force == Choice::on;
  // A C larger than the caches goes to the packed path (choose_tile_order):
  // the direct kernels' stores of each 12-row tile wait for memory
  // (docs/perf-notes.md).
  if (c_outlives_caches(m, n, element_bytes)) return false;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return work <= bs.direct_work || k <= bs.kc_direct;
}

template <class T>
void direct_gemm(const GemmCall<T>& call, const DirectKernel<T>& dk, const BlockSizes& bs) {
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  const index_t a_rs = call.a.layout.rows.stride[0], a_cs = call.a.layout.cols.stride[0];
  const index_t b_rs = call.b.layout.rows.stride[0], c_rs = call.c.layout.rows.stride[0];
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int wanted = work < kDirectThreadWork ? 1 : call.threads;
  const index_t mr = dk.mr, nr = dk.nr;
  // Row blocks none taller than MC, in a multiple of the thread count (so
  // they divide evenly among the threads), at most one per MR rows. One
  // thread and at most MC rows (every small product) is one block: no need
  // for the four chained 64-bit divisions below (a third of the samples in
  // cpu_gemm_oriented itself in a 16^3 product).
  index_t mc = m, row_blocks = 1;
  if (wanted > 1 || m > bs.mc_direct) {
    index_t blocks = std::max<index_t>((m + bs.mc_direct - 1) / bs.mc_direct, 1);
    if (wanted > 1) blocks = std::min<index_t>((m + mr - 1) / mr, (std::max<index_t>(blocks, wanted) + wanted - 1) / wanted * wanted);
    mc = (((m + blocks - 1) / blocks) + mr - 1) / mr * mr;
    row_blocks = (m + mc - 1) / mc;
  }
  const int threads = static_cast<int>(std::min<index_t>(wanted, row_blocks));
  const index_t kc_step = std::max<index_t>(bs.kc_direct, 1);
  // C written once (one K block, beta 0), much larger than L2 and in 64-byte
  // rows: non-temporal stores save the read for ownership of every C line.
  const Choice stream_choice = cpu_tuning().stream;
  const bool stream = (stream_choice != Choice::automatic
                           ? stream_choice == Choice::on
                           : static_cast<double>(m) * static_cast<double>(n) * sizeof(T) >= kStreamBytes) &&
                      call.beta == T(0) && k <= kc_step && (c_rs * static_cast<index_t>(sizeof(T))) % 64 == 0;
  const auto run = stream ? dk.run_streaming : dk.run;
  // Row-major A: full four-vector column blocks take the wide tile (6 x 4
  // vectors, fewer loads per FMA), the rest the two-vector one.
  const index_t nr_wide = dk.run_wide && a_cs == 1 && !stream ? dk.nr_wide : 0;
  auto row_block = [&](index_t ib) {
    const index_t i0 = ib * mc;
    const int rows = static_cast<int>(std::min<index_t>(mc, m - i0));
    // k == 0 still makes one pass, so that C is scaled by beta.
    for (index_t pc = 0; pc < std::max<index_t>(k, 1); pc += kc_step) {
      const index_t kc = std::min<index_t>(kc_step, k - pc);
      const T beta = pc == 0 ? call.beta : T(1);
      index_t j0 = 0;
      if (nr_wide > 0)
        for (; j0 + nr_wide <= n; j0 += nr_wide)
          dk.run_wide(kc, call.a.data + i0 * a_rs + pc, a_rs, call.b.data + pc * b_rs + j0, b_rs, call.alpha, beta,
                      call.c.data + i0 * c_rs + j0, c_rs, rows);
      for (; j0 < n; j0 += nr) {
        const int cols = static_cast<int>(std::min<index_t>(nr, n - j0));
        run(kc, call.a.data + i0 * a_rs + pc * a_cs, a_rs, a_cs, call.b.data + pc * b_rs + j0, b_rs, call.alpha, beta,
            call.c.data + i0 * c_rs + j0, c_rs, rows, cols);
      }
    }
    if (stream) _mm_sfence();  // the non-temporal stores are seen before the region ends
  };
  // One thread does not enter the OpenMP runtime at all: even an if(false)
  // parallel region costs a team set-up, a noticeable part of a 64^3 product.
  if (threads > 1) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (index_t ib = 0; ib < row_blocks; ++ib) row_block(ib);
  } else {
    for (index_t ib = 0; ib < row_blocks; ++ib) row_block(ib);
  }
}

template void direct_gemm<float>(const GemmCall<float>&, const DirectKernel<float>&, const BlockSizes&);
template void direct_gemm<double>(const GemmCall<double>&, const DirectKernel<double>&, const BlockSizes&);

}  // namespace parray::cpu
