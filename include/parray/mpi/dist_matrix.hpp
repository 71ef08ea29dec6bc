// Distributed matrices as array types: a global logical M x N matrix, a 2-D
// block-cyclic distribution over a process grid (the distribution layout), and
// on every rank a column-major local block that is a parray MatrixView.
//
// The distribution is ScaLAPACK's: global row i lives on process row
// (i / mb + rsrc) mod P at local row (i / (mb P)) mb + i mod mb, and the same
// for columns with nb, csrc, Q. A 2-D block distribution is the special case
// mb = ceil(M / P), nb = ceil(N / Q). desc() gives the 9-integer ScaLAPACK
// descriptor (dtype, ctxt, m, n, mb, nb, rsrc, csrc, lld), and from_desc()
// wraps a user's existing distributed data without copying it.
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "parray/matrix.hpp"
#include "parray/mpi/process_array.hpp"

namespace parray::mpi {

// ScaLAPACK's NUMROC: how many of n rows/columns in blocks of nb the process
// at index iproc owns when the first block is on isrc.
inline index_t numroc(index_t n, index_t nb, int iproc, int isrc, int nprocs) {
  const int mydist = (nprocs + iproc - isrc) % nprocs;
  const index_t nblocks = n / nb;
  index_t num = (nblocks / nprocs) * nb;
  const index_t extra = nblocks % nprocs;
  if (mydist < extra) num += nb;
  else if (mydist == extra) num += n % nb;
  return num;
}

struct Desc {
  int dtype = 1;  // 1: dense matrix
  int ctxt = 0;   // BLACS context (0 where none was made)
  int m = 0, n = 0, mb = 1, nb = 1, rsrc = 0, csrc = 0, lld = 1;
  std::array<int, 9> array() const { return {dtype, ctxt, m, n, mb, nb, rsrc, csrc, lld}; }
  static Desc from(const int d[9]) { return {d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8]}; }
};

// The distribution layout of one global matrix over a P x Q grid.
struct BlockCyclic {
  index_t m = 0, n = 0;    // global shape
  index_t mb = 1, nb = 1;  // block shape
  int prows = 1, pcols = 1;
  int rsrc = 0, csrc = 0;  // process row / column of the first block

  static BlockCyclic cyclic(index_t m, index_t n, index_t mb, index_t nb, int prows, int pcols) {
    BlockCyclic d{m, n, mb, nb, prows, pcols, 0, 0};
    d.check();
    return d;
  }
  // 2-D block: one block per process along each dimension.
  static BlockCyclic block(index_t m, index_t n, int prows, int pcols) {
    return cyclic(m, n, std::max<index_t>(1, (m + prows - 1) / prows), std::max<index_t>(1, (n + pcols - 1) / pcols),
                  prows, pcols);
  }
  void check() const {
    if (m < 0 || n < 0) throw Error("distributed matrix: negative shape " + std::to_string(m) + "x" + std::to_string(n));
    if (mb < 1 || nb < 1) throw Error("distributed matrix: block " + std::to_string(mb) + "x" + std::to_string(nb) + " must be at least 1x1");
    if (prows < 1 || pcols < 1 || rsrc < 0 || rsrc >= prows || csrc < 0 || csrc >= pcols)
      throw Error("distributed matrix: bad grid or source process");
  }

  int row_owner(index_t i) const { return static_cast<int>((i / mb + rsrc) % prows); }
  int col_owner(index_t j) const { return static_cast<int>((j / nb + csrc) % pcols); }
  index_t local_row(index_t i) const { return (i / (mb * prows)) * mb + i % mb; }
  index_t local_col(index_t j) const { return (j / (nb * pcols)) * nb + j % nb; }
  index_t global_row(index_t li, int prow) const {
    return ((li / mb) * prows + (prows + prow - rsrc) % prows) * mb + li % mb;
  }
  index_t global_col(index_t lj, int pcol) const {
    return ((lj / nb) * pcols + (pcols + pcol - csrc) % pcols) * nb + lj % nb;
  }
  index_t local_rows(int prow) const { return numroc(m, mb, prow, rsrc, prows); }
  index_t local_cols(int pcol) const { return numroc(n, nb, pcol, csrc, pcols); }
  bool same_as(const BlockCyclic& o) const {
    return m == o.m && n == o.n && mb == o.mb && nb == o.nb && prows == o.prows && pcols == o.pcols &&
           rsrc == o.rsrc && csrc == o.csrc;
  }
  std::string str() const;
};

// A valid distribution over exactly the grid's P x Q processes, or parray::Error.
inline void check_fits(const BlockCyclic& d, const MpiThreadArray& grid) {
  d.check();
  if (d.prows != grid.rows() || d.pcols != grid.cols())
    throw Error("distributed matrix: distribution over " + std::to_string(d.prows) + "x" + std::to_string(d.pcols) +
                " on a " + std::to_string(grid.rows()) + "x" + std::to_string(grid.cols()) + " grid");
}

// The ScaLAPACK descriptor of local blocks distributed as `d` with leading dimension lld.
inline Desc descriptor(const BlockCyclic& d, index_t lld, int ctxt = 0) {
  return {1, ctxt, static_cast<int>(d.m), static_cast<int>(d.n), static_cast<int>(d.mb), static_cast<int>(d.nb),
          d.rsrc, d.csrc, static_cast<int>(lld)};
}

// What a rank holds of a block-cyclic matrix, wherever it lies (DistMatrix on
// the host, GpuDistMatrix on the rank's GPU): the distribution, the extent of
// its local block and the block's column-major storage, lld apart.
template <class T>
class LocalBlock {
 public:
  const BlockCyclic& dist() const { return dist_; }
  index_t rows() const { return dist_.m; }
  index_t cols() const { return dist_.n; }
  index_t local_rows() const { return mloc_; }
  index_t local_cols() const { return nloc_; }
  index_t lld() const { return lld_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  // The local block as a parray array type (column-major, lld).
  MatrixView<T> local() { return {data_, MatrixLayout::col_major(mloc_, nloc_, lld_), memory_}; }
  MatrixView<const T> local() const { return {data_, MatrixLayout::col_major(mloc_, nloc_, lld_), memory_}; }
  Desc desc(int ctxt = 0) const { return descriptor(dist_, lld_, ctxt); }

 protected:
  // The block of the process at `me` (dist already checked), lld = max(1,
  // local rows), no storage yet.
  LocalBlock(const BlockCyclic& dist, const ProcCoord& me, Memory memory)
      : dist_(dist),
        mloc_(dist.local_rows(me.row)),
        nloc_(dist.local_cols(me.col)),
        lld_(std::max<index_t>(1, mloc_)),
        memory_(memory) {}
  // Storage the caller holds, columns lld apart (at least the local rows).
  void wrap(T* local, index_t lld) {
    if (lld < std::max<index_t>(1, mloc_))
      throw Error("distributed matrix: lld " + std::to_string(lld) + " < local rows " + std::to_string(mloc_));
    lld_ = lld;
    data_ = local;
  }

  BlockCyclic dist_;
  index_t mloc_ = 0, nloc_ = 0, lld_ = 1;
  T* data_ = nullptr;
  Memory memory_ = Memory::paged;
};

// d after check_fits(d, grid): for constructor initialisers.
inline const BlockCyclic& fitted(const BlockCyclic& d, const MpiThreadArray& grid) {
  check_fits(d, grid);
  return d;
}

template <class T>
class DistMatrix : public LocalBlock<T> {
 public:
  // Owns its local block, column-major with lld = max(1, local rows).
  DistMatrix(const MpiThreadArray& grid, const BlockCyclic& dist) : DistMatrix(grid, dist, 0) {
    own_.assign(static_cast<std::size_t>(lld_ * nloc_), T(0));
    data_ = own_.data();
  }
  // Wraps a ScaLAPACK-distributed matrix the caller owns (no copy).
  static DistMatrix from_desc(const MpiThreadArray& grid, const int desc[9], T* local) {
    const Desc d = Desc::from(desc);
    DistMatrix x(grid, BlockCyclic{d.m, d.n, d.mb, d.nb, grid.rows(), grid.cols(), d.rsrc, d.csrc}, 0);
    x.wrap(local, d.lld);
    return x;
  }

  const MpiThreadArray& grid() const { return *grid_; }
  index_t global_row(index_t li) const { return dist_.global_row(li, grid_->coord().row); }
  index_t global_col(index_t lj) const { return dist_.global_col(lj, grid_->coord().col); }

  // Sets every local element to f(global row, global column).
  template <class F>
  void fill(F&& f) {
    for (index_t lj = 0; lj < nloc_; ++lj) {
      const index_t gj = global_col(lj);
      for (index_t li = 0; li < mloc_; ++li) data_[li + lj * lld_] = static_cast<T>(f(global_row(li), gj));
    }
  }

  // Root's global matrix (any parray layout) to every rank's local block; the
  // view is read on root only.
  void scatter_from(MatrixView<const T> global, int root = 0);
  // Every rank's local block to root's global matrix (any layout).
  void gather_to(MatrixView<T> global, int root = 0) const;

 private:
  DistMatrix(const MpiThreadArray& grid, const BlockCyclic& dist, int)
      : LocalBlock<T>(fitted(dist, grid), grid.coord(), Memory::paged), grid_(&grid) {}

  using LocalBlock<T>::dist_;
  using LocalBlock<T>::mloc_;
  using LocalBlock<T>::nloc_;
  using LocalBlock<T>::lld_;
  using LocalBlock<T>::data_;
  const MpiThreadArray* grid_;
  std::vector<T> own_;
};

// dst = src (or src transposed) in dst's distribution: every element goes
// straight to its new owner in one MPI_Alltoallv. Returns the bytes this rank
// sent to other ranks.
template <class T>
double redistribute(const DistMatrix<T>& src, DistMatrix<T>& dst, bool transpose = false);

extern template class DistMatrix<float>;
extern template class DistMatrix<double>;
extern template double redistribute<float>(const DistMatrix<float>&, DistMatrix<float>&, bool);
extern template double redistribute<double>(const DistMatrix<double>&, DistMatrix<double>&, bool);

}  // namespace parray::mpi
