// The work list of ladder step 15 (src/cuda/gemm/15_wgmma_persistent.cuh):
// its tiles, and how many parts K is split into when the tiles alone leave
// SMs idle. Plain C++ (host and device) so that the CPU tests check the plan.
#pragma once

#include <algorithm>

#include "parray/core.hpp"

namespace parray::cuda {

// tiles_m x tiles_n tiles of C, each cut into `splits` runs of k_per k-tiles
// (the last one shorter, none empty), for each of `batch` products of a
// strided batch: units() work units, run by a persistent grid of min(units,
// SMs) blocks.
struct WgmmaWork {
  int tiles_m = 0, tiles_n = 0, splits = 1, k_tiles = 0, k_per = 0;
  // With splits > 1: the floats between two parts' slices of the workspace
  // the kernel writes (C's shape, row-major) and a second kernel sums.
  long long slice = 0;
  // A strided batch (never split): C of product z at z * c_stride floats.
  int batch = 1;
  long long c_stride = 0;
  PARRAY_HD long long units() const { return static_cast<long long>(batch) * tiles_m * tiles_n * splits; }
};

// The plan for an M x N x K product in bm x bn tiles of bk k-tiles on `sms`
// SMs (one block each), a full k-tile step of one block taking step_us. K is
// split only when the tiles are fewer than the SMs, into the count with the
// least estimated time: waves of units x (k-tiles per unit + kUnitSteps, a
// unit's first copies and epilogue, which the persistent grid overlaps only
// in part) x step_us, plus, for a split, C scaled by beta and each part's
// atomic adds into it (C's bytes (parts + 2) times at choose_splits's
// summing rate, plus the scaling pass's launch; docs/perf-notes.md). Each
// part keeps >= kMinSteps k-tiles, and there are at most as many parts as
// SMs: a small C with a long K (one tile of C, K in hundreds of k-tiles)
// spreads over the whole GPU.
// A full k-tile step of one block of step 15 in microseconds: a Hopper SM's
// dense tensor rate (H100: ~3.7 TFLOP/s per SM in TF32, twice that in
// BF16/FP16) over the tile's products.
inline double wgmma_step_us(int input_bytes, int bm, int bn, int bk, int products) {
  const double per_sm = input_bytes == 4 ? 3.7e6 : 7.4e6;  // FLOP per us
  return 2.0 * bm * bn * bk * products / per_sm;
}

inline WgmmaWork plan_wgmma_work(long long M, long long N, long long K, int bm, int bn, int bk, int sms,
                                 double step_us) {
  constexpr int kUnitSteps = 2, kMinSteps = 4;
  WgmmaWork w;
  w.tiles_m = static_cast<int>((M + bm - 1) / bm);
  w.tiles_n = static_cast<int>((N + bn - 1) / bn);
  w.k_tiles = static_cast<int>((K + bk - 1) / bk);
  w.k_per = w.k_tiles;
  const long long tiles = static_cast<long long>(w.tiles_m) * w.tiles_n;
  if (sms <= 0 || tiles >= sms) return w;
  auto parts_of = [&](int per) { return (w.k_tiles + per - 1) / per; };
  auto cost = [&](int s) {
    const int per = (w.k_tiles + s - 1) / s, parts = parts_of(per);
    const long long waves = (tiles * parts + sms - 1) / sms;
    double t = double(waves) * double(per + kUnitSteps) * step_us;
    if (parts > 1) t += double(M) * double(N) * 4.0 * double(parts + 2) / 2.5e6 + 3.0;
    return t;
  };
  int best = 1;
  double best_cost = cost(1);
  for (int s = 2; s <= sms && (w.k_tiles + s - 1) / s >= kMinSteps; ++s)
    if (cost(s) < best_cost) best = s, best_cost = cost(s);
  w.k_per = (w.k_tiles + best - 1) / best;
  w.splits = parts_of(w.k_per);
  return w;
}

// Step 15's producer threads copying a row-major A whose rows are off the
// 16-byte grid TMA needs (load_k_tiles_a_by_threads): their 4-byte copies
// land a k-tile of A (128 rows x 32 floats) about every kThreadsATileUs on
// an SM, slower than TMA's (the measured rates: docs/perf-notes.md), which
// bounds the kernel's k-step where its products, at the tensor cores'
// sustained share kWgmmaSustained of wgmma_step_us, take less.
constexpr double kThreadsATileUs = 1.4, kWgmmaSustained = 0.75;

// The time the threads' copies add to the kernel of plan w (step_us:
// wgmma_step_us's full-rate k-step): each SM's k-tiles at kThreadsATileUs
// where its products take less.
inline double a_threads_extra_us(const WgmmaWork& w, int sms, double step_us) {
  if (sms <= 0) return 0;
  const double k_tiles_per_sm = double((w.units() + sms - 1) / sms) * double(w.k_per);
  return k_tiles_per_sm * std::max(0.0, kThreadsATileUs - step_us / kWgmmaSustained);
}

// Whether the threads' copies cost less than a pass over A first (A read and
// written once: pass_bytes per element at dram_bytes_per_us).
inline bool a_threads_pay(const WgmmaWork& w, int sms, double step_us, long long M, long long K, double pass_bytes,
                          double dram_bytes_per_us) {
  return a_threads_extra_us(w, sms, step_us) < pass_bytes * double(M) * double(K) / dram_bytes_per_us;
}

}  // namespace parray::cuda
