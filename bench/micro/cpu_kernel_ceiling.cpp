// Where FP32 GEMM on one core falls short of the FMA peak, step by step, all
// in one process: each round runs every case once in turn, and a case's figure
// is the median over the rounds of its speed divided by the peak loop's speed
// in the same round — a shared 2-vCPU machine's speed moves ±5 % within minutes,
// and a ratio taken in the same seconds cancels that (docs/perf-notes.md,
// CPU section). The cases, each a step closer to the real product:
//   peak          24 independent FMA chains in registers (the measured peak)
//   pattern       the AVX-512 kernel's k step (3 loads of B, 8 broadcasts of A,
//                 24 FMAs) at fixed addresses: the instruction mix alone
//   pattern/L1    the same step streaming through 128 k of A and B (in L1)
//   kernel/L1     the microkernel, kc 128, one tile again and again (all in L1)
//   kernel/L2     the microkernel, kc 1024, one tile: B's 192 KiB from L2, A in L1
//   block/L2      the packed driver's inner loops: 16 row tiles x 4 B panels,
//                 kc 1024, down the columns with b_next — A block and B in L2
//   block/L3      the same over 43 panels (2064 columns): B streamed from L3
//   gemm 2048     parray's gemm(), FP32 2048^3, one thread, packing included
// Not part of the build; after `make build`:
//   g++ -O2 -mavx512f -std=c++20 -I src/cpu/gemm -I include bench/micro/cpu_kernel_ceiling.cpp \
//       build/libparray.a -fopenmp -Wl,-rpath,/usr/local/cuda/lib /usr/local/cuda/lib/libcudart.so \
//       /usr/local/cuda/lib/libcublas.so -lfmt -o /tmp/cpu_kernel_ceiling && taskset -c 1 /tmp/cpu_kernel_ceiling
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include "microkernel.hpp"
#include "parray/gemm.hpp"

using namespace parray::cpu;

namespace {

alignas(64) float small_a[8 * 128], small_b[48 * 128];

#define CEILING_CLOBBERS                                                                                        \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",   \
      "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", \
      "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc", "memory"

// Nonzero operands: FMAs on zeros may draw less power and clock higher.
__attribute__((noinline)) void peak_loop(long iters) {
  asm volatile(
      "vbroadcastss (%[v]), %%zmm0\n\tvbroadcastss 4(%[v]), %%zmm1\n\t"
      ".irp r,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\tvmovaps %%zmm1, %%zmm\\r\n\t.endr\n"
      "1:\n\t.irp r,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
      "vfmadd231ps %%zmm0, %%zmm1, %%zmm\\r\n\t.endr\n\tdec %[n]\n\tjnz 1b\n\t"
      : [n] "+r"(iters)
      : [v] "r"(small_a)
      : CEILING_CLOBBERS);
}

// The microkernel's k step (microkernel_avx512.cpp), A and B at a and b.
#define CEILING_ROW(I, T, X, Y, Z)                                            \
  "vbroadcastss " #I "*4(%[a]), %%zmm" #T "\n\t"                              \
  "vfmadd231ps %%zmm0, %%zmm" #T ", %%zmm" #X "\n\t"                          \
  "vfmadd231ps %%zmm1, %%zmm" #T ", %%zmm" #Y "\n\t"                          \
  "vfmadd231ps %%zmm2, %%zmm" #T ", %%zmm" #Z "\n\t"
#define CEILING_STEP                                                          \
  "vmovups (%[b]), %%zmm0\n\tvmovups 64(%[b]), %%zmm1\n\tvmovups 128(%[b]), %%zmm2\n\t" \
  CEILING_ROW(0, 3, 8, 9, 10) CEILING_ROW(1, 4, 11, 12, 13) CEILING_ROW(2, 5, 14, 15, 16)        \
  CEILING_ROW(3, 6, 17, 18, 19) CEILING_ROW(4, 7, 20, 21, 22) CEILING_ROW(5, 3, 23, 24, 25)       \
  CEILING_ROW(6, 4, 26, 27, 28) CEILING_ROW(7, 5, 29, 30, 31)
#define CEILING_ADVANCE "add $32, %[a]\n\tadd $192, %[b]\n\t"

__attribute__((noinline)) void pattern_fixed(long blocks) {
  const float *a = small_a, *b = small_b;
  asm volatile("1:\n\t" CEILING_STEP CEILING_STEP CEILING_STEP CEILING_STEP "dec %[n]\n\tjnz 1b\n\t"
               : [n] "+r"(blocks)
               : [a] "r"(a), [b] "r"(b)
               : CEILING_CLOBBERS);
}

__attribute__((noinline)) void pattern_streaming(long passes) {
  for (long pass = 0; pass < passes; ++pass) {
    const float *a = small_a, *b = small_b;
    long blocks = 128 / 4;
    asm volatile("1:\n\t" CEILING_STEP CEILING_ADVANCE CEILING_STEP CEILING_ADVANCE CEILING_STEP CEILING_ADVANCE
                 CEILING_STEP CEILING_ADVANCE "dec %[n]\n\tjnz 1b\n\t"
                 : [n] "+r"(blocks), [a] "+r"(a), [b] "+r"(b)
                 :
                 : CEILING_CLOBBERS);
  }
}

// n floats, 64-byte aligned (the packed panels' alignment).
struct AlignedFloats {
  std::unique_ptr<float[], void (*)(void*)> p;
  std::size_t n;
  explicit AlignedFloats(std::size_t count)
      : p(static_cast<float*>(std::aligned_alloc(64, (count * sizeof(float) + 63) / 64 * 64)), std::free), n(count) {}
  float* data() { return p.get(); }
  float* begin() { return p.get(); }
  float* end() { return p.get() + n; }
};

struct Case {
  const char* name;
  double flops;
  std::function<void()> run;
  std::vector<double> seconds;
};

}  // namespace

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f")) {
    std::printf("cpu_kernel_ceiling: this CPU has no AVX-512\n");
    return 0;
  }
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 21;
  const MicroKernel<float>& uk = microkernel_avx512_f32();
  const int mr = uk.mr, nr = uk.nr;
  for (float& x : small_a) x = 1e-3f;
  for (float& x : small_b) x = 1e-3f;

  // The driver's operands: a packed 128 x 1024 A block, 43 packed B panels, C 128 x 2064.
  const index_t kc = 1024, row_tiles = 16, all_panels = 43, ldc = all_panels * nr;
  // 64-byte aligned, as the driver's packing buffers are: a std::vector's
  // storage may start 16 bytes into a line, and then every 64-byte load of
  // B splits over two lines (the kernel cases ran 3-5 points lower so).
  AlignedFloats a(row_tiles * mr * kc), b(all_panels * nr * kc), c(row_tiles * mr * ldc);
  for (float& x : a) x = float(std::rand() % 7 - 3) / 4;
  for (float& x : b) x = float(std::rand() % 5 - 2) / 4;
  std::vector<index_t> rows(row_tiles * mr);
  for (index_t i = 0; i < row_tiles * mr; ++i) rows[i] = i * ldc;
  const index_t panel_lines = nr * kc * 4 / 64;
  // Down the columns of `panels` B panels, `repeats` times: b_next as driver.cpp gives it.
  auto row_block = [&](index_t panels, int repeats) {
    for (int rep = 0; rep < repeats; ++rep)
      for (index_t jp = 0; jp < panels; ++jp) {
        const float* panel = b.data() + jp * nr * kc;
        const float* next = b.data() + (jp + 1) % panels * nr * kc;
        for (index_t tile = 0; tile < row_tiles; ++tile) {
          const index_t first_line = tile * (kc / 4);
          uk.run(kc, a.data() + tile * mr * kc, panel, 1.f, 0.f, c.data() + jp * nr, rows.data() + tile * mr,
                 first_line < panel_lines ? next + first_line * 16 : nullptr);
        }
      }
  };
  const index_t n = 2048;
  std::vector<float> ga(n * n), gb(n * n), gc(n * n);
  for (float& x : ga) x = float(std::rand() % 7 - 3) / 4;
  for (float& x : gb) x = float(std::rand() % 5 - 2) / 4;

  // Each case ~15-25 ms: long enough for the clock, short enough to alternate often.
  const double tile_flops = 2.0 * mr * nr;
  const long peak_iters = 4'000'000, pattern_blocks = 1'000'000, stream_passes = 8'000;
  const int l1_calls = 30'000, l2_calls = 4'000;
  std::vector<Case> cases;
  cases.push_back({"peak", 2.0 * 24 * 16 * peak_iters, [&] { peak_loop(peak_iters); }, {}});
  cases.push_back({"pattern", tile_flops * 4 * pattern_blocks, [&] { pattern_fixed(pattern_blocks); }, {}});
  cases.push_back({"pattern/L1", tile_flops * 128 * stream_passes, [&] { pattern_streaming(stream_passes); }, {}});
  cases.push_back({"kernel/L1", tile_flops * 128 * l1_calls, [&] {
                     for (int i = 0; i < l1_calls; ++i) uk.run(128, a.data(), b.data(), 1.f, 0.f, c.data(), rows.data(), nullptr);
                   }, {}});
  cases.push_back({"kernel/L2", tile_flops * kc * l2_calls, [&] {
                     for (int i = 0; i < l2_calls; ++i) uk.run(kc, a.data(), b.data(), 1.f, 0.f, c.data(), rows.data(), nullptr);
                   }, {}});
  cases.push_back({"block/L2", tile_flops * kc * row_tiles * 4 * 64, [&] { row_block(4, 64); }, {}});
  cases.push_back({"block/L3", tile_flops * kc * row_tiles * all_panels * 6, [&] { row_block(all_panels, 6); }, {}});
  cases.push_back({"gemm 2048", 2.0 * n * n * n, [&] {
                     parray::GemmOptions one_thread;
                     one_thread.threads = 1;
                     parray::gemm<float>(parray::Order::row_major, parray::Trans::no, parray::Trans::no, n, n, n, 1.f,
                                         ga.data(), n, gb.data(), n, 0.f, gc.data(), n, one_thread);
                   }, {}});

  for (Case& k : cases) k.run();  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (Case& k : cases) {
      const auto t0 = std::chrono::steady_clock::now();
      k.run();
      k.seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  std::printf("%-11s %9s  %s (%d rounds)\n", "case", "GFLOP/s", "% of the peak in the same round: median [quartiles]", rounds);
  for (const Case& k : cases) {
    std::vector<double> ratio, seconds = k.seconds;
    for (int r = 0; r < rounds; ++r)
      ratio.push_back(100.0 * (k.flops / k.seconds[r]) / (cases[0].flops / cases[0].seconds[r]));
    std::sort(ratio.begin(), ratio.end());
    std::sort(seconds.begin(), seconds.end());
    std::printf("%-11s %9.1f  %5.1f [%5.1f %5.1f]\n", k.name, k.flops / seconds[rounds / 2] * 1e-9, ratio[rounds / 2],
                ratio[rounds / 4], ratio[3 * rounds / 4]);
  }
  return 0;
}
