// SUMMA (van de Geijn and Watts, 1997) on block-cyclic distributed matrices.
//
// C (M x N) is distributed in mb x nb blocks over P x Q processes. op(A) must
// be M x K with C's row blocks (mb, rsrc) and op(B) K x N with C's column
// blocks (nb, csrc), both cut into panels of kb in K; anything else is first
// redistributed into that shape. Step k: the process column owning A's k-th
// block column broadcasts it along each process row (every rank gets the rows
// it owns of C), the process row owning B's k-th block row broadcasts it down
// each process column, and every rank adds A_k (mloc x kb) * B_k (kb x nloc)
// to its C block. Each rank receives about M K / P + K N / Q words, 2 n^2 /
// sqrt(p) for square matrices on a square grid.
//
// A panel that is not broadcast (Q == 1 for A, P == 1 for B) is multiplied
// where it lies in the local block, and a contiguous A panel is broadcast from
// there: only B panels of a grid with P > 1 are packed, and only received
// panels are copied.
#include "parray/mpi/summa.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>

#include "panel_gemm.hpp"

namespace parray::mpi {

using detail::GpuPanelGemm;
using detail::HostBuffer;
using detail::Panel;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// How many pieces the CPU's local GEMM is cut into while a broadcast is in
// flight, with an MPI progress call (MPI_Testall) after each: with one core per
// rank nothing else moves a large (rendezvous) message along while the GEMM
// runs. Each extra piece repacks the other operand's panel, and the old cut
// into 4 column pieces of 512 cost FP64 a third of its speed at 4096x256x512
// (docs/distributed.md, "FP64 against ScaLAPACK"), so pieces stay large:
// 2^30 multiply-adds or more each (about 30 ms on one core), at most 4.
int progress_pieces(const SummaOptions& o, index_t mloc, index_t nloc, index_t w) {
  if (o.progress_pieces > 0) return o.progress_pieces;
  const double madds = static_cast<double>(mloc) * static_cast<double>(nloc) * static_cast<double>(w);
  return static_cast<int>(std::clamp(madds / double(1 << 30), 1.0, 4.0));
}

// C += A_panel B_panel on the CPU, cut along the longer side of C so that the
// operand repacked for every piece is the smaller panel.
template <class T>
void cpu_panel_gemm(index_t m, index_t n, index_t w, T alpha, const Panel<T>& a, const Panel<T>& b, T beta, T* c,
                    index_t ldc, int threads, int pieces, MPI_Request* pending, int npending, SummaStats& stats) {
  const GemmOptions opts{"cpu", threads};
  const bool by_rows = m >= n;
  const index_t extent = by_rows ? m : n;
  const index_t piece = std::max<index_t>(1, (extent + pieces - 1) / pieces);
  for (index_t p0 = 0; p0 < extent; p0 += piece) {
    const index_t len = std::min(piece, extent - p0);
    if (by_rows)
      gemm<T>(Order::col_major, Trans::no, Trans::no, len, n, w, alpha, a.host + p0, a.ld, b.host, b.ld, beta, c + p0,
              ldc, opts);
    else
      gemm<T>(Order::col_major, Trans::no, Trans::no, m, len, w, alpha, a.host, a.ld, b.host + p0 * b.ld, b.ld, beta,
              c + p0 * ldc, ldc, opts);
    ++stats.local_calls;
    if (npending > 0) {
      int done = 0;
      MPI_Testall(npending, pending, &done, MPI_STATUSES_IGNORE);
    }
  }
}

}  // namespace

template <class T>
SummaStats summa(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                 DistMatrix<T>& c, const SummaOptions& options) {
  SummaStats stats;
  const MpiThreadArray& grid = c.grid();
  const ProcCoord& me = grid.coord();
  const BlockCyclic& cd = c.dist();
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  const index_t m = cd.m, n = cd.n;
  const index_t k = ta ? a.rows() : a.cols();
  if ((ta ? a.cols() : a.rows()) != m || (tb ? b.cols() : b.rows()) != k || (tb ? b.rows() : b.cols()) != n)
    throw Error("summa: op(A) is " + std::to_string(ta ? a.cols() : a.rows()) + "x" + std::to_string(k) + ", op(B) " +
                std::to_string(tb ? b.cols() : b.rows()) + "x" + std::to_string(tb ? b.rows() : b.cols()) + ", C " +
                std::to_string(m) + "x" + std::to_string(n));
  if (&a.grid() != &grid || &b.grid() != &grid) throw Error("summa: A, B and C must live on one process array");
  if (options.threads < 0) throw Error("summa: negative thread count");
  if (options.progress_pieces < 0) throw Error("summa: negative progress_pieces");
  stats.plan = plan_local_gemm<T>(options, me);
  const bool on_gpu = stats.plan.device == Device::gpu;

  // Which operands can be used where they are.
  const BlockCyclic& ad = a.dist();
  const BlockCyclic& bd = b.dist();
  const bool a_fits = !ta && ad.mb == cd.mb && ad.rsrc == cd.rsrc;
  const bool b_fits = !tb && bd.nb == cd.nb && bd.csrc == cd.csrc;
  index_t kb = options.panel;
  if (kb <= 0) kb = a_fits ? ad.nb : b_fits ? bd.mb : cd.nb;
  const bool a_ok = a_fits && ad.nb == kb, b_ok = b_fits && bd.mb == kb;

  std::unique_ptr<DistMatrix<T>> a_moved, b_moved;
  const DistMatrix<T>* ap = &a;
  const DistMatrix<T>* bp = &b;
  if (!a_ok) {
    a_moved = std::make_unique<DistMatrix<T>>(grid, BlockCyclic{m, k, cd.mb, kb, cd.prows, cd.pcols, cd.rsrc, 0});
    stats.redistribute_bytes += redistribute(a, *a_moved, ta);
    ap = a_moved.get();
  }
  if (!b_ok) {
    b_moved = std::make_unique<DistMatrix<T>>(grid, BlockCyclic{k, n, kb, cd.nb, cd.prows, cd.pcols, 0, cd.csrc});
    stats.redistribute_bytes += redistribute(b, *b_moved, tb);
    bp = b_moved.get();
  }
  const BlockCyclic& A = ap->dist();
  const BlockCyclic& B = bp->dist();

  const index_t mloc = c.local_rows(), nloc = c.local_cols();
  T* cl = c.data();
  const index_t ldc = c.lld();
  const index_t nkb = (k + kb - 1) / kb;
  if (nkb == 0) {  // K == 0: C = beta C
    for (index_t j = 0; j < nloc; ++j)
      for (index_t i = 0; i < mloc; ++i) cl[i + j * ldc] = beta == T(0) ? T(0) : beta * cl[i + j * ldc];
    return stats;
  }

  // First, so that it selects this rank's device before anything touches CUDA.
  std::unique_ptr<GpuPanelGemm<T>> gpu;
  if (on_gpu) {
    const double t0 = now_ms();
    gpu = std::make_unique<GpuPanelGemm<T>>(stats.plan, mloc, nloc, kb, ap->data(), ap->local_cols(), ap->lld(),
                                            bp->data(), bp->local_rows(), bp->lld(), cl, ldc, beta != T(0));
    stats.local_ms += now_ms() - t0;
  }

  const bool a_bcast = grid.cols() > 1, b_bcast = grid.rows() > 1;
  const bool a_contiguous = ap->lld() == mloc;  // a local block column is one run of memory
  // Received panels land in these (pinned for the GPU's asynchronous copies).
  const Memory buffer_memory = on_gpu ? Memory::pinned : Memory::paged;
  HostBuffer<T> abuf[2], bbuf[2];
  for (int s = 0; s < 2; ++s) {
    if (a_bcast) abuf[s] = HostBuffer<T>(std::max<index_t>(1, mloc * kb), buffer_memory);
    if (b_bcast) bbuf[s] = HostBuffer<T>(std::max<index_t>(1, kb * nloc), buffer_memory);
  }
  Panel<T> apanel[2], bpanel[2];
  MPI_Request req[2][2] = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL}, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
  const double elem = sizeof(T);

  auto post = [&](index_t step, int slot) {
    const double t0 = now_ms();
    const index_t w = std::min(kb, k - step * kb);
    // A's block column `step`: on process column a_owner, local columns from (step / Q) kb.
    const int a_owner = static_cast<int>((step + A.csrc) % A.pcols);
    const index_t a_col = (step / A.pcols) * kb;
    const T* a_local = ap->data() + a_col * ap->lld();
    T* a_send = nullptr;  // what this rank passes to the broadcast
    if (!a_bcast || me.col == a_owner) {
      apanel[slot] = {a_local, ap->lld(), true, a_col};
      if (a_bcast && a_contiguous) a_send = const_cast<T*>(a_local);  // the root only reads it
      else if (a_bcast) {
        for (index_t j = 0; j < w; ++j)
          std::memcpy(abuf[slot].data() + j * mloc, a_local + j * ap->lld(), static_cast<std::size_t>(mloc) * sizeof(T));
        a_send = abuf[slot].data();
      }
    } else {
      apanel[slot] = {abuf[slot].data(), std::max<index_t>(1, mloc), false, 0};
      a_send = abuf[slot].data();
    }
    // B's block row `step`: on process row b_owner, local rows from (step / P) kb,
    // packed (w x nloc) for sending.
    const int b_owner = static_cast<int>((step + B.rsrc) % B.prows);
    const index_t b_row = (step / B.prows) * kb;
    const T* b_local = bp->data() + b_row;
    if (!b_bcast || me.row == b_owner) {
      bpanel[slot] = {b_local, bp->lld(), true, b_row};
      if (b_bcast)
        for (index_t j = 0; j < nloc; ++j)
          std::memcpy(bbuf[slot].data() + j * w, b_local + j * bp->lld(), static_cast<std::size_t>(w) * sizeof(T));
    } else {
      bpanel[slot] = {bbuf[slot].data(), w, false, 0};
    }
    stats.pack_ms += now_ms() - t0;
    if (a_bcast) {
      MPI_Ibcast(a_send, static_cast<int>(mloc * w), mpi_type<T>(), a_owner, me.row_comm, &req[slot][0]);
      stats.bcast_bytes += elem * static_cast<double>(mloc * w);
      if (me.col != a_owner) stats.recv_bytes += elem * static_cast<double>(mloc * w);
    }
    if (b_bcast) {
      MPI_Ibcast(bbuf[slot].data(), static_cast<int>(w * nloc), mpi_type<T>(), b_owner, me.col_comm, &req[slot][1]);
      stats.bcast_bytes += elem * static_cast<double>(w * nloc);
      if (me.row != b_owner) stats.recv_bytes += elem * static_cast<double>(w * nloc);
    }
  };

  post(0, 0);
  for (index_t step = 0; step < nkb; ++step) {
    const int slot = static_cast<int>(step & 1);
    const index_t w = std::min(kb, k - step * kb);
    double t0 = now_ms();
    MPI_Waitall(2, req[slot], MPI_STATUSES_IGNORE);
    stats.wait_ms += now_ms() - t0;
    const bool more = step + 1 < nkb;
    const T step_beta = step == 0 ? beta : T(1);
    if (on_gpu) {
      // Panel `step` goes up while the GPU still multiplies panel step-1; the
      // host buffers of step-1 are free once their own upload is done.
      gpu->stage(slot, apanel[slot], bpanel[slot], w);
      if (more) {
        t0 = now_ms();
        gpu->release_host(slot ^ 1);
        stats.pack_ms += now_ms() - t0;
        post(step + 1, slot ^ 1);
      }
      t0 = now_ms();
      gpu->multiply(slot, apanel[slot], bpanel[slot], w, alpha, step_beta);
      stats.local_ms += now_ms() - t0;
      ++stats.local_calls;
    } else {
      if (more) post(step + 1, slot ^ 1);  // panel k+1 travels while panel k is multiplied
      const bool in_flight = more && (a_bcast || b_bcast);
      t0 = now_ms();
      cpu_panel_gemm<T>(mloc, nloc, w, alpha, apanel[slot], bpanel[slot], step_beta, cl, ldc, options.threads,
                        in_flight ? progress_pieces(options, mloc, nloc, w) : 1, in_flight ? req[slot ^ 1] : nullptr,
                        in_flight ? 2 : 0, stats);
      stats.local_ms += now_ms() - t0;
    }
    ++stats.steps;
  }
  if (on_gpu) {
    const double t0 = now_ms();
    gpu->finish(cl, ldc);
    stats.local_ms += now_ms() - t0;
  }
  return stats;
}

template SummaStats summa<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&, float,
                                 DistMatrix<float>&, const SummaOptions&);
template SummaStats summa<double>(Trans, Trans, double, const DistMatrix<double>&, const DistMatrix<double>&, double,
                                  DistMatrix<double>&, const SummaOptions&);

}  // namespace parray::mpi
