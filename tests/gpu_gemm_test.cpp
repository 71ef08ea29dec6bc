// Every registered GPU implementation (the CUDA ladder, the paper's thread-
// array GEMMs and cuBLAS) over one grid of shapes x layouts x alpha/beta,
// against the FP64 reference, through the same harness as the CPU tests
// (GemmCase copies the operands to device memory, runs, copies C back and
// verifies; C is NaN-poisoned when beta == 0). Skips without a GPU.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gemm_test_names.hpp"
#include "harness/harness.hpp"
#include "parray/tuning.hpp"

using namespace parray;


namespace {

struct Shape {
  index_t m, k, n;
};

// FP32 problem s with A, B and C all in `layout`.
GemmProblem problem_in(const Shape& s, const char* layout, double beta) {
  GemmProblem p;
  p.m = s.m, p.k = s.k, p.n = s.n;
  p.layout_a = p.layout_b = p.layout_c = layout;
  p.beta = beta;
  return p;
}

// Implementations that are too slow for large sizes (4 GPU threads).
// Why an implementation declines every problem on this GPU ("" when it does
// not): step 14 off a Hopper GPU.
std::string why_not_anywhere(const GemmImpl& impl) {
  const MatrixLayout one = MatrixLayout::row_major(1, 1, 1);
  return impl.why_not(one, one, one);
}

bool small_only(const GemmImpl& impl) { return impl.name == "parray-cuda-2x2"; }

// PARRAY_GPU_TEST_IMPLS=a,b,...: test only these implementations (e.g. one
// kernel under each of its tuning shapes, PARRAY_CUDA_BEST_SHAPE).
bool selected(const GemmImpl& impl) {
  const char* v = std::getenv("PARRAY_GPU_TEST_IMPLS");
  if (!v || !*v) return true;
  const std::string list = std::string(",") + v + ",";
  return list.find("," + impl.name + ",") != std::string::npos;
}

std::vector<GemmProblem> grid() {
  const std::vector<Shape> shapes = {{64, 64, 64},  {128, 128, 128}, {1, 300, 257}, {257, 300, 1}, {77, 1, 65},
                                     {1, 1, 1},     {0, 5, 7},       {5, 0, 7},     {5, 7, 0},     {129, 67, 33},
                                     {130, 260, 131}, {37, 41, 43},
                                     // split-K (few tiles, long K), and tiles that cross the
                                     // blocks of the figure-17/18 layouts with split-K
                                     {65, 2100, 70},  {300, 1000, 260},
                                     // more tiles than SMs in one k-tile each: a persistent grid's
                                     // blocks take several, the ring running on across them
                                     {1100, 8, 4000},
                                     // K past fig. 21's table of K runs (8192): runs from the type
                                     {20, 8300, 270}};
  struct Layouts {
    const char *a, *b, *c;
  };
  const std::vector<Layouts> layouts = {{"row", "row", "row"},       {"col", "col", "col"},
                                        {"row", "col", "row"},       {"col", "row", "col"},
                                        {"row-pad", "row-pad", "row-pad"}, {"fig17", "fig17", "fig17"},
                                        {"fig18", "fig18", "fig18"}, {"fig17x4", "col", "fig18"}};
  // alpha = 0 is the dispatcher's (it scales C itself), so it is not a kernel case.
  const std::vector<std::pair<double, double>> scalars = {{1.0, 0.0}, {-1.5, 0.5}};
  std::vector<GemmProblem> out;
  for (Dtype d : {Dtype::f32, Dtype::f64})
    for (const Shape& s : shapes)
      for (const Layouts& l : layouts)
        for (auto [alpha, beta] : scalars) {
          if (d == Dtype::f64 && std::string(l.a) != "row" && std::string(l.a) != "fig18") continue;
          GemmProblem p;
          p.dtype = d;
          p.m = s.m, p.k = s.k, p.n = s.n;
          p.layout_a = l.a, p.layout_b = l.b, p.layout_c = l.c;
          p.alpha = alpha, p.beta = beta;
          p.seed = static_cast<std::uint64_t>(s.m * 131 + s.k * 17 + s.n + 7);
          out.push_back(p);
        }
  // The source documents' odd size, on row-major, a transpose case and the paper's layouts.
  for (const char* l : {"row", "col", "fig17", "fig18"}) {
    GemmProblem p;
    p.m = 1037, p.k = 1055, p.n = 1031;
    p.layout_a = p.layout_b = p.layout_c = l;
    p.beta = 0.5;
    out.push_back(p);
  }
  return out;
}

class GpuGemm : public testing::TestWithParam<GemmProblem> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or parray built without CUDA): GPU tests skipped";
  }
};

}  // namespace

TEST_P(GpuGemm, AgreesWithFp64Reference) {
  const GemmProblem& p = GetParam();
  GemmCase fp_case(p);
  // Implementations that round their inputs (TF32, BF16, FP16) are checked at
  // the precision they deliver, on the same data.
  std::map<Precision, GemmCase> rounded_cases;
  int ran = 0;
  for (const GemmImpl& impl : registry().all()) {
    if (impl.device != Device::gpu || !impl.supports(p.dtype) || !selected(impl)) continue;
    if (small_only(impl) && p.m * p.n * p.k > 300 * 300 * 300) continue;
    GemmCase* rounded = nullptr;
    if (impl.rounds_inputs) {
      GemmProblem at = p;
      at.precision = impl.rounds_inputs;
      rounded = &rounded_cases.try_emplace(*impl.rounds_inputs, at).first->second;
    }
    GemmCase& gcase = rounded ? *rounded : fp_case;
    if (std::string why = gcase.why_not(impl); !why.empty()) {
      // Only the cuBLAS baseline may decline a layout, step 14 a GPU that is
      // not a Hopper, step 17 (made for the default GEMM's calls of K <= 32 on
      // strided layouts) and step 18 (made for strided stacks of small
      // matrices) the rest; parray's other kernels take every layout.
      const bool strided_only = impl.name == "cuda-17-short-k" || impl.name == "cuda-18-batched-small";
      EXPECT_TRUE(impl.baseline || why == why_not_anywhere(impl) || strided_only)
          << impl.name << " declined: " << why;
      continue;
    }
    const CheckResult r = gcase.run_and_check(impl, 1);
    EXPECT_TRUE(r.ok) << impl.name << ": " << r.reason << " (rel_err " << r.rel_err << ", tolerance "
                      << r.tolerance << ")";
    ++ran;
  }
  if (!std::getenv("PARRAY_GPU_TEST_IMPLS")) {
    EXPECT_GE(ran, 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GpuGemm, testing::ValuesIn(grid()), gemm_case_name);

// Step 13's accuracy comes from the small parts: with them dropped
// (gpu.3xtf32_small=0: one TF32 product, ~2^-11 relative error) the same
// check fails on every layout, with them it passes.
// Steps 13, 14 and 15 (cuBLAS's and parray's tensor-core kernels on the split)
// and 21 (its small parts in BF16 cross terms).
class Gpu3xTf32 : public testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
    if (std::string why = why_not_anywhere(registry().find(GetParam())); !why.empty())
      GTEST_SKIP() << GetParam() << ": " << why;
  }
};

TEST_P(Gpu3xTf32, TheSmallPartsAreWhatMeetsTheFp32Tolerance) {
  const GemmImpl& impl = registry().find(GetParam());
  for (const char* layout : {"row", "col", "fig18"}) {
    GemmProblem p;
    p.m = 300, p.k = 1000, p.n = 260;
    p.layout_a = p.layout_b = p.layout_c = layout;
    GemmCase gcase(p);
    set_tuning("gpu.3xtf32_small", "0");
    const CheckResult one = gcase.run_and_check(impl, 1);
    set_tuning("gpu.3xtf32_small", "1");
    EXPECT_FALSE(one.ok) << layout << ": one TF32 product passed (rel_err " << one.rel_err << ")";
    EXPECT_GT(one.rel_err, 1e-5) << layout;
    const CheckResult three = gcase.run_and_check(impl, 1);
    EXPECT_TRUE(three.ok) << layout << ": " << three.reason << " (rel_err " << three.rel_err << ")";
    EXPECT_LT(three.rel_err, one.rel_err / 50) << layout;
  }
}

// An implementation that rounds its inputs (cuBLAS TF32) runs only when the
// problem asks for that precision, and is checked at it: within the TF32
// tolerance, beyond the FP32 one (the inputs really are rounded).
TEST(GpuPrecision, Tf32IsAskedForAndCheckedAtTf32) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& impl = registry().find("cublas-tf32");
  for (const char* layout : {"row", "col"}) {
    GemmProblem p;
    p.m = 300, p.k = 1000, p.n = 260;
    p.beta = 0.5;
    p.layout_a = p.layout_b = p.layout_c = layout;
    EXPECT_NE(GemmCase(p).why_not(impl).find("delivers tf32"), std::string::npos) << layout;
    p.precision = Precision::tf32;
    GemmCase gcase(p);
    ASSERT_EQ(gcase.why_not(impl), "") << layout;
    const CheckResult r = gcase.run_and_check(impl, 1);
    EXPECT_TRUE(r.ok) << layout << ": " << r.reason << " (rel_err " << r.rel_err << ", tolerance " << r.tolerance << ")";
    EXPECT_GT(r.rel_err, gemm_tolerance(Dtype::f32, p.k)) << layout << ": no sign of TF32 rounding";
    EXPECT_DOUBLE_EQ(r.tolerance, gemm_tolerance(Dtype::f32, p.k, Precision::tf32));
  }
}

// A long K: the tensor cores accumulate by truncation, so one TF32 GEMM over
// 3K = 24576 terms would be ~1e-4 off (5x the tolerance at 4096^3 on an H100);
// step 13's chunks of K keep it inside.
TEST_P(Gpu3xTf32, LongKStaysWithinTheFp32Tolerance) {
  GemmProblem p;
  p.m = 1024, p.k = 8192, p.n = 768;
  p.beta = -0.5;
  GemmCase gcase(p);
  const CheckResult r = gcase.run_and_check(registry().find(GetParam()), 1);
  EXPECT_TRUE(r.ok) << r.reason << " (rel_err " << r.rel_err << ", tolerance " << r.tolerance << ")";
}

INSTANTIATE_TEST_SUITE_P(Kernels, Gpu3xTf32,
                         testing::Values("cuda-13-3xtf32", "cuda-14-3xtf32", "cuda-15-3xtf32", "cuda-21-tf32-bf16"),
                         [](const testing::TestParamInfo<std::string>& i) {
                           std::string name = i.param;
                           for (char& ch : name)
                             if (ch == '-') ch = '_';
                           return name;
                         });

using Layouts3 = std::array<const char*, 3>;

// impl on shape s and layouts l (A, B, C) against the FP64 reference, with
// step 15's register operand forced on and then off (gpu.wgmma_a_registers).
void expect_agrees_with_registers_on_and_off(const GemmImpl& impl, const Shape& s, const Layouts3& l, double alpha,
                                             double beta, std::uint64_t seed) {
  GemmProblem p;
  p.m = s.m, p.k = s.k, p.n = s.n;
  p.layout_a = l[0], p.layout_b = l[1], p.layout_c = l[2];
  p.alpha = alpha, p.beta = beta;
  p.seed = seed;
  if (impl.rounds_inputs) p.precision = *impl.rounds_inputs;
  GemmCase gcase(p);
  for (const char* mode : {"1", "0"}) {
    set_tuning("gpu.wgmma_a_registers", mode);
    const CheckResult r = gcase.run_and_check(impl, 1);
    EXPECT_TRUE(r.ok) << impl.name << " " << s.m << "x" << s.k << "x" << s.n << " " << l[0] << "/" << l[1] << "/"
                      << l[2] << " beta " << beta << " registers=" << mode << ": " << r.reason << " (rel_err "
                      << r.rel_err << ")";
  }
  set_tuning("gpu.wgmma_a_registers", "auto");
}

// Each implementation named on every shape and layout with (alpha, beta) =
// (1, 0) and (-1.5, 0.5), the register operand on and off; returns why not
// where one cannot run here (the test is then skipped).
std::string expect_all_agree(const std::vector<const char*>& names, const std::vector<Shape>& shapes,
                             const std::vector<Layouts3>& layouts, index_t seed_step) {
  for (const char* name : names) {
    const GemmImpl& impl = registry().find(name);
    if (std::string why = why_not_anywhere(impl); !why.empty()) return std::string(name) + ": " + why;
    for (const Shape& s : shapes)
      for (const auto& l : layouts)
        for (auto [alpha, beta] : {std::pair{1.0, 0.0}, std::pair{-1.5, 0.5}})
          expect_agrees_with_registers_on_and_off(impl, s, l, alpha, beta,
                                                  static_cast<std::uint64_t>(s.m * seed_step + s.k));
  }
  return "";
}

// Step 15's operand in registers (gpu.wgmma_a_registers): A read where it
// lies, row- or column-major, and split by the consumers; or, where A has few
// rows and B is the larger, C^T = B^T A^T with B^T in registers. Each shape
// and layout runs with the register operand forced on and off.
TEST(GpuWgmmaRegisterA, EitherOperandInRegistersAgreesWithFp64Reference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const std::vector<Shape> shapes = {
      {200, 1000, 600}, {600, 1000, 200}, {130, 68, 1032}, {1100, 4000, 8}, {64, 36, 257}};
  const std::vector<Layouts3> layouts = {
      {"row", "row", "row"}, {"col", "col", "col"}, {"row", "col", "row"}, {"col", "row", "col"}};
  for (const char* name : {"cuda-15-tf32", "cuda-15-3xtf32"}) {
    const GemmImpl& impl = registry().find(name);
    if (std::string why = why_not_anywhere(impl); !why.empty()) GTEST_SKIP() << name << ": " << why;
    for (const Shape& s : shapes)
      for (const auto& l : layouts)
        expect_agrees_with_registers_on_and_off(impl, s, l, -1.5, 0.5, static_cast<std::uint64_t>(s.m * 7 + s.n));
  }
}

// Step 15 with a row-major A whose rows are off the 16-byte grid TMA needs (K
// not a multiple of 4): the producer warpgroup's threads copy A's tiles, each
// k-tile's last partial, rows past M zero; one tile (K split into many
// parts), tiles on more than a wave of SMs, K shorter than a k-tile, B row-
// and column-major; registers on (the threads' copies) and off (the pass).
TEST(GpuWgmmaRegisterA, RowsOffTheCopyEnginesGridCopiedByTheProducer) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const std::vector<Shape> shapes = {{129, 67, 33}, {70, 2103, 65}, {1100, 9, 4000}, {257, 31, 513}, {300, 1001, 250}};
  const std::vector<Layouts3> layouts = {{"row", "row", "row"}, {"row", "col", "row"}};
  if (const std::string why = expect_all_agree({"cuda-15-tf32", "cuda-15-3xtf32"}, shapes, layouts, 13); !why.empty())
    GTEST_SKIP() << why;
}

// Step 15's 128 x 64 tiles (gpu.wgmma_narrow) on a C of at most 64 columns:
// one column, a partial tile of columns, exactly 64; many tiles down M and a
// few (K split); A through the pass, in place (registers off and on) and
// copied by the producer threads (odd K); the 16-bit formats too.
TEST(GpuWgmmaNarrow, ThinCInNarrowTilesAgreesWithFp64Reference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  struct Restore {
    ~Restore() { set_tuning("gpu.wgmma_narrow", "0"); }
  } restore;
  set_tuning("gpu.wgmma_narrow", "1");
  const std::vector<Shape> shapes = {{1000, 300, 17}, {300, 1001, 64}, {4000, 64, 33}, {129, 67, 1}, {700, 2000, 40}};
  const std::vector<Layouts3> layouts = {{"row", "row", "row"}, {"col", "row", "col"}};
  if (const std::string why =
          expect_all_agree({"cuda-15-tf32", "cuda-15-3xtf32", "cuda-15-bf16", "cuda-15-fp16"}, shapes, layouts, 19);
      !why.empty())
    GTEST_SKIP() << why;
}

// Step 15 on the paper's blocked layouts (figs 17 / 17x4 / 18) where their
// blocks hold whole tiles: A read where it lies by TMA through a rank-4 map
// of its blocks (registers forced on) or split block by block (off), B split
// block by block, C written into its blocks, by TMA or, where K is split
// (256 x 2048 x 512: 4 tiles), with atomics after a beta pass. Blocks that cut
// tiles take the copies (the grid's fig17 / fig18 cases).
TEST(GpuWgmmaBlocks, TileHoldingBlocksReadInPlaceAgreeWithFp64Reference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const std::vector<Shape> shapes = {{512, 256, 1024}, {256, 2048, 512}, {384, 96, 512}};
  const std::vector<Layouts3> layouts = {{"fig17", "fig17", "fig17"},
                                         {"fig18", "fig18", "fig18"},
                                         {"fig17x4", "fig18", "fig17x4"},
                                         {"fig18", "col", "fig17"}};
  if (const std::string why = expect_all_agree({"cuda-15-tf32", "cuda-15-3xtf32", "cuda-15-bf16"}, shapes, layouts, 11);
      !why.empty())
    GTEST_SKIP() << why;
}

// Step 15 in clusters of two blocks along M (gpu.wgmma_cluster=2), each
// k-tile of B multicast by TMA to both: a cluster whose second block lies past
// C's last rows (384 rows: three tiles), odd sizes, a K split (256 x 2048 x
// 512), column-major and blocked operands (A through the pass, or TF32's
// row-major or blocked A in place), beta 0 and not; the register operand on
// and off.
TEST(GpuWgmmaCluster, BlocksSharingBMulticastAgreeWithFp64Reference) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const std::vector<Shape> shapes = {{384, 520, 512}, {1037, 1031, 1055}, {256, 2048, 512}, {130, 68, 1032}};
  const std::vector<Layouts3> layouts = {
      {"row", "row", "row"}, {"col", "col", "col"}, {"row", "col", "row"}, {"fig17", "fig17", "fig17"}};
  struct InPairs {  // the setting back to its default whatever leaves the test
    InPairs() { set_tuning("gpu.wgmma_cluster", "2"); }
    ~InPairs() { set_tuning("gpu.wgmma_cluster", "auto"); }
  } in_pairs;
  if (const std::string why =
          expect_all_agree({"cuda-15-tf32", "cuda-15-3xtf32", "cuda-15-bf16", "cuda-15-fp16"}, shapes, layouts, 13);
      !why.empty())
    GTEST_SKIP() << why;
}

// A pipeline broken on purpose (gpu.wgmma_read_early: step 14's TF32 kernel
// issues each slot's wgmma before waiting for its copies, so they read what
// the slot held before) gives products that the check rejects; with the wait
// in place the same products pass.
TEST(GpuWgmmaPipeline, ReadingASlotBeforeItsCopiesLandFailsTheCheck) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& impl = registry().find("cuda-14-tf32");
  if (std::string why = why_not_anywhere(impl); !why.empty()) GTEST_SKIP() << impl.name << ": " << why;
  for (const Shape& s : std::vector<Shape>{{640, 1024, 520}, {128, 4096, 256}}) {
    GemmProblem p;
    p.m = s.m, p.k = s.k, p.n = s.n;
    if (impl.rounds_inputs) p.precision = *impl.rounds_inputs;
    GemmCase gcase(p);
    set_tuning("gpu.wgmma_read_early", "1");
    const CheckResult broken = gcase.run_and_check(impl, 1);
    set_tuning("gpu.wgmma_read_early", "0");
    const CheckResult sound = gcase.run_and_check(impl, 1);
    EXPECT_FALSE(broken.ok) << s.m << "x" << s.k << "x" << s.n << ": the broken pipeline passed (rel_err "
                            << broken.rel_err << ")";
    EXPECT_TRUE(sound.ok) << s.m << "x" << s.k << "x" << s.n << ": " << sound.reason << " (rel_err "
                          << sound.rel_err << ")";
  }
}

// The device #copy: row-major into figure 18's blocks and back is the identity.
#include "parray/cuda/memory.hpp"

TEST(GpuCopy, RowMajorToFig18AndBack) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const index_t m = 37, n = 29;
  Array<float> host(Layout::dense({m, n}));
  for (index_t i = 0; i < m * n; ++i) host[i] = float(i) * 0.5f - 3.f;
  Array<float> dev = cuda::to_device(host);
  const MatrixType f18 = make_matrix_type("fig18", m, n);
  Array<float> blocked(f18.storage, Memory::device);
  cuda::copy<float>(dev.view(), blocked.view(f18.view));
  Array<float> back(Layout::dense({m, n}), Memory::device);
  cuda::copy<float>(blocked.view(f18.view), back.view());
  Array<float> out = cuda::to_host(back);
  Array<float> blocked_host = cuda::to_host(blocked);
  const MatrixLayout l = MatrixLayout::from(f18.view);
  for (index_t i = 0; i < m; ++i)
    for (index_t j = 0; j < n; ++j) {
      ASSERT_EQ(out[i * n + j], host[i * n + j]) << i << "," << j;
      ASSERT_EQ(blocked_host[l.offset(i, j)], host[i * n + j]) << i << "," << j;
    }
}

// The default GPU GEMM (gpu-auto) on a problem of each class the planner
// tells apart — GEMV (M or N = 1), small, a small C with a long K (split),
// thin, large — at each precision a call can ask for, checked at that
// precision on the same data, on row-major and on layouts that take other
// paths (column-major, a blocked figure-18 C).
TEST(GpuPlanner, EveryPlannedPathAtEveryPrecision) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& gpu_auto = registry().find("gpu-auto");
  // (m, k, n): GEMV, few vectors (N or M <= 8, K sliced where the rows are
  // few), small, split, thin, large.
  const std::vector<Shape> shapes = {{1, 4096, 3000},  {3000, 4096, 1}, {1, 1, 77},       {4192, 2493, 3},
                                     {94, 7983, 3},    {5, 3001, 7000}, {3, 2374, 13},    {6001, 999, 8},
                                     {64, 64, 64},     {513, 129, 257}, {96, 12288, 96},  {256, 30000, 64},
                                     {4000, 17, 3000}, {3001, 5, 2222}, {177, 2, 9001},   {1000, 32, 999},
                                     {20000, 700, 12}, {12, 3000, 5000},
                                     {2048, 2048, 2048}};
  for (const Shape& s : shapes)
    for (const char* layout : {"row", "col", "fig18"})
      for (Precision asked : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16}) {
        if (std::string(layout) == "fig18" && (s.m < 2 || s.n < 2 || s.k < 2)) continue;
        GemmProblem p;
        p.m = s.m, p.k = s.k, p.n = s.n;
        p.layout_a = p.layout_b = p.layout_c = layout;
        p.beta = 0.5;
        p.precision = asked;
        p.reference_on_device = true;  // the FP64 reference of the large ones on the GPU
        p.seed = static_cast<std::uint64_t>(s.m + 7 * s.k + 11 * s.n);
        GemmCase gcase(p);
        const CheckResult r = gcase.run_and_check(gpu_auto, 1);
        EXPECT_TRUE(r.ok) << s.m << "x" << s.k << "x" << s.n << " " << layout << " " << precision_name(asked) << ": "
                          << r.reason << " (rel_err " << r.rel_err << ", tolerance " << r.tolerance << ")";
        EXPECT_DOUBLE_EQ(r.tolerance, gemm_tolerance(Dtype::f32, p.k, asked));
      }
}

// A K split adds its parts in a fixed order: the same call twice gives the
// same bits, on the CUDA cores (step 12) and the tensor cores (step 15).
TEST(GpuPlanner, KSplitsAreDeterministic) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  for (const char* impl : {"cuda-12-best", "cuda-15-3xtf32", "cuda-15-tf32", "gpu-auto"}) {
    const GemmImpl& i = registry().find(impl);
    if (!why_not_anywhere(i).empty()) continue;
    GemmProblem p;
    p.m = 96, p.k = 12288, p.n = 96;
    p.beta = 0.5;
    p.precision = i.rounds_inputs.value_or(Precision::fp32);
    GemmCase gcase(p);
    auto bits = [&] {
      const auto* c = static_cast<const unsigned char*>(gcase.c_storage());
      return std::vector<unsigned char>(c, c + gcase.c_storage_bytes());
    };
    ASSERT_TRUE(gcase.run_and_check(i, 1).ok) << impl;
    const std::vector<unsigned char> first = bits();
    for (int rep = 0; rep < 3; ++rep) {
      ASSERT_TRUE(gcase.run_and_check(i, 1).ok) << impl;
      EXPECT_TRUE(bits() == first) << impl << ": a K split's sum depends on timing";
    }
  }
}

// Steps 19 and 22 (FP64) on products too few tiles to fill the GPU, where K
// is split into parts summed in a fixed order: partial tiles, C row- and
// column-major, beta read and not, and the same bits on every run. Row-major
// operands of even K and N take step 22's copy engine (each of its tiles),
// the rest step 19. 64 x 20000 x 40 is one tile of 625 k-tiles: more parts
// than 16.
TEST(GpuDmma, KSplitAtSanitizerSizesIsDeterministic) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  struct Restore {
    ~Restore() { set_tuning("gpu.dmma_tile", "auto"); }
  } restore;
  const std::vector<Shape> shapes = {{96, 2000, 96}, {130, 1500, 70}, {200, 4099, 260}, {64, 20000, 40}};
  const std::vector<std::pair<const char*, const char*>> runs = {
      {"cuda-19-dmma", "auto"}, {"cuda-22-dmma-tma", "1"}, {"cuda-22-dmma-tma", "2"}, {"cuda-22-dmma-tma", "3"}};
  for (const auto& [name, tile] : runs) {
    set_tuning("gpu.dmma_tile", tile);
    const GemmImpl& dmma = registry().find(name);
    if (std::string why = why_not_anywhere(dmma); !why.empty()) GTEST_SKIP() << why;
    for (const Shape& s : shapes)
      for (const char* layout : {"row", "col"})
        for (double beta : {0.0, 0.5}) {
          GemmProblem p;
          p.dtype = Dtype::f64;
          p.m = s.m, p.k = s.k, p.n = s.n;
          p.layout_a = p.layout_b = p.layout_c = layout;
          p.alpha = -1.5, p.beta = beta;
          GemmCase gcase(p);
          auto bits = [&] {
            const auto* c = static_cast<const unsigned char*>(gcase.c_storage());
            return std::vector<unsigned char>(c, c + gcase.c_storage_bytes());
          };
          const std::string what = std::string(name) + " tile " + tile + " " + std::to_string(s.m) + "x" +
                                   std::to_string(s.k) + "x" + std::to_string(s.n) + " " + layout + " beta " +
                                   std::to_string(beta);
          const CheckResult r = gcase.run_and_check(dmma, 1);
          ASSERT_TRUE(r.ok) << what << ": " << r.reason;
          const std::vector<unsigned char> first = bits();
          ASSERT_TRUE(gcase.run_and_check(dmma, 1).ok) << what;
          EXPECT_TRUE(bits() == first) << what << ": a K split's sum depends on timing";
        }
  }
}

// Step 22 where the copy engine cannot read the operands as they lie (odd K
// and N put rows 8 bytes off the 16-byte grid; column-major A runs along m)
// and the product is large enough that padded row-major copies pay: every
// element checked, beta read.
TEST(GpuDmma, OddRowsThroughPaddedCopies) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& dmma = registry().find("cuda-22-dmma-tma");
  if (std::string why = why_not_anywhere(dmma); !why.empty()) GTEST_SKIP() << why;
  for (const char* layout : {"row", "col"}) {
    GemmProblem p = problem_in({2049, 2047, 2051}, layout, 0.5);
    p.dtype = Dtype::f64;
    p.alpha = -1.5;
    GemmCase gcase(p);
    const CheckResult r = gcase.run_and_check(dmma, 1);
    EXPECT_TRUE(r.ok) << "2049x2047x2051 " << layout << ": " << r.reason;
  }
}

// Step 12's thin tiles (the default GEMM's C of 9-64 columns or rows), each
// forced through gpu.best_shape at sizes small enough for compute-sanitizer:
// partial tiles both ways, row- and column-major operands, beta read.
TEST(GpuPlanner, ThinTilesAtSanitizerSizes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& best = registry().find("cuda-12-best");
  struct Restore {
    ~Restore() { set_tuning("gpu.best_shape", "auto"); }
  } restore;
  const std::vector<Shape> shapes = {{300, 70, 12}, {12, 70, 300}, {517, 33, 40}, {40, 33, 517}};
  for (const Shape& s : shapes)
    for (int shape = 16; shape <= 21; ++shape)
      for (const char* layout : {"row", "col"}) {
        set_tuning("gpu.best_shape", std::to_string(shape));
        GemmCase gcase(problem_in(s, layout, 0.5));
        const CheckResult r = gcase.run_and_check(best, 1);
        EXPECT_TRUE(r.ok) << s.m << "x" << s.k << "x" << s.n << " " << layout << " shape " << shape << ": " << r.reason;
      }
}

// Step 17 (K <= 32) at sizes small enough for compute-sanitizer: C's rows
// stored 16 bytes at a time and not (odd N), beta read and not, partial
// tiles, A and B read along either stride, C column-major (transposed);
// FP32 and FP64 (16 bytes of C a thread: 4 floats, 2 doubles).
TEST(GpuPlanner, ShortKAtSanitizerSizes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& short_k = registry().find("cuda-17-short-k");
  const std::vector<Shape> shapes = {{70, 1, 130}, {129, 5, 257}, {64, 32, 128}, {200, 31, 9}, {3, 7, 300}};
  struct Layouts {
    const char *a, *b, *c;
  };
  for (const Shape& s : shapes)
    for (const Layouts l : {Layouts{"row", "row", "row"}, Layouts{"col", "col", "col"}, Layouts{"col", "row", "row"},
                            Layouts{"row", "col", "col"}, Layouts{"row-pad", "row-pad", "row-pad"}})
      for (double beta : {0.0, 0.5})
        for (Dtype dtype : {Dtype::f32, Dtype::f64}) {
          GemmProblem p;
          p.m = s.m, p.k = s.k, p.n = s.n;
          p.layout_a = l.a, p.layout_b = l.b, p.layout_c = l.c;
          p.beta = beta;
          p.dtype = dtype;
          GemmCase gcase(p);
          ASSERT_EQ(gcase.why_not(short_k), "") << l.a << " " << l.b << " " << l.c;
          const CheckResult r = gcase.run_and_check(short_k, 1);
          EXPECT_TRUE(r.ok) << s.m << "x" << s.k << "x" << s.n << " " << l.a << "/" << l.b << "/" << l.c << " beta "
                            << beta << (dtype == Dtype::f64 ? " f64" : " f32") << ": " << r.reason;
        }
}

// GEMV step 7 (C of at most 8 columns or rows) at sizes small enough for
// compute-sanitizer: K sliced and not, fewer columns than the kernel's
// register width, A along k and along m, and the transposed case (few rows);
// along m with groups of threads splitting k, with slices and without, rows
// 16-byte aligned and not, a partial last block of rows.
// GEMV step 7's FP64 instance (2 doubles a 16-byte load, its staged B in
// 16-byte units of 2) on the FP32 test's shapes: 1-8 columns or rows, A
// along k and along m, slices of K, beta read.
TEST(GpuFewVectors, Fp64AtSanitizerSizes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& few = registry().find("gemv-07-few-vectors");
  const std::vector<Shape> shapes = {{94, 1999, 3}, {601, 99, 8}, {5, 301, 700}, {3, 2374, 13},
                                     {77, 33, 1},  {4, 1100, 2100}, {7, 3001, 203}, {2, 40001, 6}};
  for (const Shape& s : shapes)
    for (const char* layout : {"row", "col"}) {
      GemmProblem p = problem_in(s, layout, 0.5);
      p.dtype = Dtype::f64;
      GemmCase gcase(p);
      const CheckResult r = gcase.run_and_check(few, 1);
      EXPECT_TRUE(r.ok) << s.m << "x" << s.k << "x" << s.n << " " << layout << ": " << r.reason;
    }
}

TEST(GpuPlanner, FewVectorsAtSanitizerSizes) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const GemmImpl& gpu_auto = registry().find("gpu-auto");
  const std::vector<Shape> shapes = {{94, 1999, 3}, {601, 99, 8}, {5, 301, 700}, {3, 2374, 13},
                                     {77, 33, 1},  {4, 1100, 2100}, {7, 3001, 203}};
  for (const Shape& s : shapes)
    for (const char* layout : {"row", "col"}) {
      GemmCase gcase(problem_in(s, layout, 0.5));
      const CheckResult r = gcase.run_and_check(gpu_auto, 1);
      EXPECT_TRUE(r.ok) << s.m << "x" << s.k << "x" << s.n << " " << layout << ": " << r.reason;
    }
}
