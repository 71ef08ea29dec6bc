// AVX-512 microkernels (Skylake-X and later, Zen 4), compiled with -mavx512f.
//
// FP32: 12 x 32 — each row of the tile is two zmm registers (32 floats), 24
// accumulators in all, plus two for the B row and rotating broadcasts of A.
// Per k step: 2 loads of B, 12 broadcasts of A, 24 FMAs; with two 512-bit FMA
// ports that is 12 cycles of FMAs against 14 loads, so the FMA ports stay the
// bottleneck, which is what a GEMM microkernel wants. 24 independent
// accumulators hide the 4-cycle FMA latency on two ports (8 needed).
// FP64: 12 x 16, the same instructions with 8 doubles per register, so FP64
// runs at the same fraction of its peak as FP32.
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
#define PARRAY_K_LOOP(ES, BC, FMA, PREFETCHES)                                \
  "test %[blocks], %[blocks]\n\t"                                              \
  "jz 2f\n\t"                                                                  \
  "test %[b_next], %[b_next]\n\t"                                              \
  "jz 1f\n"                                                                    \
  "7:\n\t"                                                                     \
  PREFETCHES                                                                   \
  PARRAY_B_NEXT                                                                \
  PARRAY_BLOCK(ES, BC, FMA)                                                    \
  "jnz 7b\n\t"                                                                 \
  "jmp 2f\n"                                                                   \
  "1:\n\t"                                                                     \
  PREFETCHES                                                                   \
  PARRAY_BLOCK(ES, BC, FMA)                                                    \
  "jnz 1b\n"                                                                   \
  "2:\n\t"                                                                     \
  "test %[rest], %[rest]\n\t"                                                  \
  "jz 4f\n"                                                                    \
  "3:\n\t"                                                                     \
  PARRAY_STEP(0, ES, BC, FMA)                                                  \
  "add $12*" #ES ", %[a]\n\t"                                                  \
  "add $128, %[b]\n\t"                                                         \
  "dec %[rest]\n\t"                                                            \
  "jnz 3b\n"                                                                   \
  "4:\n\t"

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
  if constexpr (sizeof(T) == 4) {
    // 4 steps x 12 floats = 192 bytes = 3 lines of A per iteration.
    asm volatile(PARRAY_KERNEL(4, "vbroadcastss", "vmulps", "vfmadd231ps",
                               PARRAY_PREFETCH(0) PARRAY_PREFETCH(1) PARRAY_PREFETCH(2))
                 PARRAY_KERNEL_OPERANDS);
  } else {
    // 4 steps x 12 doubles = 384 bytes = 6 lines of A per iteration.
    asm volatile(PARRAY_KERNEL(8, "vbroadcastsd", "vmulpd", "vfmadd231pd",
                               PARRAY_PREFETCH(0) PARRAY_PREFETCH(1) PARRAY_PREFETCH(2) PARRAY_PREFETCH(3)
                                   PARRAY_PREFETCH(4) PARRAY_PREFETCH(5))
                 PARRAY_KERNEL_OPERANDS);
  }
}

#undef PARRAY_KERNEL_OPERANDS
#undef PARRAY_KERNEL
#undef PARRAY_OUT
#undef PARRAY_NO_BETA
#undef PARRAY_WITH_BETA
#undef PARRAY_OUT_ROW
#undef PARRAY_K_LOOP
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
  static const MicroKernel<double> k{kMr, 16, &tile_kernel<double>, "avx512 12x16"};
  return k;
}

}  // namespace parray::cpu
