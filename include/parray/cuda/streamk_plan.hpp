// The stream-K tail of step 12 (src/cuda/gemm/12_best.cuh): which tiles of a
// grid run as whole tiles and how the rest is cut among the SMs. Plain C++
// (host and device) so that the CPU tests check the plan.
#pragma once

#include <algorithm>
#include <vector>

#include "parray/core.hpp"

namespace parray::cuda {

// Why: a grid of `tiles` tiles on `slots` block slots (SMs x blocks per SM)
// runs in ceil(tiles / slots) waves; the last one, partly full, leaves SMs
// idle (4096^2 in 128 x 256 tiles is 512 tiles for an H100's 132 SMs: 3.88
// waves run as 4). The full waves stay whole tiles (dp_tiles, first in the
// tile order); the last partial wave's tiles — with one full wave more when
// fewer than half the slots would be busy in it, so that no block gets a
// sliver — have their k-tiles, tile after tile, cut into `blocks` equal runs
// of iters_per_block, one per slot. A tile is shared by at most
// segments_per_tile blocks.
struct StreamKPlan {
  long long dp_tiles = 0;
  int tiles = 0, blocks = 0, iters_per_block = 0, segments_per_tile = 0;
  // The first block whose run reaches tail tile lt, and how many blocks do.
  PARRAY_HD int first_block(int lt, int kts) const {
    return int(static_cast<long long>(lt) * kts / iters_per_block);
  }
  PARRAY_HD int blocks_on(int lt, int kts) const {
    return int((static_cast<long long>(lt + 1) * kts - 1) / iters_per_block) - first_block(lt, kts) + 1;
  }
};

// dp whole tiles, then `tail` tiles of kts k-tiles cut, tile after tile, into
// equal runs over `slots` slots (none when a run's k-tiles overflow an int).
inline StreamKPlan cut_tail(long long dp, long long tail, int kts, long long slots) {
  StreamKPlan p;
  const long long iters = tail * kts, per = (iters + slots - 1) / slots;
  if (iters + per > 0x7fffffff) return p;
  p.dp_tiles = dp;
  p.tiles = int(tail);
  p.iters_per_block = int(per);
  p.blocks = int((iters + per - 1) / per);
  p.segments_per_tile = int(std::min<long long>(p.blocks, (kts + per - 1) / per + 1));
  return p;
}

// The plan for `tiles` tiles of `kts` k-tiles of tile_floats results on
// `slots` slots; none (tiles == 0) when there is no partial wave, when the
// tiles are fewer than the slots (split-K's case), or, unless `always`, when
// the estimated time is not at least 1.5 % below the plain grid's. The
// estimate uses choose_splits's constants (the full-wave k-tile step, the
// summing rate; docs/perf-notes.md), runs the tail's k-tiles at the full
// waves' speed (the pieces run in a kernel whose k-loop has best_sgemm's
// register banks: 12_best.cuh) and charges the tail's sums ~2 partial tiles
// written and read per tail tile, plus C, at that rate, and a measured gap
// between the two launches. On an H100 that takes the tail at 8192^3 and
// 4096^3 (wide tile).
inline StreamKPlan plan_streamk_tail(long long tiles, int kts, long long slots, long long tile_floats, bool reads_c,
                                     bool always) {
  StreamKPlan p;
  if (slots <= 0 || kts <= 0) return p;
  const long long waves = tiles / slots, rem = tiles % slots;
  if (waves == 0 || rem == 0) return p;
  const long long tail = 2 * rem >= slots ? rem : rem + slots;
  const long long iters = tail * kts, per = (iters + slots - 1) / slots;
  if (iters + per > 0x7fffffff) return p;  // a run's k-tiles in an int
  if (!always) {
    const double step_us = 3.5;
    const double plain = double(waves + 1) * double(kts) * step_us;
    const double fixup = double(tail) * double(tile_floats) * 4.0 * (4.0 + (reads_c ? 2.0 : 1.0)) / 2.5e6 + 5.0;
    const double streamk =
        double(waves - (tail - rem) / slots) * double(kts) * step_us + double(per) * step_us + fixup;
    if (streamk > 0.985 * plain) return p;
  }
  return cut_tail(tiles - tail, tail, kts, slots);
}

// The tail of a K split's part (src/cuda/multilevel/), planned for its
// `parts` products together: each is `tiles` tiles of its own k range (kts
// k-tiles), all in flight at once on their streams and adding into one C, so
// the GPU's waves are those of parts * tiles tiles — and the partial last one
// (plus a wave, as above, when it is under half full) is shared out: part
// `part` runs its last `tiles` tiles of it (tail / parts, the first parts one
// more) as a tail over its share of the slots. The parts have no fixup
// (their pieces add into C), so a tail costs only a second launch; but a
// part's pieces start only after its own whole tiles (one stream), so a share
// of more than a sixteenth of its tiles comes too late to even out the last
// wave: none then (2 x H200, 4096^3: t2's 50 of 512 tiles ran slower with a
// tail, t8's 17 of 512 faster), unless `always` (tests). None either when the parts' tiles
// fill whole waves or less than one. `last_takes_all` (the K split's
// default): the part launched last (part == parts - 1) runs
// the whole joint tail over all slots and the others none — its whole tiles
// run last, so its pieces start where the single kernel's tail would — as
// long as the tail is at most a sixth of a part's tiles; a larger one
// leaves that part's grid of whole tiles so much shorter than the others'
// that it may finish first and start the pieces early, with the others'
// last whole tiles then running alone (2 x H200, 4096^3 over 2 parts, 100 of
// 512 tiles: slower than shared out). At 4096^3 over 4 parts on an H100 the
// last part's whole tail is faster than one shared out (docs/perf-notes.md).
// Larger tails are shared out as above.
inline StreamKPlan plan_parts_tail(long long tiles, int kts, long long slots, int parts, int part,
                                   bool always = false, bool last_takes_all = false) {
  StreamKPlan p;
  if (slots <= 0 || kts <= 0 || parts <= 0 || part < 0 || part >= parts) return p;
  const long long all = tiles * parts, waves = all / slots, rem = all % slots;
  if (waves == 0 || rem == 0) return p;
  const long long tail = 2 * rem >= slots ? rem : rem + slots;
  if (last_takes_all && 6 * tail <= tiles) return part == parts - 1 ? cut_tail(tiles - tail, tail, kts, slots) : p;
  const long long mine = tail / parts + (part < tail % parts ? 1 : 0);
  if (mine == 0 || mine > tiles || (!always && 16 * mine > tiles)) return p;
  return cut_tail(tiles - mine, mine, kts, std::max<long long>(1, slots * mine / tail));
}

// One piece of a tail: k-tiles [k0, k1) of tail tile `tile`, whose partial
// sums go to slot `slot` of that tile.
struct StreamKPiece {
  int tile, k0, k1, slot;
};

// The pieces of plan p, one per block of the tail kernel, in launch order:
// first the first piece of every block's run (run order), then the runs'
// other pieces, longest first. Why one piece per block: a block that looped
// over its run's pieces ran step 12's k-loop slower (ptxas assigned its
// registers with bank conflicts, docs/perf-notes.md). Why that
// order: the GPU starts blocks in index order as SMs free up; the SMs whose
// first piece was short free up first and take the long rests, so every SM
// ends near one run's worth of k-tiles, as if it had run its own run.
inline std::vector<StreamKPiece> streamk_pieces(const StreamKPlan& p, int kts) {
  std::vector<StreamKPiece> first, rest;
  const long long iters = static_cast<long long>(p.tiles) * kts;
  for (int b = 0; b < p.blocks; ++b) {
    const long long end = std::min(iters, static_cast<long long>(b + 1) * p.iters_per_block);
    for (long long it = static_cast<long long>(b) * p.iters_per_block; it < end;) {
      const int lt = int(it / kts), k0 = int(it - static_cast<long long>(lt) * kts);
      const int k1 = int(std::min<long long>(kts, k0 + (end - it)));
      (it == static_cast<long long>(b) * p.iters_per_block ? first : rest)
          .push_back({lt, k0, k1, b - p.first_block(lt, kts)});
      it += k1 - k0;
    }
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const StreamKPiece& x, const StreamKPiece& y) { return x.k1 - x.k0 > y.k1 - y.k0; });
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

}  // namespace parray::cuda
