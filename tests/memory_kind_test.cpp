// Memory kinds in the type: ArrayType<T, Kind> creates its array in the
// kind's memory (#create) and frees it with the array's scope (#destroy).
#include <gtest/gtest.h>

#include "parray/array.hpp"
#include "parray/memory_kind.hpp"

using namespace parray;

TEST(MemoryKind, PagedTypeCreatesItsStorage) {
  // Fig 1: [[3][2]][4] as a natural array, here in paged memory.
  const ArrayType<float, paged> A("[[3][2]][4]");
  EXPECT_EQ(A.str(), "paged float [[3][2]][4]");
  EXPECT_EQ(A.size(), 24);
  Array<float> a = A.create();
  EXPECT_EQ(a.memory(), Memory::paged);
  ASSERT_NE(a.data(), nullptr);
  a[A.layout()(2, 1)] = 123.f;  // a[$A[2][1]$]: row 2 of the six, column 1
  EXPECT_EQ(a[2 * 4 + 1], 123.f);
}

TEST(MemoryKind, TypesTakeConstantsAndReferences) {
  const ArrayType<double, paged> S("[2][N][N/2]", {}, {{"N", 8}});
  const ArrayType<double, paged> M("[#S_1][[#S_0][#S_2]]", {{"S", S.layout()}});
  EXPECT_EQ(M.layout().dim(1).size(), 8);
  EXPECT_EQ(M.size(), 64);
}

TEST(MemoryKind, PinnedAndDeviceNeedTheCudaRuntime) {
  const ArrayType<float, pinned> P("[64][64]");
  const ArrayType<float, dmem> D("[64][64]");
  EXPECT_EQ(D.str("float"), "dmem float [64][64]");
  if (!cuda_available()) {
    // Built without CUDA or no GPU: a clear error, never a null array.
    EXPECT_THROW(P.create(), Error);
    EXPECT_THROW(D.create(), Error);
    GTEST_SKIP() << "no CUDA device: pinned and device memory not created";
  }
  Array<float> p = P.create(), d = D.create();
  EXPECT_EQ(p.memory(), Memory::pinned);
  EXPECT_EQ(d.memory(), Memory::device);
  EXPECT_NE(d.data(), nullptr);
}
