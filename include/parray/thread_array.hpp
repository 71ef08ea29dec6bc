// CPU thread arrays: Parray's `pthd [2][2]` and `#detour`.
//
//   CpuThreadArray threads({2, 2});
//   threads.detour([&](const ThreadCoord& t) { work(t[0], t[1]); t.sync(); });
//
// runs the callable once on each thread of a 1-, 2- or 3-D array, giving it
// its coordinates ($tid$, $tid_0$, $tid_1$ ...) and a barrier over the whole
// array (Parray's #sync). detour returns when every thread has finished; the
// first exception thrown by any thread is rethrown in the caller.
// StreamThreadArray (below) gives the same coordinates to threads that are a
// GPU's streams, run in turn by the caller: no barrier, no host threads.
#pragma once

#include <array>
#include <barrier>
#include <exception>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parray/core.hpp"

namespace parray {

namespace detail {
// Runs task(0) on the calling thread and task(1) .. task(n - 1) on n - 1
// other threads at once; returns when all have returned. The other threads
// are kept between calls (src/core/thread_pool.cpp): a detour that started
// n - 1 threads and joined them cost ~20-100 us per thread, the first CUDA
// call of each new thread included — 5 to 25 % of a 3 ms GEMM split over
// 2..8 streams (docs/multilevel.md). A task must not throw.
void run_on_threads(int n, const std::function<void(int)>& task);
// Threads the pool holds now (started and not ended), for tests.
int pool_threads();
}  // namespace detail

class ThreadCoord {
 public:
  int tid = 0;                 // flat id, row-major over the dimensions
  int rank = 1;                // number of dimensions
  std::array<int, 3> id{};     // tid_0, tid_1, tid_2
  std::array<int, 3> dims{1, 1, 1};

  int operator[](int d) const { return id[static_cast<std::size_t>(d)]; }
  int size() const { return dims[0] * dims[1] * dims[2]; }
  void sync() const {
    if (in_turn_) throw Error("thread array: sync() in a detour whose threads run in turn (StreamThreadArray)");
    if (barrier_) barrier_->arrive_and_wait();
  }

 private:
  friend class CpuThreadArray;
  friend class StreamThreadArray;
  // Thread `tid` of an array of `rank` dimensions `dims`, row-major.
  static ThreadCoord at(int tid, int rank, const std::array<int, 3>& dims) {
    ThreadCoord t;
    t.tid = tid;
    t.rank = rank;
    t.dims = dims;
    t.id = {tid / (dims[1] * dims[2]), (tid / dims[2]) % dims[1], tid % dims[2]};
    return t;
  }
  std::barrier<>* barrier_ = nullptr;
  bool in_turn_ = false;
};

class CpuThreadArray {
 public:
  explicit CpuThreadArray(std::initializer_list<int> dims) : CpuThreadArray(std::vector<int>(dims)) {}
  explicit CpuThreadArray(const std::vector<int>& dims) {
    if (dims.empty() || dims.size() > 3)
      throw Error("thread array: 1 to 3 dimensions, got " + std::to_string(dims.size()));
    rank_ = static_cast<int>(dims.size());
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (dims[d] < 1) throw Error("thread array: dimension " + std::to_string(d) + " is " + std::to_string(dims[d]));
      dims_[d] = dims[d];
    }
    if (size() > 4096) throw Error("thread array: " + std::to_string(size()) + " threads is too many");
  }

  int size() const { return dims_[0] * dims_[1] * dims_[2]; }
  int rank() const { return rank_; }
  const std::array<int, 3>& dims() const { return dims_; }

  template <class F>
  void detour(F&& body) const {
    const int n = size();
    std::barrier<> barrier(n);
    std::exception_ptr first_error;
    std::mutex error_mutex;
    auto run = [&](int tid) {
      ThreadCoord t = ThreadCoord::at(tid, rank_, dims_);
      t.barrier_ = &barrier;
      try {
        body(static_cast<const ThreadCoord&>(t));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        // A thread that fails leaves the barrier so the others cannot hang on it.
        barrier.arrive_and_drop();
        return;
      }
    };
    // The calling thread is thread 0, as Parray's main thread joins in; the
    // others come from a pool of threads kept between detours.
    detail::run_on_threads(n, run);
    if (first_error) std::rethrow_exception(first_error);
  }

 private:
  int rank_ = 1;
  std::array<int, 3> dims_{1, 1, 1};
};

// A thread array whose threads are the CUDA streams (or any queues) of one
// device, driven by the calling host thread: detour runs the body for thread
// 0, 1, ... in turn, each expected to enqueue its work and return without
// waiting for it, so that the parts run at once on the device. Barriers do not
// exist here (sync() throws): the body of a split that needs none runs
// unchanged over CPU threads or over streams. Why both: a part launched from
// its own host thread pays that thread's wake-up and the driver's lock, and
// the join waits for the slowest thread
// (bench/results/h100-2026-11-22-splits-threads-vs-streams.csv).
class StreamThreadArray {
 public:
  explicit StreamThreadArray(std::initializer_list<int> dims) : shape_(dims) {}
  explicit StreamThreadArray(const std::vector<int>& dims) : shape_(dims) {}

  int size() const { return shape_.size(); }

  template <class F>
  void detour(F&& body) const {
    for (int tid = 0; tid < size(); ++tid) {
      ThreadCoord t = ThreadCoord::at(tid, shape_.rank(), shape_.dims());
      t.in_turn_ = true;
      body(static_cast<const ThreadCoord&>(t));
    }
  }

 private:
  CpuThreadArray shape_;  // the dimensions and their checks
};

}  // namespace parray
