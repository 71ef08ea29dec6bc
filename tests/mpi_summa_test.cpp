// MPI tests, run by ctest under mpirun with 1, 2, 3 and 4 ranks: process
// arrays, block-cyclic scatter/gather/redistribution and SUMMA (every
// factorisation of the rank count as a grid, all four transpose cases, odd
// shapes, ranks without data) against an FP64 reference on rank 0.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <random>

#include "parray/mpi/summa.hpp"

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
      ok = ok && p.row * g[1] + p.col == p.tid && p[0] == p.row && p[1] == p.col && p.size() == world_size();
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

TEST(MpiThreadArray, GridMustMatchRankCount) {
  EXPECT_THROW(MpiThreadArray({world_size() + 1, 1}), Error);
  EXPECT_THROW(MpiThreadArray({0, 1}), Error);
  EXPECT_THROW(parse_grid("2by2"), Error);
  EXPECT_EQ(parse_grid("3x2"), (std::vector<int>{3, 2}));
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
    if (grid.coord().tid == 0) {
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

void check_summa(const std::vector<int>& g, const Shape& s, bool ta, bool tb, bool use_scalapack) {
  MpiThreadArray grid({g[0], g[1]});
  const index_t am = ta ? s.k : s.m, an = ta ? s.m : s.k, bm = tb ? s.n : s.k, bn = tb ? s.k : s.n;
  std::vector<double> xa = global_matrix(am, an, 1), xb = global_matrix(bm, bn, 2), xc = global_matrix(s.m, s.n, 3);
  DistMatrix<double> a(grid, BlockCyclic::cyclic(am, an, s.block, s.block, g[0], g[1]));
  DistMatrix<double> b(grid, BlockCyclic::cyclic(bm, bn, s.block, s.block, g[0], g[1]));
  DistMatrix<double> c(grid, BlockCyclic::cyclic(s.m, s.n, s.block, s.block, g[0], g[1]));
  a.scatter_from(cm(xa, am, an));
  b.scatter_from(cm(xb, bm, bn));
  c.scatter_from(cm(xc, s.m, s.n));
  const double alpha = 1.5, beta = -0.5;
  if (use_scalapack)
    scalapack_gemm<double>(ta ? Trans::yes : Trans::no, tb ? Trans::yes : Trans::no, alpha, a, b, beta, c);
  else
    summa<double>(ta ? Trans::yes : Trans::no, tb ? Trans::yes : Trans::no, alpha, a, b, beta, c);
  std::vector<double> got(static_cast<std::size_t>(std::max<index_t>(1, s.m * s.n)));
  c.gather_to(cm(got, s.m, s.n));
  double err = 0;
  if (grid.coord().tid == 0) {
    for (index_t i = 0; i < s.m; ++i)
      for (index_t j = 0; j < s.n; ++j) {
        double r = beta * xc[static_cast<std::size_t>(i + j * s.m)];
        for (index_t p = 0; p < s.k; ++p)
          r += alpha * (ta ? xa[static_cast<std::size_t>(p + i * am)] : xa[static_cast<std::size_t>(i + p * am)]) *
               (tb ? xb[static_cast<std::size_t>(j + p * bm)] : xb[static_cast<std::size_t>(p + j * bm)]);
        err = std::max(err, std::fabs(r - got[static_cast<std::size_t>(i + j * s.m)]));
      }
  }
  MPI_Bcast(&err, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  EXPECT_LT(err, 1e-12 * static_cast<double>(s.k + 1)) << g[0] << "x" << g[1] << " " << s.m << "x" << s.n << "x" << s.k
                                                      << " block " << s.block << " ta " << ta << " tb " << tb;
}

const std::vector<Shape> kShapes = {{1, 1, 1, 1}, {0, 5, 3, 2}, {6, 0, 2, 2}, {5, 4, 0, 2}, {37, 29, 41, 4},
                                    {3, 2, 50, 8},  {64, 64, 64, 16}, {2, 70, 3, 64}};

TEST(Summa, AllGridsShapesAndTransposes) {
  for (const auto& g : all_grids())
    for (const Shape& s : kShapes)
      for (int t = 0; t < 4; ++t) check_summa(g, s, t & 1, t & 2, false);
}

TEST(Summa, ScalapackAgrees) {
  if (!scalapack_available()) GTEST_SKIP() << "no ScaLAPACK in this build";
  for (const auto& g : all_grids())
    for (int t = 0; t < 4; ++t) check_summa(g, {37, 29, 41, 4}, t & 1, t & 2, true);
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
