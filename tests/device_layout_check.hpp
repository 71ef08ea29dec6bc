// The device form of a type against the host Layout it was built from: every
// flat offset of the type and of each sub-type along every path, through the
// table and as a translated kernel's DeviceSub (shared by
// device_layout_test.cpp and the random types of layout_property_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "parray/device_layout.hpp"
#include "parray/parrayc.hpp"

namespace parray::testing_support {

// A sub-type as a translated kernel reads it (parrayc.hpp): every form of
// its offsets that a kernel build can take.
inline void expect_kernel_sub_same(const Layout& l, const DeviceLayout::Sub& d, const std::string& path) {
  const pa::DeviceSub k = pa::DeviceSub::of(d);
  ASSERT_EQ(k.size(), l.size()) << path;
  index_t inner = 0, at = 0;  // the walk of #copy
  for (index_t i = 0; i < l.size(); ++i, k.advance(inner, at)) {
    ASSERT_EQ(k.offset<pa::Build::general>(d.table(), i), l.offset(i)) << path << " i = " << i;
    if (k.strided()) {
      ASSERT_EQ(k.offset<pa::Build::strided>(d.table(), i), l.offset(i)) << path << " (strided) i = " << i;
    }
    if (k.fast_two_digits()) {
      ASSERT_EQ(k.offset<pa::Build::two_digits>(d.table(), i), l.offset(i)) << path << " (two digits) i = " << i;
    }
    if (k.two_digits()) {
      ASSERT_EQ(at, l.offset(i)) << path << " (walk) i = " << i;
    }
  }
}

inline void expect_device_same(const Layout& l, const DeviceLayout::Sub& d, const std::string& path) {
  ASSERT_EQ(d.size(), l.size()) << path;
  ASSERT_EQ(d.rank(), l.rank()) << path;
  for (index_t i = 0; i < l.size(); ++i) ASSERT_EQ(d.offset(i), l.offset(i)) << path << " i = " << i;
  expect_kernel_sub_same(l, d, path);
  if (l.is_leaf()) return;
  for (int k = 0; k < l.rank(); ++k) expect_device_same(l.dim(k), d.sub(k), path + "_" + std::to_string(k));
}

}  // namespace parray::testing_support
