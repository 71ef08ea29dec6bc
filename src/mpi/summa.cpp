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
#include <cstring>
#include <memory>

#include "panel_gemm.hpp"
#include "placed_operands.hpp"

namespace parray::mpi {

using detail::check_shapes;
using detail::GpuPanelGemm;
using detail::HostBuffer;
using detail::now_ms;
using detail::Panel;
using detail::place_operands;
using detail::PlacedOperands;

namespace {

// How many pieces the CPU's local GEMM is cut into while a broadcast is in
// flight, with an MPI progress call (MPI_Testall) after each: with one core per
// rank nothing else moves a large (rendezvous) message along while the GEMM
// runs. Each extra piece repacks the other operand's panel, and small pieces
// cost the GEMM much of its speed (docs/perf-notes.md), so pieces stay large:
// 2^30 multiply-adds or more each, at most 4.
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

// The A and B panels of the steps, two in flight: slot step % 2 holds step's
// panels, broadcast into receive buffers (pinned for the GPU's asynchronous
// copies) or used where they lie on their owner.
template <class T>
class PanelExchange {
 public:
  PanelExchange(const DistMatrix<T>& a, const DistMatrix<T>& b, index_t mloc, index_t nloc, index_t k, index_t kb,
                Memory buffer_memory, SummaStats& stats)
      : a_(a), b_(b), me_(a.grid().coord()), mloc_(mloc), nloc_(nloc), k_(k), kb_(kb),
        a_bcast_(a.grid().cols() > 1), b_bcast_(a.grid().rows() > 1), a_contiguous_(a.lld() == mloc), stats_(stats) {
    for (int s = 0; s < 2; ++s) {
      if (a_bcast_) abuf_[s] = HostBuffer<T>(std::max<index_t>(1, mloc * kb), buffer_memory);
      if (b_bcast_) bbuf_[s] = HostBuffer<T>(std::max<index_t>(1, kb * nloc), buffer_memory);
    }
  }

  // Packs what this rank sends of step's panels and starts their broadcasts.
  void post(index_t step, int slot) {
    const double t0 = now_ms();
    const index_t w = std::min(kb_, k_ - step * kb_);
    T* a_send = place_a(step, slot, w);
    const int a_owner = static_cast<int>((step + a_.dist().csrc) % a_.dist().pcols);
    const int b_owner = static_cast<int>((step + b_.dist().rsrc) % b_.dist().prows);
    place_b(step, slot, w, b_owner);
    stats_.pack_ms += now_ms() - t0;
    const double elem = sizeof(T);
    if (a_bcast_) {
      MPI_Ibcast(a_send, static_cast<int>(mloc_ * w), mpi_type<T>(), a_owner, me_.row_comm, &req_[slot][0]);
      stats_.bcast_bytes += elem * static_cast<double>(mloc_ * w);
      if (me_.col != a_owner) stats_.recv_bytes += elem * static_cast<double>(mloc_ * w);
    }
    if (b_bcast_) {
      MPI_Ibcast(bbuf_[slot].data(), static_cast<int>(w * nloc_), mpi_type<T>(), b_owner, me_.col_comm,
                 &req_[slot][1]);
      stats_.bcast_bytes += elem * static_cast<double>(w * nloc_);
      if (me_.row != b_owner) stats_.recv_bytes += elem * static_cast<double>(w * nloc_);
    }
  }

  void wait(int slot) {
    const double t0 = now_ms();
    MPI_Waitall(2, req_[slot], MPI_STATUSES_IGNORE);
    stats_.wait_ms += now_ms() - t0;
  }

  bool broadcasts() const { return a_bcast_ || b_bcast_; }
  const Panel<T>& a(int slot) const { return apanel_[slot]; }
  const Panel<T>& b(int slot) const { return bpanel_[slot]; }
  MPI_Request* requests(int slot) { return req_[slot]; }

 private:
  // A's block column `step`: on process column a_owner, local columns from
  // (step / Q) kb. Returns what this rank passes to the broadcast.
  T* place_a(index_t step, int slot, index_t w) {
    const int a_owner = static_cast<int>((step + a_.dist().csrc) % a_.dist().pcols);
    const index_t a_col = (step / a_.dist().pcols) * kb_;
    const T* a_local = a_.data() + a_col * a_.lld();
    if (a_bcast_ && me_.col != a_owner) {
      apanel_[slot] = {abuf_[slot].data(), std::max<index_t>(1, mloc_), false, 0};
      return abuf_[slot].data();
    }
    apanel_[slot] = {a_local, a_.lld(), true, a_col};
    if (!a_bcast_) return nullptr;
    if (a_contiguous_) return const_cast<T*>(a_local);  // the root only reads it
    for (index_t j = 0; j < w; ++j)
      std::memcpy(abuf_[slot].data() + j * mloc_, a_local + j * a_.lld(), static_cast<std::size_t>(mloc_) * sizeof(T));
    return abuf_[slot].data();
  }

  // B's block row `step`: on process row b_owner, local rows from (step / P)
  // kb, packed (w x nloc) for sending.
  void place_b(index_t step, int slot, index_t w, int b_owner) {
    const index_t b_row = (step / b_.dist().prows) * kb_;
    const T* b_local = b_.data() + b_row;
    if (b_bcast_ && me_.row != b_owner) {
      bpanel_[slot] = {bbuf_[slot].data(), w, false, 0};
      return;
    }
    bpanel_[slot] = {b_local, b_.lld(), true, b_row};
    if (b_bcast_)
      for (index_t j = 0; j < nloc_; ++j)
        std::memcpy(bbuf_[slot].data() + j * w, b_local + j * b_.lld(), static_cast<std::size_t>(w) * sizeof(T));
  }

  const DistMatrix<T>& a_;
  const DistMatrix<T>& b_;
  const ProcCoord& me_;
  const index_t mloc_, nloc_, k_, kb_;
  const bool a_bcast_, b_bcast_;
  const bool a_contiguous_;  // a local block column is one run of memory
  SummaStats& stats_;
  HostBuffer<T> abuf_[2], bbuf_[2];
  Panel<T> apanel_[2], bpanel_[2];
  MPI_Request req_[2][2] = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL}, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
};

}  // namespace

template <class T>
SummaStats summa(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                 DistMatrix<T>& c, const SummaOptions& options) {
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  check_shapes(ta, tb, a, b, c, options);
  SummaStats stats;
  SummaOptions resolved = options;
  if (options.transport == Transport::nccl) resolved.local = LocalGemm::gpu;  // NCCL moves device buffers
  stats.plan = plan_local_gemm<T>(resolved, c.grid().coord());
  const bool on_gpu = stats.plan.device == Device::gpu;
  const index_t k = ta ? a.rows() : a.cols();
  const PlacedOperands<T> ops = place_operands(ta, tb, a, b, c, k, options.panel, stats);
  const DistMatrix<T>& ap = *ops.a;
  const DistMatrix<T>& bp = *ops.b;
  const index_t kb = ops.kb, mloc = c.local_rows(), nloc = c.local_cols();
  T* cl = c.data();
  const index_t ldc = c.lld();
  const index_t nkb = (k + kb - 1) / kb;
  if (nkb == 0) {  // K == 0: C = beta C
    for (index_t j = 0; j < nloc; ++j)
      for (index_t i = 0; i < mloc; ++i) cl[i + j * ldc] = beta == T(0) ? T(0) : beta * cl[i + j * ldc];
    return stats;
  }
  if (options.transport == Transport::nccl) {
    detail::summa_nccl_from_host<T>(alpha, ap, bp, beta, c, options, stats);
    return stats;
  }

  // First, so that it selects this rank's device before anything touches CUDA.
  std::unique_ptr<GpuPanelGemm<T>> gpu;
  if (on_gpu) {
    const double t0 = now_ms();
    gpu = std::make_unique<GpuPanelGemm<T>>(stats.plan, mloc, nloc, kb, ap.data(), ap.local_cols(), ap.lld(),
                                            bp.data(), bp.local_rows(), bp.lld(), cl, ldc, beta != T(0));
    stats.local_ms += now_ms() - t0;
  }
  PanelExchange<T> x(ap, bp, mloc, nloc, k, kb, on_gpu ? Memory::pinned : Memory::paged, stats);
  x.post(0, 0);
  for (index_t step = 0; step < nkb; ++step) {
    const int slot = static_cast<int>(step & 1);
    const index_t w = std::min(kb, k - step * kb);
    x.wait(slot);
    const bool more = step + 1 < nkb;
    const T step_beta = step == 0 ? beta : T(1);
    double t0 = 0;
    if (on_gpu) {
      // Panel `step` goes up while the GPU still multiplies panel step-1; the
      // host buffers of step-1 are free once their own upload is done.
      gpu->stage(slot, x.a(slot), x.b(slot), w);
      if (more) {
        t0 = now_ms();
        gpu->release_host(slot ^ 1);
        stats.pack_ms += now_ms() - t0;
        x.post(step + 1, slot ^ 1);
      }
      t0 = now_ms();
      gpu->multiply(slot, x.a(slot), x.b(slot), w, alpha, step_beta);
      stats.local_ms += now_ms() - t0;
      ++stats.local_calls;
    } else {
      if (more) x.post(step + 1, slot ^ 1);  // panel k+1 travels while panel k is multiplied
      const bool in_flight = more && x.broadcasts();
      t0 = now_ms();
      cpu_panel_gemm<T>(mloc, nloc, w, alpha, x.a(slot), x.b(slot), step_beta, cl, ldc, options.threads,
                        in_flight ? progress_pieces(options, mloc, nloc, w) : 1,
                        in_flight ? x.requests(slot ^ 1) : nullptr, in_flight ? 2 : 0, stats);
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
