#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>

#include "parray/thread_array.hpp"

using namespace parray;

TEST(CpuThreadArray, CoordinatesFigure5) {
  CpuThreadArray threads({2, 2});  // Parray's pthd [2][2]
  std::mutex m;
  std::set<std::tuple<int, int, int>> seen;
  threads.detour([&](const ThreadCoord& t) {
    std::lock_guard<std::mutex> lock(m);
    seen.insert({t.tid, t[0], t[1]});
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
    if (t.tid != (t[0] * 3 + t[1]) * 4 + t[2]) ++bad;
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
    if (t.tid == 3) throw std::runtime_error("thread 3 failed");
    t.sync();  // the others must not hang waiting for thread 3
  }),
               std::runtime_error);
  EXPECT_THROW(CpuThreadArray({0, 2}), Error);
  EXPECT_THROW(CpuThreadArray({1, 1, 1, 1}), Error);
}
