#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <vector>

#include "parray/thread_array.hpp"

using namespace parray;

TEST(CpuThreadArray, CoordinatesFigure5) {
  CpuThreadArray threads({2, 2});  // Parray's pthd [2][2]
  std::mutex m;
  std::set<std::tuple<int, int, int>> seen;
  threads.detour([&](const ThreadCoord& t) {
    std::lock_guard<std::mutex> lock(m);
    seen.insert({t.tid(), t[0], t[1]});
  });
  EXPECT_EQ(seen, (std::set<std::tuple<int, int, int>>{{0, 0, 0}, {1, 0, 1}, {2, 1, 0}, {3, 1, 1}}));
}

TEST(CpuThreadArray, OneAndThreeDimensions) {
  std::atomic<int> sum{0};
  CpuThreadArray({5}).detour([&](const ThreadCoord& t) { sum += t[0] + 1; });
  EXPECT_EQ(sum.load(), 15);
  std::atomic<int> count{0}, bad{0};
  CpuThreadArray({2, 3, 4}).detour([&](const ThreadCoord& t) {
    ++count;
    if (t.tid() != (t[0] * 3 + t[1]) * 4 + t[2]) ++bad;
  });
  EXPECT_EQ(count.load(), 24);
  EXPECT_EQ(bad.load(), 0);
}

TEST(CpuThreadArray, SyncIsABarrier) {
  std::atomic<int> before{0};
  std::atomic<int> wrong{0};
  CpuThreadArray({4}).detour([&](const ThreadCoord& t) {
    ++before;
    t.sync();
    if (before.load() != 4) ++wrong;  // everyone arrived before anyone went on
  });
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CpuThreadArray, ExceptionsReachTheCaller) {
  CpuThreadArray threads({2, 2});
  EXPECT_THROW(threads.detour([](const ThreadCoord& t) {
    if (t.tid() == 3) throw std::runtime_error("thread 3 failed");
    t.sync();  // the others must not hang waiting for thread 3
  }),
               std::runtime_error);
  EXPECT_THROW(CpuThreadArray({0, 2}), Error);
  EXPECT_THROW(CpuThreadArray({1, 1, 1, 1, 1}), Error);
}

// The threads of a detour are kept for the next one (thread_pool.cpp): the
// same system threads run the second detour, and the pool does not grow.
TEST(CpuThreadArray, ThreadsAreKeptBetweenDetours) {
  std::mutex m;
  auto ids_of_a_detour = [&] {
    std::set<std::thread::id> ids;
    CpuThreadArray({4}).detour([&](const ThreadCoord& t) {
      t.sync();  // all four at once: none can run two tasks
      std::lock_guard<std::mutex> lock(m);
      ids.insert(std::this_thread::get_id());
    });
    return ids;
  };
  const std::set<std::thread::id> first = ids_of_a_detour();
  const int pooled = detail::pool_threads();
  EXPECT_EQ(first.size(), 4u);
  EXPECT_GE(pooled, 3);
  const std::set<std::thread::id> second = ids_of_a_detour();
  EXPECT_EQ(first, second);
  EXPECT_EQ(detail::pool_threads(), pooled);
}

// A detour inside a detour gets threads of its own (more are started when
// the pool's are busy): with barriers at both levels nothing waits forever.
TEST(CpuThreadArray, NestedDetoursEachGetTheirThreads) {
  std::atomic<int> inner{0};
  CpuThreadArray({3}).detour([&](const ThreadCoord& outer) {
    outer.sync();
    CpuThreadArray({2, 2}).detour([&](const ThreadCoord& t) {
      t.sync();
      ++inner;
    });
    outer.sync();
  });
  EXPECT_EQ(inner.load(), 12);
  // A failing detour leaves the pool usable.
  EXPECT_THROW(CpuThreadArray({3}).detour([](const ThreadCoord& t) {
    if (t.tid() == 1) throw std::runtime_error("x");
  }),
               std::runtime_error);
  std::atomic<int> after{0};
  CpuThreadArray({6}).detour([&](const ThreadCoord&) { ++after; });
  EXPECT_EQ(after.load(), 6);
}

TEST(StreamThreadArray, RunsEachThreadInTurnOnTheCaller) {
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<std::tuple<int, int, int>> order;
  bool other_thread = false;
  StreamThreadArray({2, 3}).detour([&](const ThreadCoord& t) {
    if (std::this_thread::get_id() != caller) other_thread = true;
    order.push_back({t.tid(), t[0], t[1]});
  });
  EXPECT_FALSE(other_thread);
  EXPECT_EQ(order, (std::vector<std::tuple<int, int, int>>{{0, 0, 0}, {1, 0, 1}, {2, 0, 2}, {3, 1, 0}, {4, 1, 1},
                                                            {5, 1, 2}}));
}

TEST(StreamThreadArray, HasNoBarrierAndChecksItsShape) {
  // A body that waits for the other threads cannot run in turn: it must say so.
  EXPECT_THROW(StreamThreadArray({2}).detour([](const ThreadCoord& t) { t.sync(); }), Error);
  EXPECT_THROW(StreamThreadArray({0}), Error);
  EXPECT_THROW(StreamThreadArray({1, 2, 3, 4, 5}), Error);
}

// The paper's coordinates on a nested shape: $tid_0$ is the index in the
// whole of dimension 0, $tid_0_1$ its digit in sub-dimension 1.
TEST(ThreadShape, NestedCoordinatesAsInThePaper) {
  const ThreadShape s = ThreadShape::parse("[[2][3]][4]");
  EXPECT_EQ(s.rank(), 2);
  EXPECT_TRUE(s.is_nested(0));
  EXPECT_FALSE(s.is_nested(1));
  EXPECT_EQ(s.dim(0), 6);
  EXPECT_EQ(s.dim(0, 1), 3);
  EXPECT_EQ(s.size(), 24);
  std::mutex m;
  std::set<std::tuple<int, int, int, int, int>> seen;
  CpuThreadArray(s).detour([&](const ThreadCoord& t) {
    std::lock_guard<std::mutex> lock(m);
    seen.insert({t.tid(), t.tid(0), t.tid(0, 0), t.tid(0, 1), t.tid(1)});
  });
  ASSERT_EQ(seen.size(), 24u);
  for (const auto& [tid, t0, t00, t01, t1] : seen) {
    EXPECT_EQ(tid, t0 * 4 + t1);
    EXPECT_EQ(t0, t00 * 3 + t01);
  }
}

TEST(ThreadShape, ParsesExpressionsAndPrintsBack) {
  const ThreadShape fig21 = ThreadShape::parse("[[N/16][N/256]][[4][32]]", {{"N", 2048}});
  EXPECT_EQ(fig21.str(), "[[128][8]][[4][32]]");
  EXPECT_EQ(ThreadShape::parse(fig21.str()), fig21);
  EXPECT_EQ(ThreadShape({2, 2}).str(), "[2][2]");
  EXPECT_EQ(ThreadShape::nested({{64}, {256}}).str(), "[[64]][[256]]");
  EXPECT_THROW(ThreadShape::parse("[[2][[3][4]]][5]"), Error);  // three levels
  EXPECT_THROW(ThreadShape::parse("[2]["), Error);
  EXPECT_THROW(ThreadShape({65536, 65536}), Error);  // over 2^31 threads
}

// #sync over a sub-array: sync(1) in pthd [2][3] waits for the three threads
// of the same row only; sync(0) for the two of the same column.
TEST(CpuThreadArray, SyncOverASubArray) {
  std::atomic<int> row_arrived[2] = {0, 0}, col_arrived[3] = {0, 0, 0};
  std::atomic<int> wrong{0};
  CpuThreadArray({2, 3}).detour([&](const ThreadCoord& t) {
    ++row_arrived[t.tid(0)];
    t.sync(1);
    if (row_arrived[t.tid(0)].load() != 3) ++wrong;
    ++col_arrived[t.tid(1)];
    t.sync(0);
    if (col_arrived[t.tid(1)].load() != 2) ++wrong;
  });
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_THROW(CpuThreadArray({2}).detour([](const ThreadCoord& t) { t.sync(1); }), Error);
  // A failing thread leaves its row's barrier too.
  EXPECT_THROW(CpuThreadArray({2, 2}).detour([](const ThreadCoord& t) {
    if (t.tid() == 3) throw std::runtime_error("thread 3 failed");
    t.sync(1);
    t.sync(0);
  }),
               std::runtime_error);
}
