// Hopper's matrix machinery as device functions: the mbarrier, the tensor
// copy engine (TMA: cp.async.bulk.tensor) and warpgroup MMA (wgmma), used by
// ladder steps 14 and up. PTX ISA names in the comments; everything here needs
// sm_90a (the kernels that use it compile to a trap elsewhere, see
// PARRAY_HOPPER_MMA).
#pragma once

#include <cstdint>

// Defined in a device pass that can emit wgmma and setmaxnreg (sm_90a).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define PARRAY_HOPPER_MMA 1
#endif

namespace parray::cuda::hopper {

#ifdef PARRAY_HOPPER_MMA

__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// ---- mbarrier: a shared-memory barrier with a phase bit and a byte count ----

__device__ __forceinline__ void mbar_init(std::uint64_t* bar, std::uint32_t arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(arrivals));
}
// Makes the initialised barriers visible to the copy engine.
__device__ __forceinline__ void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// One arrival that also announces `bytes` to come from the copy engine.
__device__ __forceinline__ void mbar_arrive_expect_bytes(std::uint64_t* bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(std::uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}
// The same on the barrier at bar's offset in block `rank` of this block's
// cluster (mapa: its address in the cluster's shared window). The default
// semantics (release at CTA scope) suffice for a slot given back: the reads
// it orders were the wgmma's, complete (wgmma.wait_group) before the
// arrival. A release at cluster scope fences every arrival: in pairs it held
// the consumer warps on a memory barrier for over half their cycles (ncu).
__device__ __forceinline__ void mbar_arrive_in(std::uint64_t* bar, std::uint32_t rank) {
  asm volatile(
      "{\n.reg .b32 remote;\n"
      "mapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(smem_addr(bar)),
      "r"(rank)
      : "memory");
}
// Waits until the phase of parity `parity` has completed. A fresh barrier is
// in phase 0, so waiting for parity 1 returns at once (the "previous" phase).
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar, std::uint32_t parity) {
  std::uint32_t done = 0;
  while (!done)
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
}

// ---- TMA: a 2-D box of a tensor map copied into shared memory ---------------

// Box at (inner, outer) of `map` into dst; completion counted on `bar` in bytes.
__device__ __forceinline__ void tma_load_2d(void* dst, const void* map, std::uint64_t* bar, int inner, int outer) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];" ::
          "r"(smem_addr(dst)),
      "l"(map), "r"(smem_addr(bar)), "r"(inner), "r"(outer)
      : "memory");
}

// The same box into dst's offset in every block of the cluster that `blocks`
// has a bit for, each counting the bytes on its barrier at bar's offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const void* map, std::uint64_t* bar, int inner,
                                                      int outer, std::uint16_t blocks) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], "
      "[%1, {%3, %4}], [%2], %5;" ::"r"(smem_addr(dst)),
      "l"(map), "r"(smem_addr(bar)), "r"(inner), "r"(outer), "h"(blocks)
      : "memory");
}

// The same for a rank-4 map (tensor_map_blocked: a matrix of blocks), the
// box at (column, row) of block (block_row, block_col).
__device__ __forceinline__ void tma_load_4d(void* dst, const void* map, std::uint64_t* bar, int col, int row,
                                            int block_col, int block_row) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, "
      "%6}], [%2];" ::"r"(smem_addr(dst)),
      "l"(map), "r"(smem_addr(bar)), "r"(col), "r"(row), "r"(block_col), "r"(block_row)
      : "memory");
}

// Box at (inner, outer) of `map` written from src (shared memory) by the copy
// engine, as one bulk group of this thread (commit with bulk_commit). Parts of
// the box past the tensor's edges are not written.
__device__ __forceinline__ void tma_store_2d(const void* map, const void* src, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(map),
               "r"(smem_addr(src)), "r"(inner), "r"(outer)
               : "memory");
}
__device__ __forceinline__ void tma_store_4d(const void* map, const void* src, int col, int row, int block_col,
                                             int block_row) {
  asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::"l"(map),
               "r"(smem_addr(src)), "r"(col), "r"(row), "r"(block_col), "r"(block_row)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Waits until at most Pending of this thread's bulk groups have still to read
// their shared-memory source (the source may then be overwritten).
template <int Pending>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(Pending) : "memory");
}
// Waits until at most Pending of this thread's bulk groups are incomplete.
template <int Pending>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(Pending) : "memory");
}
// Orders this thread's ordinary shared-memory writes before later accesses by
// the copy engine (the async proxy).
__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// ---- clusters ------------------------------------------------------------

// This block's rank in its cluster.
__device__ __forceinline__ std::uint32_t cluster_rank() {
  std::uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every block of the cluster arrives, then waits for all:
// what each wrote before (barrier initialisation included) is seen by all.
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// bar.sync on barrier `id` (1..15; 0 is __syncthreads) for `threads` threads.
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// ---- wgmma ------------------------------------------------------------------

// Shared-memory matrix descriptor of a K-major tile written by TMA with the
// 128-byte swizzle: rows of 128 bytes, 8-row core groups 1024 bytes apart
// (stride byte offset); the leading byte offset is unused in this mode. The
// tile must start on a 1024-byte boundary; a K slice inside the 128-byte row
// is addressed by adding its byte offset to the start (k8 * 32 for TF32).
__device__ __forceinline__ std::uint64_t sw128_desc(const void* tile, std::uint32_t byte_offset = 0) {
  const std::uint64_t addr = smem_addr(tile) + byte_offset;
  return ((addr & 0x3FFFF) >> 4) | (std::uint64_t(1) << 16) | (std::uint64_t(1024 >> 4) << 32) |
         (std::uint64_t(1) << 62);
}

// The same for an MN-major tile (M or N contiguous: a column-major A, a
// row-major B; 16-bit formats only, read with wgmma's transpose) that TMA wrote
// as boxes of 64 values of M or N (128 bytes) x the k-tile's rows of K, 128-byte
// swizzled: K rows 128 bytes apart in 8-row groups 1024 bytes apart (stride
// byte offset), boxes `box_bytes` apart along M or N (leading byte offset). A
// K slice starts `byte_offset` in (16 rows of K: 2048 bytes).
__device__ __forceinline__ std::uint64_t sw128_mn_desc(const void* tile, std::uint32_t byte_offset,
                                                      std::uint32_t box_bytes) {
  const std::uint64_t addr = smem_addr(tile) + byte_offset;
  return ((addr & 0x3FFFF) >> 4) | (std::uint64_t((box_bytes >> 4) & 0x3FFF) << 16) |
         (std::uint64_t(1024 >> 4) << 32) | (std::uint64_t(1) << 62);
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(Pending) : "memory");
}
// Keeps the compiler from moving reads or writes of accumulator registers
// across the asynchronous wgmma that owns them.
template <int R>
__device__ __forceinline__ void fence_registers(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The registers of a block of one producer and two consumer warpgroups
// (384 threads, 168 each at launch): the producer keeps the least setmaxnreg
// allows so that the consumers can take 240 (128 x 24 + 256 x 240 = 64 K);
// at 232 FP32 accuracy's accumulators and split A spilled 220 bytes.
constexpr int kProducerRegisters = 24, kConsumerRegisters = 240;

// setmaxnreg: a warpgroup gives registers back (producer) or takes them (consumers).
template <int Regs>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
}
template <int Regs>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
}

// wgmma.mma_async m64nNkK from shared memory (A and B K-major, descriptors),
// FP32 accumulate: TF32 operands k8, BF16 and FP16 ones k16, FP8 ones k32 —
// in each case 32 bytes of every row of the tiles per instruction. N is the warpgroup's
// tile width; each thread holds N / 2 results. scale_d = 0 overwrites D
// instead of adding to it. The 16-bit forms take two more immediates, TransA
// and TransB: 0 for a K-major tile, 1 for an MN-major one (TF32 reads K-major
// tiles only).
template <int N>
struct Wgmma;

// The asm of one wgmma whose D is d[0 .. R) ("+f" each); %R and %R+1 are the
// descriptors, %R+2 scale_d.
#define PARRAY_WGMMA_ASM(INSTR, REGS, SCALE, DESC_A, DESC_B, TAIL, ...)         \
  asm volatile("{\n.reg .pred p;\n"                                             \
               "setp.ne.b32 p, " SCALE ", 0;\n" INSTR " {" REGS "}, " DESC_A ", " \
               DESC_B ", p, 1, 1" TAIL ";\n}\n"                                  \
               : __VA_ARGS__                                                    \
               : "l"(a), "l"(b), "r"(scale_d), "n"(TransA), "n"(TransB))

// D's 32, 64 or 128 accumulators as the asm's operands %0 .. and its output list.
#define PARRAY_WGMMA_REGS_32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define PARRAY_WGMMA_OUTS_32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
  "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
  "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define PARRAY_WGMMA_REGS_64 \
  PARRAY_WGMMA_REGS_32 ", " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define PARRAY_WGMMA_OUTS_64 \
  PARRAY_WGMMA_OUTS_32, \
  "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
  "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
  "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define PARRAY_WGMMA_REGS_128 \
  PARRAY_WGMMA_REGS_64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define PARRAY_WGMMA_OUTS_128 \
  PARRAY_WGMMA_OUTS_64, \
  "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
  "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
  "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
  "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
  "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])

// Wgmma<N>: tf32, bf16 and f16, D having ACC floats a thread (N / 2); the
// descriptors are operands %ACC and %ACC+1, scale_d %ACC+2.
#define PARRAY_WGMMA_SHAPE(N, ACC, REGS, OUTS, DESC_A, DESC_B, SCALE, TRANS)                                       \
  template <>                                                                                                      \
  struct Wgmma<N> {                                                                                                \
    using Acc = float[ACC];                                                                                        \
    template <int TransA = 0, int TransB = 0>                                                                      \
    static __device__ __forceinline__ void tf32(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {           \
      PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32", REGS, SCALE, DESC_A, DESC_B, "", \
                       OUTS);                                                                                      \
    }                                                                                                              \
    template <int TransA = 0, int TransB = 0>                                                                      \
    static __device__ __forceinline__ void bf16(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {           \
      PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16", REGS, SCALE, DESC_A, DESC_B,    \
                       TRANS, OUTS);                                                                               \
    }                                                                                                              \
    template <int TransA = 0, int TransB = 0>                                                                      \
    static __device__ __forceinline__ void f16(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {            \
      PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16", REGS, SCALE, DESC_A, DESC_B,      \
                       TRANS, OUTS);                                                                               \
    }                                                                                                              \
    /* FP8, k32: A5 / B5 = 1 for an E5M2 operand, 0 for E4M3; K-major tiles only */                               \
    template <int A5, int B5, int TransA = 0, int TransB = 0>                                                      \
    static __device__ __forceinline__ void fp8(Acc& d, std::uint64_t a, std::uint64_t b, int scale_d) {            \
      if constexpr (!A5 && !B5)                                                                                    \
        PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3", REGS, SCALE, DESC_A, DESC_B,  \
                         "", OUTS);                                                                                \
      else if constexpr (!A5)                                                                                      \
        PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e5m2", REGS, SCALE, DESC_A, DESC_B,  \
                         "", OUTS);                                                                                \
      else if constexpr (!B5)                                                                                      \
        PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e4m3", REGS, SCALE, DESC_A, DESC_B,  \
                         "", OUTS);                                                                                \
      else                                                                                                         \
        PARRAY_WGMMA_ASM("wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e5m2.e5m2", REGS, SCALE, DESC_A, DESC_B,  \
                         "", OUTS);                                                                                \
    }                                                                                                              \
  };

PARRAY_WGMMA_SHAPE(64, 32, PARRAY_WGMMA_REGS_32, PARRAY_WGMMA_OUTS_32, "%32", "%33", "%34", ", %35, %36")
PARRAY_WGMMA_SHAPE(128, 64, PARRAY_WGMMA_REGS_64, PARRAY_WGMMA_OUTS_64, "%64", "%65", "%66", ", %67, %68")
PARRAY_WGMMA_SHAPE(256, 128, PARRAY_WGMMA_REGS_128, PARRAY_WGMMA_OUTS_128, "%128", "%129", "%130", ", %131, %132")

// TF32 with A from registers: a[0..3] the thread's four TF32 values of the
// warpgroup's 64 x 8 A slice (warp w rows 16 w + lane / 4 (+ 8), columns
// lane % 4 (+ 4)), B from shared memory (descriptor).
template <int N>
struct WgmmaRegA;
#define PARRAY_WGMMA_REG_A(N, REGS, OUTS, A0, A1, A2, A3, DESC_B, SCALE)                                      \
  template <>                                                                                                 \
  struct WgmmaRegA<N> {                                                                                       \
    static __device__ __forceinline__ void tf32(float (&d)[N / 2], const std::uint32_t (&a)[4], std::uint64_t b, \
                                                int scale_d) {                                                \
      asm volatile("{\n.reg .pred p;\n"                                                                        \
                   "setp.ne.b32 p, " SCALE ", 0;\n"                                                           \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 {" REGS "}, {" A0 ", " A1 ", " A2    \
                   ", " A3 "}, " DESC_B ", p, 1, 1;\n}\n"                                                      \
                   : OUTS                                                                                     \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));                      \
    }                                                                                                         \
  };
PARRAY_WGMMA_REG_A(64, PARRAY_WGMMA_REGS_32, PARRAY_WGMMA_OUTS_32, "%32", "%33", "%34", "%35", "%36", "%37")
PARRAY_WGMMA_REG_A(128, PARRAY_WGMMA_REGS_64, PARRAY_WGMMA_OUTS_64, "%64", "%65", "%66", "%67", "%68", "%69")
PARRAY_WGMMA_REG_A(256, PARRAY_WGMMA_REGS_128, PARRAY_WGMMA_OUTS_128, "%128", "%129", "%130", "%131", "%132", "%133")
#undef PARRAY_WGMMA_REG_A

#undef PARRAY_WGMMA_SHAPE
#undef PARRAY_WGMMA_ASM
#undef PARRAY_WGMMA_REGS_32
#undef PARRAY_WGMMA_OUTS_32
#undef PARRAY_WGMMA_REGS_64
#undef PARRAY_WGMMA_OUTS_64
#undef PARRAY_WGMMA_REGS_128
#undef PARRAY_WGMMA_OUTS_128

#endif  // PARRAY_HOPPER_MMA

}  // namespace parray::cuda::hopper
