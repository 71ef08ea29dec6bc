// tile_blocks (include/parray/cuda/operand.cuh): the paper's blocked layouts
// as the grid of strided blocks that step 15 reads and writes in place. Host
// code, checked here without a GPU (in the GPU test binary for the CUDA
// headers; CI runs it): every element addressed through a tile's block is the
// element the layout addresses, and a layout whose blocks cut tiles or whose
// last block is cut short is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parray/cuda/operand.cuh"
#include "parray/named_layouts.hpp"

using namespace parray;

namespace {

struct Stored {
  std::vector<float> data;
  MatrixView<float> view;
};

Stored stored(const std::string& layout, index_t r, index_t c) {
  const MatrixType t = make_matrix_type(layout, r, c);
  Stored s;
  s.data.resize(static_cast<std::size_t>(t.storage.size()));
  s.view = {s.data.data(), MatrixLayout::from(t.view)};
  return s;
}

// Every tile of tile_r x tile_c, addressed as step 15's epilogue does (the
// block holding the tile's corner, strided inside it), lands where the layout
// puts each of its elements.
void expect_tiles_address_like_the_layout(const MatrixView<float>& v, const cuda::BlockedOperand<float>& b, index_t tile_r,
                                          index_t tile_c) {
  for (index_t i0 = 0; i0 < v.rows(); i0 += tile_r)
    for (index_t j0 = 0; j0 < v.cols(); j0 += tile_c) {
      const index_t bi = i0 / b.block_rows, bj = j0 / b.block_cols;
      const cuda::StridedOperand<float> block = b.block(bi, bj);
      for (index_t i = i0; i < std::min(i0 + tile_r, v.rows()); ++i)
        for (index_t j = j0; j < std::min(j0 + tile_c, v.cols()); ++j) {
          ASSERT_EQ(&block(i - bi * b.block_rows, j - bj * b.block_cols), &v(i, j)) << i << "," << j;
          ASSERT_EQ(&b(i, j), &v(i, j)) << i << "," << j;
        }
    }
}

TEST(TileBlocks, BlocksHoldingWholeTilesAddressEveryElementAsTheLayoutDoes) {
  struct Case {
    const char* layout;
    index_t r, c, tile_r, tile_c, blocks_down, blocks_across;
  };
  for (const Case& k : {Case{"row", 300, 70, 128, 32, 1, 1}, Case{"row-pad", 130, 33, 128, 32, 1, 1},
                        Case{"col", 257, 64, 128, 32, 1, 1}, Case{"fig17", 300, 128, 128, 32, 1, 2},
                        Case{"fig17x4", 256, 1024, 128, 256, 1, 4}, Case{"fig18", 512, 1024, 128, 256, 2, 2},
                        Case{"fig18", 256, 64, 128, 32, 2, 2}}) {
    Stored s = stored(k.layout, k.r, k.c);
    const auto b = cuda::tile_blocks(s.view, k.tile_r, k.tile_c);
    ASSERT_TRUE(b) << k.layout << " " << k.r << "x" << k.c;
    EXPECT_EQ(cuda::ceil_div(k.r, b->block_rows), k.blocks_down) << k.layout;
    EXPECT_EQ(cuda::ceil_div(k.c, b->block_cols), k.blocks_across) << k.layout;
    expect_tiles_address_like_the_layout(s.view, *b, k.tile_r, k.tile_c);
  }
}

TEST(TileBlocks, BlocksThatCutTilesOrEndShortAreRefused) {
  struct Case {
    const char* layout;
    index_t r, c, tile_r, tile_c;
  };
  for (const Case& k : {Case{"fig17", 256, 96, 128, 32},      // column halves of 48: a k-tile cut
                        Case{"fig18", 384, 512, 128, 256},    // row halves of 192: a tile of rows cut
                        Case{"fig17x4", 256, 1022, 128, 32},  // quarters of 256, the last 254
                        Case{"fig18", 255, 512, 1, 1}}) {     // row halves of 128, the last 127
    Stored s = stored(k.layout, k.r, k.c);
    EXPECT_FALSE(cuda::tile_blocks(s.view, k.tile_r, k.tile_c)) << k.layout << " " << k.r << "x" << k.c;
  }
}

}  // namespace
