// Shared by the launchers of steps 10-12 (src/cuda/launch_*.cu): how each
// operand is loaded (which dimension is contiguous, whether 16-byte copies are
// allowed) and the choice of kernel instantiation from that.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "gemm/12_best.cuh"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/cuda/streamk_plan.hpp"
#include "parray/tuning.hpp"
#include "common/smem_opt_in.hpp"
#include "common/stream_workspace.hpp"

namespace parray::cuda::pipelined {

// How the loaders of steps 10 and 12 take each operand.
struct LoadPlan {
  bool a_k_contig, b_k_contig;  // operand contiguous along k (else along m / n)
  bool veca, vecb, cvec;        // 16-byte copies allowed (layout + alignment)
};

template <class OpA, class OpB, class OpC>
LoadPlan plan(const OpA& a, const OpB& b, const OpC& c, const GemmCall<float>& call) {
  LoadPlan p{};
  // Contiguity from the innermost digit of each axis (nested layouts too).
  auto inner = [](const Axis& ax) { return ax.stride[ax.levels - 1]; };
  const MatrixLayout &la = call.a.layout, &lb = call.b.layout;
  p.a_k_contig = !(inner(la.rows) == 1 && inner(la.cols) != 1);
  p.b_k_contig = inner(lb.rows) == 1 && inner(lb.cols) != 1;
  if constexpr (OpA::strided) p.veca = !p.a_k_contig && a.rs == 1 && a.cs % 4 == 0 && aligned16(a.p);
  if constexpr (OpB::strided) p.vecb = !p.b_k_contig && b.cs == 1 && b.rs % 4 == 0 && aligned16(b.p);
  if constexpr (OpC::strided) p.cvec = c.cs == 1 && c.rs % 4 == 0 && aligned16(c.p);
  return p;
}

// Picks the instantiation for the two loaders; layout operands take one
// (k-contiguous A, n-contiguous B: how the figure-17/18 types store blocks).
template <template <bool, bool> class Launch, class OpA, class OpB, class OpC>
void by_contiguity(const LoadPlan& p, const OpA& a, const OpB& b, const OpC& c) {
  if constexpr (OpA::strided) {
    if (p.a_k_contig && !p.b_k_contig) Launch<true, false>::run(a, b, c, p);
    else if (p.a_k_contig) Launch<true, true>::run(a, b, c, p);
    else if (!p.b_k_contig) Launch<false, false>::run(a, b, c, p);
    else Launch<false, true>::run(a, b, c, p);
  } else {
    Launch<true, false>::run(a, b, c, p);
  }
}

struct Problem {
  int M, N, K;
  float alpha, beta;
};
inline thread_local Problem cur;
// The batch of the current launch (launch_best): `count` products of the
// shape in `cur`, offsets in elements from the operands passed.
struct Batch {
  int count = 1;
  ladder::BatchOffsets off{};
};
inline thread_local Batch cur_batch;
// The stream the current call's launches go to: set from the call by
// set_problem, or by a StreamScope (the multi-level splits' parts,
// src/cuda/multilevel/launch.cu, which launch without a GemmCall).
inline thread_local cudaStream_t cur_stream = cudaStreamPerThread;
struct StreamScope {
  explicit StreamScope(cudaStream_t s) : saved(cur_stream) { cur_stream = s; }
  ~StreamScope() { cur_stream = saved; }
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;
  cudaStream_t saved;
};

inline void set_problem(const GemmCall<float>& call, const char* impl) {
  check_int_sizes(call, impl);
  cur = {int(call.c.rows()), int(call.c.cols()), int(call.a.cols()), call.alpha, call.beta};
  cur_stream = on_stream(call.stream);
}

// ---- step 12 ------------------------------------------------------------------

// 128 x 128 x 16, 8 warps of 64 x 32, 8 x 8 per thread (2 x 2 of 4 x 4),
// 3 stages, <= 128 registers: two blocks per SM. The default; at its best
// with A along m (column-major A; docs/perf-notes.md).
using BestDefaultShape = ladder::BestShape<128, 128, 16, 64, 32, 2, 2, 4, 4, 3, 2>;
// 128 x 256 x 16, 8 warps of 64 x 64, 8 x 16 per thread, one block per SM:
// faster than the default with A along k and B along n (row-major A and B;
// docs/perf-notes.md). The k-loop body holds 8 of the 16 k-steps (KU = 8):
// fully unrolled, the body was ~34 KB of code and stalled on the instruction
// cache ("no instruction" in ncu); 4 steps per body were slower. Used when
// its tiles still fill the SMs (half as many tiles as the default's).
using BestWideShape = ladder::BestShape<128, 256, 16, 64, 64, 1, 4, 8, 4, 3, 1, 8>;

// dst (rows x cols, row-major, row stride ldd) = src (rows x cols,
// column-major: src(r, c) at src[r + c lds]), coalesced both ways through
// shared-memory tiles (gemm/12_best.cu). Nothing for an empty matrix.
void transpose_on_stream(cudaStream_t stream, int rows, int cols, const float* src, index_t lds, float* dst,
                         index_t ldd);

// Whether an M x N product with row-major A and B takes BestWideShape
// (`copies` such products running at once: their tiles fill the SMs together).
inline bool best_wide_fits(long long m, long long n, int copies = 1) {
  return static_cast<long long>(ceil_div(m, BestWideShape::BM)) * ceil_div(n, BestWideShape::BN) * copies >=
         sm_count();
}

// K slices for a grid of `tiles` blocks of `kts` k-tiles on `sms` SMs
// holding `per_sm` blocks each: the count with the least estimated time,
// (waves of blocks) x (k-tiles per block) x (time of one k-tile step of a
// full wave), plus the summing pass, which reads every slice of the M x N
// workspace once and writes C (and is one more launch). Each slice keeps
// >= 4 k-tiles; 1 when the tiles fill the SMs. The constants are Hopper
// measurements (docs/perf-notes.md): the time of a full-wave k-tile step of
// the 128 x 128 x 16 tile at two blocks per SM (scaled by the tile's work
// per SM for other shapes), the summing pass's rate and its launch. Counting
// the pass's bytes matters: an estimate that left the pass at a constant
// took far too many slices for 1037 x 1055 x 1031.
inline int choose_splits(long long tiles, int kts, int sms, int per_sm, long long block_work, long long m,
                         long long n) {
  const long long slots = static_cast<long long>(sms) * per_sm;
  if (tiles >= slots) return 1;
  const double step_us = 3.5 * double(per_sm) * double(block_work) / (2.0 * 128 * 128 * 16);
  auto cost = [&](int s) {
    const double waves = double((tiles * s + slots - 1) / slots), steps = double((kts + s - 1) / s);
    const double sum_us = s > 1 ? double(s + 1) * double(m) * double(n) * 4.0 / 2.5e6 + 3.0 : 0.0;  // bytes / (B/us)
    return waves * steps * step_us + sum_us;
  };
  int best = 1;
  double best_cost = cost(1);
  for (int s = 2; s <= 16 && (kts + s - 1) / s >= 4; ++s)
    if (cost(s) < best_cost) best = s, best_cost = cost(s);
  return best;
}

// The workspaces of one host thread on one device: buffers grown when needed
// and reused (a cudaMallocAsync per call measured as a large part of a small
// GEMM's time), one per kind, and the order of their uses across the streams
// the thread's calls name (common/stream_workspace.hpp). Per host thread and device,
// so threads driving different GPUs (or the same GPU) never share one; freed
// when the thread ends.
enum class Workspace { splitk, streamk_counters, packed_b, count };
struct DeviceWorkspaces {
  StreamOrder order;
  StreamBuffer buffers[int(Workspace::count)];
};
inline DeviceWorkspaces& workspaces_here() {
  thread_local std::vector<std::unique_ptr<DeviceWorkspaces>> per_device;
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  if (per_device.size() <= size_t(device)) per_device.resize(size_t(device) + 1);
  if (!per_device[size_t(device)]) per_device[size_t(device)] = std::make_unique<DeviceWorkspaces>();
  return *per_device[size_t(device)];
}

// n elements of workspace `w` for launches about to be queued on cur_stream,
// after the earlier uses on other streams; zeroed on cur_stream when new and
// `zeroed`. The launches that use it end with workspace_done().
template <class T>
T* device_buffer(Workspace w, size_t n, bool zeroed) {
  DeviceWorkspaces& ws = workspaces_here();
  return static_cast<T*>(ws.buffers[int(w)].get(n * sizeof(T), cur_stream, ws.order, zeroed));
}
// After the launches that use this thread's workspaces are queued.
inline void workspace_done() { workspaces_here().order.leave(cur_stream); }

// The split-K workspace (and the stream-K tail's slots).
inline float* splitk_workspace(size_t floats) { return device_buffer<float>(Workspace::splitk, floats, false); }

// The stream-K tail's per-tile counters: zeroed when allocated, and every
// launch leaves them zero (the last piece of a tile resets its own).
inline unsigned* streamk_counters(size_t n) { return device_buffer<unsigned>(Workspace::streamk_counters, n, true); }

// The stream-K tail's plan (parray/cuda/streamk_plan.hpp), with
// gpu.best_streamk=0 turning it off and =n > 0 planning for n block slots
// whatever the estimate (tests: small grids get a tail).
inline StreamKPlan plan_streamk(long long tiles, int kts, long long slots, long long tile_floats, bool reads_c) {
  const int forced = gpu_tuning().best_streamk;
  if (forced == 0) return {};
  return forced > 0 ? plan_streamk_tail(tiles, kts, forced, tile_floats, reads_c, true)
                    : plan_streamk_tail(tiles, kts, slots, tile_floats, reads_c, false);
}

// Blocks of kernel k (NT threads, smem bytes) that fit on one SM.
template <class Kernel>
int blocks_per_sm(Kernel k, int nt, int smem) {
  int n = 0;
  PARRAY_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, k, nt, smem));
  return std::max(n, 1);
}

// The pieces of plan p in device memory for best_sgemm_piece, as (tile in
// the tile order, k0, k1, slot index): uploaded once per plan and kept (per
// host thread and device; a few KiB each), so that a call's launches stay
// asynchronous. Each table records an event after every launch that reads it
// (piece_table_used); past 64 plans the cache is emptied once those events
// have passed — no device-wide synchronisation, no wait on other threads.
struct PieceTable {
  int4* pieces = nullptr;
  int count = 0;
  cudaEvent_t last_read = nullptr;
};
// After queueing a launch on s that reads t.
inline void piece_table_used(const PieceTable& t, cudaStream_t s) {
  PARRAY_CUDA_CHECK(cudaEventRecord(t.last_read, s));
}
inline PieceTable streamk_pieces_on_device(const StreamKPlan& p, int kts) {
  using Key = std::array<long long, 6>;
  struct Cache {
    std::map<std::pair<int, Key>, PieceTable> tables;
    ~Cache() {
      for (auto& t : tables) {  // errors ignored at exit, as the workspaces'
        (void)cudaFree(t.second.pieces);
        (void)cudaEventDestroy(t.second.last_read);
      }
    }
  };
  thread_local Cache cache;
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  const std::pair<int, Key> key{device, {p.dp_tiles, p.tiles, kts, p.iters_per_block, p.blocks, p.segments_per_tile}};
  if (const auto it = cache.tables.find(key); it != cache.tables.end()) return it->second;
  if (cache.tables.size() >= 64) {
    for (auto& t : cache.tables)
      if (t.first.first == device) {
        PARRAY_CUDA_CHECK(cudaEventSynchronize(t.second.last_read));  // no kernel still reads it
        PARRAY_CUDA_CHECK(cudaFree(t.second.pieces));
        PARRAY_CUDA_CHECK(cudaEventDestroy(t.second.last_read));
      }
    std::erase_if(cache.tables, [device](const auto& t) { return t.first.first == device; });
  }
  std::vector<int4> table;
  for (const StreamKPiece& x : streamk_pieces(p, kts))
    table.push_back(make_int4(int(p.dp_tiles) + x.tile, x.k0, x.k1, x.tile * p.segments_per_tile + x.slot));
  PieceTable t{nullptr, int(table.size()), nullptr};
  PARRAY_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&t.pieces), table.size() * sizeof(int4)));
  // Landed before any stream reads it: a launch on any stream may follow.
  upload_now(t.pieces, table.data(), table.size() * sizeof(int4));
  PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&t.last_read, cudaEventDisableTiming));
  cache.tables.emplace(key, t);
  return t;
}

// The stream-K tail of the current problem (`cur`) after its full waves:
// best_sgemm_piece over the plan's pieces (the last piece of a tile writes C).
template <class S, bool AK, bool BKc, class OpA, class OpB, class OpC>
void launch_streamk_tail(const OpA& a, const OpB& b, const OpC& c, int group, const StreamKPlan& p) {
  const int kts = int(ceil_div(cur.K, S::BK));
  const PieceTable pieces = streamk_pieces_on_device(p, kts);
  float* ws = splitk_workspace(size_t(p.tiles) * size_t(p.segments_per_tile) * S::BM * S::BN);
  const ladder::StreamKFixup<OpC> f{p, kts, streamk_counters(size_t(p.tiles)), cur.alpha, cur.beta, c};
  auto kp = ladder::best_sgemm_piece<S, AK, BKc, OpA, OpB, OpC>;
  allow_smem_on_current_device(kp, S::smem_bytes);
  kp<<<unsigned(pieces.count), S::NT, S::smem_bytes, cur_stream>>>(cur.M, cur.N, cur.K, 1.f, a, b, 0.f,
                                                                    StridedOperand<float>{ws, S::BN, 1}, group,
                                                                    pieces.pieces, index_t(S::BM) * S::BN, f);
  PARRAY_CUDA_CHECK_LAUNCH();
  piece_table_used(pieces, cur_stream);
  workspace_done();
}

// Launches step 12 with tile shape S on the current problem (`cur`), with
// split-K when the tiles are too few.
template <class S, bool AK, bool BKc, class OpA, class OpB, class OpC>
void launch_best(const OpA& a, const OpB& b, const OpC& c) {
  auto k = ladder::best_sgemm<S, AK, BKc, OpA, OpB, OpC>;
  allow_smem_on_current_device(k, S::smem_bytes);
  static const int per_sm = blocks_per_sm(k, S::NT, S::smem_bytes);
  const int group = gpu_tuning().best_group;
  const long long tiles = static_cast<long long>(ceil_div(cur.M, S::BM)) * ceil_div(cur.N, S::BN);
  if (tiles > 0x7fffffff) throw Error("cuda-12-best: too many tiles for one grid");
  const int kts = int(ceil_div(cur.K, S::BK));
  int splits = gpu_tuning().best_splits;
  if (splits <= 0)
    splits = choose_splits(tiles, kts, sm_count(), per_sm, static_cast<long long>(S::BM) * S::BN * S::BK, cur.M,
                           cur.N);
  if (cur_batch.count > 1) {
    if (!(AK && !BKc)) throw Error("cuda-12-best: a batch of products needs A along k and B along n");
    splits = 1;  // a batch is there because its products fill the GPU together
  }
  const int per = std::max(1, (kts + splits - 1) / splits);
  splits = std::max(1, (kts + per - 1) / per);  // K = 0: one grid, C = beta C
  if (splits == 1) {
    const StreamKPlan sk = cur_batch.count > 1 ? StreamKPlan{}
                                               : plan_streamk(tiles, kts, static_cast<long long>(sm_count()) * per_sm,
                                                              static_cast<long long>(S::BM) * S::BN, cur.beta != 0.f);
    const long long grid = sk.tiles > 0 ? sk.dp_tiles : tiles;
    if (grid > 0) {
      k<<<dim3(unsigned(grid), unsigned(cur_batch.count), 1), S::NT, S::smem_bytes, cur_stream>>>(
          cur.M, cur.N, cur.K, cur.alpha, a, b, cur.beta, c, group, kts, 0, cur_batch.off);
      PARRAY_CUDA_CHECK_LAUNCH();
    }
    if (sk.tiles > 0) launch_streamk_tail<S, AK, BKc>(a, b, c, group, sk);
    return;
  }
  // Split-K: raw slices into a row-major workspace (rows padded to 4 floats
  // for 16-byte stores), then C = alpha * sum + beta * C.
  const index_t ldw = (index_t(cur.N) + 3) / 4 * 4, slice = ldw * cur.M;
  float* ws = splitk_workspace(size_t(splits) * size_t(slice));
  auto ks = ladder::best_sgemm<S, AK, BKc, OpA, OpB, StridedOperand<float>>;
  allow_smem_on_current_device(ks, S::smem_bytes);
  ks<<<dim3(unsigned(tiles), 1, unsigned(splits)), S::NT, S::smem_bytes, cur_stream>>>(
      cur.M, cur.N, cur.K, 1.f, a, b, 0.f, StridedOperand<float>{ws, ldw, 1}, group, per, slice,
      ladder::BatchOffsets{});
  PARRAY_CUDA_CHECK_LAUNCH();
  const dim3 grid(ceil_div(cur.N, 1024), unsigned(std::min(cur.M, 65535)));  // 4 columns per thread
  ladder::splitk_sum<<<grid, 256, 0, cur_stream>>>(cur.M, cur.N, splits, ws, ldw, slice, cur.alpha, cur.beta, c);
  PARRAY_CUDA_CHECK_LAUNCH();
  workspace_done();
}

}  // namespace parray::cuda::pipelined
