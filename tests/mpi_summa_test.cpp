// MPI tests, run by ctest under mpirun with 1, 2, 3 and 4 ranks: process
// arrays, block-cyclic scatter/gather/redistribution and SUMMA (every
// factorisation of the rank count as a grid, all four transpose cases, odd
// shapes, ranks without data) against an FP64 reference on rank 0, with the
// local GEMM on the CPU and, where the host has a GPU, on the GPU (all ranks
// may share one device); the distributed check (C w against op(A) op(B) w and
// sampled elements) on right and corrupted products; and, where every rank has
// a GPU of its own and the build has NCCL, SUMMA with panels over NCCL
// (ctest Mpi.Nccl.np2; the tests skip elsewhere).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "parray/array.hpp"
#include "parray/dist_model.hpp"
#include "parray/mpi/check.hpp"
#include "parray/mpi/gpu.hpp"
#include "parray/mpi/summa.hpp"
#include "parray/mpi/summa_25d.hpp"

using namespace parray;
using namespace parray::mpi;

namespace {

std::vector<std::vector<int>> all_grids() {
  std::vector<std::vector<int>> g;
  const int n = world_size();
  for (int p = 1; p <= n; ++p)
    if (n % p == 0) g.push_back({p, n / p});
  return g;
}

// The same on every rank: a global column-major matrix of values in [-1, 1).
std::vector<double> global_matrix(index_t m, index_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> x(static_cast<std::size_t>(m * n));
  for (double& v : x) v = u(gen);
  return x;
}

MatrixView<double> cm(std::vector<double>& x, index_t m, index_t n) {
  return {x.data(), MatrixLayout::col_major(m, n, std::max<index_t>(1, m))};
}

// Every rank's verdict, so that all ranks agree on pass/fail.
bool all_true(bool ok) {
  int v = ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

TEST(MpiThreadArray, CoordinatesAndCommunicators) {
  for (const auto& g : all_grids()) {
    MpiThreadArray grid({g[0], g[1]});
    bool ok = true;
    grid.detour([&](const ProcCoord& p) {
      ok = ok && p.row * g[1] + p.col == p.tid() && p[0] == p.row && p[1] == p.col && p.size() == world_size();
      int rs = 0, cs = 0, rr = 0, cr = 0;
      MPI_Comm_size(p.row_comm, &rs);
      MPI_Comm_size(p.col_comm, &cs);
      MPI_Comm_rank(p.row_comm, &rr);
      MPI_Comm_rank(p.col_comm, &cr);
      ok = ok && rs == g[1] && cs == g[0] && rr == p.col && cr == p.row;
      p.sync();
    });
    EXPECT_TRUE(all_true(ok)) << g[0] << "x" << g[1];
  }
}

// Any rank: a 3-D array [1][n][1] and a nested one [[1][n]] over the n
// ranks; communicators and #sync along each dimension.
TEST(MpiThreadArray, AnyRankAndSyncAlongADimension) {
  const int n = world_size();
  bool ok = true;
  MpiThreadArray three({1, n, 1});
  three.detour([&](const ProcCoord& p) {
    ok = ok && p.rank() == 3 && p.tid(1) == p.tid() && p.tid(0) == 0 && p.tid(2) == 0 && p.dim(1) == n;
    int sizes[3] = {0, 0, 0}, r1 = -1;
    for (int d = 0; d < 3; ++d) MPI_Comm_size(p.along[d], &sizes[d]);
    MPI_Comm_rank(p.along[1], &r1);
    ok = ok && sizes[0] == 1 && sizes[1] == n && sizes[2] == 1 && r1 == p.tid(1);
    for (int d = 0; d < 3; ++d) p.sync(d);
    p.sync();
  });
  MpiThreadArray nested(ThreadShape::nested({{1, n}}));
  nested.detour([&](const ProcCoord& p) { ok = ok && p.tid(0, 1) == p.tid() && p.tid(0, 0) == 0 && p.dim(0, 1) == n; });
  EXPECT_TRUE(all_true(ok));
  EXPECT_THROW(three.coord().sync(3), Error);
}

TEST(MpiThreadArray, GridMustMatchRankCount) {
  EXPECT_THROW(MpiThreadArray({world_size() + 1, 1}), Error);
  EXPECT_THROW(MpiThreadArray({0, 1}), Error);
  EXPECT_THROW(parse_grid("2by2"), Error);
  EXPECT_EQ(parse_grid("3x2"), (std::vector<int>{3, 2}));
  EXPECT_EQ(parse_grid("3x2x4"), (std::vector<int>{3, 2, 4}));
  for (const char* bad : {"3", "3x", "x2", "3x2x", "3x2x4x1", "3x0x2"}) EXPECT_THROW(parse_grid(bad), Error) << bad;
}

TEST(DistMatrix, NumrocMatchesOwnership) {
  const BlockCyclic d{103, 57, 5, 7, 3, 2, 1, 1};
  for (int pr = 0; pr < 3; ++pr) {
    index_t count = 0;
    for (index_t i = 0; i < d.m; ++i)
      if (d.row_owner(i) == pr) {
        EXPECT_EQ(d.global_row(d.local_row(i), pr), i);
        ++count;
      }
    EXPECT_EQ(count, d.local_rows(pr));
  }
}

TEST(DistMatrix, ScatterGatherRoundTripAndRedistribute) {
  for (const auto& g : all_grids()) {
    MpiThreadArray grid({g[0], g[1]});
    const index_t m = 23, n = 17;
    std::vector<double> x = global_matrix(m, n, 7);
    DistMatrix<double> a(grid, BlockCyclic::cyclic(m, n, 3, 2, g[0], g[1]));
    a.scatter_from(cm(x, m, n), 0);
    bool ok = true;
    for (index_t lj = 0; lj < a.local_cols(); ++lj)
      for (index_t li = 0; li < a.local_rows(); ++li)
        ok = ok && a.local()(li, lj) == x[static_cast<std::size_t>(a.global_row(li) + a.global_col(lj) * m)];
    // into a 2-D block distribution, transposed, and back
    DistMatrix<double> t(grid, BlockCyclic::block(n, m, g[0], g[1]));
    redistribute(a, t, true);
    DistMatrix<double> back(grid, BlockCyclic::cyclic(m, n, 4, 5, g[0], g[1]));
    redistribute(t, back, true);
    std::vector<double> y(static_cast<std::size_t>(m * n), 0.0), yt(static_cast<std::size_t>(m * n), 0.0);
    back.gather_to(cm(y, m, n), 0);
    t.gather_to(cm(yt, n, m), 0);
    if (grid.coord().tid() == 0) {
      ok = ok && y == x;
      for (index_t i = 0; i < m; ++i)
        for (index_t j = 0; j < n; ++j) ok = ok && yt[static_cast<std::size_t>(j + i * n)] == x[static_cast<std::size_t>(i + j * m)];
    }
    EXPECT_TRUE(all_true(ok)) << g[0] << "x" << g[1];
  }
}

struct Shape {
  index_t m, n, k, block;
};

// The largest |x - y| over the elements; NaN (an unwritten or poisoned
// element) makes it infinite, so it never passes.
template <class T>
double max_abs_diff(double ref, T got, double err) {
  const double d = std::fabs(ref - static_cast<double>(got));
  return std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(err, d);
}

// C = alpha op(A) op(B) + beta C by `multiply` (alpha = 1.5) on matrices
// distributed over `grid` (every layer of a 2.5-D array scatters the same
// ones), against an FP64 reference on world rank 0. beta == 0 poisons C with
// NaN first: every element must be written.
template <class T>
using Multiply = std::function<void(T alpha, DistMatrix<T>& a, DistMatrix<T>& b, T beta, DistMatrix<T>& c)>;

template <class T>
void check_product_on(const MpiThreadArray& grid, const Shape& s, bool ta, bool tb, double beta,
                      const std::string& where, const Multiply<T>& multiply) {
  const std::vector<int> g = {grid.rows(), grid.cols()};
  const index_t am = ta ? s.k : s.m, an = ta ? s.m : s.k, bm = tb ? s.n : s.k, bn = tb ? s.k : s.n;
  std::vector<double> xa = global_matrix(am, an, 1), xb = global_matrix(bm, bn, 2), xc = global_matrix(s.m, s.n, 3);
  if (beta == 0) std::fill(xc.begin(), xc.end(), std::numeric_limits<double>::quiet_NaN());
  auto to_t = [](const std::vector<double>& x) { return std::vector<T>(x.begin(), x.end()); };
  std::vector<T> ta_ = to_t(xa), tb_ = to_t(xb), tc_ = to_t(xc);
  auto view = [](std::vector<T>& x, index_t m, index_t n) {
    return MatrixView<const T>{x.data(), MatrixLayout::col_major(m, n, std::max<index_t>(1, m))};
  };
  DistMatrix<T> a(grid, BlockCyclic::cyclic(am, an, s.block, s.block, g[0], g[1]));
  DistMatrix<T> b(grid, BlockCyclic::cyclic(bm, bn, s.block, s.block, g[0], g[1]));
  DistMatrix<T> c(grid, BlockCyclic::cyclic(s.m, s.n, s.block, s.block, g[0], g[1]));
  a.scatter_from(view(ta_, am, an));
  b.scatter_from(view(tb_, bm, bn));
  c.scatter_from(view(tc_, s.m, s.n));
  const T alpha = T(1.5);
  multiply(alpha, a, b, T(beta), c);
  std::vector<T> got(static_cast<std::size_t>(std::max<index_t>(1, s.m * s.n)));
  c.gather_to({got.data(), MatrixLayout::col_major(s.m, s.n, std::max<index_t>(1, s.m))});
  double err = 0;
  if (world_rank() == 0) {
    // Operands rounded to T, as the product saw them.
    for (index_t i = 0; i < s.m; ++i)
      for (index_t j = 0; j < s.n; ++j) {
        double r = beta == 0 ? 0.0 : beta * static_cast<double>(tc_[static_cast<std::size_t>(i + j * s.m)]);
        for (index_t p = 0; p < s.k; ++p)
          r += static_cast<double>(alpha) *
               static_cast<double>(ta ? ta_[static_cast<std::size_t>(p + i * am)] : ta_[static_cast<std::size_t>(i + p * am)]) *
               static_cast<double>(tb ? tb_[static_cast<std::size_t>(j + p * bm)] : tb_[static_cast<std::size_t>(p + j * bm)]);
        err = max_abs_diff(r, got[static_cast<std::size_t>(i + j * s.m)], err);
      }
  }
  MPI_Bcast(&err, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  // |alpha op(A) op(B)| <= 1.5 k per element: a few units of T's rounding per term.
  const double unit = std::is_same_v<T, float> ? 6e-8 : 1.2e-16;
  EXPECT_LT(err, 16 * unit * 1.5 * static_cast<double>(s.k + 1))
      << where << " " << s.m << "x" << s.n << "x" << s.k << " block " << s.block << " ta " << ta << " tb " << tb
      << " beta " << beta << " " << dtype_name(dtype_of<T>());
}

Trans trans(bool t) { return t ? Trans::yes : Trans::no; }

// SUMMA (or ScaLAPACK) on grid.
template <class T>
void check_summa_on(const MpiThreadArray& grid, const Shape& s, bool ta, bool tb, bool use_scalapack,
                    const SummaOptions& options = {}, double beta = -0.5) {
  check_product_on<T>(grid, s, ta, tb, beta, std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()),
                      [&](T alpha, DistMatrix<T>& a, DistMatrix<T>& b, T beta_t, DistMatrix<T>& c) {
                        if (use_scalapack)
                          scalapack_gemm<T>(trans(ta), trans(tb), alpha, a, b, beta_t, c);
                        else
                          summa<T>(trans(ta), trans(tb), alpha, a, b, beta_t, c, options);
                      });
}

template <class T>
void check_summa(const std::vector<int>& g, const Shape& s, bool ta, bool tb, bool use_scalapack,
                 const SummaOptions& options = {}, double beta = -0.5) {
  MpiThreadArray grid({g[0], g[1]});
  check_summa_on<T>(grid, s, ta, tb, use_scalapack, options, beta);
}

const std::vector<Shape> kShapes = {{1, 1, 1, 1}, {0, 5, 3, 2}, {6, 0, 2, 2}, {5, 4, 0, 2}, {37, 29, 41, 4},
                                    {3, 2, 50, 8},  {64, 64, 64, 16}, {2, 70, 3, 64}};

TEST(Summa, AllGridsShapesAndTransposes) {
  for (const auto& g : all_grids())
    for (const Shape& s : kShapes)
      for (int t = 0; t < 4; ++t) check_summa<double>(g, s, t & 1, t & 2, false);
}

TEST(Summa, EveryElementWrittenWhenBetaIsZero) {
  for (const auto& g : all_grids())
    for (const Shape& s : kShapes) check_summa<double>(g, s, false, true, false, {}, 0.0);
}

TEST(Summa, CpuProgressPiecesGiveTheSameProduct) {
  for (const auto& g : all_grids())
    for (int pieces : {1, 3}) {
      SummaOptions o;
      o.progress_pieces = pieces;
      check_summa<double>(g, {37, 29, 41, 4}, false, false, false, o);
      check_summa<double>(g, {9, 70, 20, 4}, true, false, false, o);  // cut along N (n > m)
    }
}

// The local GEMM on the GPU: rank r on device (node rank) % (devices), so on a
// one-GPU host every rank shares device 0. FP32 runs the GPU default
// (cuda-12-best), FP64 parray's FP64 GPU kernel; beta == 0 checks that every
// element of C came back from the device.
TEST(Summa, GpuLocalGemm) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or a build without CUDA): the GPU local GEMM is not tested";
  SummaOptions o;
  o.local = LocalGemm::gpu;
  for (const auto& g : all_grids()) {
    for (const Shape& s : kShapes)
      for (int t = 0; t < 4; ++t) {
        check_summa<double>(g, s, t & 1, t & 2, false, o);
        check_summa<float>(g, s, t & 1, t & 2, false, o);
      }
    check_summa<float>(g, {300, 260, 520, 64}, false, false, false, o, 0.0);
    check_summa<double>(g, {300, 260, 520, 64}, false, true, false, o, 0.0);
  }
}

TEST(Summa, LocalGemmPlan) {
  MpiThreadArray grid({1, world_size()});
  SummaOptions o;
  o.local = LocalGemm::automatic;
  const LocalGemmPlan p = plan_local_gemm<double>(o, grid.coord());
  EXPECT_EQ(p.device, cuda_available() ? Device::gpu : Device::cpu) << p.str();
  o.local = LocalGemm::gpu;
  if (!cuda_available()) EXPECT_THROW(plan_local_gemm<float>(o, grid.coord()), Error);
  else EXPECT_EQ(plan_local_gemm<float>(o, grid.coord()).impl, registry().default_name(Device::gpu));
  o.local = LocalGemm::cpu;
  EXPECT_EQ(plan_local_gemm<float>(o, grid.coord()).device, Device::cpu);
  EXPECT_THROW(parse_local_gemm("tpu"), Error);
}

TEST(Summa, ScalapackAgrees) {
  if (!scalapack_available()) GTEST_SKIP() << "no ScaLAPACK in this build";
  for (const auto& g : all_grids())
    for (int t = 0; t < 4; ++t) check_summa<double>(g, {37, 29, 41, 4}, t & 1, t & 2, true);
}

TEST(Summa, CommunicationVolumeMatchesTheoryOnSquareGrids) {
  const std::vector<int> g = squarest_grid(world_size());
  if (g[0] != g[1] || g[0] == 1) GTEST_SKIP() << "needs a square grid of more than one rank";
  MpiThreadArray grid({g[0], g[1]});
  const index_t n = 256, nb = 32;
  DistMatrix<double> a(grid, BlockCyclic::cyclic(n, n, nb, nb, g[0], g[1]));
  DistMatrix<double> b(grid, BlockCyclic::cyclic(n, n, nb, nb, g[0], g[1]));
  DistMatrix<double> c(grid, BlockCyclic::cyclic(n, n, nb, nb, g[0], g[1]));
  const SummaStats s = summa<double>(Trans::no, Trans::no, 1.0, a, b, 0.0, c);
  const double theory = 8.0 * 2.0 * n * n / g[0];  // 2 n^2 / sqrt(p) words
  EXPECT_NEAR(s.bcast_bytes / theory, 1.0, 0.10);
  EXPECT_EQ(s.redistribute_bytes, 0.0);
}

// Adds `delta` to C(i, j) on the rank that holds it.
template <class T>
void corrupt(DistMatrix<T>& c, index_t i, index_t j, T delta) {
  const BlockCyclic& d = c.dist();
  if (d.row_owner(i) == c.grid().coord().row && d.col_owner(j) == c.grid().coord().col)
    c.data()[d.local_row(i) + d.local_col(j) * c.lld()] += delta;
}

// The check without gathering (check.hpp) passes SUMMA's product on the CPU,
// also with beta != 0, and fails it once a single element is off by 0.05 (an
// element of C is about 7 here; in FP32 the checksum fails from about 5e-3) or NaN.
template <class T>
void check_catches_one_element(const std::vector<int>& g) {
  MpiThreadArray grid({g[0], g[1]});
  const index_t m = 96, n = 80, k = 200, nb = 8;
  DistMatrix<T> a(grid, BlockCyclic::cyclic(m, k, nb, nb, g[0], g[1]));
  DistMatrix<T> b(grid, BlockCyclic::cyclic(n, k, nb, nb, g[0], g[1]));  // used transposed
  DistMatrix<T> c(grid, BlockCyclic::cyclic(m, n, nb, nb, g[0], g[1])), c0(grid, c.dist());
  std::mt19937 gen(11 + static_cast<unsigned>(grid.coord().tid()));
  std::uniform_real_distribution<double> u(-1, 1);
  a.fill([&](index_t, index_t) { return u(gen); });
  b.fill([&](index_t, index_t) { return u(gen); });
  c0.fill([&](index_t, index_t) { return u(gen); });
  std::copy(c0.data(), c0.data() + c0.lld() * c0.local_cols(), c.data());
  summa<T>(Trans::no, Trans::yes, T(1.5), a, b, T(-0.5), c);
  const std::string where = std::to_string(g[0]) + "x" + std::to_string(g[1]) + " " + dtype_name(dtype_of<T>());
  DistCheck r = check_distributed_gemm<T>(Trans::no, Trans::yes, T(1.5), a, b, T(-0.5), &c0, c);
  EXPECT_TRUE(r.ok) << where << ": " << r.reason;
  EXPECT_EQ(r.samples, 48) << where;
  EXPECT_LE(r.worst_sample, 1.0) << where;
  corrupt(c, 37, 41, T(0.05));
  r = check_distributed_gemm<T>(Trans::no, Trans::yes, T(1.5), a, b, T(-0.5), &c0, c);
  EXPECT_FALSE(r.ok) << where;
  EXPECT_NE(r.reason.find("checksum"), std::string::npos) << where << ": " << r.reason;
  corrupt(c, 37, 41, std::numeric_limits<T>::quiet_NaN());
  r = check_distributed_gemm<T>(Trans::no, Trans::yes, T(1.5), a, b, T(-0.5), &c0, c);
  EXPECT_FALSE(r.ok) << where;
  EXPECT_EQ(r.reason, "C(37, 41) is not finite") << where;
}

TEST(DistributedCheck, PassesTheProductAndCatchesOneCorruptedElement) {
  for (const auto& g : all_grids()) {
    check_catches_one_element<double>(g);
    check_catches_one_element<float>(g);
  }
}

// ---- 2.5-D SUMMA: c layers of a P x Q grid ---------------------------------

// Every P x Q x c with P Q c = the rank count, c = 1 included.
std::vector<std::vector<int>> all_layered_grids() {
  std::vector<std::vector<int>> g;
  const int n = world_size();
  for (int c = 1; c <= n; ++c)
    for (int p = 1; n % c == 0 && p <= n / c; ++p)
      if ((n / c) % p == 0) g.push_back({p, n / c / p, c});
  return g;
}

std::string grid_name(const std::vector<int>& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]);
}

// mpi [c][P][Q]: layer l is ranks l P Q .. (l + 1) P Q - 1, row-major inside
// (the cost model's placement); the layer grid and the communicator across
// the layers see the same coordinates.
TEST(LayeredGrid, LayersOutermostAndCommunicators) {
  for (const auto& g : all_layered_grids()) {
    LayeredGrid grid(g[0], g[1], g[2]);
    const ProcCoord& w = grid.whole().coord();
    const ProcCoord& l = grid.layer().coord();
    int across_size = 0, across_rank = -1, layer_size = 0;
    MPI_Comm_size(grid.across(), &across_size);
    MPI_Comm_rank(grid.across(), &across_rank);
    MPI_Comm_size(grid.layer().comm(), &layer_size);
    const bool ok = w.tid() == world_rank() && grid.layer_index() * g[0] * g[1] + l.row * g[1] + l.col == w.tid() &&
                    grid.layers() == g[2] && grid.layer().rows() == g[0] && grid.layer().cols() == g[1] &&
                    across_size == g[2] && across_rank == grid.layer_index() && layer_size == g[0] * g[1] &&
                    grid.whole().shape().str() ==
                        "[" + std::to_string(g[2]) + "][" + std::to_string(g[0]) + "][" + std::to_string(g[1]) + "]";
    EXPECT_TRUE(all_true(ok)) << grid_name(g);
  }
  EXPECT_THROW(LayeredGrid(world_size() + 1, 1, 1), Error);
  EXPECT_THROW(LayeredGrid(world_size(), 1, 0), Error);
}

// The layers' K ranges tile [0, K) in whole panels, in order, balanced to one
// panel; with fewer panels than layers the last layers get none.
TEST(Summa25d, KRangesTileKInWholePanels) {
  for (index_t k : {0, 1, 5, 37, 64, 100})
    for (index_t kb : {1, 4, 16})
      for (int c : {1, 2, 3, 4, 8}) {
        index_t next = 0, fewest = k, most = 0;
        for (int l = 0; l < c; ++l) {
          const KRange r = layer_k_range(k, kb, l, c);
          EXPECT_EQ(r.begin, next) << k << " " << kb << " " << c << " layer " << l;
          EXPECT_TRUE(r.begin % kb == 0 || r.begin == k);
          const index_t panels = (r.end - r.begin + kb - 1) / kb;
          fewest = std::min(fewest, panels), most = std::max(most, panels);
          next = r.end;
        }
        EXPECT_EQ(next, k);
        EXPECT_LE(most - fewest, 1) << k << " " << kb << " " << c;
      }
  // 2 panels (4 + 1 columns), 4 layers: layers 2 and 3 empty
  EXPECT_EQ(layer_k_range(5, 4, 1, 4).begin, 4);
  EXPECT_EQ(layer_k_range(5, 4, 1, 4).end, 5);
  EXPECT_EQ(layer_k_range(5, 4, 2, 4).begin, layer_k_range(5, 4, 2, 4).end);
  EXPECT_THROW(layer_k_range(10, 0, 0, 1), Error);
}

// 2.5-D SUMMA against the FP64 reference. The other layers' A, B and C are
// NaN: only layer 0's operands may be read, and C there is a workspace.
template <class T>
void check_summa_25d(const std::vector<int>& g, const Shape& s, bool ta, bool tb, double beta = -0.5,
                     const SummaOptions& options = {}) {
  LayeredGrid grid(g[0], g[1], g[2]);
  check_product_on<T>(grid.layer(), s, ta, tb, beta, grid_name(g),
                      [&](T alpha, DistMatrix<T>& a, DistMatrix<T>& b, T beta_t, DistMatrix<T>& c) {
                        if (grid.layer_index() > 0)
                          for (DistMatrix<T>* x : {&a, &b, &c})
                            x->fill([](index_t, index_t) { return std::numeric_limits<T>::quiet_NaN(); });
                        summa_25d<T>(trans(ta), trans(tb), alpha, a, b, beta_t, c, grid, options);
                      });
}

// kShapes, and K cut into fewer panels than layers (layers with nothing to do)
// and into a count no layer count divides.
const std::vector<Shape> k25dShapes = [] {
  std::vector<Shape> s = kShapes;
  s.push_back({37, 29, 5, 4});
  s.push_back({30, 41, 70, 3});
  return s;
}();

TEST(Summa25d, AllGridsShapesAndTransposes) {
  for (const auto& g : all_layered_grids())
    for (const Shape& s : k25dShapes)
      for (int t = 0; t < 4; ++t) check_summa_25d<double>(g, s, t & 1, t & 2);
}

TEST(Summa25d, Fp32) {
  for (const auto& g : all_layered_grids())
    for (int t = 0; t < 4; ++t) {
      check_summa_25d<float>(g, {37, 29, 41, 4}, t & 1, t & 2);
      check_summa_25d<float>(g, {30, 41, 70, 3}, t & 1, t & 2, 0.0);
    }
}

TEST(Summa25d, EveryElementWrittenWhenBetaIsZero) {
  for (const auto& g : all_layered_grids())
    for (const Shape& s : k25dShapes) check_summa_25d<double>(g, s, false, true, 0.0);
}

// The CPU local GEMM cut into pieces, and panels narrower than the blocks.
TEST(Summa25d, ProgressPiecesAndPanelWidth) {
  for (const auto& g : all_layered_grids()) {
    SummaOptions o;
    o.progress_pieces = 3;
    check_summa_25d<double>(g, {37, 29, 41, 4}, false, false, 2.0, o);
    o.panel = 3;
    check_summa_25d<double>(g, {30, 41, 70, 8}, true, false, 2.0, o);
  }
}

// A, B and C in the caller's storage with leading dimensions above their
// local rows (ScaLAPACK data): the shares are sent from strided blocks and C is
// summed through a packed copy; the product is 2-D SUMMA's and the padding
// of C is never written.
TEST(Summa25d, PaddedLeadingDimensions) {
  for (const auto& g : all_layered_grids()) {
    LayeredGrid grid(g[0], g[1], g[2]);
    const ProcCoord& me = grid.layer().coord();
    const index_t m = 37, n = 29, k = 41, nb = 4, pad = 3;
    const BlockCyclic da = BlockCyclic::cyclic(m, k, nb, nb, g[0], g[1]),
                      db = BlockCyclic::cyclic(k, n, nb, nb, g[0], g[1]),
                      dc = BlockCyclic::cyclic(m, n, nb, nb, g[0], g[1]);
    std::vector<double> sa, sb, sc;
    auto padded = [&](const BlockCyclic& d, std::vector<double>& store) {
      const index_t lld = d.local_rows(me.row) + pad;
      store.assign(static_cast<std::size_t>(lld * std::max<index_t>(1, d.local_cols(me.col))),
                   std::numeric_limits<double>::quiet_NaN());
      return DistMatrix<double>::from_desc(grid.layer(), descriptor(d, lld).array().data(), store.data());
    };
    DistMatrix<double> a = padded(da, sa), b = padded(db, sb), c = padded(dc, sc);
    DistMatrix<double> a2(grid.layer(), da), b2(grid.layer(), db), c2(grid.layer(), dc);
    for (DistMatrix<double>* x : {&a, &a2}) x->fill([](index_t i, index_t j) { return std::sin(double(i + 5 * j)); });
    for (DistMatrix<double>* x : {&b, &b2}) x->fill([](index_t i, index_t j) { return std::cos(double(2 * i + j)); });
    for (DistMatrix<double>* x : {&c, &c2}) x->fill([](index_t i, index_t j) { return double(i) - double(j); });
    summa_25d<double>(Trans::no, Trans::no, 1.5, a, b, -0.5, c, grid);
    summa<double>(Trans::no, Trans::no, 1.5, a2, b2, -0.5, c2);
    bool ok = true;
    if (grid.layer_index() == 0)
      for (index_t lj = 0; lj < c.local_cols(); ++lj) {
        for (index_t li = 0; li < c.local_rows(); ++li)
          ok = ok && std::fabs(c.local()(li, lj) - c2.local()(li, lj)) < 1e-12 * k;
        for (index_t li = c.local_rows(); li < c.lld(); ++li) ok = ok && std::isnan(c.data()[li + lj * c.lld()]);
      }
    EXPECT_TRUE(all_true(ok)) << grid_name(g);
  }
}

TEST(Summa25d, GpuLocalGemm) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device (or a build without CUDA): the GPU local GEMM is not tested";
  SummaOptions o;
  o.local = LocalGemm::gpu;
  for (const auto& g : all_layered_grids())
    for (int t = 0; t < 4; ++t) {
      check_summa_25d<double>(g, {37, 29, 41, 4}, t & 1, t & 2, -0.5, o);
      check_summa_25d<float>(g, {300, 260, 520, 64}, t & 1, t & 2, 0.0, o);
    }
}

double max_over_ranks(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

// On grids that divide n^3 evenly, the bytes counted against the cost
// model's 2.5-D words (src/core/dist_model.cpp): the panels a rank receives
// within its layer plus its part of the reduce-scatter of C; and the shares
// of A and B sent to the layers and C's pieces gathered to layer 0.
TEST(Summa25d, CommunicationVolumeMatchesTheModel) {
  const index_t n = 256, nb = 16;
  for (const auto& g : all_layered_grids()) {
    if (g[2] == 1 || (n / nb) % (g[2] * std::max(g[0], g[1])) != 0) continue;  // no layers, or uneven shares
    LayeredGrid grid(g[0], g[1], g[2]);
    const double P = g[0], Q = g[1], c = g[2], word = sizeof(double);
    const BlockCyclic d = BlockCyclic::cyclic(n, n, nb, nb, g[0], g[1]);
    DistMatrix<double> a(grid.layer(), d), b(grid.layer(), d), cm(grid.layer(), d);
    a.fill([](index_t i, index_t j) { return std::sin(double(i + 2 * j)); });
    b.fill([](index_t i, index_t j) { return std::cos(double(3 * i + j)); });
    const Summa25dStats s = summa_25d<double>(Trans::no, Trans::no, 1.0, a, b, 0.0, cm, grid);
    const dist_model::Problem problem{n, n, n};
    const dist_model::Prediction model = dist_model::predict(
        dist_model::fitted_machine(dist_model::Gpu::h100, dist_model::LocalGemm::step12), problem, {g[0], g[1], g[2]});
    const std::string where = grid_name(g);
    EXPECT_NEAR(max_over_ranks(s.recv_bytes + s.reduce_bytes) / (word * model.words_per_rank), 1.0, 0.10) << where;
    const double panels = word * dist_model::summa_words_per_rank({n, n, n / g[2]}, g[0], g[1]);
    if (panels > 0) {
      EXPECT_NEAR(max_over_ranks(s.recv_bytes) / panels, 1.0, 0.10) << where;
    } else {
      EXPECT_EQ(max_over_ranks(s.recv_bytes), 0.0) << where;
    }
    const double c_block = word * (n / P) * (n / Q);
    EXPECT_NEAR(max_over_ranks(s.reduce_bytes) / ((c - 1) / c * c_block), 1.0, 0.10) << where;
    const double share = word * 2.0 * n * (n / c) / (P * Q);  // a layer's A and B on one rank
    EXPECT_NEAR(max_over_ranks(s.replicate_bytes) / ((c - 1) * share), 1.0, 0.10) << where;  // sent by layer 0
    EXPECT_NEAR(max_over_ranks(grid.layer_index() == 0 ? 0 : s.replicate_bytes) / share, 1.0, 0.10) << where;
    EXPECT_NEAR(max_over_ranks(s.gather_bytes) / ((c - 1) / c * c_block), 1.0, 0.10) << where;  // to layer 0
    EXPECT_EQ(max_over_ranks(s.redistribute_bytes), 0.0) << where;
    EXPECT_EQ(max_over_ranks(double(s.k_end - s.k_begin)), n / c) << where;
  }
}

TEST(Summa25d, RefusesWhatItDoesNotDo) {
  LayeredGrid grid(1, 1, world_size());
  const BlockCyclic d = BlockCyclic::cyclic(8, 8, 2, 2, 1, 1);
  DistMatrix<double> a(grid.layer(), d), b(grid.layer(), d), c(grid.layer(), d);
  SummaOptions nccl;
  nccl.transport = Transport::nccl;
  EXPECT_THROW(summa_25d<double>(Trans::no, Trans::no, 1.0, a, b, 0.0, c, grid, nccl), Error);
  DistMatrix<double> wide(grid.layer(), BlockCyclic::cyclic(8, 9, 2, 2, 1, 1));
  EXPECT_THROW(summa_25d<double>(Trans::no, Trans::no, 1.0, a, wide, 0.0, c, grid), Error);
  MpiThreadArray other({1, 1}, grid.layer().comm());
  DistMatrix<double> elsewhere(other, d);
  EXPECT_THROW(summa_25d<double>(Trans::no, Trans::no, 1.0, a, b, 0.0, elsewhere, grid), Error);
}

// ---- one rank per GPU, panels over NCCL -----------------------------------

// Every rank with a GPU of its own and NCCL in the build (the same answer on every rank).
bool nccl_ready() {
  if (!nccl_available()) return false;
  MpiThreadArray all({1, world_size()});
  return every_rank_has_a_gpu(all);
}
#define SKIP_WITHOUT_NCCL()                                                \
  if (!nccl_ready()) {                                                     \
    GTEST_SKIP() << "needs NCCL in the build and a GPU for every rank"; \
  }                                                                        \
  static_assert(true)

TEST(GpuProcessContext, EachRankOfAHostHasItsOwnGpu) {
  SKIP_WITHOUT_NCCL();
  MpiThreadArray grid({world_size(), 1});
  GpuProcessContext gpus(grid);
  EXPECT_EQ(gpus.device(), grid.coord().node_rank);
  EXPECT_GE(gpus.host_gpus(), grid.coord().node_size);
}

// SUMMA over NCCL from host operands: every grid, odd shapes, ranks without
// data, all transposes (redistributed on the host first), beta 0 (C poisoned
// on the host: every element must come back from the GPU) and not.
TEST(NcclSumma, HostOperandsAllGridsShapesAndTransposes) {
  SKIP_WITHOUT_NCCL();
  for (const auto& g : all_grids()) {
    MpiThreadArray grid({g[0], g[1]});
    GpuProcessContext gpus(grid);
    SummaOptions o;
    o.transport = Transport::nccl;
    o.gpus = &gpus;
    for (const Shape& s : kShapes)
      for (int t = 0; t < 4; ++t) {
        check_summa_on<double>(grid, s, t & 1, t & 2, false, o);
        check_summa_on<float>(grid, s, t & 1, t & 2, false, o);
      }
    check_summa_on<float>(grid, {300, 260, 520, 64}, false, false, false, o, 0.0);
    o.gpu_impl = "cuda-14-3xtf32";  // FP32 accuracy on the tensor cores (Hopper)
    if (registry().find(o.gpu_impl).why_not(MatrixLayout::col_major(1, 1, 1), MatrixLayout::col_major(1, 1, 1),
                                            MatrixLayout::col_major(1, 1, 1)).empty())
      check_summa_on<float>(grid, {300, 260, 520, 64}, false, true, false, o, 0.0);
  }
}

// Operands already on the GPUs: the same product as the CPU's SUMMA, and the
// bytes each rank received as SUMMA's theory says ((Q-1)/Q M K/P + (P-1)/P K N/Q).
TEST(NcclSumma, DeviceOperandsAndCommunicationVolume) {
  SKIP_WITHOUT_NCCL();
  for (const auto& g : all_grids()) {
    MpiThreadArray grid({g[0], g[1]});
    GpuProcessContext gpus(grid);
    const index_t n = 256, nb = 32;
    const BlockCyclic d = BlockCyclic::cyclic(n, n, nb, nb, g[0], g[1]);
    DistMatrix<double> a(grid, d), b(grid, d), c(grid, d), ref(grid, d);
    a.fill([](index_t i, index_t j) { return std::sin(double(i * 7 + j)); });
    b.fill([](index_t i, index_t j) { return std::cos(double(i + 3 * j)); });
    summa<double>(Trans::no, Trans::no, 1.0, a, b, 0.0, ref);
    GpuDistMatrix<double> da(gpus, d), db(gpus, d), dc(gpus, d);
    da.upload(a), db.upload(b), dc.poison();
    const SummaStats st = summa<double>(1.0, da, db, 0.0, dc);
    dc.download(c);
    double err = 0;
    for (index_t x = 0; x < c.lld() * c.local_cols(); ++x) err = max_abs_diff(ref.data()[x], c.data()[x], err);
    EXPECT_LT(err, 1e-12 * n) << g[0] << "x" << g[1];
    const double theory = 8.0 * (double(g[1] - 1) / g[1] * n * n / g[0] + double(g[0] - 1) / g[0] * n * n / g[1]);
    if (theory > 0) {
      EXPECT_NEAR(st.recv_bytes / theory, 1.0, 0.10) << g[0] << "x" << g[1];
    }
    EXPECT_EQ(st.steps, n / nb);
    EXPECT_EQ(st.plan.gpu, gpus.device());
    // Operands that do not line up with C are refused before anything moves.
    GpuDistMatrix<double> other(gpus, BlockCyclic::cyclic(n, n, nb / 2, nb, g[0], g[1]));
    EXPECT_THROW(summa<double>(1.0, other, db, 0.0, dc), Error);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Session session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (world_rank() != 0) {  // one report, from rank 0
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return failed;
}
