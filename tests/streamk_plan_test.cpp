// The stream-K tail's plan (parray/cuda/streamk_plan.hpp): which tiles run
// whole, and that the blocks' runs cover the tail's k-tiles exactly once.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "parray/cuda/streamk_plan.hpp"

namespace {

using parray::cuda::plan_streamk_tail;
using parray::cuda::StreamKPlan;

// Every k-tile of the tail in exactly one block's run; every tile's blocks
// within segments_per_tile; each block's place on a tile (q) below it.
void expect_covers(const StreamKPlan& p, long long tiles, int kts, long long slots) {
  ASSERT_GT(p.tiles, 0);
  EXPECT_EQ(p.dp_tiles + p.tiles, tiles);
  EXPECT_EQ(p.dp_tiles % slots, 0) << "the whole tiles are full waves";
  EXPECT_LE(p.blocks, slots);
  const long long iters = static_cast<long long>(p.tiles) * kts;
  std::vector<int> seen(static_cast<size_t>(iters), 0);
  for (int b = 0; b < p.blocks; ++b) {
    const long long begin = static_cast<long long>(b) * p.iters_per_block;
    ASSERT_LT(begin, iters) << "block " << b << " has an empty run";
    for (long long it = begin; it < std::min(iters, begin + p.iters_per_block); ++it) {
      ++seen[static_cast<size_t>(it)];
      const int lt = int(it / kts), q = b - p.first_block(lt, kts);
      EXPECT_GE(q, 0);
      EXPECT_LT(q, p.blocks_on(lt, kts));
    }
  }
  for (long long it = 0; it < iters; ++it) ASSERT_EQ(seen[static_cast<size_t>(it)], 1) << "k-tile " << it;
  for (int lt = 0; lt < p.tiles; ++lt) EXPECT_LE(p.blocks_on(lt, kts), p.segments_per_tile);
}

TEST(StreamKPlan, H100WideTileAt4096And8192) {
  // 128 x 256 tiles, one per SM on 132 SMs, k-tiles of 16. At 8192^2 the
  // last wave is half empty over 16: a tail of the 68 tiles past 15 waves.
  const StreamKPlan p8 = plan_streamk_tail(64 * 32, 512, 132, 128 * 256, true, false);
  EXPECT_EQ(p8.tiles, 68);  // 2048 = 15 x 132 + 68
  EXPECT_EQ(p8.dp_tiles, 15 * 132);
  EXPECT_EQ(p8.iters_per_block, 264);  // ceil(68 * 512 / 132)
  expect_covers(p8, 2048, 512, 132);
  // At 4096^2 (512 = 3 x 132 + 116) the tail would be a fifth of the work,
  // run by the slower tail kernel: not taken unless asked for.
  EXPECT_EQ(plan_streamk_tail(32 * 16, 256, 132, 128 * 256, false, false).tiles, 0);
  const StreamKPlan p4 = plan_streamk_tail(32 * 16, 256, 132, 128 * 256, false, true);
  EXPECT_EQ(p4.tiles, 116);
  EXPECT_EQ(p4.iters_per_block, 225);  // ceil(116 * 256 / 132)
  expect_covers(p4, 512, 256, 132);
  // The 128 x 128 tile, two per SM: the same at 8192^2 (4096 = 15 x 264 + 136).
  EXPECT_EQ(plan_streamk_tail(64 * 64, 512, 264, 128 * 128, false, false).tiles, 136);
}

TEST(StreamKPlan, NoneWithoutAPartialWaveOrWithTooFewTiles) {
  EXPECT_EQ(plan_streamk_tail(264, 256, 132, 128 * 256, false, true).tiles, 0);  // two full waves
  EXPECT_EQ(plan_streamk_tail(100, 256, 132, 128 * 256, false, true).tiles, 0);  // fewer tiles than slots
  EXPECT_EQ(plan_streamk_tail(0, 256, 132, 128 * 256, false, true).tiles, 0);
  // Many waves: the last one's idle SMs cost under 1.5 %, not worth the fixup.
  EXPECT_EQ(plan_streamk_tail(100 * 132 + 7, 64, 132, 128 * 128, false, false).tiles, 0);
}

TEST(StreamKPlan, AFewTilesOverTakeOneWaveMore) {
  // 132 + 10 tiles: 10 tiles over 132 blocks would be slivers; the tail is
  // 142 tiles, none run whole.
  const StreamKPlan p = plan_streamk_tail(142, 128, 132, 128 * 256, false, true);
  EXPECT_EQ(p.tiles, 142);
  EXPECT_EQ(p.dp_tiles, 0);
  expect_covers(p, 142, 128, 132);
}

TEST(StreamKPlan, RandomGridsAreCoveredExactlyOnce) {
  std::mt19937 rng(17);
  int planned = 0;
  for (int t = 0; t < 400; ++t) {
    const long long slots = 1 + rng() % 40, tiles = 1 + rng() % 300;
    const int kts = 1 + int(rng() % 70);
    const StreamKPlan p = plan_streamk_tail(tiles, kts, slots, 128 * 128, t % 2 == 0, true);
    if (tiles < slots || tiles % slots == 0) {
      EXPECT_EQ(p.tiles, 0);
      continue;
    }
    expect_covers(p, tiles, kts, slots);
    ++planned;
  }
  EXPECT_GT(planned, 200);
}

}  // namespace
