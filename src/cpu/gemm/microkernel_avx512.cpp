// AVX-512 microkernels (Skylake-X and later, Zen 4), compiled with -mavx512f.
//
// One tile shape for both types: 8 rows x 3 zmm registers, i.e. FP32 8 x 48
// and FP64 8 x 24. 24 accumulators in zmm8..zmm31 hide the 4-cycle FMA latency
// on two ports (8 needed); B's row (192 bytes) is in zmm0..zmm2, the broadcasts
// of A rotate through zmm3..zmm7. Per k step: 3 loads of B, 8 broadcasts of A,
// 24 FMAs — 11 load uops per 24 FMAs. A 12-row, 2-vector tile (FP64 12 x 16,
// FP32 12 x 32) issues 14 (2 + 12): 8 x 24 is faster at FP64 2048^3-4096^3 on
// one thread, and 8 x 48 against 12 x 32 at FP32 2048^3 (one and two threads)
// — with A, B and C all in L1 the 12 x 32 kernel sustains well below a
// pure-FMA loop (docs/perf-notes.md), so its load uops, not the memory behind
// them, are what it loses to.
//
// The k loop is written in inline assembly. GCC, given the same loop in
// intrinsics unrolled by 4, rotated accumulators through the broadcast
// registers and spilled two of them to the stack inside the loop; unrolled by
// 1 it was clean, but paid a prefetch and three loop instructions per step.
// Here the accumulators sit in fixed registers (the asm names them), and each
// FMA reads a broadcast register rather than using an embedded {1toN} memory
// broadcast because every element of A feeds three FMAs: one load per element
// instead of three. The loop is unrolled by 4 with one prefetch per cache line
// of A, 16 steps ahead (A streams from L2), and, when the driver asks, one
// prefetch into L2 per 4 steps of the next B micro-panel (whose first use
// otherwise waited for L3 or memory, slowing the first row tile of each
// panel). At KC 384 the B micro-panel is 72 KiB, more than L1, so it is read
// partly from L2 on every call; a prefetcht0 of it a few steps ahead was
// slower (more load uops), and so was keeping it in L1 with a smaller KC (C
// loaded and stored more often; docs/perf-notes.md).
//
// The file also holds the AVX-512 packing of A's FP32 panels from row-major A
// (pack_rows_f32: an 8 x 16 transpose in registers), BLIS's packing kernel
// kept beside the microkernel of the same instruction set.
#include <immintrin.h>

#include "direct_avx512.hpp"
#include "microkernel.hpp"
#include "microkernel_tile.hpp"

namespace parray::cpu {

namespace {

constexpr int kMr = 8;
constexpr int kUnroll = 4;
constexpr int kPrefetchSteps = 16;

// The assembly text of one k step. U: the step within the unrolled block;
// ES: the element size in bytes; BC / FMA / MOV: the broadcast, FMA and vector
// move mnemonics. A step reads 8 elements of A (8 * ES bytes) and 192 bytes of B.
#define PARRAY_ROW(U, ES, BC, FMA, I, T, X, Y, Z)                             \
  BC " " #U "*8*" #ES "+" #I "*" #ES "(%[a]), %%zmm" #T "\n\t"                \
  FMA " %%zmm0, %%zmm" #T ", %%zmm" #X "\n\t"                                  \
  FMA " %%zmm1, %%zmm" #T ", %%zmm" #Y "\n\t"                                  \
  FMA " %%zmm2, %%zmm" #T ", %%zmm" #Z "\n\t"
#define PARRAY_STEP(U, ES, BC, FMA, MOV)                                      \
  MOV " " #U "*192(%[b]), %%zmm0\n\t"                                          \
  MOV " " #U "*192+64(%[b]), %%zmm1\n\t"                                       \
  MOV " " #U "*192+128(%[b]), %%zmm2\n\t"                                      \
  PARRAY_ROW(U, ES, BC, FMA, 0, 3, 8, 9, 10)                                   \
  PARRAY_ROW(U, ES, BC, FMA, 1, 4, 11, 12, 13)                                 \
  PARRAY_ROW(U, ES, BC, FMA, 2, 5, 14, 15, 16)                                 \
  PARRAY_ROW(U, ES, BC, FMA, 3, 6, 17, 18, 19)                                 \
  PARRAY_ROW(U, ES, BC, FMA, 4, 7, 20, 21, 22)                                 \
  PARRAY_ROW(U, ES, BC, FMA, 5, 3, 23, 24, 25)                                 \
  PARRAY_ROW(U, ES, BC, FMA, 6, 4, 26, 27, 28)                                 \
  PARRAY_ROW(U, ES, BC, FMA, 7, 5, 29, 30, 31)
#define PARRAY_PREFETCH(LINE) "prefetcht0 " #LINE "*64(%[a_ahead])\n\t"

// kUnroll steps, ending in "dec blocks" (4 steps x 8 elements = 32 * ES bytes
// of A: 2 lines FP32, 4 lines FP64).
#define PARRAY_BLOCK(ES, BC, FMA, MOV)                                        \
  PARRAY_STEP(0, ES, BC, FMA, MOV)                                             \
  PARRAY_STEP(1, ES, BC, FMA, MOV)                                             \
  PARRAY_STEP(2, ES, BC, FMA, MOV)                                             \
  PARRAY_STEP(3, ES, BC, FMA, MOV)                                             \
  "add $4*8*" #ES ", %[a]\n\t"                                                 \
  "add $4*8*" #ES ", %[a_ahead]\n\t"                                           \
  "add $4*192, %[b]\n\t"                                                       \
  "dec %[blocks]\n\t"
#define PARRAY_B_NEXT                                                         \
  "prefetcht1 (%[b_next])\n\t"                                                \
  "add $64, %[b_next]\n\t"
// The whole k loop: BLOCK (kUnroll steps) with the prefetches of the A lines
// those steps will need kPrefetchSteps later before it, in two copies (with
// and without the b_next prefetch: when the driver passes b_next, one line of
// it into L2 per iteration, k / 4 lines in all; prefetcht1: the current B
// micro-panel keeps L1), then the remaining k % kUnroll steps one at a time.
#define PARRAY_K_LOOP(ES, BC, FMA, MOV, PREFETCHES)                           \
  "test %[blocks], %[blocks]\n\t"                                              \
  "jz 2f\n\t"                                                                  \
  "test %[b_next], %[b_next]\n\t"                                              \
  "jz 1f\n"                                                                    \
  "7:\n\t"                                                                     \
  PREFETCHES                                                                   \
  PARRAY_B_NEXT                                                                \
  PARRAY_BLOCK(ES, BC, FMA, MOV)                                               \
  "jnz 7b\n\t"                                                                 \
  "jmp 2f\n"                                                                   \
  "1:\n\t"                                                                     \
  PREFETCHES                                                                   \
  PARRAY_BLOCK(ES, BC, FMA, MOV)                                               \
  "jnz 1b\n"                                                                   \
  "2:\n\t"                                                                     \
  "test %[rest], %[rest]\n\t"                                                  \
  "jz 4f\n"                                                                    \
  "3:\n\t"                                                                     \
  PARRAY_STEP(0, ES, BC, FMA, MOV)                                             \
  "add $8*" #ES ", %[a]\n\t"                                                   \
  "add $192, %[b]\n\t"                                                         \
  "dec %[rest]\n\t"                                                            \
  "jnz 3b\n"                                                                   \
  "4:\n\t"

// The end of the kernel: C = alpha * acc + beta * C row by row (row I of the
// tile is in zmm X, Y, Z), C not read when beta == 0. alpha is in zmm0, beta in zmm1.
#define PARRAY_OUT_ROW(I, ES, MUL, FMA, MOV, BETA, X, Y, Z)                   \
  "mov " #I "*8(%[rows]), %[row]\n\t"                                          \
  "lea (%[c], %[row], " #ES "), %[row]\n\t"                                    \
  MUL " %%zmm0, %%zmm" #X ", %%zmm" #X "\n\t"                                  \
  MUL " %%zmm0, %%zmm" #Y ", %%zmm" #Y "\n\t"                                  \
  MUL " %%zmm0, %%zmm" #Z ", %%zmm" #Z "\n\t"                                  \
  BETA(FMA, X, Y, Z)                                                           \
  MOV " %%zmm" #X ", (%[row])\n\t"                                             \
  MOV " %%zmm" #Y ", 64(%[row])\n\t"                                           \
  MOV " %%zmm" #Z ", 128(%[row])\n\t"
#define PARRAY_WITH_BETA(FMA, X, Y, Z)                                        \
  FMA " (%[row]), %%zmm1, %%zmm" #X "\n\t"                                     \
  FMA " 64(%[row]), %%zmm1, %%zmm" #Y "\n\t"                                   \
  FMA " 128(%[row]), %%zmm1, %%zmm" #Z "\n\t"
#define PARRAY_NO_BETA(FMA, X, Y, Z)
#define PARRAY_OUT(ES, MUL, FMA, MOV, BETA)                                   \
  PARRAY_OUT_ROW(0, ES, MUL, FMA, MOV, BETA, 8, 9, 10)                         \
  PARRAY_OUT_ROW(1, ES, MUL, FMA, MOV, BETA, 11, 12, 13)                       \
  PARRAY_OUT_ROW(2, ES, MUL, FMA, MOV, BETA, 14, 15, 16)                       \
  PARRAY_OUT_ROW(3, ES, MUL, FMA, MOV, BETA, 17, 18, 19)                       \
  PARRAY_OUT_ROW(4, ES, MUL, FMA, MOV, BETA, 20, 21, 22)                       \
  PARRAY_OUT_ROW(5, ES, MUL, FMA, MOV, BETA, 23, 24, 25)                       \
  PARRAY_OUT_ROW(6, ES, MUL, FMA, MOV, BETA, 26, 27, 28)                       \
  PARRAY_OUT_ROW(7, ES, MUL, FMA, MOV, BETA, 29, 30, 31)

// The whole kernel: zero the 24 accumulators, the k loop, the write-back.
#define PARRAY_KERNEL(ES, BC, MUL, FMA, MOV, PREFETCHES)                      \
  ".irp r,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31\n\t" \
  "vpxord %%zmm\\r, %%zmm\\r, %%zmm\\r\n\t"                                    \
  ".endr\n\t"                                                                  \
  PARRAY_K_LOOP(ES, BC, FMA, MOV, PREFETCHES)                                  \
  BC " %[alpha], %%zmm0\n\t"                                                   \
  "test %[beta_is_zero], %[beta_is_zero]\n\t"                                  \
  "jnz 5f\n\t"                                                                 \
  BC " %[beta], %%zmm1\n\t"                                                    \
  PARRAY_OUT(ES, MUL, FMA, MOV, PARRAY_WITH_BETA)                              \
  "jmp 6f\n"                                                                   \
  "5:\n\t"                                                                     \
  PARRAY_OUT(ES, MUL, FMA, MOV, PARRAY_NO_BETA)                                \
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
  // C's rows (3 lines each) are read (or written) only after the k loop; fetch
  // them now so that their cache misses overlap the FMAs instead of stalling after them.
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    const char* row = reinterpret_cast<const char*>(c + row_offset[i]);
    _mm_prefetch(row, _MM_HINT_T0);
    _mm_prefetch(row + 64, _MM_HINT_T0);
    _mm_prefetch(row + 128, _MM_HINT_T0);
  }
  index_t blocks = k / kUnroll, rest = k % kUnroll, row;
  const T* a_ahead = a + kPrefetchSteps * kMr;
  const index_t beta_is_zero = beta == T(0);
  if constexpr (sizeof(T) == 4) {
    asm volatile(PARRAY_KERNEL(4, "vbroadcastss", "vmulps", "vfmadd231ps", "vmovups",
                               PARRAY_PREFETCH(0) PARRAY_PREFETCH(1))
                 PARRAY_KERNEL_OPERANDS);
  } else {
    asm volatile(PARRAY_KERNEL(8, "vbroadcastsd", "vmulpd", "vfmadd231pd", "vmovupd",
                               PARRAY_PREFETCH(0) PARRAY_PREFETCH(1) PARRAY_PREFETCH(2) PARRAY_PREFETCH(3))
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

// GCC 12's unmasked forms of these shuffles (and its 512- to 256-bit casts)
// pass _mm512_undefined_ps() as the masked-off source and then warn that it
// may be used uninitialized; the masked forms with every lane selected
// compile to the same instructions.
constexpr __mmask16 kAllLanes = 0xFFFF;
inline __m512 unpack_lo(__m512 a, __m512 b) { return _mm512_mask_unpacklo_ps(a, kAllLanes, a, b); }
inline __m512 unpack_hi(__m512 a, __m512 b) { return _mm512_mask_unpackhi_ps(a, kAllLanes, a, b); }
template <int kImm>
__m512 shuffle_in_lanes(__m512 a, __m512 b) {
  return _mm512_mask_shuffle_ps(a, kAllLanes, a, b, kImm);
}
template <int kImm>
__m512 shuffle_lanes(__m512 a, __m512 b) {
  return _mm512_mask_shuffle_f32x4(a, kAllLanes, a, b, kImm);
}
template <int kHalf>
__m256 half(__m512 a) {
  return _mm256_castpd_ps(_mm512_mask_extractf64x4_pd(_mm256_setzero_pd(), 0xFF, _mm512_castps_pd(a), kHalf));
}

// A's FP32 panel from eight rows of row-major A: 16 columns at a time, an 8 x
// 16 transpose in registers — eight loads, 32 shuffles and 16 half-vector
// stores where the driver's loop makes 128 single-element copies. Both
// shuffle stages stay within 128-bit lanes (columns 4l .. 4l+3 in lane l)
// until the last, which pairs the lanes of rows 0-3 with those of rows 4-7.
// It shrinks A's packing share of FP32 1024^3 on two threads, less at 2048^3
// on one, where A's rows come from memory. FP64 has none: its 8 x 8 transpose
// barely moved A's share of FP64 1024^3 and the product not at all.
static_assert(kMr == 8, "pack_rows_f32 transposes eight rows");
void pack_rows_f32(const float* const* rows, index_t k, float* dst) {
  index_t p = 0;
  for (; p + 16 <= k; p += 16, dst += 8 * 16) {
    __m512 r[8];
    for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_ps(rows[i] + p);
    // t: rows 2i and 2i+1 interleaved, columns 4l, 4l+1 (lo) or 4l+2, 4l+3 (hi) of lane l.
    const __m512 t0 = unpack_lo(r[0], r[1]), t1 = unpack_hi(r[0], r[1]);
    const __m512 t2 = unpack_lo(r[2], r[3]), t3 = unpack_hi(r[2], r[3]);
    const __m512 t4 = unpack_lo(r[4], r[5]), t5 = unpack_hi(r[4], r[5]);
    const __m512 t6 = unpack_lo(r[6], r[7]), t7 = unpack_hi(r[6], r[7]);
    // u[j]: column 4l + j of rows 0-3 in lane l; u[j + 4]: the same of rows 4-7.
    const __m512 u[8] = {shuffle_in_lanes<0x44>(t0, t2), shuffle_in_lanes<0xEE>(t0, t2),
                         shuffle_in_lanes<0x44>(t1, t3), shuffle_in_lanes<0xEE>(t1, t3),
                         shuffle_in_lanes<0x44>(t4, t6), shuffle_in_lanes<0xEE>(t4, t6),
                         shuffle_in_lanes<0x44>(t5, t7), shuffle_in_lanes<0xEE>(t5, t7)};
    for (int j = 0; j < 4; ++j) {
      // Lanes 0-1 (then 2-3) of u[j] and u[j + 4], reordered so that each
      // 256-bit half holds one column's eight rows: columns j and 4 + j (then 8 + j and 12 + j).
      const __m512 low = shuffle_lanes<0x44>(u[j], u[j + 4]);
      const __m512 high = shuffle_lanes<0xEE>(u[j], u[j + 4]);
      const __m512 cols_j = shuffle_lanes<0xD8>(low, low);
      const __m512 cols_8j = shuffle_lanes<0xD8>(high, high);
      _mm256_storeu_ps(dst + j * 8, half<0>(cols_j));
      _mm256_storeu_ps(dst + (4 + j) * 8, half<1>(cols_j));
      _mm256_storeu_ps(dst + (8 + j) * 8, half<0>(cols_8j));
      _mm256_storeu_ps(dst + (12 + j) * 8, half<1>(cols_8j));
    }
  }
  for (; p < k; ++p, dst += 8)
    for (int i = 0; i < 8; ++i) dst[i] = rows[i][p];
}

template <class T>
constexpr typename MicroKernel<T>::PackRows pack_rows_for() {
  if constexpr (sizeof(T) == 4) return &pack_rows_f32;
  else return nullptr;
}

// The narrow tiles (8 x 1 and 8 x 2 vectors over the 3-vector panels) are the
// shared intrinsics tile: with 8 or 16 accumulators GCC keeps them in registers.
template <class T>
const MicroKernel<T>& avx512_kernel(const char* name) {
  using V = Vec<T>;
  static const MicroKernel<T> k{kMr,
                                3 * V::lanes,
                                &tile_kernel<T>,
                                name,
                                V::lanes,
                                {&vector_tile_kernel<V, kMr, 1, 3, true, T>, &vector_tile_kernel<V, kMr, 2, 3, true, T>},
                                pack_rows_for<T>()};
  return k;
}

}  // namespace

const MicroKernel<float>& microkernel_avx512_f32() { return avx512_kernel<float>("avx512 8x48"); }
const MicroKernel<double>& microkernel_avx512_f64() { return avx512_kernel<double>("avx512 8x24"); }

}  // namespace parray::cpu
