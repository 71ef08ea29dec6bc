// The packed (blocked) path of parray's CPU GEMM: the BLIS/Goto algorithm
// over any layout (blocked.cpp).
#pragma once

#include <cstddef>

#include "blocking.hpp"
#include "microkernel.hpp"
#include "parray/registry.hpp"

namespace parray::cpu {

// The order of the two innermost loops of the packed path. down_columns (the
// Goto/BLIS order): the row tiles of one B micro-panel in turn, the panel
// kept in L1 — C's tiles visited down a column of tiles. along_rows: the B
// micro-panels of one row tile in turn, the KC x NC block of B kept in L2 —
// C's tiles visited along their rows, so that the hardware prefetcher
// fetches C ahead of the stores.
enum class TileOrder { down_columns, along_rows };

// along_rows for a short K and a C written to memory, else down_columns
// (cpu.order forces one).
TileOrder choose_tile_order(index_t m, index_t n, index_t k, std::size_t element_bytes);

// C = alpha A B + beta C on the packed path, C's columns contiguous or
// neither C's rows nor its columns.
template <class T>
void blocked_gemm(const GemmCall<T>& call, const MicroKernel<T>& uk, BlockSizes bs, TileOrder order);

extern template void blocked_gemm<float>(const GemmCall<float>&, const MicroKernel<float>&, BlockSizes, TileOrder);
extern template void blocked_gemm<double>(const GemmCall<double>&, const MicroKernel<double>&, BlockSizes,
                                          TileOrder);

}  // namespace parray::cpu
