// Tensor maps (the copy engine's description of an array in global memory)
// for the Hopper kernels, steps 14 and up.
#pragma once

#include <cuda.h>

#include "parray/core.hpp"

namespace parray::cuda {

// Whether a C whose rows hold `cols` elements of elem_bytes each may be
// stored through TMA: its stores write whole 16-byte chunks, so a row that
// ends inside one would have the padding after it written.
inline bool tma_stores_whole_rows(index_t cols, int elem_bytes) { return cols * elem_bytes % 16 == 0; }

// An outer x inner array (inner contiguous, rows outer_stride_bytes apart, a
// multiple of 16) read or written as boxes of box_outer x box_inner elements,
// 128-byte swizzled in shared memory when asked (box_inner then spans at most
// 128 bytes). Reads past the edges give zeros; writes there are dropped.
CUtensorMap tensor_map_2d(CUtensorMapDataType type, const void* base, index_t inner, index_t outer,
                          index_t outer_stride_bytes, int box_inner, int box_outer, bool swizzle_128b);

// A matrix stored as blocks_down x blocks_across strided blocks of
// block_rows x block_cols elements, a row's elements contiguous inside a
// block (figs 17 / 17x4 / 18; a row-major matrix is one block). Strides in
// bytes, multiples of 16; a block stride is unused where there is one block.
struct BlockedMatrix {
  const void* base;
  index_t block_rows, block_cols, blocks_down, blocks_across;
  index_t row_stride, block_row_stride, block_col_stride;
};

// Its rank-4 map, indexed (column in block, row in block, block column,
// block row), boxes of box_rows x box_cols inside one block; the edges as
// tensor_map_2d's.
CUtensorMap tensor_map_blocked(CUtensorMapDataType type, const BlockedMatrix& m, int box_cols, int box_rows,
                               bool swizzle_128b);

// A strided batch of rows x cols matrices of elem_bytes elements (rows ld
// apart, matrices `stride` apart; stride 0: one matrix broadcast over the
// batch) as a rank-4 map whose block rows are the batch's matrices: matrix z
// is read at block row z (0 where broadcast), boxes of box_rows x box_cols.
CUtensorMap tensor_map_batch(CUtensorMapDataType type, const void* base, index_t rows, index_t cols, index_t ld,
                             index_t batch, index_t stride, int elem_bytes, int box_cols, int box_rows,
                             bool swizzle_128b);

}  // namespace parray::cuda
