// Device workspaces that one host thread's calls reuse whatever streams the
// calls name. A call on stream s may not overwrite a workspace that a kernel
// queued earlier on another stream still reads, so each workspace records an
// event after every use and a use on a different stream waits for it first.
// Calls on one stream, the usual case, cost one cudaEventRecord each.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "parray/cuda/check.hpp"

namespace parray::cuda {

// The order of the uses of one per-thread resource across streams: each use
// on a stream other than the last one's waits for the last one's end, so the
// end of the last use implies the end of every earlier use.
class StreamOrder {
 public:
  StreamOrder() = default;
  StreamOrder(const StreamOrder&) = delete;
  StreamOrder& operator=(const StreamOrder&) = delete;
  // Errors ignored: at thread or process exit the runtime may be unloading.
  ~StreamOrder() {
    if (done_) (void)cudaEventDestroy(done_);
  }

  // Before queueing a use on s.
  void enter(cudaStream_t s) {
    if (done_ && s != last_) PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s, done_, 0));
  }
  // After queueing a use on s. The event, not the stream, is what a later use
  // waits for: the caller may destroy s in between.
  void leave(cudaStream_t s) {
    if (!done_) PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
    PARRAY_CUDA_CHECK(cudaEventRecord(done_, s));
    last_ = s;
  }
  // Blocks the host until every use queued so far has run.
  void drain() const {
    if (done_) PARRAY_CUDA_CHECK(cudaEventSynchronize(done_));
  }

 private:
  cudaEvent_t done_ = nullptr;
  cudaStream_t last_ = nullptr;
};

// A device buffer of the current device, grown when needed and reused; the
// old one is freed only once its last use has run.
class StreamBuffer {
 public:
  StreamBuffer() = default;
  StreamBuffer(const StreamBuffer&) = delete;
  StreamBuffer& operator=(const StreamBuffer&) = delete;
  ~StreamBuffer() {
    if (p_) (void)cudaFree(p_);  // cudaFree waits for the device's work
  }

  // At least `bytes` for work about to be queued on s (order: the ordering
  // it shares with other buffers). A new buffer is zeroed on s if `zeroed`.
  void* get(std::size_t bytes, cudaStream_t s, StreamOrder& order, bool zeroed) {
    order.enter(s);
    if (bytes <= cap_) return p_;
    order.drain();
    if (p_) PARRAY_CUDA_CHECK(cudaFree(p_));
    p_ = nullptr;
    cap_ = 0;
    PARRAY_CUDA_CHECK(cudaMalloc(&p_, bytes));
    cap_ = bytes;
    if (zeroed) PARRAY_CUDA_CHECK(cudaMemsetAsync(p_, 0, bytes, s));
    return p_;
  }

 private:
  void* p_ = nullptr;
  std::size_t cap_ = 0;
};

// The calling thread's T on the current device, made on first use there:
// what a thread's calls on one GPU share (workspaces with their StreamOrder),
// never another thread's, so no lock guards it.
template <class T>
T& per_thread_on_device() {
  thread_local std::vector<std::unique_ptr<T>> per_device;
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  if (per_device.size() <= std::size_t(device)) per_device.resize(std::size_t(device) + 1);
  if (!per_device[std::size_t(device)]) per_device[std::size_t(device)] = std::make_unique<T>();
  return *per_device[std::size_t(device)];
}

// Copies host memory to the device and waits for it, on a stream of the
// calling thread's own, so that the copy neither waits for the caller's
// queued work nor goes to the legacy default stream. For rare uploads (tables
// kept across calls), not for a call's hot path.
inline void upload_now(void* dst, const void* src, std::size_t bytes) {
  struct OwnStream {
    cudaStream_t s = nullptr;
    ~OwnStream() {
      if (s) (void)cudaStreamDestroy(s);
    }
  };
  thread_local OwnStream own[64];  // per device
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  cudaStream_t& s = own[device % 64].s;
  if (!s) PARRAY_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  PARRAY_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(s));
}

}  // namespace parray::cuda
