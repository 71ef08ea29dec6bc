// Tensor maps (the copy engine's description of a 2-D array in global memory)
// for the Hopper kernels, steps 14 and up.
#pragma once

#include <cuda.h>

#include "parray/core.hpp"

namespace parray::cuda {

// An outer x inner array (inner contiguous, rows outer_stride_bytes apart, a
// multiple of 16) read or written as boxes of box_outer x box_inner elements,
// 128-byte swizzled in shared memory when asked (box_inner then spans at most
// 128 bytes). Reads past the edges give zeros; writes there are dropped.
CUtensorMap tensor_map_2d(CUtensorMapDataType type, const void* base, index_t inner, index_t outer,
                          index_t outer_stride_bytes, int box_inner, int box_outer, bool swizzle_128b);

}  // namespace parray::cuda
