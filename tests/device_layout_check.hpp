// The device form of a type against the host Layout it was built from: every
// flat offset of the type and of each sub-type along every path (shared by
// device_layout_test.cpp and the random types of layout_property_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "parray/device_layout.hpp"

namespace parray::testing_support {

inline void expect_device_same(const Layout& l, const DeviceLayout::Sub& d, const std::string& path) {
  ASSERT_EQ(d.size(), l.size()) << path;
  ASSERT_EQ(d.rank(), l.rank()) << path;
  for (index_t i = 0; i < l.size(); ++i) ASSERT_EQ(d.offset(i), l.offset(i)) << path << " i = " << i;
  if (l.is_leaf()) return;
  for (int k = 0; k < l.rank(); ++k) expect_device_same(l.dim(k), d.sub(k), path + "_" + std::to_string(k));
}

}  // namespace parray::testing_support
