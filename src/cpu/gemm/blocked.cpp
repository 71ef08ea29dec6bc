// The packed path:
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
// (TileOrder::along_rows): consecutive tiles then walk along C's rows, which
// the hardware prefetcher follows, and the KC x NC block of B is sized to
// stay in L2.
#include "blocked.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <vector>

#include "pack.hpp"
#include "parray/tuning.hpp"

namespace parray::cpu {

namespace {

// The K block that starts with `left` of K to go: KC, but a last block up to
// an eighth longer takes the rest in one. A short tail block (K = 1055 at KC
// 1024: 1024 + 31) costs a whole pass of loads and stores over C and a
// repacking of both operands for a few k steps, at a fraction of the
// kernel's rate (docs/perf-notes.md). The eighth keeps the stretched B
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

// For a short K and a C that is written to memory, C's traffic is what the
// time goes to: down a column of tiles every store waits for its line from
// memory, along rows the prefetcher follows. At K = 256 and beyond down
// columns was ahead again (docs/perf-notes.md).
constexpr index_t kAlongRowsMaxK = 128;

// Up to this many MC row blocks the threads split B's panels, not C's rows.
constexpr index_t kSplitColumnsRowBlocks = 8;

// One call of the packed path: what all threads share, set up by the calling
// thread, and the steps each thread of the parallel region takes.
template <class T>
class BlockedGemm {
 public:
  BlockedGemm(const GemmCall<T>& call, const MicroKernel<T>& uk, BlockSizes bs, TileOrder order);
  void run();

 private:
  // One thread's buffers.
  struct Worker {
    T* a_packed;
    alignas(64) T edge[16 * 64];  // a tile computed aside (edges, C's columns apart)
    index_t edge_rows[16];
    std::vector<index_t> block_rows_c;  // C's row offsets of the current row block, once per block
    std::vector<ColumnRun> b_runs;      // this thread's share of each B block, as runs of columns
    index_t t, nt;
  };
  // One KC step of one column block of B, packed and shared by all threads.
  struct BStep {
    index_t jc, nc, panels, pc, kc;
    const T* packed;
    T beta;
  };
  // One NR-column panel of the B block: where its columns sit in C. Cheap
  // to describe (no per-column work where C's columns are strided): along
  // rows it is described once per tile.
  struct Panel {
    const T* packed;  // its KC x NR micro-panel
    const T* next;    // the micro-panel after it (for the last, the first)
    index_t first_col, cols;
    bool contiguous;  // NR adjacent columns of C: written in place
    T* c_tile;        // C at its first column (the kernel adds the row offsets)
  };

  index_t c_row(index_t i) const { return axis_offset(call_.c.layout.rows, c_rows_, i); }
  index_t c_col(index_t j) const { return axis_offset(call_.c.layout.cols, c_cols_, j); }
  void thread_main();
  bool b_share_as_runs(Worker& w, index_t jc, index_t nc, index_t jp0, index_t jp1);
  void pack_b_share(Worker& w, bool by_runs, index_t jc, index_t nc, index_t panels, index_t jp0, index_t jp1,
                    index_t pc, index_t kc, T* dst) const;
  bool claim_row_block(index_t step_start, index_t nt, index_t& ic, index_t& mc);
  void multiply_row_block(Worker& w, const BStep& s, index_t ic, index_t mc, index_t jp0, index_t jp1) const;
  void load_panel(const BStep& s, index_t jp, Panel& p) const;
  void panel_columns(index_t j, Panel& p) const;
  void multiply_panels_packed_in_turn(Worker& w, index_t jc, index_t nc, index_t jp0, index_t jp1, index_t pc,
                                      index_t kc, T beta) const;
  typename MicroKernel<T>::Run edge_kernel(index_t cols) const;
  void run_tile(Worker& w, const BStep& s, const Panel& p, index_t mc, index_t ir, index_t panel_lines) const;
  void merge_edge(const Worker& w, T beta, const Panel& p, index_t ir, index_t rows) const;

  const GemmCall<T>& call_;
  const MicroKernel<T>& uk_;
  BlockSizes bs_;
  const TileOrder order_;
  const index_t m_, n_, k_;
  const int mr_, nr_;
  const AxisOffsets a_rows_, a_cols_, b_rows_, b_cols_, c_rows_, c_cols_;
  const bool c_cols_unit_;
  index_t kc_max_ = 0;
  T* b_buffers_[2] = {nullptr, nullptr};
  int threads_ = 1;
  std::atomic<index_t> next_row_{0};
  index_t even_mc_ = 0, least_mc_ = 0;
  // Each thread all of C's rows over the B panels it packed itself, instead
  // of row blocks claimed over all panels (few rows: see the constructor).
  bool split_columns_ = false;
  // Split by panels with one row block: each B panel packed into the
  // thread's own buffer just before its row tiles use it (stays in L2).
  bool panels_in_turn_ = false;
};

template <class T>
BlockedGemm<T>::BlockedGemm(const GemmCall<T>& call, const MicroKernel<T>& uk, BlockSizes bs, TileOrder order)
    : call_(call), uk_(uk), bs_(bs), order_(order), m_(call.c.rows()), n_(call.c.cols()), k_(call.a.cols()),
      mr_(uk.mr), nr_(uk.nr), a_rows_(call.a.layout.rows), a_cols_(call.a.layout.cols), b_rows_(call.b.layout.rows),
      b_cols_(call.b.layout.cols), c_rows_(call.c.layout.rows), c_cols_(call.c.layout.cols),
      c_cols_unit_(call.c.layout.cols.is_strided() && call.c.layout.cols.stride[0] == 1) {
  const index_t m = m_, n = n_, k = k_;
  const int mr = mr_, nr = nr_;
  // Along rows every B micro-panel of the block is used by each row tile in
  // turn: the KC x NC block must stay in L2 (half of it).
  if (order == TileOrder::along_rows) {
    const index_t kc = std::max<index_t>(std::min<index_t>(k_block_limit(bs_.kc), k), 1);
    const index_t fit = static_cast<index_t>(bs_.l2_bytes / 2 / (static_cast<double>(kc) * sizeof(T)));
    bs_.nc = std::clamp<index_t>(fit / nr * nr, nr, bs_.nc);
  }
  const index_t nc_max = std::min<index_t>(bs_.nc, (n + nr - 1) / nr * nr);
  kc_max_ = std::min<index_t>(k_block_limit(bs_.kc), k);
  // Threads share out C's row tiles, or, with few row blocks, B's panels
  // (at least four each) where that keeps as many threads busy.
  const index_t tiles = (m + mr - 1) / mr, panel_shares = (n + nr - 1) / nr / 4;
  const index_t threads = std::max<index_t>(call.threads, 1);
  const bool split = m <= kSplitColumnsRowBlocks * bs_.mc && panel_shares >= std::min(threads, tiles);
  threads_ = static_cast<int>(std::clamp<index_t>(threads, 1, std::max<index_t>(split ? panel_shares : tiles, 1)));
  // The row blocks of each KC step are handed out at run time from one
  // counter (position step * m + row): MC rows (evened out over M) while
  // plenty are left, then smaller blocks, down to half of that, so that the
  // threads reach the barrier together. With a fixed half of M each, one
  // thread waited there for the other on a 2-vCPU VM whose cores run at
  // speeds that change within milliseconds (docs/perf-notes.md).
  const index_t even_blocks = std::max<index_t>((m + bs_.mc - 1) / bs_.mc, 1);
  even_mc_ = std::min<index_t>(bs_.mc, ((m + even_blocks - 1) / even_blocks + mr - 1) / mr * mr);
  least_mc_ = std::max<index_t>(mr, even_mc_ / 2 / mr * mr);
  // With few row blocks, each thread's would read every packed B panel (from
  // L3) for a few row tiles; split by panels instead: each thread uses only
  // the panels it packed itself, each for all of M (docs/perf-notes.md).
  split_columns_ = threads_ > 1 && split;
  panels_in_turn_ = split_columns_ && m <= even_mc_;
  if (panels_in_turn_) return;  // each thread packs into a panel buffer of its own
  // Two packed B blocks, used in turn: a thread done with its rows at one KC
  // step packs its share of the next block into the other buffer while the
  // others still read this one, so one barrier per KC step suffices (the one
  // after packing: every thread has then finished with the block before).
  const std::size_t b_elems = static_cast<std::size_t>(nc_max * kc_max_);
  b_buffers_[0] = thread_buffer<T>(b_elems, 1);
  b_buffers_[1] = thread_buffer<T>(b_elems, 2);
}

template <class T>
void BlockedGemm<T>::run() {
#pragma omp parallel num_threads(threads_) if (threads_ > 1)
  thread_main();
}

template <class T>
void BlockedGemm<T>::thread_main() {
  Worker w;
  w.a_packed = thread_buffer<T>(static_cast<std::size_t>(bs_.mc * kc_max_), 0);
  w.block_rows_c.resize(static_cast<std::size_t>(bs_.mc));
  for (int i = 0; i < mr_; ++i) w.edge_rows[i] = static_cast<index_t>(i) * nr_;
  w.t = omp_get_thread_num(), w.nt = omp_get_num_threads();
  int step = 0;
  for (index_t jc = 0; jc < n_; jc += bs_.nc) {
    const index_t nc = std::min<index_t>(bs_.nc, n_ - jc);
    const index_t panels = (nc + nr_ - 1) / nr_;
    // All threads pack the shared B block, a contiguous range of NR panels each.
    const index_t jp0 = panels * w.t / w.nt, jp1 = panels * (w.t + 1) / w.nt;
    const bool by_runs = !panels_in_turn_ && b_share_as_runs(w, jc, nc, jp0, jp1);
    for (index_t pc = 0, kc = 0; pc < k_; pc += kc, ++step) {
      kc = k_block(k_ - pc, bs_.kc);
      if (panels_in_turn_) {  // no shared buffer: no barrier
        multiply_panels_packed_in_turn(w, jc, nc, jp0, jp1, pc, kc, pc == 0 ? call_.beta : T(1));
        continue;
      }
      T* const b_packed = b_buffers_[step & 1];
      pack_b_share(w, by_runs, jc, nc, panels, jp0, jp1, pc, kc, b_packed);
#pragma omp barrier
      // B is packed before anyone uses it; and every thread is done with the
      // previous KC step, whose buffer the next step packs into (also where
      // each thread reads only its own panels: the shares and KC, so the
      // panels' places, change from one column block or KC step to the next).
      const BStep s{jc, nc, panels, pc, kc, b_packed, pc == 0 ? call_.beta : T(1)};
      if (split_columns_) {  // this thread's own panels, for all of C's rows
        for (index_t ic = 0, mc = 0; ic < m_; ic += mc) {
          mc = std::min(even_mc_, m_ - ic);
          multiply_row_block(w, s, ic, mc, jp0, jp1);
        }
        continue;
      }
      const index_t step_start = static_cast<index_t>(step) * m_;
      index_t ic = 0, mc = 0;
      while (claim_row_block(step_start, w.nt, ic, mc)) multiply_row_block(w, s, ic, mc, 0, panels);
    }  // no barrier: the next KC step packs into the other buffer
  }
}

// This thread's panels jp0 .. jp1 of the block at jc as runs of columns
// (w.b_runs), where they are long enough to pack that way.
template <class T>
bool BlockedGemm<T>::b_share_as_runs(Worker& w, index_t jc, index_t nc, index_t jp0, index_t jp1) {
  const index_t j0 = jc + jp0 * nr_, cols = std::min<index_t>(nc, jp1 * nr_) - jp0 * nr_;
  bool by_runs = false;
  with_axes(call_.b.layout, b_rows_, b_cols_,
            [&](auto, auto col) { by_runs = cols > 0 && column_runs(col, jc, j0, cols, nr_, w.b_runs); });
  return by_runs;
}

template <class T>
void BlockedGemm<T>::pack_b_share(Worker& w, bool by_runs, index_t jc, index_t nc, index_t panels, index_t jp0,
                                  index_t jp1, index_t pc, index_t kc, T* dst) const {
  const int nr = nr_;
  with_axes(call_.b.layout, b_rows_, b_cols_, [&](auto row, auto col) {
    if (by_runs) {
      // The block's last panel, when it is this thread's and partial: its columns past the end zeroed.
      const index_t last_cols = nc - (panels - 1) * nr;
      const bool pad_here = jp1 == panels && last_cols < nr;
      pack_b_runs(call_.b.data, row, pc, kc, w.b_runs, nr, dst, (panels - 1) * nr * kc + last_cols,
                  pad_here ? nr - last_cols : 0);
    } else {
      for (index_t jp = jp0; jp < jp1; ++jp)
        pack_b_panel(call_.b.data, row, col, pc, kc, jc + jp * nr, std::min<index_t>(nr, nc - jp * nr), nr,
                     dst + jp * nr * kc);
    }
  });
}

// Claims the next row block of this KC step (rows ic .. ic + mc), if one is left.
template <class T>
bool BlockedGemm<T>::claim_row_block(index_t step_start, index_t nt, index_t& ic, index_t& mc) {
  index_t pos = next_row_.load(std::memory_order_relaxed);
  do {
    ic = pos - step_start;
    if (ic >= m_) return false;
    mc = block_rows(m_ - ic, even_mc_, least_mc_, nt, mr_);
  } while (!next_row_.compare_exchange_weak(pos, pos + mc, std::memory_order_relaxed));
  return true;
}

template <class T>
void BlockedGemm<T>::multiply_row_block(Worker& w, const BStep& s, index_t ic, index_t mc, index_t jp0,
                                        index_t jp1) const {
  with_axes(call_.a.layout, a_rows_, a_cols_, [&](auto row, auto col) {
    pack_a(call_.a.data, row, col, ic, mc, s.pc, s.kc, mr_, uk_.pack_rows, w.a_packed);
  });
  for (index_t r = 0; r < mc; ++r) w.block_rows_c[static_cast<std::size_t>(r)] = c_row(ic + r);
  const index_t panel_lines = (nr_ * s.kc * static_cast<index_t>(sizeof(T)) + 63) / 64;
  Panel panel;
  if (order_ == TileOrder::down_columns) {
    for (index_t jp = jp0; jp < jp1; ++jp) {
      load_panel(s, jp, panel);
      for (index_t ir = 0; ir < mc; ir += mr_) run_tile(w, s, panel, mc, ir, panel_lines);
    }
  } else {
    for (index_t ir = 0; ir < mc; ir += mr_)
      for (index_t jp = jp0; jp < jp1; ++jp) {
        load_panel(s, jp, panel);
        run_tile(w, s, panel, mc, ir, panel_lines);
      }
  }
}

template <class T>
void BlockedGemm<T>::load_panel(const BStep& s, index_t jp, Panel& p) const {
  const int nr = nr_;
  p.packed = s.packed + jp * nr * s.kc;
  p.next = s.packed + (jp + 1 < s.panels ? jp + 1 : 0) * nr * s.kc;
  panel_columns(s.jc + jp * nr, p);
}

// Where the panel of C's columns from j sits in C.
template <class T>
void BlockedGemm<T>::panel_columns(index_t j, Panel& p) const {
  const int nr = nr_;
  p.first_col = j;
  p.cols = std::min<index_t>(nr, n_ - j);
  // Columns contiguous in C: straight into C, else through the edge buffer.
  p.contiguous = p.cols == nr && c_cols_unit_;
  if (p.cols == nr && !c_cols_unit_ && !call_.c.layout.cols.is_strided()) {
    index_t offsets[64];
    for (index_t cidx = 0; cidx < nr; ++cidx) offsets[cidx] = c_col(j + cidx);
    p.contiguous = consecutive(offsets, nr);
  }
  p.c_tile = call_.c.data + c_col(j);
}

// All of C's rows (one row block) over this thread's panels jp0 .. jp1 of
// the block at jc, each packed into the thread's own buffer just before its
// row tiles use it.
template <class T>
void BlockedGemm<T>::multiply_panels_packed_in_turn(Worker& w, index_t jc, index_t nc, index_t jp0, index_t jp1,
                                                    index_t pc, index_t kc, T beta) const {
  with_axes(call_.a.layout, a_rows_, a_cols_, [&](auto row, auto col) {
    pack_a(call_.a.data, row, col, 0, m_, pc, kc, mr_, uk_.pack_rows, w.a_packed);
  });
  for (index_t r = 0; r < m_; ++r) w.block_rows_c[static_cast<std::size_t>(r)] = c_row(r);
  T* const panel_buffer = thread_buffer<T>(static_cast<std::size_t>(nr_ * kc_max_), 3);
  const BStep s{jc, nc, jp1, pc, kc, panel_buffer, beta};
  for (index_t jp = jp0; jp < jp1; ++jp) {
    const index_t j = jc + jp * nr_;
    with_axes(call_.b.layout, b_rows_, b_cols_, [&](auto row, auto col) {
      pack_b_panel(call_.b.data, row, col, pc, kc, j, std::min<index_t>(nr_, nc - jp * nr_), nr_, panel_buffer);
    });
    Panel p;
    p.packed = p.next = panel_buffer;
    panel_columns(j, p);
    for (index_t ir = 0; ir < m_; ir += mr_) run_tile(w, s, p, m_, ir, 0);
  }
}

// The kernel for a tile computed into the edge buffer: a narrow one when
// the panel's columns end within its first vectors. The last micro-panel of
// a block may hold fewer columns than NR (1024 = 21 x 48 + 16): the full
// tile computes all NR and throws the rest away (3 % of the FMAs at 1024^3
// FP32), a narrow tile only the vectors that hold columns.
template <class T>
typename MicroKernel<T>::Run BlockedGemm<T>::edge_kernel(index_t cols) const {
  const index_t vectors = uk_.lanes > 0 ? (cols + uk_.lanes - 1) / uk_.lanes : 0;
  return vectors >= 1 && vectors <= 2 && uk_.narrow[vectors - 1] ? uk_.narrow[vectors - 1] : uk_.run;
}

// The tile of row tile ir and panel p. Down columns, the next micro-panel's
// first use would otherwise wait for it from L3 or memory (docs/cpu-gemm.md):
// the row tiles of this panel prefetch it into L2 in turn, kc / 4 lines
// each. Along rows the B block is in L2.
template <class T>
void BlockedGemm<T>::run_tile(Worker& w, const BStep& s, const Panel& p, index_t mc, index_t ir,
                              index_t panel_lines) const {
  const index_t rows = std::min<index_t>(mr_, mc - ir);
  const T* ap = w.a_packed + ir * s.kc;
  const index_t first_line = ir / mr_ * (s.kc / 4);
  const T* b_next = order_ == TileOrder::down_columns && first_line < panel_lines
                        ? p.next + first_line * 64 / static_cast<index_t>(sizeof(T))
                        : nullptr;
  if (p.contiguous && rows == mr_) {
    uk_.run(s.kc, ap, p.packed, call_.alpha, s.beta, p.c_tile, w.block_rows_c.data() + ir, b_next);
  } else {
    edge_kernel(p.cols)(s.kc, ap, p.packed, T(1), T(0), w.edge, w.edge_rows, b_next);
    merge_edge(w, s.beta, p, ir, rows);
  }
}

// C = alpha * edge + beta * C over the tile's rows and columns.
template <class T>
void BlockedGemm<T>::merge_edge(const Worker& w, T beta, const Panel& p, index_t ir, index_t rows) const {
  index_t tile_cols[64];
  for (index_t cidx = 0; cidx < p.cols; ++cidx) tile_cols[cidx] = c_col(p.first_col + cidx);
  for (index_t r = 0; r < rows; ++r) {
    const index_t row_off = w.block_rows_c[static_cast<std::size_t>(ir + r)];
    for (index_t cidx = 0; cidx < p.cols; ++cidx) {
      T& out = call_.c.data[row_off + tile_cols[cidx]];
      const T v = call_.alpha * w.edge[r * nr_ + cidx];
      out = beta == T(0) ? v : v + beta * out;
    }
  }
}

}  // namespace

TileOrder choose_tile_order(index_t m, index_t n, index_t k, std::size_t element_bytes) {
  switch (cpu_tuning().order) {
    case CpuTuning::Order::rows: return TileOrder::along_rows;
    case CpuTuning::Order::columns: return TileOrder::down_columns;
    case CpuTuning::Order::automatic: break;
  }
  return c_outlives_caches(m, n, element_bytes) && k <= kAlongRowsMaxK ? TileOrder::along_rows
                                                                       : TileOrder::down_columns;
}

template <class T>
void blocked_gemm(const GemmCall<T>& call, const MicroKernel<T>& uk, BlockSizes bs, TileOrder order) {
  BlockedGemm<T>(call, uk, bs, order).run();
}

template void blocked_gemm<float>(const GemmCall<float>&, const MicroKernel<float>&, BlockSizes, TileOrder);
template void blocked_gemm<double>(const GemmCall<double>&, const MicroKernel<double>&, BlockSizes, TileOrder);

}  // namespace parray::cpu
