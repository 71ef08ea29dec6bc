// Verification of a distributed GEMM where its blocks lie (check.hpp): every
// element finite, a checksum over the grid, and sampled elements against FP64.
#include "parray/mpi/check.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "parray/gemm_check.hpp"

namespace parray::mpi {

namespace {

// op(X) v in FP64, each rank its local part, summed over the grid.
template <class T>
std::vector<double> matvec(const DistMatrix<T>& x, bool trans, const std::vector<double>& v) {
  std::vector<double> y(static_cast<std::size_t>(trans ? x.cols() : x.rows()), 0.0);
  for (index_t lj = 0; lj < x.local_cols(); ++lj) {
    const std::size_t gj = static_cast<std::size_t>(x.global_col(lj));
    for (index_t li = 0; li < x.local_rows(); ++li) {
      const std::size_t gi = static_cast<std::size_t>(x.global_row(li));
      const double e = static_cast<double>(x.data()[li + lj * x.lld()]);
      if (trans)
        y[gj] += e * v[gi];
      else
        y[gi] += e * v[gj];
    }
  }
  MPI_Allreduce(MPI_IN_PLACE, y.data(), static_cast<int>(y.size()), MPI_DOUBLE, MPI_SUM, x.grid().comm());
  return y;
}

// The first element of C (i N + j) that is not finite, over the grid; -1 when none.
template <class T>
long long first_nonfinite(const DistMatrix<T>& c) {
  long long first = std::numeric_limits<long long>::max();
  for (index_t lj = 0; lj < c.local_cols(); ++lj)
    for (index_t li = 0; li < c.local_rows(); ++li)
      if (!std::isfinite(static_cast<double>(c.data()[li + lj * c.lld()])))
        first = std::min<long long>(first, c.global_row(li) * c.cols() + c.global_col(lj));
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_LONG_LONG, MPI_MIN, c.grid().comm());
  return first == std::numeric_limits<long long>::max() ? -1 : first;
}

// out[q] = X(r, q) for the stored row r (`row`) or out[q] = X(q, r) for the
// stored column r, where this rank holds them; other entries untouched.
template <class T>
void put_line(const DistMatrix<T>& x, bool row, index_t r, double* out) {
  const BlockCyclic& d = x.dist();
  const ProcCoord& me = x.grid().coord();
  if (row && d.row_owner(r) == me.row) {
    const index_t li = d.local_row(r);
    for (index_t lj = 0; lj < x.local_cols(); ++lj) out[x.global_col(lj)] = double(x.data()[li + lj * x.lld()]);
  } else if (!row && d.col_owner(r) == me.col) {
    const index_t lj = d.local_col(r);
    for (index_t li = 0; li < x.local_rows(); ++li) out[x.global_row(li)] = double(x.data()[li + lj * x.lld()]);
  }
}

template <class T>
void put_element(const DistMatrix<T>& x, index_t i, index_t j, double* out) {
  const BlockCyclic& d = x.dist();
  const ProcCoord& me = x.grid().coord();
  if (d.row_owner(i) == me.row && d.col_owner(j) == me.col)
    *out = double(x.data()[d.local_row(i) + d.local_col(j) * x.lld()]);
}

std::string element_name(index_t i, index_t j) { return "C(" + std::to_string(i) + ", " + std::to_string(j) + ")"; }

}  // namespace

template <class T>
DistCheck check_distributed_gemm(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b,
                                 T beta, const DistMatrix<T>* c0, const DistMatrix<T>& c, int samples,
                                 std::uint64_t seed) {
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  const index_t m = c.rows(), n = c.cols(), k = ta ? a.rows() : a.cols();
  if ((ta ? a.cols() : a.rows()) != m || (tb ? b.cols() : b.rows()) != k || (tb ? b.rows() : b.cols()) != n)
    throw Error("distributed GEMM check: op(A), op(B) and C do not agree in shape");
  if (beta != T(0) && !c0) throw Error("distributed GEMM check: beta != 0 needs C0");
  DistCheck r;
  r.tolerance = 2 * gemm_tolerance(dtype_of<T>(), std::max<index_t>(k, 1));
  if (const long long bad = first_nonfinite(c); bad >= 0) {
    r.reason = element_name(bad / n, bad % n) + " is not finite";
    return r;
  }
  std::mt19937_64 gen(seed);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (double& x : w) x = (gen() & 1) ? 1.0 : -1.0;
  const std::vector<double> y = matvec(b, tb, w);
  std::vector<double> z = matvec(a, ta, y);
  const std::vector<double> x = matvec(c, false, w);
  const std::vector<double> z0 = c0 ? matvec(*c0, false, w) : std::vector<double>(z.size(), 0.0);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < z.size(); ++i) {
    z[i] = double(alpha) * z[i] + double(beta) * z0[i];
    num += (x[i] - z[i]) * (x[i] - z[i]);
    den += z[i] * z[i];
  }
  r.rel_err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (!(r.rel_err <= r.tolerance)) {
    r.reason =
        "checksum: relative error " + std::to_string(r.rel_err) + " over the tolerance " + std::to_string(r.tolerance);
    return r;
  }

  // Sampled elements: op(A)'s row and op(B)'s column of each, from the ranks
  // that hold them (at most 64 MiB of lines on every rank).
  const index_t most = std::max<index_t>(1, (index_t(64) << 20) / (16 * std::max<index_t>(k, 1)));
  const index_t s_count = m == 0 || n == 0 ? 0 : std::min<index_t>(std::max(samples, 0), most);
  std::vector<index_t> si(static_cast<std::size_t>(s_count)), sj(static_cast<std::size_t>(s_count));
  const std::size_t K = static_cast<std::size_t>(k), S = static_cast<std::size_t>(s_count);
  std::vector<double> lines(2 * S * K + 2 * S, 0.0);  // A rows, B columns, C, C0
  for (std::size_t s = 0; s < S; ++s) {
    si[s] = static_cast<index_t>(gen() % static_cast<std::uint64_t>(m));
    sj[s] = static_cast<index_t>(gen() % static_cast<std::uint64_t>(n));
    put_line(a, !ta, si[s], lines.data() + s * K);
    put_line(b, tb, sj[s], lines.data() + (S + s) * K);
    put_element(c, si[s], sj[s], lines.data() + 2 * S * K + s);
    if (c0) put_element(*c0, si[s], sj[s], lines.data() + 2 * S * K + S + s);
  }
  MPI_Allreduce(MPI_IN_PLACE, lines.data(), static_cast<int>(lines.size()), MPI_DOUBLE, MPI_SUM, c.grid().comm());
  const double factor = gemm_element_factor(dtype_of<T>(), k);
  for (std::size_t s = 0; s < S; ++s) {
    double dot = 0, bound = 0;
    for (std::size_t p = 0; p < K; ++p) {
      const double prod = lines[s * K + p] * lines[(S + s) * K + p];
      dot += prod, bound += std::fabs(prod);
    }
    const double c0_ij = lines[2 * S * K + S + s], got = lines[2 * S * K + s];
    const double ref = double(alpha) * dot + double(beta) * c0_ij;
    bound = factor * (std::fabs(double(alpha)) * bound + std::fabs(double(beta)) * std::fabs(c0_ij));
    const double ratio = bound > 0 ? std::fabs(got - ref) / bound : (got == ref ? 0.0 : HUGE_VAL);
    r.worst_sample = std::max(r.worst_sample, ratio);
    ++r.samples;
    if (!(ratio <= 1.0) && r.reason.empty())
      r.reason = "sampled " + element_name(si[s], sj[s]) + " = " + std::to_string(got) + ", FP64 reference " +
                 std::to_string(ref) + ": beyond the element-wise bound " + std::to_string(bound);
  }
  r.ok = r.reason.empty();
  return r;
}

template DistCheck check_distributed_gemm<float>(Trans, Trans, float, const DistMatrix<float>&,
                                                 const DistMatrix<float>&, float, const DistMatrix<float>*,
                                                 const DistMatrix<float>&, int, std::uint64_t);
template DistCheck check_distributed_gemm<double>(Trans, Trans, double, const DistMatrix<double>&,
                                                  const DistMatrix<double>&, double, const DistMatrix<double>*,
                                                  const DistMatrix<double>&, int, std::uint64_t);

}  // namespace parray::mpi
