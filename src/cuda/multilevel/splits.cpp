// The two splits of the CUDA lab report's task 2 (rows of A; K), the lab report's way and done right
// (include/parray/multilevel.hpp says what each implementation is).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>
#include <vector>

#include "launch.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/multilevel.hpp"
#include "parray/registry.hpp"
#include "parray/thread_array.hpp"
#include "parray/tuning.hpp"

namespace parray::multilevel {

namespace {

using cuda::multilevel::gemm_best_add_on_stream;
using cuda::multilevel::gemm_best_on_stream;
using cuda::multilevel::part_wants_col_major_a;
using cuda::multilevel::scale_on_stream;
using cuda::multilevel::transpose_on_stream;
using cuda::multilevel::sum_parts_on_stream;

// Part i of n items over t threads: [begin, end), sizes differ by at most one
// (empty when t > n).
struct Range {
  index_t begin, end;
  index_t size() const { return end - begin; }
};
Range part(index_t n, int t, int i) { return {n * i / t, n * (i + 1) / t}; }

// Rows [r0, r0 + nr) x cols [c0, c0 + nc) of v into dst (row-major, nr x nc).
// Row-major views copy row by row; any other layout element by element.
void pack(MatrixView<const float> v, index_t r0, index_t nr, index_t c0, index_t nc, float* dst) {
  if (v.layout.is_row_major()) {
    const index_t rs = v.layout.rows.stride[0];
    for (index_t i = 0; i < nr; ++i)
      std::memcpy(dst + i * nc, v.data + (r0 + i) * rs + c0, size_t(nc) * sizeof(float));
    return;
  }
  for (index_t i = 0; i < nr; ++i)
    for (index_t j = 0; j < nc; ++j) dst[i * nc + j] = v(r0 + i, c0 + j);
}
// The inverse: src (row-major nr x nc) into rows [r0, r0 + nr) of c.
void unpack(const float* src, index_t r0, index_t nr, MatrixView<float> c) {
  const index_t nc = c.cols();
  if (c.layout.is_row_major()) {
    const index_t rs = c.layout.rows.stride[0];
    for (index_t i = 0; i < nr; ++i) std::memcpy(c.data + (r0 + i) * rs, src + i * nc, size_t(nc) * sizeof(float));
    return;
  }
  for (index_t i = 0; i < nr; ++i)
    for (index_t j = 0; j < nc; ++j) c(r0 + i, j) = src[i * nc + j];
}

// The caller's GPU. A split's threads make it current before any CUDA call:
// they are long-lived (the thread array's pool, OpenMP's team) and may last
// have driven another GPU — a pool thread that had run a multi-GPU detour
// launched the next split's kernel on GPU 1 (cudaErrorInvalidValue, on a
// 2-GPU host).
int caller_device() {
  int d = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

void check_sizes(const GemmCall<float>& call, const char* impl) {
  const index_t lim = 0x7fffffff;
  if (call.c.rows() > lim || call.c.cols() > lim || call.a.cols() > lim)
    throw Error(std::string(impl) + ": M, N and K must each be below 2^31");
}

// A row-major device operand for the ladder launchers.
template <class T>
MatrixView<T> dev_view(T* p, index_t rows, index_t cols) {
  return {p, MatrixLayout{Axis::strided(rows, cols), Axis::strided(cols, 1)}, Memory::device};
}

// ---- the lab report's way -----------------------------------------------------------

constexpr int kSeedBlock = 256;  // the task-1 kernel's 1-D block

// The lab report's product of one thread: fresh device buffers for ha (m x k), hb
// (k x n) and hc (m x n, read when beta != 0), the task-1 kernel, hc back.
// Allocating per call is the lab report's design, and is timed as such. The
// operands are on the host, so the work goes on the team thread's own
// default stream, which waits for no other thread's.
void seed_device_product(float alpha, const std::vector<float>& ha, const std::vector<float>& hb, float beta,
                         std::vector<float>& hc, index_t m, index_t k, index_t n) {
  float *da, *db, *dc;
  PARRAY_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&da), ha.size() * sizeof(float)));
  PARRAY_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&db), hb.size() * sizeof(float)));
  PARRAY_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dc), hc.size() * sizeof(float)));
  const cudaStream_t s = cudaStreamPerThread;
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(da, ha.data(), ha.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(db, hb.data(), hb.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  if (beta != 0.f)
    PARRAY_CUDA_CHECK(cudaMemcpyAsync(dc, hc.data(), hc.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  cuda::gemm_naive_1d(GemmCall<float>{alpha, dev_view<const float>(da, m, k), dev_view<const float>(db, k, n), beta,
                                      dev_view<float>(dc, m, n), 1, s, Precision::fp32},
                      kSeedBlock);
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(hc.data(), dc, hc.size() * sizeof(float), cudaMemcpyDeviceToHost, s));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
  PARRAY_CUDA_CHECK(cudaFree(da));
  PARRAY_CUDA_CHECK(cudaFree(db));
  PARRAY_CUDA_CHECK(cudaFree(dc));
}

// The lab report's thread team: `threads` OpenMP threads on the caller's device,
// thread t running body(its part of [0, extent)); the first exception any
// thread throws is rethrown once all have finished.
template <class Body>
void seed_team(int threads, index_t extent, Body&& body) {
  const int device = caller_device();
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    try {
      PARRAY_CUDA_CHECK(cudaSetDevice(device));
      const Range r = part(extent, omp_get_num_threads(), omp_get_thread_num());
      if (r.size() > 0) body(r);
    } catch (...) {
#pragma omp critical(parray_multilevel_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

// (a) Each thread: its row block of A and all of B to freshly allocated device
// buffers, the task-1 kernel, its rows of C back.
void seed_rows(const GemmCall<float>& call, int threads) {
  check_sizes(call, "seed-split-rows");
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  seed_team(threads, M, [&](const Range& r) {
    std::vector<float> ha(size_t(r.size() * K)), hb(size_t(K * N)), hc(size_t(r.size() * N));
    pack(call.a, r.begin, r.size(), 0, K, ha.data());
    pack(call.b, 0, K, 0, N, hb.data());
    if (call.beta != 0.f) pack(call.c, r.begin, r.size(), 0, N, hc.data());
    seed_device_product(call.alpha, ha, hb, call.beta, hc, r.size(), K, N);
    unpack(hc.data(), r.begin, r.size(), call.c);
  });
}

// (b) Each thread: columns [k0, k1) of A and rows [k0, k1) of B, a full
// M x N partial product on the GPU, copied back and added into C on the host
// in a critical section (after C = beta C).
void seed_k(const GemmCall<float>& call, int threads) {
  check_sizes(call, "seed-split-k");
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  std::vector<float> acc(size_t(M * N), 0.f);
  if (call.beta != 0.f) {
    pack(call.c, 0, M, 0, N, acc.data());
    for (float& x : acc) x *= call.beta;
  }
  seed_team(threads, K, [&](const Range& r) {
    std::vector<float> ha(size_t(M * r.size())), hb(size_t(r.size() * N)), hc(size_t(M * N));
    pack(call.a, 0, M, r.begin, r.size(), ha.data());
    pack(call.b, r.begin, r.size(), 0, N, hb.data());
    seed_device_product(call.alpha, ha, hb, 0.f, hc, M, r.size(), N);
#pragma omp critical(parray_multilevel_sum)
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += hc[i];
  });
  unpack(acc.data(), 0, M, call.c);
}

// ---- done right -----------------------------------------------------------------

// Buffers kept between calls (grown, never shrunk): allocation is not part of
// every product. One call at a time uses them.
template <class Alloc, class Free>
struct Buffer {
  float* p = nullptr;
  size_t cap = 0;
  float* get(size_t floats) {
    if (floats > cap) {
      if (p) Free{}(p);
      p = nullptr;
      p = Alloc{}(floats);
      cap = floats;
    }
    return p;
  }
};
// Floats from one of CUDA's allocators (device or pinned host memory), checked.
template <cudaError_t (*Allocate)(void**, size_t)>
struct CudaAlloc {
  float* operator()(size_t n) const {
    float* p;
    PARRAY_CUDA_CHECK(Allocate(reinterpret_cast<void**>(&p), n * sizeof(float)));
    return p;
  }
};
template <cudaError_t (*Release)(void*)>
struct CudaFree {
  void operator()(float* p) const { PARRAY_CUDA_CHECK(Release(p)); }
};
using DevBuf = Buffer<CudaAlloc<cudaMalloc>, CudaFree<cudaFree>>;
using PinBuf = Buffer<CudaAlloc<cudaMallocHost>, CudaFree<cudaFreeHost>>;

struct Context {
  std::mutex mu;
  std::vector<cudaStream_t> streams;
  std::vector<cudaEvent_t> ready, done;  // per thread: B slice uploaded; part finished
  std::atomic<int> launched{0};           // the K split's parts launched so far in this call
  cudaEvent_t entry = nullptr;            // the caller's work on the call's stream, at the call
  DevBuf da, db, dc, dw;
  PinBuf ha, hb, hc;
  void ensure_threads(int t) {
    if (entry == nullptr) PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&entry, cudaEventDisableTiming));
    while (int(streams.size()) < t) {
      cudaStream_t s;
      cudaEvent_t e1, e2;
      PARRAY_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
      PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
      PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));
      streams.push_back(s), ready.push_back(e1), done.push_back(e2);
    }
  }
};
Context& context() {
  static Context* c = new Context;  // never destroyed: CUDA may be torn down first at exit
  return *c;
}

// The device operands a split works on, row-major: the caller's own when
// they are device-resident and row-major; otherwise the context's buffers —
// filled here by #copy for device operands in other layouts (host operands
// are staged chunk by chunk by the split itself), and copied back to the
// caller's C by copy_back().
struct RowMajorOperands {
  const float *A, *B;
  float* C;
  long long lda, ldb, ldc;
  bool staged_device;  // device operands in another layout: C goes back through copy_back
  RowMajorOperands(const GemmCall<float>& call, bool host, Context& cx) {
    const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
    const bool dev_rm = !host && call.a.layout.is_row_major() && call.b.layout.is_row_major() &&
                        call.c.layout.is_row_major();
    staged_device = !host && !dev_rm;
    if (dev_rm) {
      A = call.a.data, B = call.b.data, C = call.c.data;
      lda = call.a.layout.rows.stride[0], ldb = call.b.layout.rows.stride[0], ldc = call.c.layout.rows.stride[0];
      return;
    }
    A = cx.da.get(size_t(M * K)), B = cx.db.get(size_t(K * N)), C = cx.dc.get(size_t(M * N));
    lda = K, ldb = N, ldc = N;
    if (staged_device) {  // device, other layouts: #copy into the row-major buffers, on the caller's
      // stream, which the split's streams wait for (after_callers_work)
      const GpuStream s = call.stream;
      cuda::copy<float>(call.a, dev_view<float>(const_cast<float*>(A), M, K), s);
      cuda::copy<float>(call.b, dev_view<float>(const_cast<float*>(B), K, N), s);
      if (call.beta != 0.f) cuda::copy<float>(call.c, dev_view<float>(C, M, N), s);
    }
  }
  void copy_back(const GemmCall<float>& call) const {
    if (!staged_device) return;
    cuda::copy<float>(dev_view<const float>(C, call.c.rows(), call.c.cols()), call.c, call.stream);
    // The context's buffers are the next call's, which may come on another stream.
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(cuda::on_stream(call.stream)));
  }
};

// A split on the caller's device operands reads and writes them on streams of
// its own, which are non-blocking: nothing orders them after the caller's
// earlier work on the call's stream (GemmCall::stream) — above all a copy
// that filled an operand, which may return before its last DMA has landed.
// Each stream the split uses waits for that work first: without
// it a 1024^3 K split over 4 and 8 parts added into C's last rows before the
// harness's NaN poison, copied there just before the call, had landed (NaN
// in C on a 4 x H200 host). tests/gpu_stream_order_test.cpp checks it.
void after_callers_work(Context& cx, int streams, GpuStream caller) {
  PARRAY_CUDA_CHECK(cudaEventRecord(cx.entry, cuda::on_stream(caller)));
  for (int i = 0; i < streams; ++i) PARRAY_CUDA_CHECK(cudaStreamWaitEvent(cx.streams[size_t(i)], cx.entry, 0));
}

// Who enqueues the parts of a split on device operands: "streams" (default) —
// the calling thread enqueues every part on its stream in turn
// (StreamThreadArray) and then waits for all of them; "threads" — each part
// from a host thread of its own (CpuThreadArray, the lab report's shape). The body
// is the same. In turn was faster on every host measured (docs/perf-notes.md):
// each host thread's wake-up, the driver's lock and the join on the slowest
// thread had cost more than one thread's launches in a row.
// multilevel.driver picks; host operands always use threads (each packs and
// stages its own part, with barriers between).
bool parts_in_turn(bool host) { return !host && multigpu_tuning().parts_in_turn; }

// Runs a split's body over `threads` host threads or, in turn, over the
// streams; in turn, the body must not wait for its stream (done here after).
template <class Body>
void run_parts(int threads, bool in_turn, const Context& cx, Body&& body) {
  if (!in_turn) {
    CpuThreadArray({threads}).detour(body);
    return;
  }
  StreamThreadArray({threads}).detour(body);
  for (int i = 0; i < threads; ++i) PARRAY_CUDA_CHECK(cudaStreamSynchronize(cx.streams[size_t(i)]));
}

// Rows per chunk of a part: copies of chunk j + 1 overlap the kernel of chunk
// j; a multiple of the kernel's 128-row tile, at least 128 rows.
index_t chunk_rows(index_t rows) { return std::max<index_t>(128, (rows / 4 + 127) / 128 * 128); }

// The split, written once over a CPU thread array: thread i owns part i and
// stream i. `host` says whether the operands are in host memory (staged
// through pinned buffers, chunk by chunk) or already on the device.
void split_rows(const GemmCall<float>& call, int threads, bool host) {
  check_sizes(call, "ml-split-rows");
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  const int device = caller_device();
  Context& cx = context();
  std::lock_guard<std::mutex> lock(cx.mu);
  cx.ensure_threads(threads);
  const RowMajorOperands ops(call, host, cx);
  const float *A = ops.A, *B = ops.B;
  float* C = ops.C;
  const long long lda = ops.lda, ldb = ops.ldb, ldc = ops.ldc;
  float *hA = nullptr, *hB = nullptr, *hC = nullptr;
  if (host) hA = cx.ha.get(size_t(M * K)), hB = cx.hb.get(size_t(K * N)), hC = cx.hc.get(size_t(M * N));
  if (!host) after_callers_work(cx, threads, call.stream);
  const bool in_turn = parts_in_turn(host);
  run_parts(threads, in_turn, cx, [&](const ThreadCoord& t) {
    PARRAY_CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t s = cx.streams[size_t(t.tid())];
    if (host) {  // B once: thread i uploads slice i of its rows
      const Range kb = part(K, t.size(), t.tid());
      if (kb.size() > 0) {
        pack(call.b, kb.begin, kb.size(), 0, N, hB + kb.begin * N);
        PARRAY_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(B) + kb.begin * N, hB + kb.begin * N,
                                          size_t(kb.size() * N) * sizeof(float), cudaMemcpyHostToDevice, s));
      }
      PARRAY_CUDA_CHECK(cudaEventRecord(cx.ready[size_t(t.tid())], s));
      t.sync();  // every slice of B has its event
    }
    const Range r = part(M, t.size(), t.tid());
    const index_t step = host ? chunk_rows(r.size()) : std::max<index_t>(r.size(), 1);
    bool waited = !host;
    for (index_t r0 = r.begin; r0 < r.end; r0 += step) {
      const index_t nr = std::min(step, r.end - r0);
      if (host) {
        pack(call.a, r0, nr, 0, K, hA + r0 * K);
        PARRAY_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(A) + r0 * K, hA + r0 * K,
                                          size_t(nr * K) * sizeof(float), cudaMemcpyHostToDevice, s));
        if (call.beta != 0.f) {
          pack(call.c, r0, nr, 0, N, hC + r0 * N);
          PARRAY_CUDA_CHECK(cudaMemcpyAsync(C + r0 * N, hC + r0 * N, size_t(nr * N) * sizeof(float),
                                            cudaMemcpyHostToDevice, s));
        }
        if (!waited)
          for (int j = 0; j < t.size(); ++j) PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s, cx.ready[size_t(j)], 0));
        waited = true;
      }
      gemm_best_on_stream(s, int(nr), int(N), int(K), call.alpha, A + r0 * lda, lda, B, ldb, call.beta,
                          C + r0 * ldc, ldc, int(std::min<index_t>(t.size(), M)));
      if (host)
        PARRAY_CUDA_CHECK(cudaMemcpyAsync(hC + r0 * N, C + r0 * N, size_t(nr * N) * sizeof(float),
                                          cudaMemcpyDeviceToHost, s));
    }
    if (in_turn) return;  // run_parts waits for the streams
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
    if (host && r.size() > 0) unpack(hC + r.begin * N, r.begin, r.size(), call.c);
  });
  ops.copy_back(call);
}

// How the K split's parts are summed: "add" (default) — every part adds its
// product into C atomically as its tiles finish (C scaled by beta first), no
// workspace, no summing pass; "pass" — every part writes its own partial
// product and one pass sums them (deterministic). multilevel.ksplit_sum picks.
bool ksplit_adds() { return multigpu_tuning().ksplit_adds; }

// K split: thread i multiplies A[:, K_i] B[K_i, :] on its stream, in chunks
// along K that accumulate (host operands: the copies of chunk j + 1 overlap
// the kernel of chunk j), all parts at once, and adds it into C (thread 0
// first scales C by beta; ksplit_adds) — or, with the summing pass, writes it
// into its own M x N slice of a workspace and thread 0 then sums the slices
// into C on the device (applying alpha and beta). Every thread brings back
// its rows of C (host operands). One part alone writes C directly.
//
// Why adding: the pass's partial products cost what the single kernel does
// not pay — at 4096^3 over 8 threads 512 MiB written while the parts run and
// 576 MiB read and written by the pass after them, time that no kernel
// overlaps. Adds go to L2 as the parts' tiles finish, overlapped with the
// other tiles' FMAs: faster over 8 threads, level over 2 and 4
// (docs/perf-notes.md). With one chunk
// per part (device operands) the part launched last also runs the parts'
// joint stream-K tail (gemm_best_add_on_stream; its share of it for each
// part with multilevel.ksplit_tail=1).
//
// Measured and rejected (docs/perf-notes.md): chaining the parts — part i
// adding into C with beta = 1 after part i - 1, no workspace and no summing
// pass: 8 dependent kernels, each with its own pipeline fill and a read of C
// in every epilogue, cost more than one pass over the slices. A ring of row
// bands (part i adds into band (i + r) mod p of C in round r, after the
// band's round r - 1): every round pays its own partial last wave. The sum
// in the parts' epilogue (the last part to finish a tile sums that tile's
// slices): one SM reading 8 slices of a tile is slower than all SMs
// streaming them.
class KSplit {
 public:
  // cx: locked, with `threads` threads; device: the caller's.
  KSplit(const GemmCall<float>& call, int threads, bool host, Context& cx, int device)
      : call_(call), threads_(threads), host_(host), cx_(cx), device_(device),
        M_(call.c.rows()), N_(call.c.cols()), K_(call.a.cols()), ops_(call, host, cx),
        parts_(int(std::min<index_t>(threads, K_))), direct_(parts_ == 1),  // the one part writes C itself
        adds_(!direct_ && ksplit_adds()) {
    // Slices with rows padded to 4 floats: the summing pass reads 16 bytes at a time.
    ldw_ = (N_ + 3) / 4 * 4, slice_ = M_ * ldw_;
    W_ = direct_ || adds_ ? nullptr : cx.dw.get(size_t(parts_) * size_t(slice_));
    if (host) hA_ = cx.ha.get(size_t(M_ * K_)), hB_ = cx.hb.get(size_t(K_ * N_)), hC_ = cx.hc.get(size_t(M_ * N_));
    // Device operands, adding, parts short enough for the 128 x 128 tile: each
    // part first copies its slice of A into its columns of a column-major copy
    // (rows padded to 4 floats), so that the tile loads both operands by
    // 16-byte cp.async (part_wants_col_major_a). The copy moves 8 M K bytes in
    // all, the parts' copies running beside the other parts' products.
    ldt_ = (M_ + 3) / 4 * 4;
    const int longest_part = int((K_ + parts_ - 1) / parts_);
    col_major_a_ = adds_ && !host && part_wants_col_major_a(int(M_), int(N_), longest_part, parts_) &&
                   cuda::workspace_fits(size_t(ldt_) * size_t(K_) * sizeof(float));
    At_ = col_major_a_ ? cx.dw.get(size_t(ldt_) * size_t(K_)) : nullptr;
    // Device operands, adding: the calling thread (thread 0, stream 0) scales C
    // before the threads start, so no thread waits for another on the host —
    // neither here nor at the end, where each waits for its own stream only
    // (every barrier of a thread array wakes each of its threads; measured
    // within the hosts' spread, kept as the simpler order).
    no_barriers_ = adds_ && !host;
    // In turn needs a body without barriers: device operands, adding.
    in_turn_ = no_barriers_ && parts_in_turn(host);
  }

  void run() {
    cx_.launched = 0;
    if (!host_) after_callers_work(cx_, threads_, call_.stream);
    if (no_barriers_) {
      scale_on_stream(cx_.streams[0], int(M_), int(N_), call_.beta, ops_.C, ops_.ldc);
      PARRAY_CUDA_CHECK(cudaEventRecord(cx_.ready[0], cx_.streams[0]));
    }
    run_parts(threads_, in_turn_, cx_, [&](const ThreadCoord& t) { part_body(t); });
    ops_.copy_back(call_);
  }

 private:
  void part_body(const ThreadCoord& t) {
    PARRAY_CUDA_CHECK(cudaSetDevice(device_));
    cudaStream_t s = cx_.streams[size_t(t.tid())];
    prepare_c(t, s);
    multiply_slice(t, s);
    if (no_barriers_) {  // C is complete once every stream is: detour returns after all of them
      if (!in_turn_) PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));  // else run_parts waits
      return;
    }
    finish_c(t, s);
  }

  // C on the device before any part writes it: the host's C (read by the sum
  // or the one part, both on stream 0), scaled by beta where the parts add.
  void prepare_c(const ThreadCoord& t, cudaStream_t s) {
    if (host_ && call_.beta != 0.f && t.tid() == 0) {
      pack(call_.c, 0, M_, 0, N_, hC_);
      PARRAY_CUDA_CHECK(cudaMemcpyAsync(ops_.C, hC_, size_t(M_ * N_) * sizeof(float), cudaMemcpyHostToDevice, s));
    }
    if (adds_ && !no_barriers_) {  // C = beta C before any part adds into it
      if (t.tid() == 0) {
        scale_on_stream(s, int(M_), int(N_), call_.beta, ops_.C, ops_.ldc);
        PARRAY_CUDA_CHECK(cudaEventRecord(cx_.ready[0], s));
      }
      t.sync();  // the event is recorded
    }
    if (adds_ && t.tid() != 0) PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s, cx_.ready[0], 0));
  }

  // This thread's K slice (the first `parts` threads take one each, none
  // empty), in chunks (host operands: copied up chunk by chunk).
  void multiply_slice(const ThreadCoord& t, cudaStream_t s) {
    const float *A = ops_.A, *B = ops_.B;
    const long long lda = ops_.lda, ldb = ops_.ldb, ldc = ops_.ldc;
    const index_t M = M_, N = N_;
    const Range kr = t.tid() < parts_ ? part(K_, parts_, t.tid()) : Range{0, 0};
    const index_t step =
        host_ ? std::max<index_t>(64, (kr.size() / 4 + 15) / 16 * 16) : std::max<index_t>(kr.size(), 1);
    for (index_t k0 = kr.begin; k0 < kr.end; k0 += step) {
      const index_t kc = std::min(step, kr.end - k0);
      const float *a = A + k0, *b = B + k0 * ldb;
      long long la = lda;
      if (host_) {  // chunk [k0, k0 + kc) of A (chunk-blocked: lda = kc) and of B
        pack(call_.a, 0, M, k0, kc, hA_ + M * k0);
        pack(call_.b, k0, kc, 0, N, hB_ + k0 * N);
        PARRAY_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(A) + M * k0, hA_ + M * k0,
                                          size_t(M * kc) * sizeof(float), cudaMemcpyHostToDevice, s));
        PARRAY_CUDA_CHECK(cudaMemcpyAsync(const_cast<float*>(B) + k0 * N, hB_ + k0 * N,
                                          size_t(kc * N) * sizeof(float), cudaMemcpyHostToDevice, s));
        a = A + M * k0, la = kc;
      }
      const bool first = k0 == kr.begin;
      if (direct_) {
        gemm_best_on_stream(s, int(M), int(N), int(kc), call_.alpha, a, la, b, ldb, first ? call_.beta : 1.f, ops_.C,
                            ldc, 1);
      } else if (adds_) {  // one chunk (device operands): the parts' joint tail by the order in which
        // they are launched (the last one's tiles run last, and it takes the tail)
        if (col_major_a_) {
          transpose_on_stream(s, int(kc), int(M), a, la, At_ + k0 * ldt_, ldt_);
          a = At_ + k0 * ldt_, la = ldt_;
        }
        gemm_best_add_on_stream(s, int(M), int(N), int(kc), call_.alpha, a, la, b, ldb, ops_.C, ldc, parts_,
                                kc == kr.size() ? cx_.launched.fetch_add(1) : -1, col_major_a_);
      } else {
        gemm_best_on_stream(s, int(M), int(N), int(kc), 1.f, a, la, b, ldb, first ? 0.f : 1.f, W_ + t.tid() * slice_,
                            ldw_, parts_);
      }
    }
  }

  // After every part: thread 0 sums the slices into C (unless the parts
  // added), then each thread brings back its rows of C (host operands).
  void finish_c(const ThreadCoord& t, cudaStream_t s) {
    PARRAY_CUDA_CHECK(cudaEventRecord(cx_.done[size_t(t.tid())], s));
    t.sync();  // every part has its event
    if (t.tid() == 0 && !direct_) {
      for (int j = 1; j < parts_; ++j) PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s, cx_.done[size_t(j)], 0));
      if (!adds_)
        sum_parts_on_stream(s, int(M_), int(N_), parts_, W_, ldw_, slice_, call_.alpha, call_.beta, ops_.C, ops_.ldc);
    }
    if (t.tid() == 0) PARRAY_CUDA_CHECK(cudaEventRecord(cx_.ready[0], s));
    t.sync();  // C has its event
    if (host_) {  // rows of C back, one block per thread
      const Range r = part(M_, t.size(), t.tid());
      if (r.size() > 0) {
        PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s, cx_.ready[0], 0));
        PARRAY_CUDA_CHECK(cudaMemcpyAsync(hC_ + r.begin * N_, ops_.C + r.begin * N_,
                                          size_t(r.size() * N_) * sizeof(float), cudaMemcpyDeviceToHost, s));
        PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
        unpack(hC_ + r.begin * N_, r.begin, r.size(), call_.c);
      }
    }
    PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  const GemmCall<float>& call_;
  const int threads_;
  const bool host_;
  Context& cx_;
  const int device_;
  const index_t M_, N_, K_;
  const RowMajorOperands ops_;
  const int parts_;
  const bool direct_, adds_;
  long long ldw_ = 0, slice_ = 0, ldt_ = 0;
  float* W_ = nullptr;
  float *hA_ = nullptr, *hB_ = nullptr, *hC_ = nullptr;
  bool col_major_a_ = false;
  float* At_ = nullptr;
  bool no_barriers_ = false, in_turn_ = false;
};

void split_k(const GemmCall<float>& call, int threads, bool host) {
  check_sizes(call, "ml-split-k");
  const int device = caller_device();
  Context& cx = context();
  std::lock_guard<std::mutex> lock(cx.mu);
  cx.ensure_threads(threads);
  KSplit(call, threads, host, cx, device).run();
}

GemmImpl make(const std::string& family, const std::string& split, int t, std::string desc) {
  GemmImpl i;
  i.name = impl_name(family, split, t);
  i.description = std::move(desc);
  i.device = Device::gpu;
  i.operand_memory = family == "ml-dev" ? Memory::device : Memory::paged;
  i.preconditions = "any M, N, K below 2^31; any layout";
  return i;
}

void add_all(Registry& r) {
  for (int t : {1, 2, 4, 8}) {
    const std::string ts = std::to_string(t);
    GemmImpl a = make("seed", "rows", t, "task 2a of the CUDA lab report: " + ts +
                                             " OpenMP threads, rows of A; each allocates, copies all of B, kernel 1");
    a.run_f32 = [t](const GemmCall<float>& c) { seed_rows(c, t); };
    r.add(std::move(a));
    GemmImpl b = make("seed", "k", t, "task 2b of the CUDA lab report: " + ts +
                                          " OpenMP threads, K slices, kernel 1, summed on the host (critical)");
    b.run_f32 = [t](const GemmCall<float>& c) { seed_k(c, t); };
    r.add(std::move(b));
    GemmImpl c = make("ml", "rows", t, "task 2a done right: " + ts +
                                           " streams, pinned staging, B once, chunks overlapped, step 12");
    c.run_f32 = [t](const GemmCall<float>& x) { split_rows(x, t, true); };
    r.add(std::move(c));
    GemmImpl d = make("ml", "k", t, "task 2b done right: " + ts +
                                        " streams, pinned staging, chunks overlapped, step 12, summed on the GPU");
    d.run_f32 = [t](const GemmCall<float>& x) { split_k(x, t, true); };
    r.add(std::move(d));
    GemmImpl e = make("ml-dev", "rows", t, "rows of A over " + ts + " streams, device operands, step 12 per part");
    e.run_f32 = [t](const GemmCall<float>& x) { split_rows(x, t, false); };
    r.add(std::move(e));
    GemmImpl f = make("ml-dev", "k", t, "K over " + ts + " streams, device operands, step 12, summed on the GPU");
    f.run_f32 = [t](const GemmCall<float>& x) { split_k(x, t, false); };
    r.add(std::move(f));
  }
}

}  // namespace

void register_multilevel(Registry& r) { add_all(r); }

}  // namespace parray::multilevel
