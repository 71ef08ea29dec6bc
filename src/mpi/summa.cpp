// SUMMA (van de Geijn and Watts, 1997) on block-cyclic distributed matrices.
//
// C (M x N) is distributed in mb x nb blocks over P x Q processes. op(A) must
// be M x K with C's row blocks (mb, rsrc) and op(B) K x N with C's column
// blocks (nb, csrc), both cut into panels of kb in K; anything else is first
// redistributed into that shape. Step k: the process column owning A's k-th
// block column broadcasts it along each process row (every rank gets the rows
// it owns of C), the process row owning B's k-th block row broadcasts it down
// each process column, and every rank adds A_k (mloc x kb) * B_k (kb x nloc)
// to its C block. Each rank receives about M K / P + K N / Q words, 2 n^2 /
// sqrt(p) for square matrices on a square grid.
#include "parray/mpi/summa.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

namespace parray::mpi {

namespace {

// Splits the local GEMM in column chunks and lets MPI progress the panel
// broadcasts in flight between chunks: with one core per rank nothing else
// would move a large (rendezvous) message along while the GEMM runs.
template <class T>
void local_gemm(index_t m, index_t n, index_t k, T alpha, const T* a, index_t lda, const T* b, index_t ldb, T beta,
                T* c, index_t ldc, int threads, MPI_Request* pending, int npending) {
  const GemmOptions opts{"cpu", threads};
  const index_t chunk = npending > 0 ? std::max<index_t>(256, (n + 3) / 4) : std::max<index_t>(n, 1);
  for (index_t j0 = 0; j0 < n || j0 == 0; j0 += chunk) {
    const index_t nj = std::min(chunk, n - j0);
    gemm<T>(Order::col_major, Trans::no, Trans::no, m, nj, k, alpha, a, std::max<index_t>(1, lda), b + j0 * ldb,
            std::max<index_t>(1, ldb), beta, c + j0 * ldc, std::max<index_t>(1, ldc), opts);
    if (npending > 0) {
      int done = 0;
      MPI_Testall(npending, pending, &done, MPI_STATUSES_IGNORE);
    }
    if (n == 0) break;
  }
}

}  // namespace

template <class T>
SummaStats summa(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                 DistMatrix<T>& c, const SummaOptions& options) {
  SummaStats stats;
  const MpiThreadArray& grid = c.grid();
  const ProcCoord& me = grid.coord();
  const BlockCyclic& cd = c.dist();
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  const index_t m = cd.m, n = cd.n;
  const index_t k = ta ? a.rows() : a.cols();
  if ((ta ? a.cols() : a.rows()) != m || (tb ? b.cols() : b.rows()) != k || (tb ? b.rows() : b.cols()) != n)
    throw Error("summa: op(A) is " + std::to_string(ta ? a.cols() : a.rows()) + "x" + std::to_string(k) + ", op(B) " +
                std::to_string(tb ? b.cols() : b.rows()) + "x" + std::to_string(tb ? b.rows() : b.cols()) + ", C " +
                std::to_string(m) + "x" + std::to_string(n));
  if (&a.grid() != &grid || &b.grid() != &grid) throw Error("summa: A, B and C must live on one process array");
  if (options.threads < 0) throw Error("summa: negative thread count");

  // Which operands can be used where they are.
  const BlockCyclic& ad = a.dist();
  const BlockCyclic& bd = b.dist();
  const bool a_fits = !ta && ad.mb == cd.mb && ad.rsrc == cd.rsrc;
  const bool b_fits = !tb && bd.nb == cd.nb && bd.csrc == cd.csrc;
  index_t kb = options.panel;
  if (kb <= 0) kb = a_fits ? ad.nb : b_fits ? bd.mb : cd.nb;
  const bool a_ok = a_fits && ad.nb == kb, b_ok = b_fits && bd.mb == kb;

  std::unique_ptr<DistMatrix<T>> a_moved, b_moved;
  const DistMatrix<T>* ap = &a;
  const DistMatrix<T>* bp = &b;
  if (!a_ok) {
    a_moved = std::make_unique<DistMatrix<T>>(grid, BlockCyclic{m, k, cd.mb, kb, cd.prows, cd.pcols, cd.rsrc, 0});
    stats.redistribute_bytes += redistribute(a, *a_moved, ta);
    ap = a_moved.get();
  }
  if (!b_ok) {
    b_moved = std::make_unique<DistMatrix<T>>(grid, BlockCyclic{k, n, kb, cd.nb, cd.prows, cd.pcols, 0, cd.csrc});
    stats.redistribute_bytes += redistribute(b, *b_moved, tb);
    bp = b_moved.get();
  }
  const BlockCyclic& A = ap->dist();
  const BlockCyclic& B = bp->dist();

  const index_t mloc = c.local_rows(), nloc = c.local_cols();
  T* cl = c.data();
  const index_t ldc = c.lld();
  const index_t nkb = (k + kb - 1) / kb;
  if (nkb == 0) {  // K == 0: C = beta C
    for (index_t j = 0; j < nloc; ++j)
      for (index_t i = 0; i < mloc; ++i) cl[i + j * ldc] = beta == T(0) ? T(0) : beta * cl[i + j * ldc];
    return stats;
  }

  std::vector<T> abuf[2], bbuf[2];
  for (int s = 0; s < 2; ++s) {
    abuf[s].resize(static_cast<std::size_t>(std::max<index_t>(1, mloc * kb)));
    bbuf[s].resize(static_cast<std::size_t>(std::max<index_t>(1, kb * nloc)));
  }
  MPI_Request req[2][2] = {{MPI_REQUEST_NULL, MPI_REQUEST_NULL}, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
  const double elem = sizeof(T);

  auto post = [&](index_t step, int slot) {
    const index_t w = std::min(kb, k - step * kb);
    // A's block column `step`: on process column a_owner, local columns from (step / Q) kb.
    const int a_owner = static_cast<int>((step + A.csrc) % A.pcols);
    if (me.col == a_owner) {
      const T* src = ap->data() + ((step / A.pcols) * kb) * ap->lld();
      for (index_t j = 0; j < w; ++j)
        std::memcpy(abuf[slot].data() + j * mloc, src + j * ap->lld(), static_cast<std::size_t>(mloc) * sizeof(T));
    }
    // B's block row `step`: on process row b_owner, local rows from (step / P) kb, packed (w x nloc).
    const int b_owner = static_cast<int>((step + B.rsrc) % B.prows);
    if (me.row == b_owner) {
      const T* src = bp->data() + (step / B.prows) * kb;
      for (index_t j = 0; j < nloc; ++j)
        std::memcpy(bbuf[slot].data() + j * w, src + j * bp->lld(), static_cast<std::size_t>(w) * sizeof(T));
    }
    if (grid.cols() > 1) {
      MPI_Ibcast(abuf[slot].data(), static_cast<int>(mloc * w), mpi_type<T>(), a_owner, me.row_comm, &req[slot][0]);
      stats.bcast_bytes += elem * static_cast<double>(mloc * w);
      if (me.col != a_owner) stats.recv_bytes += elem * static_cast<double>(mloc * w);
    }
    if (grid.rows() > 1) {
      MPI_Ibcast(bbuf[slot].data(), static_cast<int>(w * nloc), mpi_type<T>(), b_owner, me.col_comm, &req[slot][1]);
      stats.bcast_bytes += elem * static_cast<double>(w * nloc);
      if (me.row != b_owner) stats.recv_bytes += elem * static_cast<double>(w * nloc);
    }
  };

  post(0, 0);
  for (index_t step = 0; step < nkb; ++step) {
    const int slot = static_cast<int>(step & 1);
    MPI_Waitall(2, req[slot], MPI_STATUSES_IGNORE);
    const bool more = step + 1 < nkb;
    if (more) post(step + 1, slot ^ 1);  // panel k+1 travels while panel k is multiplied
    const index_t w = std::min(kb, k - step * kb);
    local_gemm<T>(mloc, nloc, w, alpha, abuf[slot].data(), mloc, bbuf[slot].data(), w, step == 0 ? beta : T(1), cl,
                  ldc, options.threads, more ? req[slot ^ 1] : nullptr, more ? 2 : 0);
    ++stats.steps;
  }
  return stats;
}

template SummaStats summa<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&, float,
                                 DistMatrix<float>&, const SummaOptions&);
template SummaStats summa<double>(Trans, Trans, double, const DistMatrix<double>&, const DistMatrix<double>&, double,
                                  DistMatrix<double>&, const SummaOptions&);

}  // namespace parray::mpi
