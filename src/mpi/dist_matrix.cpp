// Scatter, gather and redistribution of block-cyclic distributed matrices.
#include "parray/mpi/dist_matrix.hpp"

#include <climits>
#include <numeric>
#include <sstream>

namespace parray::mpi {

std::vector<int> parse_grid(const std::string& text) {
  const auto bad = [&] { return Error("grid '" + text + "' is not PxQ or PxQxC with P, Q, C >= 1"); };
  auto whole = [&](const std::string& s) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (s.empty() || used != s.size() || v < 1 || v > 1 << 20) throw bad();
    return static_cast<int>(v);
  };
  std::vector<int> dims;
  std::size_t from = 0;
  for (std::size_t x = text.find_first_of("xX"); x != std::string::npos; x = text.find_first_of("xX", from)) {
    dims.push_back(whole(text.substr(from, x - from)));
    from = x + 1;
  }
  dims.push_back(whole(text.substr(from)));
  if (dims.size() < 2 || dims.size() > 3) throw bad();
  return dims;
}

std::vector<int> squarest_grid(int n) {
  int p = 1;
  for (int d = 1; d * d <= n; ++d)
    if (n % d == 0) p = d;
  return {p, n / p};
}

std::string BlockCyclic::str() const {
  std::ostringstream s;
  s << m << "x" << n << " in " << mb << "x" << nb << " blocks over " << prows << "x" << pcols;
  return s.str();
}

namespace {

int as_count(index_t n, const char* what) {
  if (n > INT_MAX) throw Error(std::string(what) + ": more than 2^31 elements for one rank");
  return static_cast<int>(n);
}

}  // namespace

template <class T>
void DistMatrix<T>::scatter_from(MatrixView<const T> global, int root) {
  const ProcCoord& me = grid_->coord();
  const int np = grid_->size();
  std::vector<int> counts(static_cast<std::size_t>(np)), displs(static_cast<std::size_t>(np));
  std::vector<T> send;
  if (me.tid() == root) {
    if (global.rows() != dist_.m || global.cols() != dist_.n)
      throw Error("scatter: root's matrix is " + std::to_string(global.rows()) + "x" + std::to_string(global.cols()) +
                  ", the distributed one " + std::to_string(dist_.m) + "x" + std::to_string(dist_.n));
    index_t total = 0;
    for (int r = 0; r < np; ++r) {
      const index_t cnt = dist_.local_rows(r / grid_->cols()) * dist_.local_cols(r % grid_->cols());
      counts[static_cast<std::size_t>(r)] = as_count(cnt, "scatter");
      displs[static_cast<std::size_t>(r)] = as_count(total, "scatter");
      total += cnt;
    }
    send.resize(static_cast<std::size_t>(total));
    for (int r = 0; r < np; ++r) {
      const int pr = r / grid_->cols(), pc = r % grid_->cols();
      const index_t ml = dist_.local_rows(pr), nl = dist_.local_cols(pc);
      T* out = send.data() + displs[static_cast<std::size_t>(r)];
      for (index_t lj = 0; lj < nl; ++lj) {
        const index_t gj = dist_.global_col(lj, pc);
        for (index_t li = 0; li < ml; ++li) out[li + lj * ml] = global(dist_.global_row(li, pr), gj);
      }
    }
  }
  std::vector<T> recv(static_cast<std::size_t>(mloc_ * nloc_));
  MPI_Scatterv(send.data(), counts.data(), displs.data(), mpi_type<T>(), recv.data(),
               as_count(mloc_ * nloc_, "scatter"), mpi_type<T>(), root, grid_->comm());
  for (index_t lj = 0; lj < nloc_; ++lj)
    for (index_t li = 0; li < mloc_; ++li) data_[li + lj * lld_] = recv[static_cast<std::size_t>(li + lj * mloc_)];
}

template <class T>
void DistMatrix<T>::gather_to(MatrixView<T> global, int root) const {
  const ProcCoord& me = grid_->coord();
  const int np = grid_->size();
  std::vector<T> mine(static_cast<std::size_t>(mloc_ * nloc_));
  for (index_t lj = 0; lj < nloc_; ++lj)
    for (index_t li = 0; li < mloc_; ++li) mine[static_cast<std::size_t>(li + lj * mloc_)] = data_[li + lj * lld_];
  std::vector<int> counts(static_cast<std::size_t>(np)), displs(static_cast<std::size_t>(np));
  std::vector<T> all;
  if (me.tid() == root) {
    if (global.rows() != dist_.m || global.cols() != dist_.n)
      throw Error("gather: root's matrix is " + std::to_string(global.rows()) + "x" + std::to_string(global.cols()) +
                  ", the distributed one " + std::to_string(dist_.m) + "x" + std::to_string(dist_.n));
    index_t total = 0;
    for (int r = 0; r < np; ++r) {
      const index_t cnt = dist_.local_rows(r / grid_->cols()) * dist_.local_cols(r % grid_->cols());
      counts[static_cast<std::size_t>(r)] = as_count(cnt, "gather");
      displs[static_cast<std::size_t>(r)] = as_count(total, "gather");
      total += cnt;
    }
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), as_count(mloc_ * nloc_, "gather"), mpi_type<T>(), all.data(), counts.data(),
              displs.data(), mpi_type<T>(), root, grid_->comm());
  if (me.tid() != root) return;
  for (int r = 0; r < np; ++r) {
    const int pr = r / grid_->cols(), pc = r % grid_->cols();
    const index_t ml = dist_.local_rows(pr), nl = dist_.local_cols(pc);
    const T* in = all.data() + displs[static_cast<std::size_t>(r)];
    for (index_t lj = 0; lj < nl; ++lj) {
      const index_t gj = dist_.global_col(lj, pc);
      for (index_t li = 0; li < ml; ++li) global(dist_.global_row(li, pr), gj) = in[li + lj * ml];
    }
  }
}

// Each pair of ranks agrees on the order of the elements it exchanges without
// sending indices: the sender walks its local block column by column, which is
// increasing (global column, global row) of the source; the receiver walks its
// block in the matching order of the destination (column-major, or row-major
// when transposing, since source (row, column) is destination (column, row)).
template <class T>
double redistribute(const DistMatrix<T>& src, DistMatrix<T>& dst, bool transpose) {
  const BlockCyclic& s = src.dist();
  const BlockCyclic& d = dst.dist();
  const index_t want_m = transpose ? s.n : s.m, want_n = transpose ? s.m : s.n;
  if (d.m != want_m || d.n != want_n)
    throw Error("redistribute: " + std::to_string(s.m) + "x" + std::to_string(s.n) + (transpose ? " transposed" : "") +
                " into " + std::to_string(d.m) + "x" + std::to_string(d.n));
  if (src.grid().comm() != dst.grid().comm() && src.grid().size() != dst.grid().size())
    throw Error("redistribute: the two matrices live on different process arrays");
  const MpiThreadArray& grid = src.grid();
  const int np = grid.size(), q = grid.cols();
  const int me = grid.coord().tid();
  auto dst_owner = [&](index_t gi, index_t gj) {  // gi, gj in the source's coordinates
    const index_t ti = transpose ? gj : gi, tj = transpose ? gi : gj;
    return d.row_owner(ti) * q + d.col_owner(tj);
  };
  std::vector<int> scount(static_cast<std::size_t>(np), 0), rcount(static_cast<std::size_t>(np), 0);
  const index_t ms = src.local_rows(), ns = src.local_cols();
  for (index_t lj = 0; lj < ns; ++lj)
    for (index_t li = 0; li < ms; ++li) ++scount[static_cast<std::size_t>(dst_owner(src.global_row(li), src.global_col(lj)))];
  const index_t md = dst.local_rows(), nd = dst.local_cols();
  auto src_owner = [&](index_t ti, index_t tj) {  // ti, tj in the destination's coordinates
    const index_t gi = transpose ? tj : ti, gj = transpose ? ti : tj;
    return s.row_owner(gi) * q + s.col_owner(gj);
  };
  for (index_t lj = 0; lj < nd; ++lj)
    for (index_t li = 0; li < md; ++li) ++rcount[static_cast<std::size_t>(src_owner(dst.global_row(li), dst.global_col(lj)))];
  std::vector<int> sdispl(static_cast<std::size_t>(np), 0), rdispl(static_cast<std::size_t>(np), 0);
  for (int r = 1; r < np; ++r) {
    sdispl[static_cast<std::size_t>(r)] = sdispl[static_cast<std::size_t>(r - 1)] + scount[static_cast<std::size_t>(r - 1)];
    rdispl[static_cast<std::size_t>(r)] = rdispl[static_cast<std::size_t>(r - 1)] + rcount[static_cast<std::size_t>(r - 1)];
  }
  std::vector<T> sbuf(static_cast<std::size_t>(ms * ns)), rbuf(static_cast<std::size_t>(md * nd));
  std::vector<int> pos = sdispl;
  const T* a = src.data();
  for (index_t lj = 0; lj < ns; ++lj)
    for (index_t li = 0; li < ms; ++li)
      sbuf[static_cast<std::size_t>(pos[static_cast<std::size_t>(dst_owner(src.global_row(li), src.global_col(lj)))]++)] =
          a[li + lj * src.lld()];
  MPI_Alltoallv(sbuf.data(), scount.data(), sdispl.data(), mpi_type<T>(), rbuf.data(), rcount.data(), rdispl.data(),
                mpi_type<T>(), grid.comm());
  pos = rdispl;
  T* c = dst.data();
  auto take = [&](index_t li, index_t lj) {
    c[li + lj * dst.lld()] =
        rbuf[static_cast<std::size_t>(pos[static_cast<std::size_t>(src_owner(dst.global_row(li), dst.global_col(lj)))]++)];
  };
  if (!transpose) {
    for (index_t lj = 0; lj < nd; ++lj)
      for (index_t li = 0; li < md; ++li) take(li, lj);
  } else {
    for (index_t li = 0; li < md; ++li)
      for (index_t lj = 0; lj < nd; ++lj) take(li, lj);
  }
  double sent = 0;
  for (int r = 0; r < np; ++r)
    if (r != me) sent += static_cast<double>(scount[static_cast<std::size_t>(r)]) * sizeof(T);
  return sent;
}

template class DistMatrix<float>;
template class DistMatrix<double>;
template double redistribute<float>(const DistMatrix<float>&, DistMatrix<float>&, bool);
template double redistribute<double>(const DistMatrix<double>&, DistMatrix<double>&, bool);

}  // namespace parray::mpi
