// The device form of a type (device_layout.hpp) gives the same offsets as the
// host Layout it was built from: flat, per coordinate, and through every
// sub-type, for the paper's layouts and their odd-sized, padded variants.
#include <gtest/gtest.h>

#include "device_layout_check.hpp"
#include "parray/device_layout.hpp"
#include "parray/named_layouts.hpp"

using namespace parray;

namespace {

void expect_same(const Layout& l) {
  const DeviceLayout d = DeviceLayout::from(l);
  testing_support::expect_device_same(l, d.type(), "A");
  if (l.rank() != 2) return;
  for (index_t i = 0; i < l.dim(0).size(); ++i)
    for (index_t j = 0; j < l.dim(1).size(); ++j) ASSERT_EQ(d(i, j), l(i, j)) << l.str() << " (" << i << ", " << j << ")";
}

}  // namespace

TEST(DeviceLayout, PaperTypesHaveTheHostOffsets) {
  const Layout a = Layout::parse("[[3][2]][4]");
  expect_same(a);
  expect_same(Layout::parse("[#A_1][#A_0]", {{"A", a}}));
  expect_same(Layout::parse("[#A_1][[#A_0_1][#A_0_0]]", {{"A", a}}));
  const Layout t = Layout::parse("[16][17]");
  expect_same(Layout::parse("[#T_0][16 #T_1]", {{"T", t}}));
  const Layout v = Layout::parse("[64]");
  expect_same(Layout::parse("[[8][8] #V_0]", {{"V", v}}));
  expect_same(Layout::parse("[[4][4]][[2][[3][5]]]"));
}

TEST(DeviceLayout, NamedMatrixLayoutsHaveTheHostOffsets) {
  for (const std::string& name : matrix_layout_names())
    for (auto [r, c] : {std::pair<index_t, index_t>{6, 8}, {7, 5}, {1, 9}, {13, 11}}) {
      SCOPED_TRACE(name + " " + std::to_string(r) + "x" + std::to_string(c));
      expect_same(make_matrix_type(name, r, c).view);
    }
}

TEST(DeviceLayout, RefusesATypeBeyondItsCapacity) {
  std::string text;
  for (int i = 0; i < DeviceLayout::kMaxNodes; ++i) text += "[2]";
  EXPECT_THROW(DeviceLayout::from(Layout::parse(text)), Error);
}

// A translated kernel's strided and two-digit builds compute offsets as
// ints: a type whose span reaches 2^31 takes the general build (index_t).
TEST(DeviceLayout, KernelBuildsTakeIntOffsetsOnlyUnder2To31) {
  const DeviceLayout fits = DeviceLayout::from(Layout::parse("[46340][46340]"));    // span 2^31 - 88,048
  const DeviceLayout beyond = DeviceLayout::from(Layout::parse("[46341][46341]"));  // span 2^31 + 4,633
  const Layout storage = Layout::parse("[2][32768][32768]");  // fig 17's storage, span 2^31
  const DeviceLayout blocked = DeviceLayout::from(Layout::parse("[#S_1][[#S_0][#S_2]]", {{"S", storage}}));
  for (int k = 0; k < 2; ++k) {
    EXPECT_TRUE(pa::DeviceSub::of(fits.sub(k)).strided()) << k;
    EXPECT_TRUE(pa::DeviceSub::of(fits.sub(k)).fast_two_digits()) << k;
    EXPECT_FALSE(pa::DeviceSub::of(beyond.sub(k)).strided()) << k;
    EXPECT_FALSE(pa::DeviceSub::of(beyond.sub(k)).fast_two_digits()) << k;
  }
  const pa::DeviceSub columns = pa::DeviceSub::of(blocked.sub(1));
  EXPECT_TRUE(columns.two_digits());
  EXPECT_FALSE(columns.strided());
  EXPECT_FALSE(columns.fast_two_digits());
  EXPECT_EQ(pa::DeviceSub::of(fits.sub(0)).offset<pa::Build::strided>(fits, 46339), 46339 * 46340);
  EXPECT_EQ(pa::DeviceSub::of(beyond.sub(0)).offset<pa::Build::general>(beyond, 46340), index_t{46340} * 46341);
  EXPECT_EQ(columns.offset<pa::Build::general>(blocked, 32768), index_t{1} << 30);
}

TEST(DeviceLayout, FixedMatrixFormHasTheHostOffsets) {
  for (const std::string& name : matrix_layout_names())
    for (auto [r, c] : {std::pair<index_t, index_t>{6, 8}, {7, 5}, {13, 11}}) {
      const Layout view = make_matrix_type(name, r, c).view;
      int calls = 0;
      with_fixed_matrix(view, [&](auto fixed) {
        ++calls;
        for (index_t i = 0; i < r; ++i)
          for (index_t j = 0; j < c; ++j) ASSERT_EQ(fixed(i, j), view(i, j)) << name << " (" << i << ", " << j << ")";
      });
      EXPECT_EQ(calls, 1);
    }
  EXPECT_THROW(with_fixed_matrix(Layout::parse("[2][3][4]"), [](auto) {}), Error);  // not rank 2
}
