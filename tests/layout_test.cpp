// Parray's array types: every example of the paper, static and
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

// The position a parse error names (npos without one).
std::size_t error_position(const std::string& text, const Layout::Symbols& s = {},
                           const Layout::Constants& c = {}) {
  try {
    Layout::parse(text, s, c);
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("\"" + text + "\""), std::string::npos) << what;
    const std::size_t at = what.rfind(" at position ");
    return at == std::string::npos ? at : std::stoull(what.substr(at + 13));
  }
  ADD_FAILURE() << text << " parsed";
  return std::string::npos;
}

TEST(Layout, SgemmTypesFigure21) {
  // The paper's fig. 21 with N = 256: A, B and C split into tiles, C0 a
  // thread's 16 x 2 part, S0 the padded shared-memory tile.
  const Layout::Constants c = {{"N", 256}};
  Layout::Symbols s;
  s["type"] = Layout::parse("[N][N]", {}, c);
  s["A"] = Layout::parse("[[N/16][[4][4]] #type_0][[N/32][32] #type_1]", s, c);
  s["B"] = Layout::parse("[[N/32][32] #type_0][[N/256][[128][2]] #type_1]", s, c);
  s["C"] = Layout::parse("[#A_0][#B_1]", s);
  s["C0"] = Layout::parse("[#C_0_1][#C_1_1_1]", s);
  s["S"] = Layout::parse("[32][17]");
  s["S0"] = Layout::parse("[32 #S_0][[4][4] 16 #S_1]", s);  // the paper's [[4][4] #S_1]: see below
  const Layout &type = s["type"], &A = s["A"], &B = s["B"], &C = s["C"], &C0 = s["C0"], &S0 = s["S0"];
  EXPECT_EQ(A.str(), "[[16][[4][4]]][[8][32]]");  // a regrouped dense type prints as one
  EXPECT_EQ(A.dim({0, 1}).size(), 16);
  EXPECT_EQ(A.dim({1, 0}).size(), 8);
  for (index_t i = 0; i < 256; i += 5)
    for (index_t j = 0; j < 256; ++j) ASSERT_EQ(A(i, j), type(i, j));
  // $A[[t00][[0][t10]]][[0][t11]]$: a thread's first element.
  for (index_t t00 = 0; t00 < 16; ++t00)
    for (index_t t10 = 0; t10 < 4; ++t10)
      for (index_t t11 = 0; t11 < 32; ++t11)
        ASSERT_EQ(A.dim({0, 0}).offset(t00) + A.dim({0, 1, 1}).offset(t10) + A.dim({1, 1}).offset(t11),
                  type(t00 * 16 + t10, t11));
  EXPECT_EQ(B.dim({1, 1, 1}).size(), 2);
  EXPECT_EQ(B.dim({1, 1, 1}).stride(), 1);
  EXPECT_EQ(C.dim(0), A.dim(0));  // sub-types of types built from references
  EXPECT_EQ(C.dim(1), B.dim(1));
  EXPECT_EQ(C0.size(), 32);
  for (index_t r = 0; r < 16; ++r)
    for (index_t k = 0; k < 2; ++k) EXPECT_EQ(C0(r, k), r * 256 + k);
  for (index_t i = 0; i < 32; ++i)
    for (index_t j = 0; j < 16; ++j) EXPECT_EQ(S0(i, j), i * 17 + j);
  EXPECT_EQ(S0.dim({1, 0}).stride(), 4);
  // Splitting 16 of the 17 needs the size written: the extents must cover it.
  EXPECT_EQ(error_position("[32 #S_0][[4][4] #S_1]", s), 10u);
}

TEST(Layout, SizeExpressions) {
  const Layout::Constants c = {{"N", 100}, {"M", 37}, {"K_2", 3}, {"BIG", index_t{1} << 62}};
  auto extent = [&](const std::string& e) { return Layout::parse("[" + e + "]", {}, c).size(); };
  EXPECT_EQ(extent("N/16"), 6);  // C's integer division
  EXPECT_EQ(extent("(M+15)/16"), 3);
  EXPECT_EQ(extent("2+3*4"), 14);
  EXPECT_EQ(extent("(2+3)*4"), 20);
  EXPECT_EQ(extent("20-6-4"), 10);  // left-associative
  EXPECT_EQ(extent("64/4/2"), 8);
  EXPECT_EQ(extent("M%N%10"), 7);
  EXPECT_EQ(extent("(0-7)/2+10"), 7);  // truncation toward zero: -3
  EXPECT_EQ(extent("(0-7)%3+5"), 4);   // the remainder takes the dividend's sign: -1
  EXPECT_EQ(extent("-3*-4"), 12);
  EXPECT_EQ(extent(" K_2 * ( N - 1 ) "), 297);
  EXPECT_EQ(extent("BIG/BIG"), 1);
  const Layout t = Layout::parse("[N/10][(M+3)/10]", {}, c);
  EXPECT_EQ(t, Layout::dense({10, 4}));
  Layout::Symbols s;
  s["A"] = Layout::parse("[N][M]", {}, c);
  EXPECT_EQ(Layout::parse("[[N/4][4] #A_0][M-7 #A_1]", s, c), Layout::parse("[[25][4] #A_0][30 #A_1]", s));
  EXPECT_EQ(error_position("[N/(M-37)]", {}, c), 2u);  // division by zero, at the '/'
  EXPECT_EQ(error_position("[N%(M-M)]", {}, c), 2u);
  EXPECT_EQ(error_position("[BIG*4]", {}, c), 4u);   // overflow, at the '*'
  EXPECT_EQ(error_position("[0-BIG-BIG-BIG]", {}, c), 10u);
  EXPECT_EQ(error_position("[3][X+1]", {}, c), 4u);  // unknown constant
  EXPECT_EQ(error_position("[N-101]", {}, c), 1u);   // a negative extent
  EXPECT_EQ(error_position("[99999999999999999999]", {}, c), 1u);
  EXPECT_EQ(error_position("[(N+1]", {}, c), 5u);
  EXPECT_EQ(error_position("[N+]", {}, c), 3u);
  EXPECT_EQ(error_position("[4:N-101]", {}, c), 3u);  // a negative stride
  EXPECT_EQ(error_position("[N]", {}, {}), 1u);       // the two-argument form has no constants
}

TEST(Layout, NestedSplits) {
  Layout::Symbols s;
  s["X"] = Layout::parse("[64][5]");
  const Layout T = Layout::parse("[[4][[2][8]] #X_0][#X_1]", s);
  EXPECT_EQ(T.dim(0).rank(), 2);
  EXPECT_EQ(T.dim({0, 1}).rank(), 2);
  EXPECT_EQ(T.dim({0, 1, 0}).stride(), 40);
  EXPECT_EQ(T.dim({0, 1, 1}).stride(), 5);
  for (index_t i = 0; i < 64; ++i)
    for (index_t j = 0; j < 5; ++j) EXPECT_EQ(T(i, j), s["X"](i, j));
  // The C++ form: the shape is a dense type whose tree and sizes count.
  EXPECT_EQ(T.dim(0), s["X"].dim(0).split(Layout::parse("[4][[2][8]]")));
  EXPECT_EQ(s["X"].dim(0).split({8, 8}), Layout::parse("[[8][8] #X_0]", s));
  // Extents covering more than the size: a resized result, as for leaves.
  const Layout R = Layout::parse("[[3][[2][16]] #X_0]", s);
  EXPECT_EQ(R.size(), 64);
  EXPECT_EQ(R.dim(0).size(), 3);
  for (index_t i = 0; i < 64; ++i) EXPECT_EQ(R.offset(i), s["X"].dim(0).offset(i));
  EXPECT_EQ(error_position("[[3][[2][2]] #X_0]", s), 1u);  // 12 do not cover 64
  EXPECT_EQ(error_position("[[3][[2][#X_1]] #X_0]", s), 8u);  // a split takes extents only
  EXPECT_EQ(error_position("[[3][20 [2][2]] #X_0]", s), 4u);
}

TEST(Layout, SplittingNestedDimensions) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[4][6]");
  s["T"] = Layout::parse("[#A_1][#A_0]", s);      // 6 x 4, leaves [6:1][4:6]
  s["F"] = Layout::parse("[[#A_1][#A_0]]", s);    // the same as one dimension of 24
  const Layout& F = s["F"];
  // Boundaries that align with the digits (4 and 24): 8 = 2 * 4.
  const Layout G = Layout::parse("[[3][8] #F]", s);
  EXPECT_EQ(G.str(), "[3:2][[2:1][4:6]]");
  for (index_t i = 0; i < 24; ++i) EXPECT_EQ(G.offset(i), F.offset(i));
  EXPECT_EQ(G, F.split({3, 8}));
  // Finer than the digits: each digit splits into leaves.
  const Layout H = Layout::parse("[[3][2][2][2] #F]", s);
  EXPECT_EQ(H.str(), "[3:2][2:1][2:12][2:6]");
  // Digits contiguous in storage merge first: A_0 of [[3][2]][4] is one
  // leaf of stride 4 for a split, so any split of it aligns.
  s["B"] = Layout::parse("[[3][2]][4]");
  EXPECT_EQ(Layout::parse("[[2][3] #B_0]", s).str(), "[2:12][3:4]");
  // Boundaries that cross a digit are refused, naming the split's position.
  EXPECT_EQ(error_position("[#A_0][[4][6] #F]", s), 7u);
  EXPECT_EQ(error_position("[[8][3] #F]", s), 1u);
  try {
    Layout::parse("[[8][3] #F]", s);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not align"), std::string::npos) << e.what();
  }
  // A resized inner dimension is no longer one mixed-radix number.
  s["P"] = Layout::parse("[[#A_0][5 #A_1]][[3 [#A_0][#A_1]]]", s, {}, {.allow_aliasing = true});
  EXPECT_EQ(error_position("[[2][30] #P]", s), 1u);
}

TEST(Layout, SplitAfterResize) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[3][24]");
  const Layout V = Layout::parse("[#A_0][[4][5] 20 #A_1]", s);
  EXPECT_EQ(V.dim(1), s["A"].dim(1).resized(20).split({4, 5}));
  EXPECT_EQ(V.dim(1).size(), 20);
  for (index_t i = 0; i < 3; ++i)
    for (index_t j = 0; j < 20; ++j) EXPECT_EQ(V(i, j), i * 24 + j);
  EXPECT_EQ(V.str(), "[3:24][[4:5][5:1]]");
  EXPECT_EQ(error_position("[#A_0][[4][5] 30 #A_1]", s), 14u);  // a resize cannot grow
  EXPECT_EQ(error_position("[#A_0][[4][4] 20 #A_1]", s), 7u);   // 16 do not cover 20
  EXPECT_EQ(error_position("[#A_0][[4][5] 20 ]", s), 17u);      // the reference is missing
  // A resized group: [n [..][..]], the first n of its elements.
  const Layout G = Layout::parse("[5 [#A_0][2 #A_1]]", s);
  EXPECT_EQ(G.size(), 5);
  EXPECT_EQ(G.offset(3), 24 + 1);
  EXPECT_EQ(G.str(), "[5 [3:24][2:1]]");
}

TEST(Layout, SubTypePaths) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[[3][2]][4]");
  s["B"] = Layout::parse("[#A_1][[#A_0_1][#A_0_0]]", s);
  s["V"] = Layout::parse("[5]");
  EXPECT_EQ(Layout::parse("[#B_1_1]", s), s["A"].dim({0, 0}));  // a sub-type of a referencing type
  EXPECT_EQ(Layout::parse("[#B_1_0_0]", s), s["A"].dim({0, 1}));  // a leaf's _0 is itself, once
  EXPECT_EQ(Layout::parse("[#V_0]", s), s["V"]);
  EXPECT_EQ(error_position("[#B_1_0_0_0]", s), 9u);  // a second _0 at a leaf
  EXPECT_EQ(error_position("[#A_0_0_0_0]", s), 9u);
  EXPECT_EQ(error_position("[#V_0_0]", s), 5u);
  EXPECT_EQ(error_position("[#A_0_1_1]", s), 7u);  // a leaf has no _1
  EXPECT_EQ(error_position("[#B_2]", s), 3u);       // past the rank
  EXPECT_EQ(error_position("[#B_1_2]", s), 5u);
  EXPECT_EQ(error_position("[#B_]", s), 4u);
  EXPECT_EQ(error_position("[#B_99999999999999999999]", s), 4u);
  EXPECT_EQ(error_position("[#A_0][#Zz]", s), 8u);
  EXPECT_EQ(&s["A"].dim({0, 0, 0}), &s["A"].dim({0, 0}));
  EXPECT_THROW(s["A"].dim({0, 0, 0, 0}), Error);
  EXPECT_THROW(s["A"].dim(std::vector<int>{0, 0, 1}), Error);
  EXPECT_THROW(s["A"].dim({2}), Error);
}

TEST(Layout, Aliasing) {
  Layout::Symbols s;
  s["A"] = Layout::parse("[4][3]");
  EXPECT_EQ(error_position("[#A_1][#A_1]", s), 0u);            // only the whole type aliases
  EXPECT_EQ(error_position("[#A_0][[#A_1][#A_1]]", s), 6u);    // the innermost bracket that does
  EXPECT_EQ(error_position("[#A_0][4:0]", s), 6u);
  const Layout::ParseOptions views{.allow_aliasing = true};
  const Layout broadcast = Layout::parse("[#A_1][#A_1]", s, {}, views);
  EXPECT_FALSE(broadcast.is_injective());
  EXPECT_EQ(broadcast(2, 2), 4);
  EXPECT_TRUE(Layout::parse("[#A_1][#A_0]", s).is_injective());
  EXPECT_TRUE(Layout::parse("[5:0]", s, {}, views) == Layout::leaf(5, 0));
  EXPECT_TRUE(Layout::leaf(1, 0).is_injective());
  EXPECT_TRUE(Layout::leaf(0, 0).is_injective());
  // Strides that interleave without colliding: only enumeration tells.
  const Layout interleaved = Layout::nest({Layout::leaf(2, 3), Layout::leaf(3, 2)});  // 0 2 4 3 5 7
  EXPECT_TRUE(interleaved.is_injective());
  EXPECT_FALSE(Layout::nest({Layout::leaf(3, 2), Layout::leaf(3, 1)}).is_injective());  // 2 = 2*1 = 1*2
  // Past 2^22 elements only the stride test: sufficient, so large layouts
  // with separated strides pass and an interleaved one is refused.
  EXPECT_TRUE(Layout::dense({4096, 4096}).is_injective());
  EXPECT_TRUE(Layout::parse("[#A_1][#A_0]", {{"A", Layout::dense({8192, 1024})}}).is_injective());
  EXPECT_FALSE(Layout::nest({Layout::leaf(2, 3), Layout::leaf(3, 2), Layout::leaf(1 << 22, 8)}).is_injective());
  EXPECT_FALSE(Layout::nest({Layout::leaf(1 << 12, 1), Layout::leaf(1 << 12, 1)}).is_injective());
}

TEST(Layout, CoordinateRanges) {
  const Layout A = Layout::parse("[4][3]");
  EXPECT_NO_THROW(A.check_coordinates({3, 2}));
  EXPECT_THROW(A.check_coordinates({4, 0}), Error);
  EXPECT_THROW(A.check_coordinates({0, -1}), Error);
  EXPECT_THROW(A.check_coordinates({0}), Error);
  try {
    A.check_coordinates({1, 3});
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("coordinate 3 of dimension 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4][3]"), std::string::npos) << e.what();
  }
  // A resized type: coordinates within the dimensions may still lie past its size.
  const Layout R = Layout::dense({4, 3}).resized(10);
  EXPECT_NO_THROW(R.check_coordinates({3, 0}));
  EXPECT_THROW(R.check_coordinates({3, 1}), Error);
  EXPECT_THROW(Layout::leaf(5, 2).check_coordinates({5}), Error);
#ifndef NDEBUG
  EXPECT_THROW(A(4, 0), Error);  // debug builds check every access
  EXPECT_THROW(A.offset({0, 3}), Error);
#endif
}

TEST(Layout, PrintsTheNotationBack) {
  EXPECT_EQ(Layout::parse("[[3][2]][4]").str(), "[[3][2]][4]");
  EXPECT_EQ(Layout::dense({2, 3, 5}).str(), "[2][3][5]");
  EXPECT_EQ(Layout::parse("[20 [4][6]][3]").str(), "[20 [4][6]][3]");
  EXPECT_EQ(Layout::dense({3, 4}).resized(5).str(), "[5 [3][4]]");
  EXPECT_EQ(Layout::leaf(7, 1).str(), "[7]");
  EXPECT_EQ(Layout::leaf(7, 2).str(), "[7:2]");
  Layout::Symbols s;
  s["A"] = Layout::parse("[4][3]");
  EXPECT_EQ(Layout::parse("[#A_1][#A_0]", s).str(), "[3:1][4:3]");
  s["S"] = Layout::parse("[16][17]");
  EXPECT_EQ(Layout::parse("[#S_0][16 #S_1]", s).str(), "[16:17][16:1]");
  std::vector<Layout> all = {Layout::parse("[[3][2]][4]"), Layout::parse("[#A_1][#A_0]", s),
                             Layout::parse("[#S_0][16 #S_1]", s), Layout::parse("[[4][4] 16 #S_1][#S_0]", s),
                             Layout::parse("[[8][[2][2]] #A_0]", {{"A", Layout::dense({32})}}),
                             Layout::dense({3, 0, 2}), Layout::dense({0}), Layout(), Layout::leaf(3, 0)};
  for (const std::string& name : matrix_layout_names())
    for (auto [r, c] : {std::pair<index_t, index_t>{37, 29}, {64, 64}, {1, 9}, {0, 3}}) {
      const MatrixType t = make_matrix_type(name, r, c);
      all.push_back(t.storage);
      all.push_back(t.view);
      all.push_back(t.view.dim(1));
    }
  for (const Layout& l : all)
    EXPECT_TRUE(Layout::parse(l.str(), {}, {}, {.allow_aliasing = true}) == l) << l.str();
  EXPECT_EQ(make_matrix_type("fig18", 37, 29).view.str(), "[37 [2:570][19:15]][29 [2:285][15:1]]");
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
