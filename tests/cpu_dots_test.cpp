// The GEMV's dot-product kernels (src/cpu/gemv/dots.hpp) of every instruction
// set this CPU runs, not only the one it selects: 1, 2, 4 and the widest
// step's rows and the tiles of dot products, over every length up to five
// vectors' worth and beyond, each row followed by NaN (a kernel that reads
// past its row's end returns NaN), against an FP64 sum; nothing written past
// the output.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "../src/cpu/gemm/isa.hpp"
#include "../src/cpu/gemv/dots.hpp"

using namespace parray::cpu;

namespace {

template <class T>
void expect_dots_agree(Isa isa) {
  const DotKernel<T>& kernel = dot_kernel<T>(isa);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  const T nan = std::numeric_limits<T>::quiet_NaN();
  std::vector<index_t> lengths;
  for (index_t n = 0; n <= 80; ++n) lengths.push_back(n);
  for (index_t n : {127, 128, 129, 1000, 4099}) lengths.push_back(n);
  for (index_t n : lengths) {
    // Eight rows and x, each with 16 NaNs past its end.
    std::vector<std::vector<T>> rows(9, std::vector<T>(static_cast<std::size_t>(n) + 16, nan));
    for (auto& r : rows)
      for (index_t j = 0; j < n; ++j) r[static_cast<std::size_t>(j)] = static_cast<T>(uniform(rng));
    const T* a[8];
    for (int r = 0; r < 8; ++r) a[r] = rows[static_cast<std::size_t>(r)].data();
    const T* x = rows[8].data();
    const double u = std::numeric_limits<T>::epsilon() / 2;
    // Any order of summation: gamma_n of the sum of magnitudes (docs/verification.md, rule 3).
    auto expect_dot = [&](T got, const T* p, const T* q, const char* what) {
      double exact = 0, magnitude = 0;
      for (index_t j = 0; j < n; ++j) {
        exact += double(p[j]) * double(q[j]);
        magnitude += std::abs(double(p[j]) * double(q[j]));
      }
      EXPECT_LE(std::abs(double(got) - exact), 2.0 * double(n + 4) * u * magnitude)
          << kernel.name << ", " << what << ", n = " << n << ": " << got;
    };
    // Each tile: its rows against x and the first rows as B's columns.
    const T* b[4] = {x, a[0], a[1], a[2]};
    for (int w = 0; w < 2; ++w) {
      const int width = w == 0 ? 4 : 2, count = kernel.tiles[w].rows * width;
      T tile[33];
      std::fill(tile, tile + 33, nan);
      kernel.tiles[w].run(a, b, n, tile);
      for (int e = 0; e < 33; ++e) {
        if (e >= count) {
          EXPECT_TRUE(std::isnan(tile[e])) << kernel.name << ": a tile wrote past its " << count << " sums";
          continue;
        }
        expect_dot(tile[e], a[e / width], b[e % width], width == 4 ? "4-column tile" : "2-column tile");
      }
    }
    for (int which = 0; which < 3; ++which) {
      const int count = which == 2 ? 4 : which + 1;
      T out[4] = {nan, nan, nan, nan};
      kernel.rows[which](a, x, n, out);
      for (int r = 0; r < 4; ++r) {
        if (r >= count) {
          EXPECT_TRUE(std::isnan(out[r])) << kernel.name << ": wrote past its " << count << " rows";
          continue;
        }
        expect_dot(out[r], a[r], x, "rows");
      }
    }
    T widest[9];
    std::fill(widest, widest + 9, nan);
    kernel.widest(a, x, n, widest);
    for (int r = 0; r < 9; ++r) {
      if (r >= kernel.widest_rows) {
        EXPECT_TRUE(std::isnan(widest[r])) << kernel.name << ": wrote past its " << kernel.widest_rows << " rows";
        continue;
      }
      expect_dot(widest[r], a[r], x, "widest rows");
    }
  }
}

}  // namespace

TEST(CpuDots, EveryInstructionSetAgreesWithFp64Sums) {
  int ran = 0;
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512}) {
    if (!cpu_supports(isa)) continue;  // the kernels of an ISA this CPU lacks cannot run here
    expect_dots_agree<float>(isa);
    expect_dots_agree<double>(isa);
    ++ran;
  }
  EXPECT_GE(ran, 1);
}
