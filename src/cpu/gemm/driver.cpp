// parray's CPU GEMM: the BLIS/Goto algorithm over any layout.
//
//   for jc in N step NC:                   B block (KC x NC) lives in L3
//     for pc in K step KC:  pack B         one packed copy shared by all threads
//       for ic in M step MC:               row blocks handed out to the threads at
//                                          run time; A block (MC x KC) lives in its
//                                          core's L2
//         pack A
//         for jr in NC step NR:            B micro-panel (KC x NR) stays in L1
//           for ir in MC step MR:          microkernel: MR x NR of C in registers
//
// For a short K and a C larger than the caches the two inner loops swap
// (TileOrder::along_rows, see choose_tile_order): consecutive tiles then walk
// along C's rows, which the hardware prefetcher follows, and the KC x NC block
// of B is sized to stay in L2.
//
// Packing reads the operands through their layouts (strided fast path, offset
// tables for the blocked layouts), so every layout costs the same in the
// microkernel. Block sizes come from the cache sizes the machine reports
// (blocking.cpp); the microkernel from cpuid or the override (isa.cpp).
#include <omp.h>
#include <xmmintrin.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "blocking.hpp"
#include "microkernel.hpp"
#include "parray/cpu.hpp"
#include "parray/registry.hpp"

namespace parray::cpu {

namespace {

// ---- operand access through the layout -------------------------------------

// One axis of an operand as an offset function: strided or a table.
struct StridedAxis {
  index_t stride;
  index_t operator()(index_t i) const { return i * stride; }
};
struct TableAxis {
  const index_t* offsets;
  index_t operator()(index_t i) const { return offsets[i]; }
};

// Offsets of a non-strided axis, computed once per call (O(M + N + K)).
struct AxisOffsets {
  std::vector<index_t> table;
  explicit AxisOffsets(const Axis& a) {
    if (!a.is_strided()) table = a.offsets();
  }
};

index_t axis_offset(const Axis& axis, const AxisOffsets& offsets, index_t i) {
  return axis.is_strided() ? i * axis.stride[0] : offsets.table[static_cast<std::size_t>(i)];
}

// Calls f(row_axis, col_axis) with the cheapest accessor types for a layout.
template <class F>
void with_axes(const MatrixLayout& l, const AxisOffsets& rows, const AxisOffsets& cols, F&& f) {
  const bool rs = l.rows.is_strided(), cs = l.cols.is_strided();
  if (rs && cs) f(StridedAxis{l.rows.stride[0]}, StridedAxis{l.cols.stride[0]});
  else if (rs) f(StridedAxis{l.rows.stride[0]}, TableAxis{cols.table.data()});
  else if (cs) f(TableAxis{rows.table.data()}, StridedAxis{l.cols.stride[0]});
  else f(TableAxis{rows.table.data()}, TableAxis{cols.table.data()});
}

// ---- packing -----------------------------------------------------------------

// Whether n offsets are a contiguous run (true within one block of the
// figure-17/18 layouts too, whatever the axis type).
bool consecutive(const index_t* offsets, index_t n) {
  for (index_t i = 1; i < n; ++i)
    if (offsets[i] - offsets[i - 1] != 1) return false;
  return true;
}

// A(i0 .. i0+mc, p0 .. p0+kc) into MR-row panels, column by column, zero-padded
// to a multiple of MR rows. Rows that are a contiguous run (column-major
// A) copy straight; full panels of rows whose columns are adjacent
// (row-major A) go to the microkernel's transposing pack where it has one;
// otherwise MR rows are read in step, one element each.
template <class T, class RowAx, class ColAx>
void pack_a(const T* a, RowAx row, ColAx col, index_t i0, index_t mc, index_t p0, index_t kc, int mr,
            typename MicroKernel<T>::PackRows pack_rows, T* dst) {
  bool unit_cols = false;
  if constexpr (std::is_same_v<ColAx, StridedAxis>) unit_cols = col.stride == 1;
  for (index_t ir = 0; ir < mc; ir += mr) {
    const index_t rows = std::min<index_t>(mr, mc - ir);
    index_t row_off[16];
    for (index_t i = 0; i < rows; ++i) row_off[i] = row(i0 + ir + i);
    const bool unit_rows = consecutive(row_off, rows);
    if (pack_rows && unit_cols && rows == mr && !unit_rows) {
      const T* row_start[16];
      for (index_t i = 0; i < rows; ++i) row_start[i] = a + row_off[i] + p0;
      pack_rows(row_start, kc, dst);
      dst += mr * kc;
      continue;
    }
    for (index_t p = 0; p < kc; ++p) {
      const T* src = a + col(p0 + p);
      if (unit_rows) {
        const T* run = src + row_off[0];
        for (index_t i = 0; i < rows; ++i) dst[i] = run[i];
      } else {
        for (index_t i = 0; i < rows; ++i) dst[i] = src[row_off[i]];
      }
      for (index_t i = rows; i < mr; ++i) dst[i] = T(0);
      dst += mr;
    }
  }
}

// B(p0 .. p0+kc, j0 .. j0+nc) into NR-column panels, row by row, zero-padded.
// Columns that are a contiguous run (row-major B, or inside one block of
// the figure-17/18 layouts) copy straight.
template <class T, class RowAx, class ColAx>
void pack_b_panel(const T* b, RowAx row, ColAx col, index_t p0, index_t kc, index_t j0, index_t cols, int nr, T* dst) {
  index_t col_off[64];
  for (index_t j = 0; j < cols; ++j) col_off[j] = col(j0 + j);
  const bool unit_cols = consecutive(col_off, cols);
  for (index_t p = 0; p < kc; ++p) {
    const T* src = b + row(p0 + p);
    if (unit_cols) {
      const T* run = src + col_off[0];
      for (index_t j = 0; j < cols; ++j) dst[j] = run[j];
    } else {
      for (index_t j = 0; j < cols; ++j) dst[j] = src[col_off[j]];
    }
    for (index_t j = cols; j < nr; ++j) dst[j] = T(0);
    dst += nr;
  }
}

// A run of B's columns that is contiguous in B and lies within one packed
// panel: src is its first column's offset in B's rows; it goes to column
// in_panel of panel `panel` of the block.
struct ColumnRun {
  index_t src, panel, in_panel, len;
};

// Columns j0 .. j0+cols of the block starting at column jc as such runs (the
// same for every K block of it); false (runs left incomplete) when they
// average fewer than 8 columns (column-major B: one column each), where
// packing panel by panel is better.
template <class ColAx>
bool column_runs(ColAx col, index_t jc, index_t j0, index_t cols, int nr, std::vector<ColumnRun>& runs) {
  runs.clear();
  for (index_t j = j0; j < j0 + cols;) {
    const index_t in_panel = (j - jc) % nr;
    ColumnRun run{col(j), (j - jc) / nr, in_panel, 1};
    while (j + run.len < j0 + cols && in_panel + run.len < nr && col(j + run.len) == run.src + run.len) ++run.len;
    j += run.len;
    runs.push_back(run);
    if (static_cast<index_t>(runs.size()) * 8 > cols + 8 * nr) return false;
  }
  return true;
}

// B(p0 .. p0+kc, columns of the runs) into NR-column panels as pack_b_panel
// does, row by row across all the runs, so that each row of B is read as one
// sequential run per contiguous stretch of its columns (row-major B: the
// thread's whole share; the figure-17/18 layouts: one per block). Panel by
// panel, a wide row-major B was read NR elements per row, a row (a page at
// 2048 floats) apart: no stream for the hardware prefetcher to follow. Row by
// row took a quarter less time at 2048^3 (docs/perf-notes.md, CPU run 7).
// pad: columns of the last panel past the block's end, zeroed (0: none).
template <class T, class RowAx>
void pack_b_runs(const T* b, RowAx row, index_t p0, index_t kc, const std::vector<ColumnRun>& runs, int nr, T* dst,
                 index_t pad_at, index_t pad) {
  const index_t panel_size = static_cast<index_t>(nr) * kc;
  for (index_t p = 0; p < kc; ++p) {
    const T* src = b + row(p0 + p);
    T* d = dst + p * nr;
    for (const ColumnRun& r : runs)
      for (index_t j = 0; j < r.len; ++j) d[r.panel * panel_size + r.in_panel + j] = src[r.src + j];
    for (index_t j = 0; j < pad; ++j) d[pad_at + j] = T(0);
  }
}

// The K block that starts with `left` of K to go: KC, but a last block up to
// an eighth longer takes the rest in one. A short tail block (K = 1055 at KC
// 1024: 1024 + 31) costs a whole pass of loads and stores over C and a
// repacking of both operands for a few k steps: 1037 x 31 x 1031 alone runs
// at half the kernel's rate, ~2 % of the whole product's time
// (docs/perf-notes.md, CPU session 15). The eighth keeps the stretched B
// micro-panel within the cache its rule sizes it for.
index_t k_block_limit(index_t kc) { return kc + kc / 8; }
index_t k_block(index_t left, index_t kc) { return left <= k_block_limit(kc) ? left : kc; }

// The rows of the next row block, left rows before the end of a KC step: MC
// (mc) while plenty are left, then a share of what is left, no fewer than
// least, MR-aligned except for the last block; one thread: always mc.
index_t block_rows(index_t left, index_t mc, index_t least, index_t threads, int mr) {
  if (threads == 1) return std::min(mc, left);
  const index_t share = (left / (2 * threads) + mr - 1) / mr * mr;
  return std::min(left, std::clamp(share, least, mc));
}

// ---- buffers -------------------------------------------------------------------

template <class T>
T* thread_buffer(std::size_t elements, int which) {
  // Grow-only, 64-byte aligned, one per thread and purpose: no allocation on
  // the steady-state path.
  struct Buffer {
    std::unique_ptr<T[], void (*)(void*)> data{nullptr, std::free};
    std::size_t size = 0;
  };
  thread_local Buffer buffers[3];
  Buffer& b = buffers[which];
  if (b.size < elements) {
    const std::size_t bytes = (elements * sizeof(T) + 63) / 64 * 64;
    b.data.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    if (!b.data) throw Error("parray cpu gemm: cannot allocate a " + std::to_string(bytes) + "-byte packing buffer");
    b.size = elements;
  }
  return b.data.get();
}

// ---- the small-problem path ---------------------------------------------------

// Below this many multiply-adds, packing and the microkernel's fixed costs do
// not pay; an i-p-j loop through the layout is faster (docs/cpu-gemm.md).
constexpr double kSmallWork = 24.0 * 24 * 24;

template <class T>
void small_gemm(const GemmCall<T>& call) {
  const MatrixView<const T>& a = call.a;
  const MatrixView<const T>& b = call.b;
  const MatrixView<T>& c = call.c;
  const index_t m = c.rows(), n = c.cols(), k = a.cols();
  T acc[64];
  for (index_t j0 = 0; j0 < n; j0 += 64) {
    const index_t nb = std::min<index_t>(64, n - j0);
    for (index_t i = 0; i < m; ++i) {
      for (index_t j = 0; j < nb; ++j) acc[j] = T(0);
      for (index_t p = 0; p < k; ++p) {
        const T aip = a(i, p);
        for (index_t j = 0; j < nb; ++j) acc[j] += aip * b(p, j0 + j);
      }
      for (index_t j = 0; j < nb; ++j) {
        T& out = c(i, j0 + j);
        out = call.beta == T(0) ? call.alpha * acc[j] : call.alpha * acc[j] + call.beta * out;
      }
    }
  }
}

// ---- the direct path: no packing ------------------------------------------------

// Whether the direct kernel can read the operands as they are: every axis a
// single stride, B's and C's columns adjacent, A's rows or columns adjacent.
template <class T>
bool direct_applicable(const GemmCall<T>& call) {
  const MatrixLayout &a = call.a.layout, &b = call.b.layout, &c = call.c.layout;
  for (const Axis* axis : {&a.rows, &a.cols, &b.rows, &b.cols, &c.rows, &c.cols})
    if (!axis->is_strided()) return false;
  return b.cols.stride[0] == 1 && c.cols.stride[0] == 1 && (a.cols.stride[0] == 1 || a.rows.stride[0] == 1);
}

// C of at least this many bytes does not stay in the caches from one call to
// the next (on the Sapphire-Rapids-class VM: 32 MiB still behaved as cached,
// 64 MiB not), so its writes go to memory on every call.
constexpr double kLargeCBytes = 32.0 * (1 << 20);

bool c_outlives_caches(index_t m, index_t n, std::size_t element_bytes) {
  return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(element_bytes) >= kLargeCBytes;
}

// Where the direct kernel beats packing. Packing costs a pass over A and B
// plus the driver's set-up (~4 us at 64^3, a third of the time); it pays back
// when each packed panel is reused enough and the B micro-panel, read straight
// from strided rows, would miss the TLB (one page per row for wide B). Direct:
// up to BlockSizes::direct_work multiply-adds (256^3; under the L2 rule 768^3
// FP32 / 640^3 FP64 on AMD Zen 4/5, 448^3 FP32 / 352^3 FP64 on Intel), and any problem
// whose K fits one KC block (every
// element of A and B is then read once per row/column block either way).
// Measured: docs/perf-notes.md, CPU section. PARRAY_CPU_DIRECT=0/1 forces the
// choice, for tuning on another machine.
bool prefer_direct(index_t m, index_t n, index_t k, std::size_t element_bytes, const BlockSizes& bs) {
  static const char* force = std::getenv("PARRAY_CPU_DIRECT");
  if (force && *force) return force[0] == '1';
  // A C larger than the caches goes to the packed path (choose_tile_order):
  // the direct kernels' stores of each 12-row tile wait for memory, e.g.
  // 4096 x K x 4096 FP64 on one / two threads 74 / 139 GFLOP/s at K = 192
  // against 83 / 162 packed (docs/perf-notes.md, session 12).
  if (c_outlives_caches(m, n, element_bytes)) return false;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return work <= bs.direct_work || k <= bs.kc_direct;
}

// C of at least this many bytes, written once by the direct path, is written
// with non-temporal stores (PARRAY_CPU_STREAM=0/1 forces the choice).
constexpr double kStreamBytes = 16.0 * (1 << 20);

// Below this many multiply-adds a second thread costs more (the fork and the
// barrier, a few microseconds) than it saves.
constexpr double kDirectThreadWork = 128.0 * 128 * 128;

// Row blocks of C (MC x N, each thread its own), then K in KC blocks, then NR
// columns at a time: the B micro-panel (KC x NR, strided rows) stays in L1
// across the row tiles of one block, the A block (MC x KC) in L2.
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
  static const char* stream_env = std::getenv("PARRAY_CPU_STREAM");
  const bool stream = (stream_env && *stream_env ? stream_env[0] == '1'
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

// ---- the blocked algorithm -------------------------------------------------------

// The microkernels write rows of C with NR contiguous columns. A C whose
// columns are strided but whose rows are contiguous is computed as
// C^T = B^T A^T instead.
template <class T>
bool wants_c_transposed(const GemmCall<T>& call) {
  const Axis& ccols = call.c.layout.cols;
  const Axis& crows = call.c.layout.rows;
  return !(ccols.is_strided() && ccols.stride[0] == 1) && crows.is_strided() && crows.stride[0] == 1;
}

// The order of the two innermost loops of the packed path. down_columns (the
// Goto/BLIS order): the row tiles of one B micro-panel in turn, the panel
// kept in L1 — C's tiles visited down a column of tiles. along_rows: the B
// micro-panels of one row tile in turn, the KC x NC block of B kept in L2 —
// C's tiles visited along their rows, so that the hardware prefetcher fetches
// C ahead of the stores. For a short K and a C that is written to memory,
// C's traffic is what the time goes to: 4096 x 64 x 4096 ran 49 / 100 GFLOP/s
// FP64 and 105 / 212-260 FP32 (one / two threads) down columns against
// 83-87 / 173-177 and 153-161 / 300-332 along rows (BLIS 82 / 170 and
// 153-168 / 278-295); at K = 256 and beyond down columns was ahead again
// (docs/perf-notes.md, session 12).
enum class TileOrder { down_columns, along_rows };
constexpr index_t kAlongRowsMaxK = 128;

// PARRAY_CPU_ORDER=columns|rows forces the order (tests, tuning).
TileOrder choose_tile_order(index_t m, index_t n, index_t k, std::size_t element_bytes) {
  static const char* force = std::getenv("PARRAY_CPU_ORDER");
  if (force && *force) {
    if (std::strcmp(force, "rows") == 0) return TileOrder::along_rows;
    if (std::strcmp(force, "columns") == 0) return TileOrder::down_columns;
    throw Error(std::string("PARRAY_CPU_ORDER: unknown order '") + force + "' (use rows or columns)");
  }
  return c_outlives_caches(m, n, element_bytes) && k <= kAlongRowsMaxK ? TileOrder::along_rows
                                                                       : TileOrder::down_columns;
}

// The last micro-panel of a block may hold fewer columns than NR (1024 =
// 21 x 48 + 16): the full tile computes all NR and throws the rest away (3 %
// of the FMAs at 1024^3 FP32), a narrow tile only the vectors that hold
// columns. PARRAY_CPU_NARROW=0 takes the full tile (for measuring the change).
bool narrow_edge_tiles() {
  static const char* env = std::getenv("PARRAY_CPU_NARROW");
  return !(env && env[0] == '0');
}

template <class T>
void blocked_gemm(const GemmCall<T>& call, const MicroKernel<T>& uk, BlockSizes bs, TileOrder order) {
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  const bool narrow_edges = narrow_edge_tiles();
  const int mr = uk.mr, nr = uk.nr;
  // Along rows every B micro-panel of the block is used by each row tile in
  // turn: the KC x NC block must stay in L2 (half of it).
  if (order == TileOrder::along_rows) {
    const index_t kc = std::max<index_t>(std::min<index_t>(k_block_limit(bs.kc), k), 1);
    const index_t fit = static_cast<index_t>(bs.l2_bytes / 2 / (static_cast<double>(kc) * sizeof(T)));
    bs.nc = std::clamp<index_t>(fit / nr * nr, nr, bs.nc);
  }

  const AxisOffsets a_rows(call.a.layout.rows), a_cols(call.a.layout.cols);
  const AxisOffsets b_rows(call.b.layout.rows), b_cols(call.b.layout.cols);
  const AxisOffsets c_rows_t(call.c.layout.rows), c_cols_t(call.c.layout.cols);
  auto c_row = [&](index_t i) { return axis_offset(call.c.layout.rows, c_rows_t, i); };
  auto c_col = [&](index_t j) { return axis_offset(call.c.layout.cols, c_cols_t, j); };
  const bool c_cols_unit = call.c.layout.cols.is_strided() && call.c.layout.cols.stride[0] == 1;

  const index_t nc_max = std::min<index_t>(bs.nc, (n + nr - 1) / nr * nr);
  const index_t kc_max = std::min<index_t>(k_block_limit(bs.kc), k);
  // Two packed B blocks, used in turn: a thread done with its rows at one KC
  // step packs its share of the next block into the other buffer while the
  // others still read this one, so one barrier per KC step suffices (the one
  // after packing: every thread has then finished with the block before).
  const std::size_t b_elems = static_cast<std::size_t>(nc_max * kc_max);
  T* const b_buffers[2] = {thread_buffer<T>(b_elems, 1), thread_buffer<T>(b_elems, 2)};
  const index_t tiles = (m + mr - 1) / mr;
  const int threads = static_cast<int>(std::clamp<index_t>(call.threads, 1, std::max<index_t>(tiles, 1)));
  // The row blocks of each KC step are handed out at run time from one
  // counter (position step * m + row): MC rows (evened out over M) while
  // plenty are left, then smaller blocks, down to half of that, so that the
  // threads reach the barrier together. With a fixed half of M each, one
  // thread waited there for the other 5-13 % of the time at 2048^3 on the
  // 2-vCPU VM, whose cores run at speeds that change within milliseconds
  // (docs/perf-notes.md, CPU run 7).
  std::atomic<index_t> next_row{0};
  const index_t even_blocks = std::max<index_t>((m + bs.mc - 1) / bs.mc, 1);
  const index_t even_mc = std::min<index_t>(bs.mc, ((m + even_blocks - 1) / even_blocks + mr - 1) / mr * mr);
  const index_t least_mc = std::max<index_t>(mr, even_mc / 2 / mr * mr);

#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    T* a_packed = thread_buffer<T>(static_cast<std::size_t>(bs.mc * kc_max), 0);
    alignas(64) T edge[16 * 64];
    index_t edge_rows[16];
    // C's row offsets of the current row block, found once per block (not per tile).
    std::vector<index_t> block_rows_c(static_cast<std::size_t>(bs.mc));
    std::vector<ColumnRun> b_runs;  // this thread's share of each B block, as runs of columns
    for (int i = 0; i < mr; ++i) edge_rows[i] = static_cast<index_t>(i) * nr;
    const index_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int step = 0;

    for (index_t jc = 0; jc < n; jc += bs.nc) {
      const index_t nc = std::min<index_t>(bs.nc, n - jc);
      const index_t panels = (nc + nr - 1) / nr;
      // All threads pack the shared B block, a contiguous range of NR panels each.
      const index_t jp0 = panels * t / nt, jp1 = panels * (t + 1) / nt;
      const index_t j0 = jc + jp0 * nr, cols = std::min<index_t>(nc, jp1 * nr) - jp0 * nr;
      bool b_by_runs = false;
      with_axes(call.b.layout, b_rows, b_cols,
                [&](auto, auto col) { b_by_runs = cols > 0 && column_runs(col, jc, j0, cols, nr, b_runs); });
      for (index_t pc = 0, kc = 0; pc < k; pc += kc, ++step) {
        kc = k_block(k - pc, bs.kc);
        T* const b_packed = b_buffers[step & 1];
        with_axes(call.b.layout, b_rows, b_cols, [&](auto row, auto col) {
          if (b_by_runs) {
            // The block's last panel, when it is this thread's and partial: its columns past the end zeroed.
            const index_t last_cols = nc - (panels - 1) * nr;
            const bool pad_here = jp1 == panels && last_cols < nr;
            pack_b_runs(call.b.data, row, pc, kc, b_runs, nr, b_packed, (panels - 1) * nr * kc + last_cols,
                        pad_here ? nr - last_cols : 0);
          } else {
            for (index_t jp = jp0; jp < jp1; ++jp)
              pack_b_panel(call.b.data, row, col, pc, kc, jc + jp * nr, std::min<index_t>(nr, nc - jp * nr), nr,
                           b_packed + jp * nr * kc);
          }
        });
#pragma omp barrier
        // B is packed before anyone uses it.
        const T beta = pc == 0 ? call.beta : T(1);
        const index_t step_start = static_cast<index_t>(step) * m;
        for (;;) {
          // Claim the next row block of this KC step, if one is left.
          index_t pos = next_row.load(std::memory_order_relaxed), ic = 0, mc = 0;
          do {
            ic = pos - step_start;
            if (ic >= m) break;
            mc = block_rows(m - ic, even_mc, least_mc, nt, mr);
          } while (!next_row.compare_exchange_weak(pos, pos + mc, std::memory_order_relaxed));
          if (ic >= m) break;
          with_axes(call.a.layout, a_rows, a_cols, [&](auto row, auto col) {
            pack_a(call.a.data, row, col, ic, mc, pc, kc, mr, uk.pack_rows, a_packed);
          });
          for (index_t r = 0; r < mc; ++r) block_rows_c[static_cast<std::size_t>(r)] = c_row(ic + r);
          // One NR-column panel of the B block: where its columns sit in C.
          // Cheap to describe (no per-column work where C's columns are
          // strided): along rows it is described once per tile.
          struct Panel {
            const T* packed;  // its KC x NR micro-panel
            const T* next;    // the micro-panel after it (for the last, the first)
            index_t first_col, cols;
            bool contiguous;  // NR adjacent columns of C: written in place
            T* c_tile;        // C at its first column (the kernel adds the row offsets)
          };
          const index_t panel_lines = (nr * kc * static_cast<index_t>(sizeof(T)) + 63) / 64;
          auto load_panel = [&](index_t jp, Panel& p) {
            const index_t j = jc + jp * nr;
            p.packed = b_packed + jp * nr * kc;
            p.next = b_packed + (jp + 1 < panels ? jp + 1 : 0) * nr * kc;
            p.first_col = j;
            p.cols = std::min<index_t>(nr, n - j);
            // Columns contiguous in C: straight into C, else through the edge buffer.
            p.contiguous = p.cols == nr && c_cols_unit;
            if (p.cols == nr && !c_cols_unit && !call.c.layout.cols.is_strided()) {
              index_t offsets[64];
              for (index_t cidx = 0; cidx < nr; ++cidx) offsets[cidx] = c_col(j + cidx);
              p.contiguous = consecutive(offsets, nr);
            }
            p.c_tile = call.c.data + c_col(j);
          };
          // The tile of row tile ir and panel p. Down columns, the next
          // micro-panel's first use would otherwise wait for it from L3 or
          // memory (docs/cpu-gemm.md): the row tiles of this panel prefetch it
          // into L2 in turn, kc / 4 lines each. Along rows the B block is in L2.
          // The kernel for a tile computed into the edge buffer: a narrow one
          // when the panel's columns end within its first vectors.
          auto edge_kernel = [&](index_t cols) {
            const index_t vectors = uk.lanes > 0 ? (cols + uk.lanes - 1) / uk.lanes : 0;
            return narrow_edges && vectors >= 1 && vectors <= 2 && uk.narrow[vectors - 1] ? uk.narrow[vectors - 1]
                                                                                           : uk.run;
          };
          auto run_tile = [&](const Panel& p, index_t ir) {
            const index_t rows = std::min<index_t>(mr, mc - ir);
            const T* ap = a_packed + ir * kc;
            const index_t first_line = ir / mr * (kc / 4);
            const T* b_next = order == TileOrder::down_columns && first_line < panel_lines
                                  ? p.next + first_line * 64 / static_cast<index_t>(sizeof(T))
                                  : nullptr;
            if (p.contiguous && rows == mr) {
              uk.run(kc, ap, p.packed, call.alpha, beta, p.c_tile, block_rows_c.data() + ir, b_next);
            } else {
              edge_kernel(p.cols)(kc, ap, p.packed, T(1), T(0), edge, edge_rows, b_next);
              index_t tile_cols[64];
              for (index_t cidx = 0; cidx < p.cols; ++cidx) tile_cols[cidx] = c_col(p.first_col + cidx);
              for (index_t r = 0; r < rows; ++r) {
                const index_t row_off = block_rows_c[static_cast<std::size_t>(ir + r)];
                for (index_t cidx = 0; cidx < p.cols; ++cidx) {
                  T& out = call.c.data[row_off + tile_cols[cidx]];
                  const T v = call.alpha * edge[r * nr + cidx];
                  out = beta == T(0) ? v : v + beta * out;
                }
              }
            }
          };
          Panel panel;
          if (order == TileOrder::down_columns) {
            for (index_t jp = 0; jp < panels; ++jp) {
              load_panel(jp, panel);
              for (index_t ir = 0; ir < mc; ir += mr) run_tile(panel, ir);
            }
          } else {
            for (index_t ir = 0; ir < mc; ir += mr)
              for (index_t jp = 0; jp < panels; ++jp) {
                load_panel(jp, panel);
                run_tile(panel, ir);
              }
          }
        }  // no barrier: the next KC step packs into the other buffer
      }
    }
  }
}

template <class T>
const MicroKernel<T>& microkernel(Isa isa) {
  if constexpr (std::is_same_v<T, float>) {
    return isa == Isa::avx512 ? microkernel_avx512_f32() : isa == Isa::avx2 ? microkernel_avx2_f32() : microkernel_portable_f32();
  } else {
    return isa == Isa::avx512 ? microkernel_avx512_f64() : isa == Isa::avx2 ? microkernel_avx2_f64() : microkernel_portable_f64();
  }
}

template <class T>
const DirectKernel<T>& direct_kernel_avx512() {
  if constexpr (std::is_same_v<T, float>) return direct_avx512_f32();
  else return direct_avx512_f64();
}

// call has C's columns contiguous, or neither C's rows nor its columns.
template <class T>
void cpu_gemm_oriented(const GemmCall<T>& call, Isa isa) {
  const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
  if (isa == Isa::avx512 && direct_applicable(call)) {
    // The direct kernel's tile differs from the packed one's (12 x 32 / 12 x 16
    // against 8 x 48 / 8 x 24): its K block and row block follow its own MR and NR.
    const DirectKernel<T>& dk = direct_kernel_avx512<T>();
    const BlockSizes dbs = block_sizes(sizeof(T), dk.mr, dk.nr, m, call.threads);
    if (prefer_direct(m, n, k, sizeof(T), dbs)) {
      direct_gemm(call, dk, dbs);
      return;
    }
  }
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (work <= kSmallWork) {
    small_gemm(call);
  } else {
    const MicroKernel<T>& uk = microkernel<T>(isa);
    blocked_gemm(call, uk, block_sizes(sizeof(T), uk.mr, uk.nr, m, call.threads), choose_tile_order(m, n, k, sizeof(T)));
  }
}

template <class T>
void cpu_gemm(const GemmCall<T>& call, Isa isa) {
  // Only the transposed problem is built anew: a GemmCall is three views of
  // ~170 bytes each, and copying it showed up in a 64^3 product's profile.
  if (wants_c_transposed(call))
    cpu_gemm_oriented(GemmCall<T>{call.alpha, call.b.t(), call.a.t(), call.beta, call.c.t(), call.threads}, isa);
  else
    cpu_gemm_oriented(call, isa);
}

// isa is a plain function (not a std::function): called on every product,
// behind the registry's own std::function.
void add(Registry& r, const std::string& name, const std::string& what, Isa (*isa)()) {
  GemmImpl impl;
  impl.name = name;
  impl.description = "BLIS-style: packed panels, cache blocking from the cache sizes, " + what + ", OpenMP over row blocks";
  impl.device = Device::cpu;
  impl.threaded = true;
  impl.preconditions = "any layout, any M, N, K";
  impl.run_f32 = [isa](const GemmCall<float>& c) { cpu_gemm(c, isa()); };
  impl.run_f64 = [isa](const GemmCall<double>& c) { cpu_gemm(c, isa()); };
  r.add(std::move(impl));
}

// The ISA of an implementation bound to one microkernel.
template <Isa kIsa>
Isa always() {
  return kIsa;
}

}  // namespace

void register_cpu_gemm(Registry& r) {
  add(r, "parray-cpu", "the widest microkernel this CPU runs (or PARRAY_CPU_ISA)", &selected_isa);
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::portable}) {
    const std::string name = std::string("parray-") + isa_name(isa);
    if (!cpu_supports(isa)) {
      r.add_missing({name, std::string("this CPU lacks ") + isa_name(isa)});
      continue;
    }
    Isa (*const fixed)() = isa == Isa::avx512 ? &always<Isa::avx512>
                           : isa == Isa::avx2 ? &always<Isa::avx2>
                                              : &always<Isa::portable>;
    add(r, name, std::string("the ") + isa_name(isa) + " microkernel", fixed);
  }
  r.set_default(Device::cpu, "parray-cpu");
  // PARRAY_CPU_TUNING=KCxMC[xNC],...: parray-cpu with those packed-path block
  // sizes, one implementation each (parray-cpu-kc1024-mc128, with NC
  // parray-cpu-kc1024-mc128-nc2048), to be timed against each other and the
  // baselines in turn in one process (bench gemm --rounds) when tuning block
  // sizes for a new CPU.
  if (const char* env = std::getenv("PARRAY_CPU_TUNING"); env && *env) {
    std::string list = env;
    for (std::size_t pos = 0; pos <= list.size();) {
      const std::size_t end = std::min(list.find(',', pos), list.size());
      const std::string item = list.substr(pos, end - pos);
      pos = end + 1;
      long kc = 0, mc = 0, nc = 0;
      char tail = 0;
      const int fields = std::sscanf(item.c_str(), "%ldx%ldx%ld%c", &kc, &mc, &nc, &tail);
      const auto separators = std::count(item.begin(), item.end(), 'x');  // "1024x128x" is not 1024x128
      if ((fields != 2 && fields != 3) || fields != separators + 1 || kc < 8 || mc < 1 || kc > 65536 || mc > 65536 ||
          (fields == 3 && (nc < 1 || nc > 1 << 20)))
        throw Error("PARRAY_CPU_TUNING: '" + item + "' is not KCxMC or KCxMCxNC (e.g. 1024x128 or 1024x128x2048)");
      GemmImpl impl;
      impl.name = "parray-cpu-kc" + std::to_string(kc) + "-mc" + std::to_string(mc) +
                  (nc > 0 ? "-nc" + std::to_string(nc) : "");
      impl.description = "parray-cpu with KC " + std::to_string(kc) + ", MC " + std::to_string(mc) +
                         (nc > 0 ? " and NC " + std::to_string(nc) : "") + " on the packed path (PARRAY_CPU_TUNING)";
      impl.device = Device::cpu;
      impl.threaded = true;
      impl.preconditions = "any layout, any M, N, K";
      const BlockOverride o{kc, mc, nc};
      impl.run_f32 = [o](const GemmCall<float>& c) {
        ScopedBlockOverride scope(o);
        cpu_gemm(c, selected_isa());
      };
      impl.run_f64 = [o](const GemmCall<double>& c) {
        ScopedBlockOverride scope(o);
        cpu_gemm(c, selected_isa());
      };
      r.add(std::move(impl));
    }
  }
}

}  // namespace parray::cpu

namespace parray {

std::string cpu_blocking() {
  using namespace cpu;
  const Isa isa = selected_isa();
  const MicroKernel<float>& f = microkernel<float>(isa);
  const MicroKernel<double>& d = microkernel<double>(isa);
  const index_t large_m = index_t(1) << 30;  // does not cap MC
  const BlockSizes bf = block_sizes(sizeof(float), f.mr, f.nr, large_m, 1);
  const BlockSizes bd = block_sizes(sizeof(double), d.mr, d.nr, large_m, 1);
  return std::string(blocking_rule_name(blocking_rule())) + " rule; FP32 " + f.name + ": KC " + std::to_string(bf.kc) +
         ", MC " + std::to_string(bf.mc) + ", NC " + std::to_string(bf.nc) + "; FP64 " + d.name + ": KC " +
         std::to_string(bd.kc) + ", MC " + std::to_string(bd.mc) + ", NC " + std::to_string(bd.nc);
}

}  // namespace parray
