// The narrow edge tiles of the AVX-512 microkernel in context: one row block of
// the packed GEMM's down-columns loop (16 row tiles x all panels of N, kc 1024,
// b_next as driver.cpp gives it), the last panel by the full tile into the edge
// buffer or by the narrow tile, the two alternating in one process (40 times
// each, median) so that the VM's drift falls on both (docs/perf-notes.md, CPU
// section). Not part of the build; after `make build`:
//   g++ -O2 -std=c++20 -I src/cpu/gemm bench/micro/cpu_edge_tiles.cpp build/libparray.a -fopenmp \
//       -o /tmp/cpu_edge_tiles && taskset -c 1 /tmp/cpu_edge_tiles
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include "microkernel.hpp"
using namespace parray::cpu;
template <class T>
void bench(const MicroKernel<T>& uk, const char* name, index_t n_cols) {
  const index_t kc = 1024, mc = 128; const int mr = uk.mr, nr = uk.nr, L = uk.lanes;
  const index_t panels = (n_cols + nr - 1) / nr, last_cols = n_cols - (panels - 1) * nr;
  const int vecs = (last_cols + L - 1) / L;
  std::vector<T> a(mc * kc), b(panels * nr * kc), c(mc * n_cols), edge(16 * 64);
  for (auto& x : a) x = T(std::rand() % 7 - 3) / 4; for (auto& x : b) x = T(std::rand() % 5 - 2) / 4;
  std::vector<index_t> rows(mc); for (index_t i = 0; i < mc; ++i) rows[i] = i * n_cols;
  index_t edge_rows[16]; for (int i = 0; i < mr; ++i) edge_rows[i] = i * nr;
  const index_t panel_lines = (nr * kc * (index_t)sizeof(T) + 63) / 64;
  auto block = [&](bool narrow) {
    for (index_t jp = 0; jp < panels; ++jp) {
      const T* bp = b.data() + jp * nr * kc;
      const T* next = b.data() + (jp + 1 < panels ? jp + 1 : 0) * nr * kc;
      for (index_t ir = 0; ir < mc; ir += mr) {
        const index_t first_line = ir / mr * (kc / 4);
        const T* b_next = first_line < panel_lines ? next + first_line * 64 / (index_t)sizeof(T) : nullptr;
        const T* ap = a.data() + ir * kc;
        if (jp + 1 < panels || last_cols == nr) uk.run(kc, ap, bp, T(1), T(0), c.data() + jp * nr, rows.data() + ir, b_next);
        else {
          auto f = narrow && vecs <= 2 ? uk.narrow[vecs - 1] : uk.run;
          f(kc, ap, bp, T(1), T(0), edge.data(), edge_rows, b_next);
          for (int r = 0; r < mr; ++r) for (index_t j = 0; j < last_cols; ++j) c[(ir + r) * n_cols + jp * nr + j] = edge[r * nr + j];
        }
      }
    }
  };
  std::vector<double> t[2];
  for (int rep = 0; rep < 40; ++rep)
    for (int nw = 0; nw < 2; ++nw) {
      auto t0 = std::chrono::steady_clock::now(); block(nw); t[nw].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  for (auto& v : t) std::sort(v.begin(), v.end());
  const double flops = 2.0 * mc * n_cols * kc;
  std::printf("%s n=%ld last panel %ld cols (%d vec): full %.3f ms (%.1f GF)  narrow %.3f ms (%.1f GF)  narrow/full %.3f\n", name, n_cols, last_cols, vecs,
              t[0][20] * 1e3, flops / t[0][20] / 1e9, t[1][20] * 1e3, flops / t[1][20] / 1e9, t[1][20] / t[0][20]);
}
int main() {
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("cpu_edge_tiles: this CPU has no AVX-512\n");
    return 0;
  }
  for (int r = 0; r < 2; ++r) {
    bench(microkernel_avx512_f64(), "f64", 1024); bench(microkernel_avx512_f64(), "f64", 2048); bench(microkernel_avx512_f64(), "f64", 1040);
    bench(microkernel_avx512_f32(), "f32", 1024); bench(microkernel_avx512_f32(), "f32", 2048);
  }
}
