// The multi-level splits (include/parray/multilevel.hpp) against the FP64
// reference: odd sizes, odd splits, more threads than rows or than K, beta,
// non-row-major layouts. They also join gpu_gemm_test.cpp's grid, registered
// before any test runs by the environment below.
#include <gtest/gtest.h>

#include <cctype>
#include <ostream>
#include <string>

#include "parray/config.hpp"
#include "harness/harness.hpp"
#include "parray/multilevel.hpp"

namespace {

using namespace parray;

struct Shape {
  index_t m, k, n;
  const char* layout;
  double beta;
};

// gtest prints a parameter through this instead of dumping its bytes (a
// pointer among them, so the name changed from run to run).
void PrintTo(const Shape& s, std::ostream* os) {
  *os << s.m << "x" << s.k << "x" << s.n << " " << s.layout << " beta " << s.beta;
}

std::string shape_name(const testing::TestParamInfo<Shape>& info) {
  const Shape& s = info.param;
  std::string b = std::to_string(s.beta);
  for (char& c : b)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) + "_" + s.layout + "_beta" + b;
}

class GpuMultilevel : public testing::TestWithParam<Shape> {};

TEST_P(GpuMultilevel, AgreesWithFp64Reference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
#if PARRAY_HAVE_CUDA
  const Shape s = GetParam();
  GemmProblem p;
  p.m = s.m, p.k = s.k, p.n = s.n;
  p.layout_a = p.layout_b = p.layout_c = s.layout;
  p.beta = s.beta;
  GemmCase gcase(p);
  int ran = 0;
  for (const char* family : {"seed", "ml", "ml-dev"})
    for (const char* split : {"rows", "k"})
      for (int t : {1, 2, 4, 8}) {
        const GemmImpl& impl = registry().find(multilevel::impl_name(family, split, t));
        ASSERT_EQ(gcase.why_not(impl), "") << impl.name;
        const CheckResult r = gcase.run_and_check(impl, 1);
        EXPECT_TRUE(r.ok) << impl.name << " " << s.m << "x" << s.k << "x" << s.n << " " << s.layout << ": "
                          << r.reason << " (rel_err " << r.rel_err << ")";
        ++ran;
      }
  EXPECT_EQ(ran, 24);
#endif
}

INSTANTIATE_TEST_SUITE_P(Splits, GpuMultilevel,
                         testing::Values(Shape{1, 1, 1, "row", 0.0},       // more threads than rows and than K
                                         Shape{3, 5, 7, "row", 0.0},       // fewer rows than 4 and 8 threads
                                         Shape{7, 3, 130, "row", 0.5},     // K below the thread count, beta
                                         Shape{257, 131, 129, "row", 0.0}, // odd, unaligned rows
                                         Shape{1037, 1055, 1031, "row", 0.0},
                                         Shape{263, 1000, 300, "row", 0.75},  // beta, K split over 8 parts
                                         // whole aligned tiles: the part tile's 16-byte copies of A
                                         Shape{512, 2048, 384, "row", 0.25},
                                         Shape{300, 517, 263, "col", 0.0},
                                         Shape{129, 77, 200, "col", -1.5},
                                         Shape{640, 640, 640, "fig17", 0.0}),
                         shape_name);

}  // namespace
