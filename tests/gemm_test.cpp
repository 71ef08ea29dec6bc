// Every registered CPU implementation (ladder and baselines) over one grid of
// shapes x layouts x alpha/beta x dtypes, against the FP64 reference.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "gemm_test_names.hpp"
#include "harness/harness.hpp"

using namespace parray;


namespace {

struct Shape {
  index_t m, k, n;
};

std::vector<GemmProblem> grid() {
  const std::vector<Shape> shapes = {{1, 1, 1},    {1, 50, 33},  {33, 50, 1},   {17, 1, 19}, {0, 5, 7},
                                     {5, 0, 7},    {5, 7, 0},    {37, 41, 43},  {64, 64, 64}, {129, 67, 33},
                                     {4, 4, 4},    {3, 200, 5},  {100, 3, 90},
                                     // parray-cpu's GEMV and few-column paths (>= 2^14 multiply-adds)
                                     {600, 40, 1}, {1, 200, 100}, {300, 70, 3}, {130, 129, 8},
                                     // ... rows ending in a partial vector; tiles of 4 columns
                                     // alone, + 1, + 2 (+ 1), row counts off the tiles' rows
                                     {200, 47, 2}, {97, 40, 4}, {101, 90, 5}, {40, 131, 6}, {41, 131, 7}};
  struct Layouts {
    const char *a, *b, *c;
  };
  const std::vector<Layouts> layouts = {{"row", "row", "row"},         {"col", "col", "col"},
                                        {"row-pad", "row-pad", "row-pad"}, {"fig17", "fig17", "fig17"},
                                        {"fig17x4", "fig17x4", "fig17x4"}, {"fig18", "fig18", "fig18"},
                                        {"col", "row", "fig18"},       {"fig17", "col", "row-pad"},
                                        // column-major A into row-major C: parray-cpu's direct
                                        // kernel reading A's columns (each k step's rows adjacent)
                                        {"col", "row", "row"}};
  const std::vector<std::pair<double, double>> scalars = {{1.0, 0.0}, {-1.5, 0.5}, {0.0, 2.0}};
  std::vector<GemmProblem> out;
  for (Dtype d : {Dtype::f32, Dtype::f64})
    for (const Shape& s : shapes)
      for (const Layouts& l : layouts)
        for (auto [alpha, beta] : scalars) {
          if (d == Dtype::f64 && alpha == 0.0) continue;
          GemmProblem p;
          p.dtype = d;
          p.m = s.m, p.k = s.k, p.n = s.n;
          p.layout_a = l.a, p.layout_b = l.b, p.layout_c = l.c;
          p.alpha = alpha, p.beta = beta;
          p.seed = static_cast<std::uint64_t>(s.m * 131 + s.k * 17 + s.n);
          out.push_back(p);
        }
  // The source documents' odd size on the acceptance layouts (row-major and figure 17).
  for (const char* l : {"row", "fig17"}) {
    GemmProblem p;
    p.m = 1037, p.k = 1055, p.n = 1031;
    p.layout_a = p.layout_b = p.layout_c = l;
    out.push_back(p);
  }
  // Both types through the packed path (the AVX-512 8 x 48 / 8 x 24 tiles;
  // under the l2 rule the row-major ones may take the direct path by default, so
  // ctest also runs these with PARRAY_CPU_DIRECT=0 under both rules,
  // tests/CMakeLists.txt). Under the l1 rule K
  // over several KC blocks: a last one stretched by up to an eighth (800 =
  // 384 + 416, and k % 4 != 0 in 798 = 384 + 414) or a short one (900 = 384 +
  // 384 + 132); edge rows (300 % 8) and edge columns in one, two or three
  // vectors of the last panel (the narrow tiles: 150 % 48 = 6, 170 % 48 = 26,
  // 180 % 48 = 36; 150 % 24 = 6, 170 % 24 = 2, 180 % 24 = 12), beta
  // accumulating into C.
  for (Dtype d : {Dtype::f32, Dtype::f64})
  for (const char* l : {"row", "fig17"})
    for (auto [k, n] : {std::pair<index_t, index_t>{800, 150}, {798, 170}, {900, 180}}) {
      GemmProblem p;
      p.dtype = d;
      p.m = 300, p.k = k, p.n = n;
      p.layout_a = p.layout_b = p.layout_c = l;
      p.alpha = -1.5, p.beta = 0.5;
      out.push_back(p);
    }
  // parray-cpu's wide direct tile (row-major A, B and C; FP32 6 x 64, FP64 6 x
  // 32) in every row height it walks (23 = 3 x 6 + 4 + 1, 21 = 3 x 6 + 2 + 1)
  // and both of its instances: C = A B (alpha 1, beta 0, compiled on its own)
  // and the general one with beta 0 and not; 100 columns leave edge columns
  // to the 12-row tile (FP32 36, FP64 4).
  for (Dtype d : {Dtype::f32, Dtype::f64})
    for (index_t m : {23, 21})
      for (auto [alpha, beta] : std::vector<std::pair<double, double>>{{1.0, 0.0}, {-1.5, 0.0}, {-1.5, 0.5}}) {
        GemmProblem p;
        p.dtype = d;
        p.m = m, p.k = 37, p.n = 100;
        p.layout_a = p.layout_b = p.layout_c = "row";
        p.alpha = alpha, p.beta = beta;
        out.push_back(p);
      }
  // Few rows against many columns (two row blocks, 11 / 21 panels, two KC
  // steps): with two threads each uses only the B panels it packed, down to
  // a partial last panel (500 % 48 = 20, 500 % 24 = 20), without a barrier
  // between the KC steps' two buffers.
  // With one row block (40 rows; 4, fewer than a tile's) each B panel is
  // packed into the thread's own buffer just before its row tiles run.
  for (Dtype d : {Dtype::f32, Dtype::f64})
    for (index_t m : {150, 40, 4}) {
      GemmProblem p;
      p.dtype = d;
      p.m = m, p.k = 1300, p.n = 500;
      p.layout_a = p.layout_b = p.layout_c = "row";
      p.alpha = -1.5, p.beta = 0.5;
      out.push_back(p);
    }
  // FP32 through the packed path with two threads: B packed row by row with a
  // short last panel (100 = 2 x 48 + 4) in the second thread's share, row
  // blocks handed out at run time down to a partial last one (500 rows: blocks
  // of 128, 96, 80, 80, 80 and 36 = 4 x 8 + 4), K over three KC blocks (800).
  for (const char* l : {"row", "fig17"}) {
    GemmProblem p;
    p.m = 500, p.k = 800, p.n = 100;
    p.layout_a = p.layout_b = p.layout_c = l;
    p.alpha = -1.5, p.beta = 0.5;
    out.push_back(p);
  }
  return out;
}

class CpuGemm : public testing::TestWithParam<GemmProblem> {
 protected:
  static void SetUpTestSuite() { register_baselines(registry()); }
};

}  // namespace

TEST_P(CpuGemm, AgreesWithFp64Reference) {
  const GemmProblem& p = GetParam();
  GemmCase gcase(p);
  int ran = 0;
  for (const GemmImpl& impl : registry().all()) {
    if (impl.device != Device::cpu) continue;
    if (std::string why = gcase.why_not(impl); !why.empty()) {
      // Only the BLAS baselines may decline a layout; parray's own take every one.
      EXPECT_TRUE(impl.baseline) << impl.name << " declined: " << why;
      continue;
    }
    for (int threads : {1, 2}) {
      if (threads == 2 && !impl.threaded) continue;
      const CheckResult r = gcase.run_and_check(impl, threads);
      EXPECT_TRUE(r.ok) << impl.name << " with " << threads << " thread(s): " << r.reason << " (rel_err "
                        << r.rel_err << ", tolerance " << r.tolerance << ")";
      ++ran;
    }
  }
  EXPECT_GE(ran, 7) << "the CPU ladder has at least seven implementations";
}

INSTANTIATE_TEST_SUITE_P(Grid, CpuGemm, testing::ValuesIn(grid()), gemm_case_name);
