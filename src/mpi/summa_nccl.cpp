// SUMMA with its panels broadcast GPU to GPU over NCCL (gpu.hpp), one MPI
// rank per GPU. Order between the two streams of a rank, per slot s = k % 2:
//
//   communication stream: wait consumed[s] (the GEMM of panel k - 2)
//                         -> pack B's panel k (owner) -> ncclBroadcast A's
//                         panel along the row, B's down the column -> record arrived[s]
//   GEMM stream:          wait arrived[s] -> C += A_k B_k -> record consumed[s]
//
// The GEMM stream is the legacy default stream, where parray's GPU GEMMs
// launch; the communication stream is non-blocking, so the two overlap. Every
// rank queues the row broadcast, then the column broadcast, of each panel in
// the same order, so no rank waits on a peer that waits on it.
#include <thread>
#include <vector>

#include "nccl_context.hpp"
#include "panel_gemm.hpp"
#include "parray/config.hpp"
#include "parray/mpi/gpu.hpp"

namespace parray::mpi {

#if PARRAY_HAVE_NCCL
namespace {

using multigpu::detail::Event;

template <class T>
void check_aligned(const GpuDistMatrix<T>& a, const GpuDistMatrix<T>& b, const GpuDistMatrix<T>& c,
                   const SummaOptions& options) {
  const BlockCyclic &ad = a.dist(), &bd = b.dist(), &cd = c.dist();
  if (&a.gpus() != &c.gpus() || &b.gpus() != &c.gpus())
    throw Error("summa (nccl): A, B and C must live on one GpuProcessContext");
  if (ad.m != cd.m || bd.n != cd.n || ad.n != bd.m)
    throw Error("summa (nccl): A is " + std::to_string(ad.m) + "x" + std::to_string(ad.n) + ", B " +
                std::to_string(bd.m) + "x" + std::to_string(bd.n) + ", C " + std::to_string(cd.m) + "x" +
                std::to_string(cd.n));
  if (ad.mb != cd.mb || ad.rsrc != cd.rsrc)
    throw Error("summa (nccl): A's row blocks (" + ad.str() + ") must be C's (" + cd.str() +
                "); operands on the host are redistributed (summa with transport nccl)");
  if (bd.nb != cd.nb || bd.csrc != cd.csrc)
    throw Error("summa (nccl): B's column blocks (" + bd.str() + ") must be C's (" + cd.str() + ")");
  if (ad.nb != bd.mb)
    throw Error("summa (nccl): A's column block " + std::to_string(ad.nb) + " must equal B's row block " +
                std::to_string(bd.mb) + " (the panel width)");
  if (options.panel != 0 && options.panel != ad.nb)
    throw Error("summa (nccl): the panel width is A's column block " + std::to_string(ad.nb) + ", not " +
                std::to_string(options.panel));
}

// Waits for the rank's GPU; an NCCL error of a peer (seen asynchronously by
// this rank's communicators) throws instead of hanging.
void wait_for_gpu(const GpuProcessContext::Comms& comms) {
  for (;;) {
    const cudaError_t done = cudaStreamQuery(*comms.stream);
    if (done == cudaSuccess) break;
    if (done != cudaErrorNotReady) PARRAY_CUDA_CHECK(done);
    for (ncclComm_t comm : {comms.row, comms.col}) {
      ncclResult_t state = ncclSuccess;
      if (comm) PARRAY_NCCL_CHECK(ncclCommGetAsyncError(comm, &state));
      if (state != ncclInProgress) PARRAY_NCCL_CHECK(state);
    }
    std::this_thread::yield();
  }
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(nullptr));
}

// One SUMMA call on one rank.
template <class T>
class NcclSumma {
 public:
  NcclSumma(const GpuDistMatrix<T>& a, const GpuDistMatrix<T>& b, GpuDistMatrix<T>& c, const LocalGemmPlan& plan,
            SummaStats& stats)
      : a_(a),
        b_(b),
        c_(c),
        me_(c.gpus().grid().coord()),
        comms_(c.gpus().comms()),
        plan_(plan),
        stats_(stats),
        P_(me_.rows),
        Q_(me_.cols),
        mloc_(c.local_rows()),
        nloc_(c.local_cols()),
        k_(a.cols()),
        kb_(a.dist().nb) {
    // Two slots of each panel, kept by the context between calls.
    const std::size_t a_size = static_cast<std::size_t>(Q_ > 1 ? mloc_ * kb_ : 0);
    const std::size_t b_size = static_cast<std::size_t>(P_ > 1 ? kb_ * nloc_ : 0);
    T* space = static_cast<T*>(c.gpus().comms().panel_space((a_size + b_size) * 2 * sizeof(T)));
    for (int s = 0; s < 2; ++s) {
      abuf_[s] = space + s * a_size;
      bbuf_[s] = space + 2 * a_size + s * b_size;
    }
  }

  void run(T alpha, T beta) {
    const cudaStream_t comm = *comms_.stream;
    // The operands' producers (uploads, the caller's kernels, poisoning C) ran
    // on the default stream; the broadcasts read A and B after them.
    Event ready;
    ready.record(nullptr);
    ready.wait_on(comm);
    const index_t steps = (k_ + kb_ - 1) / kb_;
    if (steps == 0) multiply({a_.data(), std::max<index_t>(1, mloc_)}, {b_.data(), 1}, 0, alpha, beta);  // C = beta C
    for (index_t step = 0; step < steps; ++step) {
      const int slot = static_cast<int>(step & 1);
      const index_t w = std::min(kb_, k_ - step * kb_);
      if (step >= 2) consumed_[slot].wait_on(comm);  // the GEMM two panels back has read this slot
      const Panel pa = a_panel(step, slot, w), pb = b_panel(step, slot, w);
      arrived_[slot].record(comm);
      arrived_[slot].wait_on(nullptr);
      multiply(pa, pb, w, alpha, step == 0 ? beta : T(1));
      consumed_[slot].record(nullptr);
      ++stats_.steps;
    }
    wait_for_gpu(comms_);
  }

 private:
  struct Panel {
    const T* p;
    index_t ld;
  };

  // A's block column `step` (mloc x w): where it lies on the owning process
  // column, broadcast along the process row into slot's buffer elsewhere.
  Panel a_panel(index_t step, int slot, index_t w) {
    const int owner = static_cast<int>((step + a_.dist().csrc) % Q_);
    T* local = const_cast<T*>(a_.data()) + (step / Q_) * kb_ * a_.lld();
    if (Q_ == 1) return {local, a_.lld()};
    T* panel = abuf_[slot];
    if (me_.col == owner) {
      if (a_.lld() == mloc_ || w == 1)
        panel = local;  // whole local columns: sent where they lie (in place)
      else
        pack(panel, mloc_, local, a_.lld(), mloc_, w);
    }
    broadcast(panel, mloc_ * w, owner, me_.col, comms_.row);
    return {panel, panel == local ? a_.lld() : std::max<index_t>(1, mloc_)};
  }

  // B's block row `step` (w x nloc): rows of the local block on the owning
  // process row, packed there and broadcast down the process column.
  Panel b_panel(index_t step, int slot, index_t w) {
    const int owner = static_cast<int>((step + b_.dist().rsrc) % P_);
    const T* local = b_.data() + (step / P_) * kb_;
    if (P_ == 1) return {local, b_.lld()};
    T* panel = bbuf_[slot];
    if (me_.row == owner) pack(panel, w, local, b_.lld(), w, nloc_);
    broadcast(panel, w * nloc_, owner, me_.row, comms_.col);
    return {panel, std::max<index_t>(1, w)};
  }

  // rows x cols column-major, device to device, on the communication stream.
  void pack(T* dst, index_t ld_dst, const T* src, index_t ld_src, index_t rows, index_t cols) {
    if (rows == 0 || cols == 0) return;
    PARRAY_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<std::size_t>(ld_dst) * sizeof(T), src,
                                        static_cast<std::size_t>(ld_src) * sizeof(T),
                                        static_cast<std::size_t>(rows) * sizeof(T), static_cast<std::size_t>(cols),
                                        cudaMemcpyDeviceToDevice, *comms_.stream));
  }

  // count elements from `root` (rank in comm) into p on every member; the
  // count is the same on all of them (a process row shares mloc, a column nloc).
  void broadcast(T* p, index_t count, int root, int me, ncclComm_t comm) {
    if (count == 0) return;
    PARRAY_NCCL_CHECK(ncclBroadcast(p, p, static_cast<std::size_t>(count), nccl_type<T>(), root, comm, *comms_.stream));
    const double bytes = static_cast<double>(count) * sizeof(T);
    stats_.bcast_bytes += bytes;
    if (me != root) stats_.recv_bytes += bytes;
  }

  void multiply(const Panel& a, const Panel& b, index_t w, T alpha, T beta) {
    gemm<T>(alpha, MatrixView<const T>{a.p, MatrixLayout::col_major(mloc_, w, a.ld), Memory::device},
            MatrixView<const T>{b.p, MatrixLayout::col_major(w, nloc_, b.ld), Memory::device}, beta, c_.local(),
            {plan_.impl, 1});
    ++stats_.local_calls;
  }

  const GpuDistMatrix<T>& a_;
  const GpuDistMatrix<T>& b_;
  GpuDistMatrix<T>& c_;
  const ProcCoord& me_;
  const GpuProcessContext::Comms& comms_;
  const LocalGemmPlan& plan_;
  SummaStats& stats_;
  const int P_, Q_;
  const index_t mloc_, nloc_, k_, kb_;
  T* abuf_[2] = {nullptr, nullptr};  // slots of received (or packed) A panels, mloc x kb
  T* bbuf_[2] = {nullptr, nullptr};  // B panels, kb x nloc
  Event arrived_[2], consumed_[2];
};

}  // namespace

template <class T>
SummaStats summa(T alpha, const GpuDistMatrix<T>& a, const GpuDistMatrix<T>& b, T beta, GpuDistMatrix<T>& c,
                 const SummaOptions& options) {
  check_aligned(a, b, c, options);
  const GpuProcessContext& gpus = c.gpus();
  SummaOptions on_gpu = options;
  on_gpu.local = LocalGemm::gpu;
  SummaStats stats;
  stats.plan = plan_local_gemm<T>(on_gpu, gpus.grid().coord());
  stats.plan.gpu = gpus.device();
  gpus.bind();
  const double t0 = detail::now_ms();
  NcclSumma<T>(a, b, c, stats.plan, stats).run(alpha, beta);
  stats.local_ms = detail::now_ms() - t0;
  return stats;
}

namespace detail {

template <class T>
void summa_nccl_from_host(T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta, DistMatrix<T>& c,
                          const SummaOptions& options, SummaStats& stats) {
  if (!options.gpus)
    throw Error("summa: transport nccl needs SummaOptions::gpus (a GpuProcessContext over C's process array)");
  if (&options.gpus->grid() != &c.grid())
    throw Error("summa: SummaOptions::gpus was made over another process array than C's");
  double t0 = now_ms();
  GpuDistMatrix<T> ga(*options.gpus, a.dist()), gb(*options.gpus, b.dist()), gc(*options.gpus, c.dist());
  ga.upload(a);
  gb.upload(b);
  if (beta != T(0)) gc.upload(c);
  stats.upload_ms += now_ms() - t0;
  const SummaStats s = summa<T>(alpha, ga, gb, beta, gc, options);
  t0 = now_ms();
  gc.download(c);
  stats.upload_ms += now_ms() - t0;
  stats.bcast_bytes += s.bcast_bytes, stats.recv_bytes += s.recv_bytes;
  stats.steps += s.steps, stats.local_calls += s.local_calls, stats.local_ms += s.local_ms;
  stats.plan = s.plan;
}

}  // namespace detail

#else  // no NCCL: GpuProcessContext cannot be made, so nothing reaches these

template <class T>
SummaStats summa(T, const GpuDistMatrix<T>&, const GpuDistMatrix<T>&, T, GpuDistMatrix<T>&, const SummaOptions&) {
  throw Error("summa (nccl): parray was built without NCCL");
}

namespace detail {
template <class T>
void summa_nccl_from_host(T, const DistMatrix<T>&, const DistMatrix<T>&, T, DistMatrix<T>&, const SummaOptions&,
                          SummaStats&) {
  throw Error("summa: transport nccl needs a build with CUDA and NCCL");
}
}  // namespace detail

#endif

template SummaStats summa<float>(float, const GpuDistMatrix<float>&, const GpuDistMatrix<float>&, float,
                                 GpuDistMatrix<float>&, const SummaOptions&);
template SummaStats summa<double>(double, const GpuDistMatrix<double>&, const GpuDistMatrix<double>&, double,
                                  GpuDistMatrix<double>&, const SummaOptions&);
template void detail::summa_nccl_from_host<float>(float, const DistMatrix<float>&, const DistMatrix<float>&, float,
                                                  DistMatrix<float>&, const SummaOptions&, SummaStats&);
template void detail::summa_nccl_from_host<double>(double, const DistMatrix<double>&, const DistMatrix<double>&, double,
                                                   DistMatrix<double>&, const SummaOptions&, SummaStats&);

}  // namespace parray::mpi
