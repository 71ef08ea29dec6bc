// Parray's array types: every example of the paper (seed 004), static and
// dynamic layouts agreeing, the parser, matrix layouts and #copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "parray/array.hpp"
#include "parray/layout.hpp"
#include "parray/matrix.hpp"
#include "parray/named_layouts.hpp"
#include "parray/static_layout.hpp"

using namespace parray;

TEST(Layout, NaturalArrayFigure1) {
  const Layout A = Layout::parse("[[3][2]][4]");
  EXPECT_EQ(A.size(), 24);
  EXPECT_EQ(A.rank(), 2);
  EXPECT_EQ(A.dim(0).size(), 6);   // $dim(A_0)$: the number of rows
  EXPECT_EQ(A.dim(1).size(), 4);
  EXPECT_EQ(A.dim({0, 0}).size(), 3);
  EXPECT_EQ(A.dim({0, 1}).size(), 2);
  EXPECT_EQ(A(5, 2), 22);          // x[$A[5][2]$] is x[5*4+2]
  for (index_t i = 0; i < 24; ++i) EXPECT_EQ(A.offset(i), i);  // a natural array: $A[i]$ == i
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 2; ++j)
      for (index_t k = 0; k < 4; ++k)  // x[$A[[i][j]][k]$] is x[(i*2+j)*4+k]
        EXPECT_EQ(A.dim({0, 0}).offset(i) + A.dim({0, 1}).offset(j) + A.dim(1).offset(k), (i * 2 + j) * 4 + k);
  // A_1 is a type of its own: #create A_1(y) allocates 4 floats.
  Array<float> y(A.dim(1));
  EXPECT_EQ(y.storage_elements(), 4);
}

TEST(Layout, TransposeFigure4) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[4][3]");
  const Layout B = Layout::parse("[#A_1][#A_0]", s);
  Array<int> x(s["A"]);
  std::fill(x.data(), x.data() + 12, 0);
  x[s["A"](3, 2)] = 123;
  EXPECT_EQ(x[B(2, 3)], 123);
  EXPECT_EQ(B.dim(0).size(), 3);  // B has 3 rows
  for (index_t i = 0; i < 4; ++i)
    for (index_t j = 0; j < 3; ++j) EXPECT_EQ(B(j, i), s["A"](i, j));
}

TEST(Layout, TwoHalvesFigure17) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[2][1024][512]");
  const Layout M = Layout::parse("[#A_1][[#A_0][#A_2]]", s);
  EXPECT_EQ(M.dim(0).size(), 1024);
  EXPECT_EQ(M.dim(1).size(), 1024);
  std::vector<index_t> seen;
  for (index_t i = 0; i < 1024; ++i)
    for (index_t j = 0; j < 1024; ++j) {
      ASSERT_EQ(M(i, j), (j / 512) * 1024 * 512 + i * 512 + j % 512);
      if (i % 97 == 0) seen.push_back(M(i, j));
    }
  // Figure 16: the right half starts after the whole left half.
  EXPECT_EQ(M(0, 512), 1024 * 512);
  EXPECT_EQ(M(1023, 511), 1024 * 512 - 1);
}

TEST(Layout, FourQuartersFigure18a) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[4][1024][256]");
  const Layout M = Layout::parse("[#A_1][[#A_0][#A_2]]", s);
  std::set<index_t> all;
  for (index_t i = 0; i < 1024; i += 3)
    for (index_t j = 0; j < 1024; ++j) ASSERT_EQ(M(i, j), (j / 256) * 1024 * 256 + i * 256 + j % 256);
  for (index_t i = 0; i < 1024; ++i)
    for (index_t j = 0; j < 1024; ++j) all.insert(M(i, j));
  EXPECT_EQ(all.size(), 1024u * 1024u);  // a bijection onto the storage
  EXPECT_EQ(*all.rbegin(), 1024 * 1024 - 1);
}

TEST(Layout, TwoByTwoBlocksFigure18b) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[2][2][512][512]");
  const Layout M = Layout::parse("[[#A_0][#A_2]][[#A_1][#A_3]]", s);
  EXPECT_EQ(M.dim(0).size(), 1024);
  for (index_t i = 0; i < 1024; i += 7)
    for (index_t j = 0; j < 1024; ++j)
      ASSERT_EQ(M(i, j), ((i / 512) * 2 + j / 512) * 512 * 512 + (i % 512) * 512 + j % 512);
}

TEST(Layout, PaddedTile) {
  Layout::Symbols s;
  s["S"] = Layout::parse("[16][17]");
  const Layout V = Layout::parse("[#S_0][16 #S_1]", s);  // Parray's [#A_0][16 #A_1]
  EXPECT_EQ(V.dim(0).size(), 16);
  EXPECT_EQ(V.dim(1).size(), 16);
  EXPECT_EQ(V.size(), 256);
  for (index_t i = 0; i < 16; ++i)
    for (index_t j = 0; j < 16; ++j) EXPECT_EQ(V(i, j), i * 17 + j);
  // The same tile as a static layout, usable in device code.
  using Tile = SDense<16, 17>;
  using View = SNest<Tile::dim<0>, SResize<16, Tile::dim<1>>>;
  static_assert(View::size == 256);
  static_assert(View::offset(3, 5) == 3 * 17 + 5);
  for (index_t i = 0; i < 256; ++i) EXPECT_EQ(View::offset(i), V.offset(i));
}

TEST(Layout, StaticAndDynamicAgree) {
  using A = SNest<SNest<SLeaf<3, 8>, SLeaf<2, 4>>, SLeaf<4, 1>>;  // [[3][2]][4]
  static_assert(A::size == 24);
  static_assert(A::offset(5, 2) == 22);
  static_assert(A::dim<0>::dim<1>::size == 2);
  const Layout d = Layout::parse("[[3][2]][4]");
  EXPECT_EQ(to_layout<A>(), d);
  for (index_t i = 0; i < 24; ++i) EXPECT_EQ(A::offset(i), d.offset(i));
  using D = SDense<2, 3, 5>;
  const Layout dd = Layout::dense({2, 3, 5});
  EXPECT_EQ(to_layout<D>(), dd);
  for (index_t i = 0; i < 30; ++i) EXPECT_EQ(D::offset(i), dd.offset(i));
  static_assert(D::offset(1, 2, 3) == 1 * 15 + 2 * 5 + 3);
}

TEST(Layout, SplitAndRegroup) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[64][32]");
  // Split the rows into [[4][16]] and regroup: a 4 x (16*32) view of the same storage.
  const Layout T = Layout::parse("[[4][16] #A_0][#A_1]", s);
  EXPECT_EQ(T.dim(0).rank(), 2);
  for (index_t i = 0; i < 64; ++i)
    for (index_t j = 0; j < 32; ++j) EXPECT_EQ(T(i, j), s["A"](i, j));
  const Layout R = Layout::nest({T.dim({0, 0}), Layout::nest({T.dim({0, 1}), T.dim(1)})});
  EXPECT_EQ(R.dim(1).size(), 16 * 32);
  for (index_t i = 0; i < 64 * 32; ++i) EXPECT_EQ(R.offset(i), i);
}

TEST(Layout, ParserErrors) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[4][3]");
  EXPECT_THROW(Layout::parse("[3][#A_1]", s), Error);   // dense and reference mixed
  EXPECT_THROW(Layout::parse("[#Z_0]", s), Error);      // unknown name
  EXPECT_THROW(Layout::parse("[3", s), Error);          // unclosed
  EXPECT_THROW(Layout::parse("[#A_5]", s), Error);      // no such dimension
  EXPECT_THROW(Layout::parse("[9 #A_1]", s), Error);    // a resize cannot grow
  EXPECT_THROW(Layout::parse("", s), Error);
  EXPECT_THROW(Layout::leaf(-1, 1), Error);
}

TEST(Layout, SixtyFourBitOffsets) {
  // 100000 x 100000 has 10^10 elements: past 32 bits, without allocating it.
  const Layout A = Layout::dense({100000, 100000});
  EXPECT_EQ(A(99999, 99999), 9999999999LL);
  EXPECT_EQ(A.span(), 10000000000LL);
  EXPECT_THROW(Layout::dense({1LL << 40, 1LL << 40}), Error);  // the size would overflow
}

TEST(MatrixLayout, MatchesTheTypeForEveryNamedLayout) {
  for (const std::string& name : matrix_layout_names()) {
    for (auto [r, c] : {std::pair<index_t, index_t>{37, 29}, {64, 64}, {1, 9}, {8, 1}}) {
      const MatrixType t = make_matrix_type(name, r, c);
      const MatrixLayout m = MatrixLayout::from(t.view);
      EXPECT_EQ(m.rows.size, r) << name;
      EXPECT_EQ(m.cols.size, c) << name;
      EXPECT_TRUE(m.non_overlapping()) << name;
      EXPECT_LE(m.span(), t.storage.span()) << name;
      std::set<index_t> offsets;
      for (index_t i = 0; i < r; ++i)
        for (index_t j = 0; j < c; ++j) {
          ASSERT_EQ(m.offset(i, j), t.view(i, j)) << name;
          ASSERT_LT(m.offset(i, j), t.storage.span()) << name;
          offsets.insert(m.offset(i, j));
        }
      EXPECT_EQ(static_cast<index_t>(offsets.size()), r * c) << name << ": two elements share an address";
    }
  }
}

TEST(MatrixLayout, DetectsOverlap) {
  EXPECT_TRUE(MatrixLayout::row_major(4, 5, 5).non_overlapping());
  EXPECT_FALSE(MatrixLayout::row_major(4, 5, 3).non_overlapping());  // ld < row length
  EXPECT_FALSE(MatrixLayout::row_major(4, 5, 0).non_overlapping());  // every row the same
  EXPECT_TRUE(MatrixLayout::col_major(4, 5, 4).non_overlapping());
}

TEST(Array, CopyBetweenLayouts) {
  const index_t r = 37, c = 29;
  const MatrixType row = make_matrix_type("row", r, c), blocks = make_matrix_type("fig18", r, c);
  Array<double> a(row.storage), b(blocks.storage);
  MatrixView<double> va = a.view(row.view), vb = b.view(blocks.view);
  for (index_t i = 0; i < r; ++i)
    for (index_t j = 0; j < c; ++j) va(i, j) = static_cast<double>(i * 1000 + j);
  copy<double>(va, vb);  // Parray's #copy: same logical matrix, another storage order
  for (index_t i = 0; i < r; ++i)
    for (index_t j = 0; j < c; ++j) ASSERT_EQ(vb(i, j), static_cast<double>(i * 1000 + j));
  EXPECT_EQ(b[15], va(1, 0));  // and the storage order really differs: block rows are 15 long
  // The N-D copy in flat logical order, between [[3][2]][4] and its transpose.
  Layout::Symbols s;
  s["A"] = Layout::parse("[6][4]");
  const Layout T = Layout::parse("[#A_1][#A_0]", s);
  std::vector<int> x(24), y(24);
  for (int i = 0; i < 24; ++i) x[static_cast<std::size_t>(i)] = i;
  copy(x.data(), T, y.data(), s["A"]);
  EXPECT_EQ(y[1], 4);  // element (0,1) of the transpose is x[$A[1][0]$]
  EXPECT_THROW(copy<double>(va, b.view(make_matrix_type("fig18", c, r).view)), Error);
}

TEST(Array, MemorySpaces) {
  Array<float> paged(Layout::dense({3, 5}));
  EXPECT_EQ(paged.memory(), Memory::paged);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(paged.data()) % 64, 0u);
  if (!cuda_available()) {
    EXPECT_THROW(Array<float>(Layout::dense({4}), Memory::device), Error);
    EXPECT_THROW(Array<float>(Layout::dense({4}), Memory::pinned), Error);
  }
  EXPECT_THROW(paged.view(Layout::dense({4, 5})), Error);  // the view reaches past the storage
  EXPECT_THROW(Array<float>(Layout::dense({1LL << 31, 1LL << 31})), Error);  // 2^64 bytes
}
