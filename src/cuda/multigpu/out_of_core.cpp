// Host-resident GEMM over 1..G GPUs (multigpu.hpp): the out-of-core variant,
// and gemm_host for the distributed ones (scatter, run, gather).
//
// Out of core, per GPU (one body over the GPU thread array): take C blocks
// (tm x tn) round-robin (GPU g: blocks g, g + G, ...); stream K in chunks of
// tk through a ring of `kSlots` buffer pairs (A[I, Kc]: tm x tk, B[Kc, J]:
// tk x tn) on the copy-in stream while the compute stream runs the local
// GEMM on the previous chunk, accumulating into the C block; the last
// chunk's GEMM runs in row strips so that each strip's copy back to the host
// (copy-out stream) overlaps the next strip. Two C blocks alternate, so the
// next block starts while the previous one drains. Device memory per GPU:
// 2 tm tn + kSlots tk (tm + tn) floats, chosen to fit the budget with the
// least estimated time (choose_tiling: larger blocks move less over PCIe — A
// is read N / tn times, B M / tm times — but leave more to copy back after
// the last FMA).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include "team.hpp"

namespace parray::multigpu {

using namespace detail;

namespace {

constexpr int kSlots = 3;   // K chunks in flight: one being copied, one computed, one spare
constexpr int kStrips = 8;  // row strips of the last chunk (C copied back strip by strip)
// A GPU's first C block starts with a K chunk of at most this width and
// doubles it up to tk: only the first upload waits with nothing to overlap.
constexpr index_t kFirstChunk = 1024;

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Tiling {
  index_t tm = 0, tn = 0, tk = 0;
  index_t rb = 0, cb = 0;  // C blocks: rb x cb
  std::size_t bytes() const { return sizeof(float) * std::size_t(2 * tm * tn + kSlots * tk * (tm + tn)); }
};

std::size_t tiling_bytes(index_t tm, index_t tn, index_t tk) {
  return sizeof(float) * std::size_t(2 * tm * tn + kSlots * tk * (tm + tn));
}

// The C blocking and K chunk for a budget: the least estimated time of the
// busiest GPU. Per block: max(compute, PCIe in) — the compute including the
// C block read and written on the device by every K chunk's GEMM (beta = 1
// after the first), and PCIe counted as hidden only below 70 % of the compute
// (the rate is shared and varies) — plus, once per GPU, what no
// copy overlaps: the first chunk's upload (chunks ramp up from kFirstChunk)
// and the part of the last C block's copy back that the strips of its last
// chunk do not hide. The third session's model (max(compute, copy) + a tenth
// of the copy) took the largest blocks (32768^3 on 2 GPUs: 1 x 2 blocks of
// 32768 x 16384): their 2 GiB copy back at the end, hidden only behind one
// 1024-wide chunk, and a C block re-read 32 times cost ~7 % (864 ms against
// ~800 of compute). The seventh session's first try of this model assumed
// 24 GB/s and took 2 x 4 blocks of 16384 x 8192 (6 GiB more over PCIe):
// 947 ms, PCIe-bound at ~14 GB/s per GPU with both GPUs copying (2 x H200,
// docs/perf-notes.md "Change 8"), hence the measured rate and the margin.
Tiling choose_tiling(index_t M, index_t N, index_t K, int G, std::size_t budget, bool beta_nonzero) {
  Tiling best;
  double best_t = std::numeric_limits<double>::infinity();
  // Per GPU: the local GEMM on an H200 (step 12 ~46, cuBLAS ~51 TFLOP/s), the
  // host-to-GPU rate measured with two H200s copying at once (~14 GB/s each),
  // HBM for the C block's re-reads.
  const double flop_rate = 45e12, pcie = 14e9, hbm = 3e12, hidden_below = 0.7;
  for (index_t tk : {index_t(8192), index_t(4096), index_t(2048), index_t(1024), index_t(512), index_t(256),
                     index_t(128), index_t(64), index_t(32), index_t(16)}) {
    tk = std::min(tk, K);
    for (index_t rb = 1; rb <= std::min<index_t>(M, 4096); ++rb) {
      const index_t tm = (M + rb - 1) / rb;
      if ((M + tm - 1) / tm != rb) continue;  // rb blocks of tm rows would leave one empty
      if (tiling_bytes(tm, 1, tk) > budget) continue;
      // Fewest column blocks that fit (memory falls as cb grows).
      index_t lo = 1, hi = N;
      while (lo < hi) {
        const index_t mid = (lo + hi) / 2;
        if (tiling_bytes(tm, (N + mid - 1) / mid, tk) <= budget) hi = mid;
        else lo = mid + 1;
      }
      for (index_t cb = lo; cb <= std::min<index_t>(N, lo + 4 * G); ++cb) {
        const index_t tn = (N + cb - 1) / cb;
        if ((N + tn - 1) / tn != cb) continue;
        const double area = double(tm) * double(tn), chunks = std::ceil(double(K) / double(tk));
        const double rounds = std::ceil(double(rb * cb) / G);  // blocks on the busiest GPU
        // The local GEMM runs whole 128 x 128 (or 128 x 256) tiles.
        const double tiled = double((tm + 127) / 128 * 128) * double((tn + 127) / 128 * 128);
        const double compute = 2.0 * tiled * double(K) / flop_rate + chunks * 8.0 * area / hbm;
        const double in = 4.0 * (double(tm + tn) * double(K) + (beta_nonzero ? area : 0.0)) / pcie;
        const double launches = chunks * 30e-6;  // 2 copies and a GEMM per chunk
        const double head = 4.0 * double(tm + tn) * double(std::min(tk, kFirstChunk)) / pcie;
        const double out = 4.0 * area / pcie, last_chunk = 2.0 * area * double(tk) / flop_rate;
        const double tail = std::max(out / kStrips, out - last_chunk * (kStrips - 1) / kStrips);
        const double t = rounds * (std::max(compute, in / hidden_below) + launches) + head + tail;
        if (t < best_t * (1 - 1e-9)) {
          best_t = t;
          best = {tm, tn, tk, rb, cb};
        }
      }
    }
  }
  if (best.tm == 0)
    throw Error("multigpu ooc: a device budget of " + std::to_string(budget) + " bytes cannot hold even 1 x 1 blocks");
  return best;
}

Tiling forced_tiling(const Plan& plan, index_t M, index_t N, index_t K, std::size_t budget) {
  Tiling t;
  t.tm = std::min(plan.tile_m > 0 ? plan.tile_m : M, M);
  t.tn = std::min(plan.tile_n > 0 ? plan.tile_n : N, N);
  t.tk = std::min(plan.tile_k > 0 ? plan.tile_k : std::min<index_t>(K, 4096), K);
  t.rb = (M + t.tm - 1) / t.tm, t.cb = (N + t.tn - 1) / t.tn;
  if (t.bytes() > budget)
    throw Error("multigpu ooc: tiles " + std::to_string(t.tm) + "x" + std::to_string(t.tn) + "x" +
                std::to_string(t.tk) + " need " + std::to_string(t.bytes()) + " bytes per GPU, over the budget of " +
                std::to_string(budget));
  return t;
}

std::size_t default_budget(const std::vector<int>& devices) {
  std::size_t budget = std::size_t(8) << 30;
  int cur = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&cur));
  for (int d : devices) {
    bind_device(d);
    std::size_t free = 0, total = 0;
    PARRAY_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    budget = std::min(budget, free / 4 * 3);
  }
  bind_device(cur);
  return budget;
}

// Buffers of one GPU, kept between calls (grown, never shrunk).
struct OocBuffers {
  DeviceBuffer c[2], a[kSlots], b[kSlots];
  void ensure(const Tiling& t) {
    for (DeviceBuffer& x : c)
      if (x.floats() < std::size_t(t.tm * t.tn)) x = DeviceBuffer(std::size_t(t.tm * t.tn));
    for (int s = 0; s < kSlots; ++s) {
      if (a[s].floats() < std::size_t(t.tm * t.tk)) a[s] = DeviceBuffer(std::size_t(t.tm * t.tk));
      if (b[s].floats() < std::size_t(t.tk * t.tn)) b[s] = DeviceBuffer(std::size_t(t.tk * t.tn));
    }
  }
  // Only what the current tiling needs is held; larger leftovers are freed
  // so that the budget holds for every call.
  void fit(const Tiling& t) {
    auto over = [](const DeviceBuffer& x, index_t need) { return x.floats() > std::size_t(need); };
    for (DeviceBuffer& x : c)
      if (over(x, t.tm * t.tn)) x = DeviceBuffer();
    for (int s = 0; s < kSlots; ++s) {
      if (over(a[s], t.tm * t.tk)) a[s] = DeviceBuffer();
      if (over(b[s], t.tk * t.tn)) b[s] = DeviceBuffer();
    }
    ensure(t);
  }
  std::size_t bytes() const {
    std::size_t n = c[0].bytes() + c[1].bytes();
    for (int s = 0; s < kSlots; ++s) n += a[s].bytes() + b[s].bytes();
    return n;
  }
};

Stats out_of_core(const Plan& plan, float alpha, Rows A, Rows B, float beta, Rows C, index_t M, index_t N, index_t K) {
  const int G = plan.gpus();
  const std::size_t budget = plan.budget_bytes > 0 ? plan.budget_bytes : default_budget(plan.devices);
  const bool forced = plan.tile_m > 0 || plan.tile_n > 0 || plan.tile_k > 0;
  const Tiling tl = forced ? forced_tiling(plan, M, N, K, budget) : choose_tiling(M, N, K, G, budget, beta != 0.f);
  Team& tm = team(plan.devices, G, 1, false);
  static std::mutex buffers_mu;
  static auto* buffers = new std::map<int, std::unique_ptr<OocBuffers>>;  // by device; never destroyed (see team)
  std::vector<OocBuffers*> mine(static_cast<std::size_t>(G));
  {
    std::lock_guard<std::mutex> lock(buffers_mu);
    for (int g = 0; g < G; ++g) {
      auto& b = (*buffers)[plan.devices[std::size_t(g)]];
      if (!b) b = std::make_unique<OocBuffers>();
      mine[std::size_t(g)] = b.get();
    }
  }
  std::lock_guard<std::mutex> lock(tm.busy);
  const index_t blocks = tl.rb * tl.cb;
  std::vector<double> h2d(std::size_t(G), 0.0), d2h(std::size_t(G), 0.0);
  std::vector<std::size_t> held(std::size_t(G), 0);
  const double t0 = now_ms();
  tm.threads().detour([&](const ThreadCoord& t) {
    OocBuffers& buf = *mine[std::size_t(t.tid)];
    buf.fit(tl);
    held[std::size_t(t.tid)] = buf.bytes();
    const GpuSlot& gpu = tm.gpu[std::size_t(t.tid)];
    cudaStream_t in = *gpu.in, compute = *gpu.compute, out = *gpu.out;
    Event loaded[kSlots], used[kSlots], c_loaded, c_free[2], strip_done;
    index_t chunk_count = 0;  // chunks streamed by this GPU: slot = count % kSlots
    for (index_t j = 0;; ++j) {
      // Round-robin, not from a shared counter: this loop only enqueues (the
      // copies and GEMMs are asynchronous), so a counter measured how fast
      // host threads enqueue, not how fast GPUs finish — one thread took two
      // of 4 blocks before another took its first, and that GPU ran twice as
      // long (4 H200s: 766 ms against 404 in the run after; 2 H200s: a first
      // repetition of 1.5 s against 0.79; docs/perf-notes.md "Change 8").
      const index_t blk = j * G + t.tid;
      if (blk >= blocks) break;
      const index_t bi = blk / tl.cb, bj = blk % tl.cb;
      const index_t i0 = bi * tl.tm, j0 = bj * tl.tn;
      const index_t mi = std::min(tl.tm, M - i0), nj = std::min(tl.tn, N - j0);
      const int cs = int(j % 2);
      float* cbuf = buf.c[cs].get();
      if (j >= 2) c_free[cs].wait_on(compute);  // C block j - 2 has left this buffer
      if (beta != 0.f) {
        if (j >= 2) c_free[cs].wait_on(in);
        copy_rows(cbuf, nj, C.p + i0 * C.ld + j0, C.ld, mi, nj, cudaMemcpyHostToDevice, in);
        h2d[std::size_t(t.tid)] += 4.0 * double(mi * nj);
        c_loaded.record(in);
        c_loaded.wait_on(compute);
      }
      index_t width = j == 0 ? std::min(tl.tk, kFirstChunk) : tl.tk;  // the first block's chunks ramp up
      for (index_t k0 = 0, kc = 0; k0 < K; k0 += kc, width = std::min(tl.tk, 2 * width)) {
        kc = std::min(width, K - k0);
        const int slot = int(chunk_count % kSlots);
        if (chunk_count >= kSlots) used[slot].wait_on(in);  // the GEMM that read this slot is done
        copy_rows(buf.a[slot].get(), kc, A.p + i0 * A.ld + k0, A.ld, mi, kc, cudaMemcpyHostToDevice, in);
        copy_rows(buf.b[slot].get(), nj, B.p + k0 * B.ld + j0, B.ld, kc, nj, cudaMemcpyHostToDevice, in);
        h2d[std::size_t(t.tid)] += 4.0 * double(kc * (mi + nj));
        loaded[slot].record(in);
        loaded[slot].wait_on(compute);
        const float b_eff = k0 == 0 ? beta : 1.f;
        if (k0 + kc < K) {
          local_gemm(plan.local, compute, mi, nj, kc, alpha, buf.a[slot].get(), kc, buf.b[slot].get(), nj, b_eff, cbuf,
                     nj);
        } else {  // last chunk: strip by strip, each strip copied back as soon as it is done
          const index_t step = std::max<index_t>(128, ((mi + kStrips - 1) / kStrips + 127) / 128 * 128);
          for (index_t r0 = 0; r0 < mi; r0 += step) {
            const index_t rows = std::min(step, mi - r0);
            local_gemm(plan.local, compute, rows, nj, kc, alpha, buf.a[slot].get() + r0 * kc, kc, buf.b[slot].get(),
                       nj, b_eff, cbuf + r0 * nj, nj);
            strip_done.record(compute);
            strip_done.wait_on(out);
            copy_rows(C.p + (i0 + r0) * C.ld + j0, C.ld, cbuf + r0 * nj, nj, rows, nj, cudaMemcpyDeviceToHost, out);
          }
          d2h[std::size_t(t.tid)] += 4.0 * double(mi * nj);
        }
        used[slot].record(compute);
        ++chunk_count;
      }
      c_free[cs].record(out);
    }
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(in));
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(compute));
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(out));
  });
  Stats st;
  st.ms = now_ms() - t0;
  for (int g = 0; g < G; ++g) {
    st.h2d_bytes += h2d[std::size_t(g)], st.d2h_bytes += d2h[std::size_t(g)];
    st.device_bytes = std::max(st.device_bytes, held[std::size_t(g)]);
  }
  st.blocks = tl.rb * tl.cb, st.k_chunks = (K + tl.tk - 1) / tl.tk;  // after the first block's ramp
  st.detail = "C blocks " + std::to_string(tl.tm) + "x" + std::to_string(tl.tn) + " (" + std::to_string(tl.rb) + "x" +
              std::to_string(tl.cb) + "), K chunks of " + std::to_string(tl.tk) + ", budget " +
              std::to_string(budget >> 20) + " MiB, local GEMM " + local_gemm_name(plan.local);
  return st;
}

}  // namespace

OocTiling plan_out_of_core(index_t m, index_t n, index_t k, int gpus, std::size_t budget_bytes, bool beta_nonzero) {
  if (m < 1 || n < 1 || k < 1 || gpus < 1) throw Error("multigpu ooc: sizes and the GPU count must be >= 1");
  const Tiling t = choose_tiling(m, n, k, gpus, budget_bytes, beta_nonzero);
  return {t.tm, t.tn, t.tk, t.rb, t.cb, t.bytes()};
}

Stats gemm_host(const Plan& plan, float alpha, MatrixView<const float> a, MatrixView<const float> b, float beta,
                MatrixView<float> c) {
  const index_t M = c.rows(), N = c.cols(), K = a.cols();
  if (a.rows() != M || b.rows() != K || b.cols() != N)
    throw Error("multigpu: shapes do not agree: A " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                ", B " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()) + ", C " + std::to_string(M) + "x" +
                std::to_string(N));
  validate(plan, M, N, K);
  const Rows A = host_rows(a, "A"), B = host_rows(b, "B"), C = host_rows(c, "C");
  if (plan.variant == Variant::out_of_core) return out_of_core(plan, alpha, A, B, beta, C, M, N, K);
  // Distributed variants: operands kept on the GPUs for the last shape asked
  // (allocation is not part of every call), scattered, multiplied, gathered.
  static std::mutex mu;
  static std::unique_ptr<Distributed>* last = new std::unique_ptr<Distributed>;
  static std::string last_key;
  std::lock_guard<std::mutex> lock(mu);
  std::string key = std::string(variant_name(plan.variant)) + plan.grid() + ":" + std::to_string(M) + "," +
                    std::to_string(N) + "," + std::to_string(K) + "," + std::to_string(plan.panel) + "," +
                    std::to_string(plan.chunks) + ":";
  for (int d : plan.devices) key += std::to_string(d) + ",";
  if (!*last || key != last_key) {
    last->reset();
    *last = std::make_unique<Distributed>(plan, M, N, K);
    last_key = key;
  }
  const double t0 = now_ms();
  MatrixView<const float> c0{c.data, c.layout, c.memory};
  (*last)->scatter(a, b, beta != 0.f ? &c0 : nullptr);
  Stats st = (*last)->run(alpha, beta);
  (*last)->gather(c);
  st.ms = now_ms() - t0;
  st.h2d_bytes = 4.0 * double(M * K + K * N + (beta != 0.f ? M * N : 0));
  st.d2h_bytes = 4.0 * double(M * N);
  (void)A, (void)B, (void)C;
  return st;
}

}  // namespace parray::multigpu
