// Host-resident GEMM over 1..G GPUs (multigpu.hpp): the out-of-core variant,
// and gemm_host for the distributed ones (scatter, run, gather).
//
// Out of core, per GPU (one body over the GPU thread array): take C blocks
// (tm x tn) round-robin (GPU g: blocks g, g + G, ...); stream K in chunks of
// tk through a ring of `kSlots` buffer pairs (A[I, Kc]: tm x tk, B[Kc, J]:
// tk x tn) on the copy-in stream while the compute stream runs the local
// GEMM on the previous chunk, accumulating into the C block; the last
// chunk's GEMM runs in row strips so that each strip's copy back to the host
// (copy-out stream) overlaps the next strip. A GPU's first block ramps its
// chunks up from a narrow first one (ooc_chunk_widths), and every block's
// last chunk is a whole tk wide. Two C blocks alternate where a GPU takes
// several, so the next block starts while the previous one drains. Device
// memory per GPU: c_buffers tm tn + kSlots tk (tm + tn) floats, chosen to fit
// the budget with the least estimated time (choose_tiling: larger blocks
// move less over PCIe — A is read N / tn times, B M / tm times — but leave
// more to copy back after the last FMA).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "parray/tuning.hpp"
#include "team.hpp"

namespace parray::multigpu {

using namespace detail;

namespace {

constexpr int kSlots = 3;  // K chunks in flight: one being copied, one computed, one spare
// A GPU's first C block starts with a K chunk this wide and ramps up
// (ooc_chunk_widths): only the first upload waits with nothing to overlap.
constexpr index_t kFirstChunk = 512;
constexpr int kMaxStrips = 16;  // row strips of the last chunk (C copied back strip by strip)

// The model's rates per GPU, measured on H200s (docs/perf-notes.md): the
// local GEMM, HBM for the C block's re-reads, and pinned host memory to and
// from the GPU as the row blocks this GEMM copies (bench/micro/pcie_rate.cu
// measures it). The model plans with multigpu.pcie_gbs (default 40; lower on
// a PCIe 4 host).
constexpr double kFlopRate = 45e12, kHbm = 3e12;

// What the model needs of the local GEMM: its rate, and the device memory it
// takes beside the chunk buffers, in chunk pairs (tk (tm + tn) floats): step
// 13 splits A's and B's chunk into three parts each. Its rate: 100 TFLOP/s
// of FP32 work, a round figure above its measured rate; with it the model
// chose 2 x 2 blocks of 16384^2 for 32768^3 on 2 GPUs (docs/perf-notes.md).
struct LocalModel {
  double flop_rate = kFlopRate;
  int split_pairs = 0;
};
LocalModel local_model(LocalGemm l) {
  if (l == LocalGemm::tf32x3) return {100e12, 3};
  return {};
}
double pcie_rate() { return multigpu_tuning().pcie_gbs * 1e9; }

using Tiling = OocTiling;

std::size_t tiling_bytes(index_t tm, index_t tn, index_t tk, int c_buffers, const LocalModel& lm) {
  return sizeof(float) * std::size_t(c_buffers * tm * tn + (kSlots + lm.split_pairs) * tk * (tm + tn));
}

// Rows per strip of the last chunk: up to kMaxStrips strips, whole 128-row tiles.
index_t strip_rows_for(index_t tm) {
  return std::max<index_t>(128, ((tm + kMaxStrips - 1) / kMaxStrips + 127) / 128 * 128);
}

// How fast the first block's chunks may grow: the next chunk's upload must
// fit behind this chunk's GEMM, so at most the ratio of a k-column's GEMM
// time to its upload time (with a margin), and at most doubling.
double ramp_growth(index_t tm, index_t tn, const LocalModel& lm) {
  const double gemm_per_k = 2.0 * double(tm) * double(tn) / lm.flop_rate;
  const double upload_per_k = 4.0 * double(tm + tn) / pcie_rate();
  return std::clamp(0.9 * gemm_per_k / upload_per_k, 1.25, 2.0);
}

// Rows of the last chunk's first strip: all but the last strips, enough of
// them that their GEMMs hide the first strip's copy back (with a quarter to
// spare). A row's copy takes 4 tn / pcie, its GEMM 2 tn tk / flop: q = 2 flop
// / (tk pcie) of a row's GEMM; rows r after the lead hide it when r >= q lead.
// One GEMM instead of a dozen strips: each strip's GEMM is smaller and ends
// in its own partial wave.
index_t lead_rows_for(index_t tm, index_t tk, index_t strip_rows, const LocalModel& lm) {
  const double q = 2.0 * lm.flop_rate / (double(tk) * pcie_rate());
  const double after = std::min(1.0, 1.25 * q / (1.0 + q));  // fraction of rows after the lead
  const index_t strips_after = std::max<index_t>(1, index_t(std::ceil(after * double(tm) / double(strip_rows))));
  return std::max<index_t>(std::min(strip_rows, tm), tm - strips_after * strip_rows);
}

Tiling make_tiling(index_t tm, index_t tn, index_t tk, index_t rb, index_t cb, int c_buffers, const LocalModel& lm) {
  Tiling t;
  t.tm = tm, t.tn = tn, t.tk = tk, t.rb = rb, t.cb = cb;
  t.first_chunk = std::min(tk, kFirstChunk);
  t.strip_rows = strip_rows_for(tm);
  t.lead_rows = lead_rows_for(tm, tk, t.strip_rows, lm);
  t.growth = ramp_growth(tm, tn, lm);
  t.c_buffers = c_buffers;
  t.device_bytes = tiling_bytes(tm, tn, tk, c_buffers, lm);
  return t;
}

// The C blocking and K chunk for a budget: the least estimated time of the
// busiest GPU. Per block: max(compute, PCIe in) — the compute including the
// C block read and written on the device by every K chunk's GEMM (beta = 1
// after the first), and PCIe counted as hidden only below 70 % of the compute
// (the rate is shared and varies) — plus, once per GPU, what no
// copy overlaps: the first chunk's upload (chunks ramp up from kFirstChunk)
// and the part of the last C block's copy back that the strips of its last
// chunk do not hide. A simpler model, max(compute, copy) + a tenth of the
// copy, takes the largest blocks (32768^3 on 2 GPUs: 1 x 2 blocks of 32768 x
// 16384): their 2 GiB copy back at the end, hidden only behind one
// 1024-wide chunk, and a C block re-read 32 times cost more than the large
// blocks save (docs/perf-notes.md). A GPU with one block holds one C buffer, which
// leaves room for wider chunks: the last one, tk wide, hides more of the
// copy back.
Tiling choose_tiling(index_t M, index_t N, index_t K, int G, std::size_t budget, bool beta_nonzero,
                     const LocalModel& lm) {
  Tiling best;
  double best_t = std::numeric_limits<double>::infinity();
  const double hidden_below = 0.7;
  for (index_t tk : {index_t(8192), index_t(4096), index_t(2048), index_t(1024), index_t(512), index_t(256),
                     index_t(128), index_t(64), index_t(32), index_t(16)}) {
    tk = std::min(tk, K);
    for (index_t rb = 1; rb <= std::min<index_t>(M, 4096); ++rb) {
      const index_t tm = (M + rb - 1) / rb;
      if ((M + tm - 1) / tm != rb) continue;  // rb blocks of tm rows would leave one empty
      if (tiling_bytes(tm, 1, tk, 1, lm) > budget) continue;
      // Fewest column blocks that might fit (one C buffer: the least memory).
      index_t lo = 1, hi = N;
      while (lo < hi) {
        const index_t mid = (lo + hi) / 2;
        if (tiling_bytes(tm, (N + mid - 1) / mid, tk, 1, lm) <= budget) hi = mid;
        else lo = mid + 1;
      }
      for (index_t cb = lo; cb <= std::min<index_t>(N, lo + 4 * G); ++cb) {
        const index_t tn = (N + cb - 1) / cb;
        if ((N + tn - 1) / tn != cb) continue;
        const double rounds = std::ceil(double(rb * cb) / G);  // blocks on the busiest GPU
        const int c_buffers = rounds > 1 ? 2 : 1;
        if (tiling_bytes(tm, tn, tk, c_buffers, lm) > budget) continue;
        const double area = double(tm) * double(tn), chunks = std::ceil(double(K) / double(tk));
        // The local GEMM runs whole 128 x 128 (or 128 x 256) tiles.
        const double tiled = double((tm + 127) / 128 * 128) * double((tn + 127) / 128 * 128);
        const double compute = 2.0 * tiled * double(K) / lm.flop_rate + chunks * 8.0 * area / kHbm;
        const double in = 4.0 * (double(tm + tn) * double(K) + (beta_nonzero ? area : 0.0)) / pcie_rate();
        const double launches = chunks * 30e-6;  // 2 copies and a GEMM per chunk
        const double head = 4.0 * double(tm + tn) * double(std::min(tk, kFirstChunk)) / pcie_rate();
        const double strips = std::ceil(double(tm) / double(strip_rows_for(tm)));
        const double out = 4.0 * area / pcie_rate(), last_chunk = 2.0 * area * double(tk) / lm.flop_rate;
        const double tail = std::max(out / strips, out - last_chunk * (strips - 1) / strips);
        const double t = rounds * (std::max(compute, in / hidden_below) + launches) + head + tail;
        if (t < best_t * (1 - 1e-9)) {
          best_t = t;
          best = make_tiling(tm, tn, tk, rb, cb, c_buffers, lm);
        }
      }
    }
  }
  if (best.tm == 0)
    throw Error("multigpu ooc: a device budget of " + std::to_string(budget) + " bytes cannot hold even 1 x 1 blocks");
  return best;
}

Tiling forced_tiling(const Plan& plan, index_t M, index_t N, index_t K, int G, std::size_t budget) {
  const index_t tm = std::min(plan.tile_m > 0 ? plan.tile_m : M, M);
  const index_t tn = std::min(plan.tile_n > 0 ? plan.tile_n : N, N);
  const index_t tk = std::min(plan.tile_k > 0 ? plan.tile_k : std::min<index_t>(K, 4096), K);
  const index_t rb = (M + tm - 1) / tm, cb = (N + tn - 1) / tn;
  const Tiling t = make_tiling(tm, tn, tk, rb, cb, rb * cb > G ? 2 : 1, local_model(plan.local));
  if (t.device_bytes > budget)
    throw Error("multigpu ooc: tiles " + std::to_string(t.tm) + "x" + std::to_string(t.tn) + "x" +
                std::to_string(t.tk) + " need " + std::to_string(t.device_bytes) +
                " bytes per GPU, over the budget of " + std::to_string(budget));
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

// Buffers of one GPU, kept between calls (grown, never shrunk beyond what
// the tiling needs).
struct OocBuffers {
  DeviceBuffer c[2], a[kSlots], b[kSlots];
  // Only what the current tiling needs is held; larger leftovers (and a
  // second C buffer a tiling of one block per GPU does not use) are freed so
  // that the budget holds for every call.
  void fit(const Tiling& t) {
    auto size = [](DeviceBuffer& x, index_t need) {
      if (x.floats() > std::size_t(need)) x = DeviceBuffer();
      if (x.floats() < std::size_t(need)) x = DeviceBuffer(std::size_t(need));
    };
    for (int i = 0; i < 2; ++i) size(c[i], i < t.c_buffers ? t.tm * t.tn : 0);
    for (int s = 0; s < kSlots; ++s) size(a[s], t.tm * t.tk), size(b[s], t.tk * t.tn);
  }
  std::size_t bytes() const {
    std::size_t n = c[0].bytes() + c[1].bytes();
    for (int s = 0; s < kSlots; ++s) n += a[s].bytes() + b[s].bytes();
    return n;
  }
};

// Per GPU with multigpu.trace=1: timing events around every local
// GEMM, read after the GPU has finished.
class GemmTrace {
 public:
  explicit GemmTrace(bool on) : on_(on) {}
  GemmTrace(const GemmTrace&) = delete;
  GemmTrace& operator=(const GemmTrace&) = delete;
  ~GemmTrace() {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
  }
  void mark(cudaStream_t s) {
    if (!on_) return;
    cudaEvent_t e;
    PARRAY_CUDA_CHECK(cudaEventCreate(&e));
    PARRAY_CUDA_CHECK(cudaEventRecord(e, s));
    events_.push_back(e);
  }
  // Events: start, then (GEMM begin, GEMM end) pairs, then the last copy back.
  std::string summary() const {
    if (!on_ || events_.size() < 4) return {};
    auto ms = [&](std::size_t i, std::size_t j) {
      float x = 0;
      PARRAY_CUDA_CHECK(cudaEventElapsedTime(&x, events_[i], events_[j]));
      return double(x);
    };
    const std::size_t last = events_.size() - 1, gemms = (events_.size() - 2) / 2;
    double busy = 0;
    for (std::size_t g = 0; g < gemms; ++g) busy += ms(1 + 2 * g, 2 + 2 * g);
    const double head = ms(0, 1), span = ms(1, last - 1), tail = ms(last - 1, last);
    char buf[160];
    std::snprintf(buf, sizeof buf, "head %.1f ms, %zu GEMMs %.1f ms busy + %.1f ms between, tail %.1f ms", head,
                  gemms, busy, span - busy, tail);
    return buf;
  }

 private:
  bool on_;
  std::vector<cudaEvent_t> events_;
};

// One out-of-core product: its operands on the host, its tiling and the K
// chunk widths of a GPU's first block (ramped) and of its later ones.
struct OocJob {
  const Plan& plan;
  const Tiling& tl;
  float alpha, beta;
  Rows A, B, C;
  index_t M, N, K;
  std::vector<index_t> first_widths, later_widths;
};

// What one GPU does: its C blocks in turn, each streamed through in K
// chunks, all enqueued on its three streams (copies in, GEMMs, copies out),
// ordered by events.
class OocGpu {
 public:
  OocGpu(const OocJob& job, OocBuffers& buf, const GpuSlot& gpu, bool tracing)
      : job_(job), buf_(buf), in_(*gpu.in), compute_(*gpu.compute), out_(*gpu.out), trace_(tracing) {}

  // Blocks tid, tid + G, ... of the rb x cb C blocks; returns when this GPU is done.
  void run(int tid, int G) {
    trace_.mark(in_);
    // Round-robin, not from a shared counter: this loop only enqueues (the
    // copies and GEMMs are asynchronous), so a counter measured how fast
    // host threads enqueue, not how fast GPUs finish — one thread took two
    // of 4 blocks before another took its first, and that GPU ran twice as
    // long (docs/perf-notes.md).
    for (index_t j = 0, blk = tid; blk < job_.tl.rb * job_.tl.cb; ++j, blk = j * G + tid) block(j, blk);
    trace_.mark(out_);
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(in_));
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(compute_));
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(out_));
  }

  double h2d = 0, d2h = 0;  // bytes copied to and from the host
  std::string trace_summary() const { return trace_.summary(); }

 private:
  // This GPU's j-th block, C block number blk.
  void block(index_t j, index_t blk) {
    const Tiling& tl = job_.tl;
    const index_t bi = blk / tl.cb, bj = blk % tl.cb;
    const index_t i0 = bi * tl.tm, j0 = bj * tl.tn;
    const index_t mi = std::min(tl.tm, job_.M - i0), nj = std::min(tl.tn, job_.N - j0);
    const int cs = int(j % tl.c_buffers);
    float* cbuf = buf_.c[cs].get();
    if (j >= tl.c_buffers) c_free_[cs].wait_on(compute_);  // C block j - c_buffers has left this buffer
    if (job_.beta != 0.f) {
      if (j >= tl.c_buffers) c_free_[cs].wait_on(in_);
      copy_rows(cbuf, nj, job_.C.p + i0 * job_.C.ld + j0, job_.C.ld, mi, nj, cudaMemcpyHostToDevice, in_);
      h2d += 4.0 * double(mi * nj);
      c_loaded_.record(in_);
      c_loaded_.wait_on(compute_);
    }
    index_t k0 = 0;
    for (const index_t kc : j == 0 ? job_.first_widths : job_.later_widths) {
      chunk(i0, j0, mi, nj, k0, kc, cbuf);
      k0 += kc;
    }
    c_free_[cs].record(out_);
  }

  // K chunk k0 .. k0 + kc of the block at (i0, j0): A's and B's chunks into
  // the next slot, then the GEMM into the C block; the last chunk also
  // sends the block back.
  void chunk(index_t i0, index_t j0, index_t mi, index_t nj, index_t k0, index_t kc, float* cbuf) {
    const int slot = int(chunk_count_ % kSlots);
    if (chunk_count_ >= kSlots) used_[slot].wait_on(in_);  // the GEMM that read this slot is done
    const Rows &A = job_.A, &B = job_.B;
    copy_rows(buf_.a[slot].get(), kc, A.p + i0 * A.ld + k0, A.ld, mi, kc, cudaMemcpyHostToDevice, in_);
    copy_rows(buf_.b[slot].get(), nj, B.p + k0 * B.ld + j0, B.ld, kc, nj, cudaMemcpyHostToDevice, in_);
    h2d += 4.0 * double(kc * (mi + nj));
    loaded_[slot].record(in_);
    loaded_[slot].wait_on(compute_);
    const float b_eff = k0 == 0 ? job_.beta : 1.f;
    if (k0 + kc < job_.K) {
      trace_.mark(compute_);
      local_gemm(job_.plan.local, compute_, mi, nj, kc, job_.alpha, buf_.a[slot].get(), kc, buf_.b[slot].get(), nj,
                 b_eff, cbuf, nj);
      trace_.mark(compute_);
    } else {
      last_chunk(i0, j0, mi, nj, kc, slot, b_eff, cbuf);
    }
    used_[slot].record(compute_);
    ++chunk_count_;
  }

  // The last chunk strip by strip, each strip copied back as soon as it is
  // done. Step 13 splits B's whole chunk on every call: there the last chunk
  // is one GEMM (and only a GPU's last block's copy back waits).
  void last_chunk(index_t i0, index_t j0, index_t mi, index_t nj, index_t kc, int slot, float b_eff, float* cbuf) {
    const Tiling& tl = job_.tl;
    const Rows& C = job_.C;
    const bool by_strips = job_.plan.local != LocalGemm::tf32x3;
    for (index_t r0 = 0, rows = 0; r0 < mi; r0 += rows) {
      rows = by_strips ? std::min(r0 == 0 ? tl.lead_rows : tl.strip_rows, mi - r0) : mi;
      trace_.mark(compute_);
      local_gemm(job_.plan.local, compute_, rows, nj, kc, job_.alpha, buf_.a[slot].get() + r0 * kc, kc,
                 buf_.b[slot].get(), nj, b_eff, cbuf + r0 * nj, nj);
      trace_.mark(compute_);
      strip_done_.record(compute_);
      strip_done_.wait_on(out_);
      copy_rows(C.p + (i0 + r0) * C.ld + j0, C.ld, cbuf + r0 * nj, nj, rows, nj, cudaMemcpyDeviceToHost, out_);
    }
    d2h += 4.0 * double(mi * nj);
  }

  const OocJob& job_;
  OocBuffers& buf_;
  cudaStream_t in_, compute_, out_;
  Event loaded_[kSlots], used_[kSlots], c_loaded_, c_free_[2], strip_done_;
  GemmTrace trace_;
  index_t chunk_count_ = 0;  // chunks streamed by this GPU: slot = count % kSlots
};

// The buffers of each GPU of the plan, kept from call to call.
std::vector<OocBuffers*> ooc_buffers(const Plan& plan) {
  static std::mutex buffers_mu;
  static auto* buffers = new std::map<int, std::unique_ptr<OocBuffers>>;  // by device; never destroyed (see team)
  std::vector<OocBuffers*> mine(static_cast<std::size_t>(plan.gpus()));
  std::lock_guard<std::mutex> lock(buffers_mu);
  for (int g = 0; g < plan.gpus(); ++g) {
    auto& b = (*buffers)[plan.devices[std::size_t(g)]];
    if (!b) b = std::make_unique<OocBuffers>();
    mine[std::size_t(g)] = b.get();
  }
  return mine;
}

std::string ooc_detail(const OocJob& job, std::size_t budget) {
  const Tiling& tl = job.tl;
  return "C blocks " + std::to_string(tl.tm) + "x" + std::to_string(tl.tn) + " (" + std::to_string(tl.rb) + "x" +
         std::to_string(tl.cb) + "), K chunks of " + std::to_string(tl.tk) + " (a GPU's first block: " +
         std::to_string(job.first_widths.size()) + " chunks from " + std::to_string(job.first_widths.front()) + "), " +
         "last chunk in a strip of " + std::to_string(tl.lead_rows) + " rows and strips of " +
         std::to_string(tl.strip_rows) + ", " + std::to_string(tl.c_buffers) + " C buffer(s), budget " +
         std::to_string(budget >> 20) + " MiB, local GEMM " + local_gemm_name(job.plan.local);
}

Stats out_of_core(const Plan& plan, float alpha, Rows A, Rows B, float beta, Rows C, index_t M, index_t N, index_t K) {
  const int G = plan.gpus();
  const std::size_t budget = plan.budget_bytes > 0 ? plan.budget_bytes : default_budget(plan.devices);
  const bool forced = plan.tile_m > 0 || plan.tile_n > 0 || plan.tile_k > 0;
  const Tiling tl = forced ? forced_tiling(plan, M, N, K, G, budget)
                           : choose_tiling(M, N, K, G, budget, beta != 0.f, local_model(plan.local));
  Team& tm = team(plan.devices, G, 1, false);
  const std::vector<OocBuffers*> mine = ooc_buffers(plan);
  std::lock_guard<std::mutex> lock(tm.busy);
  const bool tracing = multigpu_tuning().trace;
  const OocJob job{plan, tl, alpha, beta, A, B, C, M, N, K, ooc_chunk_widths(tl, K, true),
                   ooc_chunk_widths(tl, K, false)};
  std::vector<double> h2d(std::size_t(G), 0.0), d2h(std::size_t(G), 0.0);
  std::vector<std::size_t> held(std::size_t(G), 0);
  std::vector<std::string> traces(static_cast<std::size_t>(G));
  const double t0 = now_ms();
  tm.threads().detour([&](const ThreadCoord& t) {
    const std::size_t g = std::size_t(t.tid());
    OocBuffers& buf = *mine[g];
    buf.fit(tl);
    held[g] = buf.bytes();
    OocGpu gpu(job, buf, tm.gpu[g], tracing);
    gpu.run(t.tid(), G);
    h2d[g] = gpu.h2d, d2h[g] = gpu.d2h;
    traces[g] = gpu.trace_summary();
  });
  Stats st;
  st.ms = now_ms() - t0;
  for (int g = 0; g < G; ++g) {
    st.h2d_bytes += h2d[std::size_t(g)], st.d2h_bytes += d2h[std::size_t(g)];
    st.device_bytes = std::max(st.device_bytes, held[std::size_t(g)]);
    if (!traces[std::size_t(g)].empty())
      st.trace += (st.trace.empty() ? "" : " | ") + ("GPU " + std::to_string(g) + ": ") + traces[std::size_t(g)];
  }
  st.blocks = tl.rb * tl.cb;
  st.k_chunks = static_cast<long long>(job.later_widths.size());  // after the first block's ramp
  st.detail = ooc_detail(job, budget);
  return st;
}

}  // namespace

OocTiling plan_out_of_core(index_t m, index_t n, index_t k, int gpus, std::size_t budget_bytes, bool beta_nonzero,
                           LocalGemm local) {
  if (m < 1 || n < 1 || k < 1 || gpus < 1) throw Error("multigpu ooc: sizes and the GPU count must be >= 1");
  return choose_tiling(m, n, k, gpus, budget_bytes, beta_nonzero, local_model(local));
}

std::vector<index_t> ooc_chunk_widths(const OocTiling& t, index_t k, bool ramp) {
  if (k < 1 || t.tk < 1 || t.first_chunk < 1 || !(t.growth >= 1.0))
    throw Error("multigpu ooc: chunk widths need k, tk and the first chunk >= 1 and a growth >= 1");
  const index_t tk = std::min(t.tk, k);
  std::vector<index_t> widths;  // the ramp, first_chunk up to below tk
  if (ramp)
    for (index_t w = std::min(t.first_chunk, tk); w < tk;
         w = std::min(tk, std::max(w + 128, index_t(double(w) * t.growth) / 128 * 128)))
      widths.push_back(w);
  // Where K leaves no room for the whole ramp before one whole chunk, its
  // widest part: the growth into the whole chunks still holds.
  index_t ramped = 0;
  std::size_t from = widths.size();
  while (from > 0 && ramped + widths[from - 1] + tk <= k) ramped += widths[--from];
  widths.erase(widths.begin(), widths.begin() + std::ptrdiff_t(from));
  // What is left below a whole chunk goes where it keeps the widths sorted;
  // in front of the ramp, it is merged into the ramp's first chunk where that
  // would grow too much from it (and stays within tk).
  const index_t rest = k - ramped, left = rest % tk;
  if (left > 0) {
    const auto at = std::upper_bound(widths.begin(), widths.end(), left);
    if (at == widths.begin() && at != widths.end() && double(*at) > t.growth * double(left) && *at + left <= tk)
      *at += left;
    else
      widths.insert(at, left);
  }
  widths.insert(widths.end(), std::size_t(rest / tk), tk);
  return widths;
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
