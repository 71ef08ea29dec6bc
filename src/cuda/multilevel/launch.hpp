// Stream-taking launches for the multi-level splits (src/cuda/multilevel/):
// the done-right splits, which give every part its own stream and work on raw
// row-major pointers rather than a GemmCall, launch step 12's kernel and the
// device-side reduction of the K split through these.
// Operands are row-major device pointers; every launch is checked.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace parray::cuda::multilevel {

// C (M x N, ldc) = alpha A (M x K, lda) B (K x N, ldb) + beta C on `stream`,
// with ladder step 12 (one part in flight: as cuda-12-best, with its
// stream-K tail or split-K; several: one grid each, the parts are what fill
// the GPU). C is not read when beta == 0. M, N >= 1, K >= 0. parts_in_flight:
// how many such products of this size run at once on the GPU (a split's
// parts on their streams); the tile shape is chosen for all of them together,
// as cuda-12-best chooses it for the whole product — a part with few rows
// alone would take the smaller tile.
void gemm_best_on_stream(cudaStream_t stream, int m, int n, int k, float alpha, const float* a, long long lda,
                         const float* b, long long ldb, float beta, float* c, long long ldc, int parts_in_flight = 1);

// C += alpha A B on `stream`, every element of the product added into C
// atomically (cuda::AddOperand): the K split's parts, in flight together on
// their streams, add into one C that was scaled by beta first
// (scale_on_stream), with no partial products and no summing pass. The
// tile shape is chosen as gemm_best_on_stream chooses it for `parts_in_flight`
// products. `part` >= 0: this is the part launched `part`-th of
// `parts_in_flight` products of the same shape in flight together, and it
// runs its share of their joint stream-K tail (parray/cuda/streamk_plan.hpp
// plan_parts_tail); -1: one grid of whole tiles. The order of the additions is not fixed.
// a_col_major: A is column-major, A(i, k) at a[i + k lda] (a part's slice of
// a column-major copy of A: part_wants_col_major_a); it takes the 128 x 128
// tile.
void gemm_best_add_on_stream(cudaStream_t stream, int m, int n, int k, float alpha, const float* a, long long lda,
                             const float* b, long long ldb, float* c, long long ldc, int parts_in_flight, int part,
                             bool a_col_major = false);

// Whether such a part runs from a column-major copy of its slice of A. Parts
// of K <= 512 take the 128 x 128 tile (two blocks per SM, so one block's
// epilogue of atomic additions overlaps the other's k-loop), whose k-loop
// with row-major A — staged through registers and stored transposed — runs
// below the wide tile's; with A along m both operands go by 16-byte
// cp.async and the tile ran level with the wide one on a single product
// (docs/perf-notes.md).
// PARRAY_ML_KSPLIT_AT: 0 never; 1 (default) where the parts fill the GPU
// with wide tiles but are too short for them; 2 wherever a part takes the
// 128 x 128 tile (tests).
bool part_wants_col_major_a(int m, int n, int k, int parts_in_flight);

// dst (rows x cols, row-major, row stride ldd) = src (rows x cols,
// column-major, column stride lds).
void transpose_on_stream(cudaStream_t stream, int rows, int cols, const float* src, long long lds, float* dst,
                         long long ldd);

// C = beta C on `stream` (C is not read when beta == 0).
void scale_on_stream(cudaStream_t stream, int m, int n, float beta, float* c, long long ldc);

// C = alpha (W_0 + ... + W_{parts-1}) + beta C, W_p = w + p * slice (M x N,
// row stride ldw): the K split's partial products summed on the device. w,
// ldw and slice must keep every row 16-byte aligned (ldw and slice multiples
// of 4 floats, w from cudaMalloc).
void sum_parts_on_stream(cudaStream_t stream, int m, int n, int parts, const float* w, long long ldw,
                         long long slice, float alpha, float beta, float* c, long long ldc);

}  // namespace parray::cuda::multilevel
