// The device-resident multi-GPU GEMMs (multigpu.hpp): SUMMA on a P x Q array
// of GPUs and the K split with a reduce-scatter, each one per-GPU body run
// over the GPU thread array; NCCL moves the panels and partial sums.
#include <algorithm>
#include <chrono>
#include <limits>

#include "team.hpp"

namespace parray::multigpu {

using namespace detail;

struct Distributed::State {
  Plan plan;
  index_t M = 0, N = 0, K = 0;
  Team* team = nullptr;
  int P = 1, Q = 1, G = 1;

  // summa_2d: K in T panels of width kb (the last one shorter); GPU column q
  // owns A's panels part(T, Q, q), GPU row p owns B's panels part(T, P, p).
  index_t kb = 0;
  index_t T = 0;
  // ksplit: C rows in `chunks` chunks of G * piece rows (the last padded);
  // GPU g owns rows [c G piece + g piece, + piece) of every chunk c.
  int chunks = 1;
  index_t piece = 0;

  struct Local {
    DeviceBuffer a, b, c;          // this GPU's blocks
    DeviceBuffer apanel[2], bpanel[2];  // summa_2d: panels received (double-buffered)
    DeviceBuffer w, r;             // ksplit: partial product (padded rows); reduced sums when beta != 0
  };
  std::vector<Local> local;

  // ---- geometry ----
  Range rows_of(int p) const { return part(M, P, p); }
  Range cols_of(int q) const { return part(N, Q, q); }
  Range panel(index_t t) const { return {t * kb, std::min(K, (t + 1) * kb)}; }
  Range a_panels(int q) const { return part(T, Q, q); }  // panel indices
  Range b_panels(int p) const { return part(T, P, p); }
  // K range of a set of panels
  Range k_of(Range panels) const {
    return panels.size() == 0 ? Range{0, 0} : Range{panel(panels.begin).begin, panel(panels.end - 1).end};
  }
  int a_owner(index_t t) const {  // GPU column that owns A panel t
    for (int q = 0; q < Q; ++q)
      if (t < a_panels(q).end) return q;
    return Q - 1;
  }
  int b_owner(index_t t) const {
    for (int p = 0; p < P; ++p)
      if (t < b_panels(p).end) return p;
    return P - 1;
  }
  Range k_slice(int g) const { return part(K, G, g); }  // ksplit
  index_t own_rows() const { return index_t(chunks) * piece; }
};

namespace {

index_t default_panel(index_t K) {
  const index_t eighth = (K / 8 + 15) / 16 * 16;
  return std::min(K, std::clamp<index_t>(eighth, 256, 4096));
}

}  // namespace

Distributed::Distributed(const Plan& plan, index_t m, index_t n, index_t k) : s_(new State) {
  try {
    validate(plan, m, n, k);
    if (plan.variant == Variant::out_of_core)
      throw Error("multigpu: the out-of-core variant keeps its operands on the host (use gemm_host)");
    State& s = *s_;
    s.plan = plan, s.M = m, s.N = n, s.K = k;
    s.P = plan.grid_rows, s.Q = plan.grid_cols, s.G = plan.gpus();
    s.team = &team(plan.devices, s.P, s.Q, true);
    s.local.resize(std::size_t(s.G));
    if (plan.variant == Variant::summa_2d) {
      s.kb = plan.panel > 0 ? std::min(plan.panel, k) : default_panel(k);
      s.T = (k + s.kb - 1) / s.kb;
    } else {
      s.chunks = plan.chunks > 0 ? plan.chunks : (m >= index_t(4) * s.G * 128 ? 4 : 1);
      s.chunks = int(std::min<index_t>(s.chunks, std::max<index_t>(1, m / s.G)));
      s.piece = (m + index_t(s.chunks) * s.G - 1) / (index_t(s.chunks) * s.G);
    }
    s.team->threads().detour([&](const ThreadCoord& t) {
      State::Local& L = s.local[std::size_t(t.tid())];
      if (plan.variant == Variant::summa_2d) {
        const int p = t[0], q = t[1];
        const index_t mp = s.rows_of(p).size(), nq = s.cols_of(q).size();
        L.a = DeviceBuffer(std::size_t(mp * s.k_of(s.a_panels(q)).size()));
        L.b = DeviceBuffer(std::size_t(s.k_of(s.b_panels(p)).size() * nq));
        L.c = DeviceBuffer(std::size_t(mp * nq));
        for (int slot = 0; slot < 2; ++slot) {
          if (s.Q > 1) L.apanel[slot] = DeviceBuffer(std::size_t(mp * s.kb));
          if (s.P > 1) L.bpanel[slot] = DeviceBuffer(std::size_t(s.kb * nq));
        }
      } else {
        const index_t kg = s.k_slice(t.tid()).size();
        L.a = DeviceBuffer(std::size_t(s.M * kg));
        L.b = DeviceBuffer(std::size_t(kg * s.N));
        L.c = DeviceBuffer(std::size_t(s.own_rows() * s.N));
        L.w = DeviceBuffer(std::size_t(index_t(s.chunks) * s.G * s.piece * s.N));
        // The padding rows of the last chunk are never written by a GEMM:
        // zero once, so the reduce-scatter only ever adds zeros there.
        PARRAY_CUDA_CHECK(cudaMemset(L.w.get(), 0, L.w.bytes()));
        PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
      }
    });
  } catch (...) {
    delete s_;
    throw;
  }
}

Distributed::~Distributed() { delete s_; }

void Distributed::scatter(MatrixView<const float> a, MatrixView<const float> b, const MatrixView<const float>* c0) {
  State& s = *s_;
  if (a.rows() != s.M || a.cols() != s.K || b.rows() != s.K || b.cols() != s.N)
    throw Error("multigpu: scatter: operands do not match the " + std::to_string(s.M) + "x" + std::to_string(s.N) +
                "x" + std::to_string(s.K) + " product");
  if (c0 && (c0->rows() != s.M || c0->cols() != s.N)) throw Error("multigpu: scatter: C0 is not M x N");
  const Rows A = operand_rows(a, "A"), B = operand_rows(b, "B");
  const Rows C = c0 ? operand_rows(*c0, "C") : Rows{nullptr, 0};
  wait_for_callers_work(a), wait_for_callers_work(b);
  if (c0) wait_for_callers_work(*c0);
  std::lock_guard<std::mutex> lock(s.team->busy);
  s.team->threads().detour([&](const ThreadCoord& t) {
    State::Local& L = s.local[std::size_t(t.tid())];
    cudaStream_t in = *s.team->gpu[std::size_t(t.tid())].in;
    if (s.plan.variant == Variant::summa_2d) {
      const int p = t[0], q = t[1];
      const Range r = s.rows_of(p), cl = s.cols_of(q);
      const index_t mp = r.size(), nq = cl.size();
      // A: each owned panel stored whole (mp x width, row-major), one after
      // the other, so a panel is one contiguous buffer to broadcast.
      const Range ap = s.a_panels(q);
      const index_t ak0 = s.k_of(ap).begin;
      for (index_t x = ap.begin; x < ap.end; ++x) {
        const Range kr = s.panel(x);
        copy_rows(L.a.get() + mp * (kr.begin - ak0), kr.size(), A.p + r.begin * A.ld + kr.begin, A.ld, mp, kr.size(),
                  cudaMemcpyDefault, in);
      }
      const Range bk = s.k_of(s.b_panels(p));
      copy_rows(L.b.get(), nq, B.p + bk.begin * B.ld + cl.begin, B.ld, bk.size(), nq, cudaMemcpyDefault, in);
      if (C.p) copy_rows(L.c.get(), nq, C.p + r.begin * C.ld + cl.begin, C.ld, mp, nq, cudaMemcpyDefault, in);
    } else {
      const Range kg = s.k_slice(t.tid());
      copy_rows(L.a.get(), kg.size(), A.p + kg.begin, A.ld, s.M, kg.size(), cudaMemcpyDefault, in);
      copy_rows(L.b.get(), s.N, B.p + kg.begin * B.ld, B.ld, kg.size(), s.N, cudaMemcpyDefault, in);
      if (C.p)
        for (int c = 0; c < s.chunks; ++c) {
          const index_t r0 = index_t(c) * s.G * s.piece + t.tid() * s.piece;
          const index_t rows = std::clamp<index_t>(s.M - r0, 0, s.piece);
          copy_rows(L.c.get() + index_t(c) * s.piece * s.N, s.N, C.p + r0 * C.ld, C.ld, rows, s.N,
                    cudaMemcpyDefault, in);
        }
    }
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(in));
  });
}

void Distributed::gather(MatrixView<float> c) const {
  const State& s = *s_;
  if (c.rows() != s.M || c.cols() != s.N) throw Error("multigpu: gather: C is not M x N");
  const Rows C = operand_rows(c, "C");
  std::lock_guard<std::mutex> lock(s.team->busy);
  s.team->threads().detour([&](const ThreadCoord& t) {
    const State::Local& L = s.local[std::size_t(t.tid())];
    cudaStream_t out = *s.team->gpu[std::size_t(t.tid())].out;
    if (s.plan.variant == Variant::summa_2d) {
      const Range r = s.rows_of(t[0]), cl = s.cols_of(t[1]);
      copy_rows(C.p + r.begin * C.ld + cl.begin, C.ld, L.c.get(), cl.size(), r.size(), cl.size(),
                cudaMemcpyDefault, out);
    } else {
      for (int ch = 0; ch < s.chunks; ++ch) {
        const index_t r0 = index_t(ch) * s.G * s.piece + t.tid() * s.piece;
        const index_t rows = std::clamp<index_t>(s.M - r0, 0, s.piece);
        copy_rows(C.p + r0 * C.ld, C.ld, L.c.get() + index_t(ch) * s.piece * s.N, s.N, rows, s.N,
                  cudaMemcpyDefault, out);
      }
    }
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(out));
  });
}

void Distributed::poison_c() {
  State& s = *s_;
  std::lock_guard<std::mutex> lock(s.team->busy);
  s.team->threads().detour([&](const ThreadCoord& t) {
    State::Local& L = s.local[std::size_t(t.tid())];
    cudaStream_t cs = *s.team->gpu[std::size_t(t.tid())].compute;
    const index_t rows = s.plan.variant == Variant::summa_2d ? s.rows_of(t[0]).size() : s.own_rows();
    const index_t cols = s.plan.variant == Variant::summa_2d ? s.cols_of(t[1]).size() : s.N;
    fill_nan(cs, L.c.get(), rows, cols, cols);
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(cs));
  });
}

#if PARRAY_HAVE_NCCL
namespace {

// SUMMA on GPU (p, q) = t: for each K panel x, A(p, x) arrives from GPU
// column a_owner(x) along row p, B(x, q) from GPU row b_owner(x) along column
// q, into slot x % 2 on the communication stream, while the GEMM of panel
// x - 1 runs on the compute stream. A slot is refilled only after the GEMM
// that read it (panel x - 2) has finished. Returns the bytes received.
double run_summa_2d(Distributed::State& s, const ThreadCoord& t, float alpha, float beta) {
  Distributed::State::Local& L = s.local[std::size_t(t.tid())];
  const GpuSlot& gpu = s.team->gpu[std::size_t(t.tid())];
  cudaStream_t compute = *gpu.compute, comm = *gpu.in;
  double received = 0;
  const int p = t[0], q = t[1];
  const index_t mp = s.rows_of(p).size(), nq = s.cols_of(q).size();
  const index_t ak0 = s.k_of(s.a_panels(q)).begin, bk0 = s.k_of(s.b_panels(p)).begin;
  Event arrived[2], consumed[2];
  for (index_t x = 0; x < s.T; ++x) {
    const int slot = int(x % 2);
    const Range kr = s.panel(x);
    const index_t w = kr.size();
    const int qa = s.a_owner(x), pb = s.b_owner(x);
    float* ap = q == qa ? L.a.get() + mp * (kr.begin - ak0) : L.apanel[slot].get();
    float* bp = p == pb ? L.b.get() + (kr.begin - bk0) * nq : L.bpanel[slot].get();
    if (x >= 2) consumed[slot].wait_on(comm);
    // Row broadcast, then column broadcast, on one stream in the same
    // order on every GPU: every wait points to an earlier panel or to
    // this panel's row broadcast, so no GPU can wait on a peer that waits
    // on it. Each is its own group: one group over both communicators
    // would leave their order to NCCL. A 1-GPU row or column moves nothing.
    if (s.Q > 1) {
      PARRAY_NCCL_CHECK(ncclGroupStart());
      PARRAY_NCCL_CHECK(ncclBroadcast(ap, ap, size_t(mp * w), ncclFloat, qa, gpu.row, comm));
      PARRAY_NCCL_CHECK(ncclGroupEnd());
      if (q != qa) received += double(mp * w) * sizeof(float);
    }
    if (s.P > 1) {
      PARRAY_NCCL_CHECK(ncclGroupStart());
      PARRAY_NCCL_CHECK(ncclBroadcast(bp, bp, size_t(w * nq), ncclFloat, pb, gpu.col, comm));
      PARRAY_NCCL_CHECK(ncclGroupEnd());
      if (p != pb) received += double(w * nq) * sizeof(float);
    }
    arrived[slot].record(comm);
    arrived[slot].wait_on(compute);
    local_gemm(s.plan.local, compute, mp, nq, w, alpha, ap, w, bp, nq, x == 0 ? beta : 1.f, L.c.get(), nq);
    consumed[slot].record(compute);
  }
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(comm));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(compute));
  return received;
}

// K split on GPU g = t: W = alpha A[:, K_g] B[K_g, :] chunk by chunk of C's
// rows; each chunk's reduce-scatter (sum over the GPUs, piece g to GPU g)
// starts as soon as that chunk's GEMM is done, overlapping the next chunk's
// GEMM. Returns the bytes received.
double run_ksplit(Distributed::State& s, const ThreadCoord& t, float alpha, float beta) {
  Distributed::State::Local& L = s.local[std::size_t(t.tid())];
  const GpuSlot& gpu = s.team->gpu[std::size_t(t.tid())];
  cudaStream_t compute = *gpu.compute, comm = *gpu.in;
  double received = 0;
  const Range kg = s.k_slice(t.tid());
  const index_t rows_per_chunk = index_t(s.G) * s.piece;
  float* dst = beta == 0.f ? L.c.get() : nullptr;
  if (!dst) {
    if (L.r.floats() < std::size_t(s.own_rows() * s.N)) L.r = DeviceBuffer(std::size_t(s.own_rows() * s.N));
    dst = L.r.get();
  }
  std::vector<Event> done(static_cast<std::size_t>(s.chunks));
  for (int c = 0; c < s.chunks; ++c) {
    const index_t r0 = index_t(c) * rows_per_chunk;
    const index_t rows = std::clamp<index_t>(s.M - r0, 0, rows_per_chunk);
    local_gemm(s.plan.local, compute, rows, s.N, kg.size(), alpha, L.a.get() + r0 * kg.size(),
               std::max<index_t>(1, kg.size()), L.b.get(), s.N, 0.f, L.w.get() + r0 * s.N, s.N);
    done[std::size_t(c)].record(compute);
    done[std::size_t(c)].wait_on(comm);
    PARRAY_NCCL_CHECK(ncclReduceScatter(L.w.get() + r0 * s.N, dst + index_t(c) * s.piece * s.N,
                                        size_t(s.piece * s.N), ncclFloat, ncclSum, gpu.world, comm));
    received += double(s.G - 1) * double(s.piece * s.N) * sizeof(float);
  }
  if (beta != 0.f) {  // C = (sum) + beta C on this GPU's rows
    Event reduced;
    reduced.record(comm);
    reduced.wait_on(compute);
    add_scaled(compute, s.own_rows(), s.N, dst, s.N, beta, L.c.get(), s.N);
  }
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(comm));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(compute));
  return received;
}

}  // namespace
#endif

Stats Distributed::run(float alpha, float beta) {
#if PARRAY_HAVE_NCCL
  State& s = *s_;
  std::lock_guard<std::mutex> lock(s.team->busy);
  std::vector<double> received(std::size_t(s.G), 0.0);
  const double t0 = now_ms();
  s.team->threads().detour([&](const ThreadCoord& t) {
    received[std::size_t(t.tid())] =
        s.plan.variant == Variant::summa_2d ? run_summa_2d(s, t, alpha, beta) : run_ksplit(s, t, alpha, beta);
  });
  Stats st;
  st.ms = now_ms() - t0;
  for (double r : received) st.comm_bytes += r;
  for (const State::Local& L : s.local)
    st.device_bytes = std::max(st.device_bytes, L.a.bytes() + L.b.bytes() + L.c.bytes() + L.apanel[0].bytes() +
                                                    L.apanel[1].bytes() + L.bpanel[0].bytes() + L.bpanel[1].bytes() +
                                                    L.w.bytes() + L.r.bytes());
  st.blocks = s.plan.variant == Variant::summa_2d ? s.T : s.chunks;
  st.detail = s.plan.variant == Variant::summa_2d
                  ? "grid " + s.plan.grid() + ", " + std::to_string(s.T) + " panels of " + std::to_string(s.kb)
                  : std::to_string(s.chunks) + " row chunks of " + std::to_string(index_t(s.G) * s.piece);
  return st;
#else
  (void)alpha, (void)beta;
  throw Error("multigpu: variant " + std::string(variant_name(s_->plan.variant)) +
              " needs NCCL, and parray was built without it");
#endif
}

}  // namespace parray::multigpu
