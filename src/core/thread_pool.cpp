// The threads behind CpuThreadArray::detour (parray/thread_array.hpp).
//
// Why a pool rather than n - 1 new std::threads per detour: on a GPU a new
// thread costs more than its creation — its first CUDA call sets up the
// runtime's per-thread state, and per-thread caches (step 12's split-K
// workspace) start empty. A product split over streams, each driven by a
// fresh thread, took a fixed time more than the single kernel whatever the
// size — a cost per call, not GPU time (docs/perf-notes.md). The pool keeps
// its threads: a detour hands each of
// n - 1 idle workers its task and waits for them; a nested or concurrent
// detour that finds too few idle workers starts more (so every detour gets
// its n threads at once — its body may wait on a barrier over all of them).
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "parray/thread_array.hpp"

namespace parray::detail {

namespace {

class WorkerPool {
 public:
  // Runs the tasks and returns when they have all returned.
  void run(int n, const std::function<void(int)>& task) {
    Done done;
    done.left = n - 1;  // before any worker can finish
    std::vector<Worker*> workers = take(n - 1);
    for (int i = 1; i < n; ++i) {
      Worker* w = workers[static_cast<std::size_t>(i - 1)];
      std::lock_guard<std::mutex> lock(w->mu);
      w->job = [&task, &done, i] {
        task(i);
        std::lock_guard<std::mutex> l(done.mu);
        if (--done.left == 0) done.cv.notify_one();
      };
      w->cv.notify_one();
    }
    task(0);
    std::unique_lock<std::mutex> l(done.mu);
    done.cv.wait(l, [&] { return done.left == 0; });
    l.unlock();
    give_back(workers);
  }

  int size() {
    std::lock_guard<std::mutex> lock(mu_);
    return static_cast<int>(all_.size());
  }

 private:
  struct Done {
    std::mutex mu;
    std::condition_variable cv;
    int left = 0;
  };
  struct Worker {
    std::mutex mu;
    std::condition_variable cv;
    std::function<void()> job;
    std::thread thread;
  };

  // `count` idle workers, started now where the pool has too few.
  std::vector<Worker*> take(int count) {
    std::vector<Worker*> got;
    std::lock_guard<std::mutex> lock(mu_);
    while (static_cast<int>(got.size()) < count && !idle_.empty()) {
      got.push_back(idle_.back());
      idle_.pop_back();
    }
    while (static_cast<int>(got.size()) < count) {
      all_.push_back(std::make_unique<Worker>());
      Worker* w = all_.back().get();
      w->thread = std::thread([w] { loop(*w); });
      w->thread.detach();  // the pool lives as long as the process
      got.push_back(w);
    }
    return got;
  }

  void give_back(const std::vector<Worker*>& workers) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.insert(idle_.end(), workers.begin(), workers.end());
  }

  static void loop(Worker& w) {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(w.mu);
        w.cv.wait(lock, [&] { return static_cast<bool>(w.job); });
        job = std::move(w.job);
        w.job = nullptr;
      }
      job();
    }
  }

  std::mutex mu_;
  std::vector<std::unique_ptr<Worker>> all_;
  std::vector<Worker*> idle_;
};

WorkerPool& pool() {
  // Never destroyed: its threads wait for work until the process ends (at
  // exit they must not run thread-local destructors that call into a CUDA
  // runtime being unloaded).
  static WorkerPool* p = new WorkerPool;
  return *p;
}

}  // namespace

void run_on_threads(int n, const std::function<void(int)>& task) {
  if (n <= 1) {
    task(0);
    return;
  }
  pool().run(n, task);
}

int pool_threads() { return pool().size(); }

}  // namespace parray::detail
