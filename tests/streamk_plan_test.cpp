// The stream-K tail's plan (parray/cuda/streamk_plan.hpp): which tiles run
// whole, and that the blocks' runs cover the tail's k-tiles exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "parray/cuda/streamk_plan.hpp"

namespace {

using namespace parray::cuda;  // the plan's types and functions under test

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

// The tail kernel's pieces (one per block): every k-tile of the tail in
// exactly one piece, each piece inside one tile and in the slot its run has
// there (unique per tile, below blocks_on); the first p.blocks pieces start
// the runs in run order, the rest follow longest first.
void expect_pieces(const StreamKPlan& p, int kts) {
  const std::vector<StreamKPiece> pieces = streamk_pieces(p, kts);
  ASSERT_GE(int(pieces.size()), p.blocks);
  std::vector<int> seen(static_cast<size_t>(p.tiles) * kts, 0);
  std::vector<std::vector<int>> slots(static_cast<size_t>(p.tiles));
  for (size_t i = 0; i < pieces.size(); ++i) {
    const StreamKPiece& x = pieces[i];
    ASSERT_GE(x.tile, 0);
    ASSERT_LT(x.tile, p.tiles);
    ASSERT_GE(x.k0, 0);
    ASSERT_LT(x.k0, x.k1) << "piece " << i << " is empty";
    ASSERT_LE(x.k1, kts);
    for (int k = x.k0; k < x.k1; ++k) ++seen[static_cast<size_t>(x.tile) * kts + k];
    EXPECT_GE(x.slot, 0);
    EXPECT_LT(x.slot, p.blocks_on(x.tile, kts));
    slots[static_cast<size_t>(x.tile)].push_back(x.slot);
    if (int(i) < p.blocks) {
      EXPECT_EQ(static_cast<long long>(x.tile) * kts + x.k0, static_cast<long long>(i) * p.iters_per_block)
          << "piece " << i << " starts run " << i;
    } else if (int(i) > p.blocks) {
      EXPECT_LE(x.k1 - x.k0, pieces[i - 1].k1 - pieces[i - 1].k0) << "the rest longest first";
    }
  }
  for (size_t it = 0; it < seen.size(); ++it) ASSERT_EQ(seen[it], 1) << "k-tile " << it;
  for (auto& s : slots) {
    std::sort(s.begin(), s.end());
    EXPECT_TRUE(std::adjacent_find(s.begin(), s.end()) == s.end()) << "two pieces in one slot";
  }
}

TEST(StreamKPlan, H100WideTileAt4096And8192) {
  // 128 x 256 tiles, one per SM on 132 SMs, k-tiles of 16. At 8192^2 the
  // last wave is half empty over 16: a tail of the 68 tiles past 15 waves.
  const StreamKPlan p8 = plan_streamk_tail(64 * 32, 512, 132, 128 * 256, true, false);
  EXPECT_EQ(p8.tiles, 68);  // 2048 = 15 x 132 + 68
  EXPECT_EQ(p8.dp_tiles, 15 * 132);
  EXPECT_EQ(p8.iters_per_block, 264);  // ceil(68 * 512 / 132)
  expect_covers(p8, 2048, 512, 132);
  // At 4096^2 (512 = 3 x 132 + 116) the tail is a fifth of the work.
  const StreamKPlan p4 = plan_streamk_tail(32 * 16, 256, 132, 128 * 256, false, false);
  EXPECT_EQ(p4.tiles, 116);
  EXPECT_EQ(p4.iters_per_block, 225);  // ceil(116 * 256 / 132)
  expect_covers(p4, 512, 256, 132);
  expect_pieces(p4, 256);
  expect_pieces(p8, 512);
  // Runs of 225 k-tiles over tiles of 256: 132 runs, 115 of them cross a
  // tile boundary, so 247 pieces; the longest rest goes first.
  const std::vector<StreamKPiece> pieces = streamk_pieces(p4, 256);
  EXPECT_EQ(pieces.size(), 247u);
  EXPECT_EQ(pieces[132].k1 - pieces[132].k0, 221);
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
    expect_pieces(p, kts);
    ++planned;
  }
  EXPECT_GT(planned, 200);
}

// The K split's parts share one tail: their whole tiles together are full
// waves, their tails add up to the union's partial wave (plus one wave when
// that is under half full), each part's runs cover its tail exactly once on
// its share of the slots, and the shares add up to at most all slots.
void expect_parts_share(long long tiles, const std::vector<int>& kts, long long slots) {
  const int parts = int(kts.size());
  const long long rem = tiles * parts % slots, all_tail = 2 * rem >= slots ? rem : rem + slots;
  long long dp = 0, tail = 0, blocks = 0;
  for (int q = 0; q < parts; ++q) {
    const StreamKPlan p = plan_parts_tail(tiles, kts[size_t(q)], slots, parts, q);
    ASSERT_GT(p.tiles, 0) << "part " << q;
    EXPECT_EQ(p.dp_tiles + p.tiles, tiles);
    EXPECT_LE(p.blocks, std::max<long long>(1, (slots * p.tiles + all_tail - 1) / all_tail))
        << "part " << q << ": more than its share of the slots";
    dp += p.dp_tiles, tail += p.tiles, blocks += p.blocks;
    const long long iters = static_cast<long long>(p.tiles) * kts[size_t(q)];
    EXPECT_GE(static_cast<long long>(p.blocks) * p.iters_per_block, iters);
    EXPECT_LT(static_cast<long long>(p.blocks - 1) * p.iters_per_block, iters) << "no empty run";
    expect_pieces(p, kts[size_t(q)]);
  }
  EXPECT_EQ(dp % slots, 0) << "the parts' whole tiles are full waves together";
  EXPECT_EQ(tail, all_tail);
  EXPECT_LE(blocks, slots + parts) << "the parts' runs share the slots";
}

TEST(StreamKPlan, KSplitPartsShareOneTail) {
  // 4096^3 on an H100 over 2, 4, 8 parts (512 tiles of 128 x 256 each, 132
  // slots): 1024 = 7 x 132 + 100 -> 50 tiles each, over a sixteenth of 512:
  // none; 2048 = 15 x 132 + 68 -> 17 each; 4096 = 31 x 132 + 4 -> a wave
  // more, 136 tiles, 17 each. 8192^3 over 2: 4096 = 31 x 132 + 4 -> 68 of 2048.
  EXPECT_EQ(plan_parts_tail(512, 128, 132, 2, 1).tiles, 0);
  EXPECT_EQ(plan_parts_tail(512, 128, 132, 2, 1, true).tiles, 50);  // tests force it
  expect_parts_share(512, {64, 64, 64, 64}, 132);
  expect_parts_share(512, std::vector<int>(8, 32), 132);
  EXPECT_EQ(plan_parts_tail(512, 32, 132, 8, 7).tiles, 17);
  expect_parts_share(2048, {256, 256}, 132);
  EXPECT_EQ(plan_parts_tail(2048, 256, 132, 2, 0).tiles, 68);
  // Uneven k ranges (K not a multiple of the parts) and small forced slot counts.
  expect_parts_share(48, {7, 6, 6}, 5);
  expect_parts_share(40, {19, 19, 19, 18, 18, 18, 18, 18}, 11);
  // None: whole waves, or fewer tiles than slots, or a part outside.
  EXPECT_EQ(plan_parts_tail(66, 32, 132, 2, 0).tiles, 0);
  EXPECT_EQ(plan_parts_tail(40, 32, 132, 2, 0).tiles, 0);
  EXPECT_EQ(plan_parts_tail(512, 32, 132, 2, 2).tiles, 0);
  std::mt19937 rng(5);
  int planned = 0;
  for (int t = 0; t < 400; ++t) {
    const long long slots = 1 + rng() % 40, tiles = 1 + rng() % 600;
    const int parts = 1 + int(rng() % 8);
    if (tiles * parts < slots || tiles * parts % slots == 0) continue;
    const long long rem = tiles * parts % slots, tail = 2 * rem >= slots ? rem : rem + slots;
    // A part's share would exceed a sixteenth of its tiles, or some part would
    // have none: those parts run whole tiles only.
    if (16 * ((tail + parts - 1) / parts) > tiles || tail < parts) continue;
    std::vector<int> kts(static_cast<size_t>(parts), 1);
    for (int& k : kts) k = 1 + int(rng() % 40);
    expect_parts_share(tiles, kts, slots);
    ++planned;
  }
  EXPECT_GT(planned, 50);
}

// The whole joint tail to the part launched last, where it is at most a
// sixth of a part's tiles: the others run whole tiles only; together with
// the last part's whole tiles they are full waves, and its pieces cover the
// union's partial wave (plus a wave when that is under half full) over all
// the slots. A larger tail is shared out as without the flag.
TEST(StreamKPlan, KSplitTailToTheLastPart) {
  // 4096^3 on 132 slots (512 tiles per part): 4 parts, 2048 = 15 x 132 + 68,
  // all 68 to part 3; 2 parts, 1024 = 7 x 132 + 100, over a sixth of 512:
  // shared out (50 each, over a sixteenth: none); 8 parts, 136 tiles: shared
  // (17 each). 8192^3 over 2 parts (2048 tiles each): 136 to part 1.
  EXPECT_EQ(plan_parts_tail(512, 64, 132, 4, 3, false, true).tiles, 68);
  EXPECT_EQ(plan_parts_tail(512, 64, 132, 4, 0, false, true).tiles, 0);
  EXPECT_EQ(plan_parts_tail(512, 128, 132, 2, 1, false, true).tiles, 0);
  EXPECT_EQ(plan_parts_tail(512, 32, 132, 8, 7, false, true).tiles, 17);
  EXPECT_EQ(plan_parts_tail(2048, 256, 132, 2, 1, false, true).tiles, 136);
  EXPECT_EQ(plan_parts_tail(2048, 256, 132, 2, 0, false, true).tiles, 0);
  std::mt19937 rng(9);
  int planned = 0, shared = 0;
  for (int t = 0; t < 600; ++t) {
    const long long slots = 1 + rng() % 40, tiles = 1 + rng() % 600;
    const int parts = 1 + int(rng() % 8), kts = 1 + int(rng() % 40);
    const long long all = tiles * parts, rem = all % slots, tail = 2 * rem >= slots ? rem : rem + slots;
    if (all >= slots && rem != 0 && 6 * tail > tiles) {  // shared out, as without the flag
      for (int q = 0; q < parts; ++q) {
        const StreamKPlan a = plan_parts_tail(tiles, kts, slots, parts, q, false, true);
        const StreamKPlan b = plan_parts_tail(tiles, kts, slots, parts, q);
        EXPECT_EQ(a.tiles, b.tiles);
        EXPECT_EQ(a.dp_tiles, b.dp_tiles);
        EXPECT_EQ(a.blocks, b.blocks);
      }
      ++shared;
      continue;
    }
    for (int q = 0; q + 1 < parts; ++q) EXPECT_EQ(plan_parts_tail(tiles, kts, slots, parts, q, false, true).tiles, 0);
    const StreamKPlan p = plan_parts_tail(tiles, kts, slots, parts, parts - 1, false, true);
    if (all < slots || rem == 0) {
      EXPECT_EQ(p.tiles, 0) << tiles << " tiles x " << parts << " parts on " << slots;
      continue;
    }
    EXPECT_EQ(p.tiles, tail);
    EXPECT_EQ(p.dp_tiles + p.tiles, tiles);
    EXPECT_EQ((all - tail) % slots, 0) << "the whole tiles of all parts are full waves";
    EXPECT_LE(p.blocks, slots);
    const long long iters = static_cast<long long>(p.tiles) * kts;
    EXPECT_GE(static_cast<long long>(p.blocks) * p.iters_per_block, iters);
    EXPECT_LT(static_cast<long long>(p.blocks - 1) * p.iters_per_block, iters) << "no empty run";
    expect_pieces(p, kts);
    ++planned;
  }
  EXPECT_GT(planned, 100);
  EXPECT_GT(shared, 50);
}

}  // namespace
