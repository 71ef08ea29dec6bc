// AVX-512 microkernels (Skylake-X and later, Zen 4), compiled with -mavx512f.
//
// FP32: 12 x 32 — each row of the tile is two zmm registers (32 floats), 24
// accumulators in all, plus two for the B row and rotating broadcasts of A.
// Per k step: 2 loads of B, 12 broadcasts of A, 24 FMAs; with two 512-bit FMA
// ports that is 12 cycles of FMAs against 14 loads, so the FMA ports stay the
// bottleneck, which is what a GEMM microkernel wants. 24 independent
// accumulators hide the 4-cycle FMA latency on two ports (8 needed).
// FP64: 8 x 24 — three zmm registers per row (24 doubles), again 24
// accumulators: per k step 3 loads of B, 8 broadcasts of A, 24 FMAs. Until
// session 5 it was 12 x 16 (the FP32 instructions on doubles), which streams
// 96 bytes of A from L2 per 24 FMAs against 64 here; 8 x 24 was 10-20 %
// faster on one thread at FP64 2048^3-4096^3 (docs/perf-notes.md).
//
// The k loop is written in inline assembly. GCC, given the same loop in
// intrinsics unrolled by 4, rotated accumulators through the broadcast
// registers and spilled two of them to the stack inside the loop; unrolled by
// 1 it was clean, but paid a prefetch and three loop instructions per step.
// Here the accumulators sit in fixed registers zmm8..zmm31 (GCC local register
// variables, which are guaranteed to be in their register at an asm
// statement), B in zmm0/zmm1, the broadcasts of A rotate through zmm2..zmm7.
// Each FMA reads a broadcast register rather than using an embedded {1toN}
// memory broadcast because every element of A feeds two FMAs: one load per
// element instead of two. The loop is unrolled by 4 with one prefetch per cache
// line of A, 16 steps ahead (A streams from L2; the B micro-panel stays in L1),
// and, when the driver asks, one prefetch into L2 per 4 steps of the next B
// micro-panel (whose first use otherwise waited for L3 or memory: the first
// row tile of each panel ran at a third of the speed of the others).
// Measurements: docs/perf-notes.md, CPU section.
#include <immintrin.h>

#include "direct_avx512.hpp"
#include "microkernel.hpp"

namespace parray::cpu {

namespace {

constexpr int kMr = 12;
constexpr int kUnroll = 4;
constexpr int kPrefetchSteps = 16;

// The assembly text of one k step. U: the step within the unrolled block;
// BC / FMA: the broadcast and FMA mnemonics; ES: the element size in bytes.
// A step reads 12 elements of A (12 * ES bytes) and 128 bytes of B.
#define PARRAY_ROW(U, ES, BC, FMA, I, T, X, Y)                                 \
  BC " " #U "*12*" #ES "+" #I "*" #ES "(%[a]), %%zmm" #T "\n\t"               \
  FMA " %%zmm0, %%zmm" #T ", %%zmm" #X "\n\t"                                  \
  FMA " %%zmm1, %%zmm" #T ", %%zmm" #Y "\n\t"
#define PARRAY_STEP(U, ES, BC, FMA)                                           \
  "vmovups " #U "*128(%[b]), %%zmm0\n\t"                                       \
  "vmovups " #U "*128+64(%[b]), %%zmm1\n\t"                                    \
  PARRAY_ROW(U, ES, BC, FMA, 0, 2, 8, 9)                                       \
  PARRAY_ROW(U, ES, BC, FMA, 1, 3, 10, 11)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 2, 4, 12, 13)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 3, 5, 14, 15)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 4, 6, 16, 17)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 5, 7, 18, 19)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 6, 2, 20, 21)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 7, 3, 22, 23)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 8, 4, 24, 25)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 9, 5, 26, 27)                                     \
  PARRAY_ROW(U, ES, BC, FMA, 10, 6, 28, 29)                                    \
  PARRAY_ROW(U, ES, BC, FMA, 11, 7, 30, 31)
#define PARRAY_PREFETCH(LINE) "prefetcht0 " #LINE "*64(%[a_ahead])\n\t"

// The whole k loop: kUnroll steps per iteration (with the prefetches of the
// A lines those steps will need kPrefetchSteps later), then the remaining
// k % kUnroll steps one at a time. When the driver passes b_next, a second copy
// of the unrolled loop also prefetches one line of it into L2 per iteration
// (k / 4 lines in all; prefetcht1: the current B micro-panel keeps L1).
#define PARRAY_BLOCK(ES, BC, FMA)                                             \
  PARRAY_STEP(0, ES, BC, FMA)                                                  \
  PARRAY_STEP(1, ES, BC, FMA)                                                  \
  PARRAY_STEP(2, ES, BC, FMA)                                                  \
  PARRAY_STEP(3, ES, BC, FMA)                                                  \
  "add $4*12*" #ES ", %[a]\n\t"                                                \
  "add $4*12*" #ES ", %[a_ahead]\n\t"                                          \
  "add $4*128, %[b]\n\t"                                                       \
  "dec %[blocks]\n\t"
#define PARRAY_B_NEXT                                                         \
  "prefetcht1 (%[b_next])\n\t"                                                \
  "add $64, %[b_next]\n\t"
// The loop skeleton shared by the FP32 and FP64 kernels: BLOCK (kUnroll
// steps, ending in "dec blocks") with PREFETCHES before it, in two copies
// (with and without the b_next prefetch), then STEP for each remaining k,
// advancing A and B by A_BYTES and B_BYTES.
#define PARRAY_LOOP(PREFETCHES, BLOCK, STEP, A_BYTES, B_BYTES)               \
  "test %[blocks], %[blocks]\n\t"                                              \
  "jz 2f\n\t"                                                                  \
  "test %[b_next], %[b_next]\n\t"                                              \
  "jz 1f\n"                                                                    \
  "7:\n\t"                                                                     \
  PREFETCHES                                                                   \
  PARRAY_B_NEXT                                                                \
  BLOCK                                                                        \
  "jnz 7b\n\t"                                                                 \
  "jmp 2f\n"                                                                   \
  "1:\n\t"                                                                     \
  PREFETCHES                                                                   \
  BLOCK                                                                        \
  "jnz 1b\n"                                                                   \
  "2:\n\t"                                                                     \
  "test %[rest], %[rest]\n\t"                                                  \
  "jz 4f\n"                                                                    \
  "3:\n\t"                                                                     \
  STEP                                                                         \
  "add $" A_BYTES ", %[a]\n\t"                                                 \
  "add $" B_BYTES ", %[b]\n\t"                                                 \
  "dec %[rest]\n\t"                                                            \
  "jnz 3b\n"                                                                   \
  "4:\n\t"
#define PARRAY_K_LOOP(ES, BC, FMA, PREFETCHES) \
  PARRAY_LOOP(PREFETCHES, PARRAY_BLOCK(ES, BC, FMA), PARRAY_STEP(0, ES, BC, FMA), "12*" #ES, "128")

// The end of the kernel: C = alpha * acc + beta * C row by row (row I of the
// tile is in zmm X, Y), C not read when beta == 0. alpha is in zmm0, beta in zmm1.
#define PARRAY_OUT_ROW(I, ES, MUL, FMA, BETA, X, Y)                           \
  "mov " #I "*8(%[rows]), %[row]\n\t"                                          \
  "lea (%[c], %[row], " #ES "), %[row]\n\t"                                    \
  MUL " %%zmm0, %%zmm" #X ", %%zmm" #X "\n\t"                                  \
  MUL " %%zmm0, %%zmm" #Y ", %%zmm" #Y "\n\t"                                  \
  BETA(FMA, X, Y)                                                              \
  "vmovups %%zmm" #X ", (%[row])\n\t"                                          \
  "vmovups %%zmm" #Y ", 64(%[row])\n\t"
#define PARRAY_WITH_BETA(FMA, X, Y)                                           \
  FMA " (%[row]), %%zmm1, %%zmm" #X "\n\t"                                     \
  FMA " 64(%[row]), %%zmm1, %%zmm" #Y "\n\t"
#define PARRAY_NO_BETA(FMA, X, Y)
#define PARRAY_OUT(ES, MUL, FMA, BETA)                                        \
  PARRAY_OUT_ROW(0, ES, MUL, FMA, BETA, 8, 9)                                  \
  PARRAY_OUT_ROW(1, ES, MUL, FMA, BETA, 10, 11)                                \
  PARRAY_OUT_ROW(2, ES, MUL, FMA, BETA, 12, 13)                                \
  PARRAY_OUT_ROW(3, ES, MUL, FMA, BETA, 14, 15)                                \
  PARRAY_OUT_ROW(4, ES, MUL, FMA, BETA, 16, 17)                                \
  PARRAY_OUT_ROW(5, ES, MUL, FMA, BETA, 18, 19)                                \
  PARRAY_OUT_ROW(6, ES, MUL, FMA, BETA, 20, 21)                                \
  PARRAY_OUT_ROW(7, ES, MUL, FMA, BETA, 22, 23)                                \
  PARRAY_OUT_ROW(8, ES, MUL, FMA, BETA, 24, 25)                                \
  PARRAY_OUT_ROW(9, ES, MUL, FMA, BETA, 26, 27)                                \
  PARRAY_OUT_ROW(10, ES, MUL, FMA, BETA, 28, 29)                               \
  PARRAY_OUT_ROW(11, ES, MUL, FMA, BETA, 30, 31)

// The whole kernel: zero the 24 accumulators, the k loop, the write-back.
#define PARRAY_KERNEL(ES, BC, MUL, FMA, PREFETCHES)                           \
  ".irp r,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t" \
  "vpxord %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"                                    \
  ".endr\n\t"                                                                  \
  PARRAY_K_LOOP(ES, BC, FMA, PREFETCHES)                                       \
  BC " %[alpha], %%zmm0\n\t"                                                   \
  "test %[beta_is_zero], %[beta_is_zero]\n\t"                                  \
  "jnz 5f\n\t"                                                                 \
  BC " %[beta], %%zmm1\n\t"                                                    \
  PARRAY_OUT(ES, MUL, FMA, PARRAY_WITH_BETA)                                   \
  "jmp 6f\n"                                                                   \
  "5:\n\t"                                                                     \
  PARRAY_OUT(ES, MUL, FMA, PARRAY_NO_BETA)                                     \
  "6:\n\t"

#define PARRAY_KERNEL_OPERANDS                                                                       \
  : [a] "+r"(a), [b] "+r"(b), [a_ahead] "+r"(a_ahead), [b_next] "+r"(b_next), [blocks] "+r"(blocks), \
    [rest] "+r"(rest), [row] "=&r"(row)                                                              \
  : [c] "r"(c), [rows] "r"(row_offset), [alpha] "m"(alpha), [beta] "m"(beta),                      \
    [beta_is_zero] "r"(beta_is_zero)                                                                 \
  : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", \
    "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21",        \
    "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "cc",  \
    "memory"

template <class T>
void tile_kernel(index_t k, const T* a, const T* b, T alpha, T beta, T* c, const index_t* row_offset,
                 const T* b_next) {
  constexpr int L = 64 / static_cast<int>(sizeof(T));
  // C's rows are read (or written) only after the k loop; fetch them now so
  // that their cache misses overlap the FMAs instead of stalling after them.
#pragma GCC unroll 16
  for (int i = 0; i < kMr; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(c + row_offset[i]), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + row_offset[i] + 2 * L - 1), _MM_HINT_T0);
  }
  index_t blocks = k / kUnroll, rest = k % kUnroll, row;
  const T* a_ahead = a + kPrefetchSteps * kMr;
  const index_t beta_is_zero = beta == T(0);
  static_assert(sizeof(T) == 4, "FP64 has its own 8 x 24 kernel below");
  // 4 steps x 12 floats = 192 bytes = 3 lines of A per iteration.
  asm volatile(PARRAY_KERNEL(4, "vbroadcastss", "vmulps", "vfmadd231ps",
                             PARRAY_PREFETCH(0) PARRAY_PREFETCH(1) PARRAY_PREFETCH(2))
               PARRAY_KERNEL_OPERANDS);
}

// ---- FP64 8 x 24 ----------------------------------------------------------
// Each row of the tile is three zmm registers (24 doubles): 24 accumulators in
// zmm8..zmm31, B's row in zmm0..zmm2, the broadcasts of A rotating through
// zmm3..zmm7. Per k step: 3 loads of B (192 bytes of the micro-panel, which at
// KC 384 is 72 KiB, more than L1: it is read partly from L2), 8 broadcasts of
// A (64 bytes, streamed from L2), 24 FMAs — a third less A per FMA than 12 x 16
// (96 bytes), and 11 loads per step instead of 14. Prefetches as in the FP32
// kernel: A 16 steps ahead (4 lines per 4 steps), one line of the next B
// micro-panel per 4 steps when the driver passes b_next (3 * KC lines per
// panel: 12 row tiles cover it), and C's 3 lines per row before the k loop.
#define PARRAY_D_ROW(U, I, T, X, Y, Z)                                        \
  "vbroadcastsd " #U "*64+" #I "*8(%[a]), %%zmm" #T "\n\t"                    \
  "vfmadd231pd %%zmm0, %%zmm" #T ", %%zmm" #X "\n\t"                           \
  "vfmadd231pd %%zmm1, %%zmm" #T ", %%zmm" #Y "\n\t"                           \
  "vfmadd231pd %%zmm2, %%zmm" #T ", %%zmm" #Z "\n\t"
#define PARRAY_D_STEP(U)                                                      \
  "vmovupd " #U "*192(%[b]), %%zmm0\n\t"                                       \
  "vmovupd " #U "*192+64(%[b]), %%zmm1\n\t"                                    \
  "vmovupd " #U "*192+128(%[b]), %%zmm2\n\t"                                   \
  PARRAY_D_ROW(U, 0, 3, 8, 9, 10)                                              \
  PARRAY_D_ROW(U, 1, 4, 11, 12, 13)                                            \
  PARRAY_D_ROW(U, 2, 5, 14, 15, 16)                                            \
  PARRAY_D_ROW(U, 3, 6, 17, 18, 19)                                            \
  PARRAY_D_ROW(U, 4, 7, 20, 21, 22)                                            \
  PARRAY_D_ROW(U, 5, 3, 23, 24, 25)                                            \
  PARRAY_D_ROW(U, 6, 4, 26, 27, 28)                                            \
  PARRAY_D_ROW(U, 7, 5, 29, 30, 31)
// 4 steps x 8 doubles = 256 bytes = 4 lines of A per iteration.
#define PARRAY_D_BLOCK                                                        \
  PARRAY_D_STEP(0)                                                             \
  PARRAY_D_STEP(1)                                                             \
  PARRAY_D_STEP(2)                                                             \
  PARRAY_D_STEP(3)                                                             \
  "add $4*64, %[a]\n\t"                                                        \
  "add $4*64, %[a_ahead]\n\t"                                                  \
  "add $4*192, %[b]\n\t"                                                       \
  "dec %[blocks]\n\t"
#define PARRAY_D_PREFETCHES PARRAY_PREFETCH(0) PARRAY_PREFETCH(1) PARRAY_PREFETCH(2) PARRAY_PREFETCH(3)
#define PARRAY_D_K_LOOP PARRAY_LOOP(PARRAY_D_PREFETCHES, PARRAY_D_BLOCK, PARRAY_D_STEP(0), "64", "192")
#define PARRAY_D_OUT_ROW(I, BETA, X, Y, Z)                                    \
  "mov " #I "*8(%[rows]), %[row]\n\t"                                          \
  "lea (%[c], %[row], 8), %[row]\n\t"                                          \
  "vmulpd %%zmm0, %%zmm" #X ", %%zmm" #X "\n\t"                                \
  "vmulpd %%zmm0, %%zmm" #Y ", %%zmm" #Y "\n\t"                                \
  "vmulpd %%zmm0, %%zmm" #Z ", %%zmm" #Z "\n\t"                                \
  BETA(X, Y, Z)                                                                \
  "vmovupd %%zmm" #X ", (%[row])\n\t"                                          \
  "vmovupd %%zmm" #Y ", 64(%[row])\n\t"                                        \
  "vmovupd %%zmm" #Z ", 128(%[row])\n\t"
#define PARRAY_D_WITH_BETA(X, Y, Z)                                           \
  "vfmadd231pd (%[row]), %%zmm1, %%zmm" #X "\n\t"                              \
  "vfmadd231pd 64(%[row]), %%zmm1, %%zmm" #Y "\n\t"                            \
  "vfmadd231pd 128(%[row]), %%zmm1, %%zmm" #Z "\n\t"
#define PARRAY_D_NO_BETA(X, Y, Z)
#define PARRAY_D_OUT(BETA)                                                    \
  PARRAY_D_OUT_ROW(0, BETA, 8, 9, 10)                                          \
  PARRAY_D_OUT_ROW(1, BETA, 11, 12, 13)                                        \
  PARRAY_D_OUT_ROW(2, BETA, 14, 15, 16)                                        \
  PARRAY_D_OUT_ROW(3, BETA, 17, 18, 19)                                        \
  PARRAY_D_OUT_ROW(4, BETA, 20, 21, 22)                                        \
  PARRAY_D_OUT_ROW(5, BETA, 23, 24, 25)                                        \
  PARRAY_D_OUT_ROW(6, BETA, 26, 27, 28)                                        \
  PARRAY_D_OUT_ROW(7, BETA, 29, 30, 31)

constexpr int kMr64 = 8;
constexpr int kNr64 = 24;

void tile_kernel_f64(index_t k, const double* a, const double* b, double alpha, double beta, double* c,
                     const index_t* row_offset, const double* b_next) {
#pragma GCC unroll 8
  for (int i = 0; i < kMr64; ++i) {
    const char* row = reinterpret_cast<const char*>(c + row_offset[i]);
    _mm_prefetch(row, _MM_HINT_T0);
    _mm_prefetch(row + 64, _MM_HINT_T0);
    _mm_prefetch(row + 128, _MM_HINT_T0);
  }
  index_t blocks = k / kUnroll, rest = k % kUnroll, row;
  const double* a_ahead = a + kPrefetchSteps * kMr64;
  const index_t beta_is_zero = beta == 0.0;
  asm volatile(
      ".irp r,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t"
      "vpxord %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"
      ".endr\n\t"
      PARRAY_D_K_LOOP
      "vbroadcastsd %[alpha], %%zmm0\n\t"
      "test %[beta_is_zero], %[beta_is_zero]\n\t"
      "jnz 5f\n\t"
      "vbroadcastsd %[beta], %%zmm1\n\t"
      PARRAY_D_OUT(PARRAY_D_WITH_BETA)
      "jmp 6f\n"
      "5:\n\t"
      PARRAY_D_OUT(PARRAY_D_NO_BETA)
      "6:\n\t"
      PARRAY_KERNEL_OPERANDS);
}

#undef PARRAY_D_OUT
#undef PARRAY_D_NO_BETA
#undef PARRAY_D_WITH_BETA
#undef PARRAY_D_OUT_ROW
#undef PARRAY_D_K_LOOP
#undef PARRAY_D_PREFETCHES
#undef PARRAY_D_BLOCK
#undef PARRAY_D_STEP
#undef PARRAY_D_ROW

#undef PARRAY_KERNEL_OPERANDS
#undef PARRAY_KERNEL
#undef PARRAY_OUT
#undef PARRAY_NO_BETA
#undef PARRAY_WITH_BETA
#undef PARRAY_OUT_ROW
#undef PARRAY_K_LOOP
#undef PARRAY_LOOP
#undef PARRAY_B_NEXT
#undef PARRAY_BLOCK
#undef PARRAY_PREFETCH
#undef PARRAY_STEP
#undef PARRAY_ROW

}  // namespace

const MicroKernel<float>& microkernel_avx512_f32() {
  static const MicroKernel<float> k{kMr, 32, &tile_kernel<float>, "avx512 12x32"};
  return k;
}
const MicroKernel<double>& microkernel_avx512_f64() {
  static const MicroKernel<double> k{kMr64, kNr64, &tile_kernel_f64, "avx512 8x24"};
  return k;
}

}  // namespace parray::cpu
