// CPU thread arrays: Parray's `pthd [2][2]` and `#detour`.
//
//   CpuThreadArray threads({2, 2});
//   threads.detour([&](const ThreadCoord& t) { work(t.tid(0), t.tid(1)); t.sync(); });
//
// runs the callable once on each thread of the array (any ThreadShape: up to
// four dimensions, each flat or nested), giving it its coordinates ($tid$,
// $tid_0$, $tid_1_0$ ...) and barriers over the whole array and over its
// sub-arrays (Parray's #sync). detour returns when every thread has finished; the
// first exception thrown by any thread is rethrown in the caller.
// StreamThreadArray (below) gives the same coordinates to threads that are a
// GPU's streams, run in turn by the caller: no barrier, no host threads.
#pragma once

#include <array>
#include <barrier>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "parray/core.hpp"
#include "parray/thread_shape.hpp"

namespace parray {

namespace detail {
// Runs task(0) on the calling thread and task(1) .. task(n - 1) on n - 1
// other threads at once; returns when all have returned. The other threads
// are kept between calls (src/core/thread_pool.cpp): a detour that started
// n - 1 threads and joined them paid each thread's start and its first CUDA
// call on every call (docs/perf-notes.md). A task must not throw.
void run_on_threads(int n, const std::function<void(int)>& task);
// Threads the pool holds now (started and not ended), for tests.
int pool_threads();
}  // namespace detail

// One CPU thread of an array: its coordinates (thread_shape.hpp: t.tid(),
// t.tid(d), t.tid(d, e), t.dim(d) ...) and Parray's #sync — over the whole
// array, or with sync(d) over the sub-array of the threads that differ from
// this one only in dimension d (for pthd [2][2], sync(1) waits for the other
// thread of the same row).
class ThreadCoord : public ThreadIndex {
 public:
  using ThreadIndex::ThreadIndex;
  void sync() const { wait(all_); }
  void sync(int d) const {
    if (d < 0 || d >= rank())
      throw Error("thread array: sync(" + std::to_string(d) + ") in a " + std::to_string(rank()) + "-D array");
    wait(along_[d]);
  }

 private:
  friend class CpuThreadArray;
  friend class StreamThreadArray;
  void wait(std::barrier<>* b) const {
    if (in_turn_) throw Error("thread array: sync() in a detour whose threads run in turn (StreamThreadArray)");
    if (b) b->arrive_and_wait();
  }
  std::barrier<>* all_ = nullptr;
  std::barrier<>* along_[ThreadShape::kMaxRank] = {};
  bool in_turn_ = false;
};

class CpuThreadArray {
 public:
  // Parray's pthd [2][2] is CpuThreadArray({2, 2}); nested shapes too:
  // CpuThreadArray(ThreadShape::parse("[[2][2]][4]")).
  CpuThreadArray(std::initializer_list<int> dims) : CpuThreadArray(ThreadShape(dims)) {}
  explicit CpuThreadArray(const std::vector<int>& dims) : CpuThreadArray(ThreadShape(dims)) {}
  explicit CpuThreadArray(const ThreadShape& shape) : shape_(shape) {
    if (size() > 4096) throw Error("thread array: " + std::to_string(size()) + " threads is too many");
  }

  int size() const { return shape_.size(); }
  int rank() const { return shape_.rank(); }
  const ThreadShape& shape() const { return shape_; }

  template <class F>
  void detour(F&& body) const {
    Barriers barriers(shape_);
    std::exception_ptr first_error;
    std::mutex error_mutex;
    auto run = [&](int tid) {
      ThreadCoord t(shape_, tid);
      barriers.attach(t);
      try {
        body(static_cast<const ThreadCoord&>(t));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        // A thread that fails leaves its barriers so the others cannot hang on them.
        barriers.drop(t);
      }
    };
    // The calling thread is thread 0, as Parray's main thread joins in; the
    // others come from a pool of threads kept between detours.
    detail::run_on_threads(size(), run);
    if (first_error) std::rethrow_exception(first_error);
  }

 private:
  // One barrier over the array and, per dimension d, one per group of
  // threads that differ only in their coordinate d.
  class Barriers {
   public:
    explicit Barriers(const ThreadShape& s) : shape_(s), all_(s.size()) {
      for (int d = 0; d < s.rank(); ++d)
        for (int g = 0; g < s.size() / s.dim(d); ++g) along_[d].push_back(std::make_unique<std::barrier<>>(s.dim(d)));
    }
    void attach(ThreadCoord& t) {
      t.all_ = &all_;
      for (int d = 0; d < shape_.rank(); ++d)
        t.along_[d] = along_[d][static_cast<std::size_t>(shape_.without(d, t.tid()))].get();
    }
    void drop(const ThreadCoord& t) {
      all_.arrive_and_drop();
      for (int d = 0; d < shape_.rank(); ++d) t.along_[d]->arrive_and_drop();
    }

   private:
    const ThreadShape& shape_;
    std::barrier<> all_;
    std::vector<std::unique_ptr<std::barrier<>>> along_[ThreadShape::kMaxRank];
  };

  ThreadShape shape_;
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
      ThreadCoord t(shape_.shape(), tid);
      t.in_turn_ = true;
      body(static_cast<const ThreadCoord&>(t));
    }
  }

 private:
  CpuThreadArray shape_;  // the dimensions and their checks
};

}  // namespace parray
