// 2.5-D SUMMA (summa_25d.hpp): c layers of a P x Q grid, each a SUMMA over its
// own contiguous range of K, then a reduce-scatter and a gather of C.
//
// Why a contiguous range of K per layer rather than panels l, l + c, ...:
// * the layer's share of op(A) (its columns) and of op(B) (its rows) is then a
//   block-cyclic matrix of its own, with the source process shifted to the
//   range's first panel: the unchanged summa() runs on it, and on every rank it
//   is one run of local columns of A (local rows of B), sent from layer 0 as
//   one message each without packing (an MPI vector type for B's rows);
// * the panels of a range go round all Q process columns (P rows) in turn, so
//   each rank of the layer is the root of an equal share of the broadcasts and
//   receives (Q - 1) / Q of the A panels, as the model counts. Panels l, l + c,
//   ... would, where c and Q share a factor, leave some process columns owning
//   none of a layer's A panels and others all of them: the ranks receiving all
//   of them would move Q / (Q - 1) times the model's words (twice on Q = 2).
// Layers receive only their share of A and B (1/c each) rather than whole
// copies, which a schedule over its own K range never reads: (c - 1) / c of A
// and B leave layer 0 instead of (c - 1) times them.
//
// The sum over the layers is MPI_Reduce_scatter along the layer dimension,
// the cost model's reduction (each rank ends with 1/c of its block of C
// summed, receiving (c - 1) / c of it), then MPI_Gatherv of the pieces into C
// on layer 0, where the caller's C lives; the gather is counted and timed
// apart, as the replication of the operands is.
#include "parray/mpi/summa_25d.hpp"

#include <algorithm>
#include <climits>
#include <memory>
#include <vector>

#include "panel_gemm.hpp"
#include "placed_operands.hpp"

namespace parray::mpi {

using detail::now_ms;

namespace {

int as_int(index_t n, const char* what) {
  if (n > INT_MAX) throw Error(std::string("summa_25d: ") + what + " of more than 2^31 elements on one rank");
  return static_cast<int>(n);
}

MPI_Comm split_by_layer(const MpiThreadArray& whole) {
  MPI_Comm layer = MPI_COMM_NULL;
  MPI_Comm_split(whole.comm(), whole.coord().tid(0), whole.coord().tid(), &layer);
  return layer;
}

// A rows x cols piece of a column-major block with leading dimension ld as one
// MPI datatype, so that strided rows are sent where they lie.
class Submatrix {
 public:
  template <class T>
  Submatrix(const T*, index_t rows, index_t cols, index_t ld) {
    MPI_Type_vector(as_int(cols, "a share"), as_int(rows, "a share"), as_int(ld, "a share"), mpi_type<T>(), &type_);
    MPI_Type_commit(&type_);
  }
  ~Submatrix() { MPI_Type_free(&type_); }
  Submatrix(const Submatrix&) = delete;
  Submatrix& operator=(const Submatrix&) = delete;
  MPI_Datatype type() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

// The columns [r.begin, r.end) of a matrix distributed as d (r.begin on a
// block boundary) as a matrix of their own, and the local columns they are on
// process column `pcol`; the same for rows.
BlockCyclic column_share(const BlockCyclic& d, KRange r) {
  BlockCyclic s = d;
  s.n = r.end - r.begin;
  s.csrc = static_cast<int>((r.begin / d.nb + d.csrc) % d.pcols);
  return s;
}
BlockCyclic row_share(const BlockCyclic& d, KRange r) {
  BlockCyclic s = d;
  s.m = r.end - r.begin;
  s.rsrc = static_cast<int>((r.begin / d.mb + d.rsrc) % d.prows);
  return s;
}
KRange local_columns(const BlockCyclic& d, KRange r, int pcol) {
  return {numroc(r.begin, d.nb, pcol, d.csrc, d.pcols), numroc(r.end, d.nb, pcol, d.csrc, d.pcols)};
}
KRange local_rows(const BlockCyclic& d, KRange r, int prow) {
  return {numroc(r.begin, d.mb, prow, d.rsrc, d.prows), numroc(r.end, d.mb, prow, d.rsrc, d.prows)};
}

// A distributed matrix over the caller's storage (no copy); summa() only reads
// the operands it is given.
template <class T>
std::unique_ptr<DistMatrix<T>> view(const MpiThreadArray& grid, const BlockCyclic& d, const T* data, index_t lld) {
  return std::make_unique<DistMatrix<T>>(
      DistMatrix<T>::from_desc(grid, descriptor(d, lld).array().data(), const_cast<T*>(data)));
}

// One layer's share of op(A) and op(B), as its SUMMA multiplies them.
template <class T>
struct LayerShare {
  std::unique_ptr<DistMatrix<T>> a, b;
};

// The operands placed on layer 0 (transposed or misaligned ones redistributed
// there) and each layer's share sent along the layer dimension: layer 0 keeps
// views of its own share, the others receive theirs into matrices of their own.
template <class T>
class Replication {
 public:
  Replication(bool ta, bool tb, const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c,
              const LayeredGrid& grid, index_t panel, Summa25dStats& stats)
      : grid_(grid), me_(grid.layer().coord()), stats_(stats) {
    k_ = ta ? a.rows() : a.cols();
    kb_ = detail::panel_width(ta, tb, a.dist(), b.dist(), c.dist(), panel);
    ad_ = detail::placed_a(ta, a.dist(), c.dist(), k_, kb_);
    bd_ = detail::placed_b(tb, b.dist(), c.dist(), k_, kb_);
    if (grid.layer_index() == 0) placed_ = detail::place_operands(ta, tb, a, b, c, k_, kb_, stats);
  }

  index_t panel() const { return kb_; }

  LayerShare<T> share_of_this_layer() { return grid_.layer_index() == 0 ? send_shares() : receive_share(); }

 private:
  static constexpr int kTagA = 0, kTagB = 1;

  KRange range(int layer) const { return layer_k_range(k_, kb_, layer, grid_.layers()); }

  LayerShare<T> send_shares() {
    std::vector<std::unique_ptr<Submatrix>> types;
    std::vector<MPI_Request> sent;
    const DistMatrix<T>& a = *placed_.a;
    const DistMatrix<T>& b = *placed_.b;
    for (int l = 1; l < grid_.layers(); ++l) {
      const KRange ac = local_columns(ad_, range(l), me_.col), br = local_rows(bd_, range(l), me_.row);
      send(a.data() + ac.begin * a.lld(), a.local_rows(), ac.end - ac.begin, a.lld(), l, kTagA, types, sent);
      send(b.data() + br.begin, br.end - br.begin, b.local_cols(), b.lld(), l, kTagB, types, sent);
    }
    MPI_Waitall(static_cast<int>(sent.size()), sent.data(), MPI_STATUSES_IGNORE);
    const KRange ac = local_columns(ad_, range(0), me_.col), br = local_rows(bd_, range(0), me_.row);
    return {view(grid_.layer(), column_share(ad_, range(0)), a.data() + ac.begin * a.lld(), a.lld()),
            view(grid_.layer(), row_share(bd_, range(0)), b.data() + br.begin, b.lld())};
  }

  void send(const T* from, index_t rows, index_t cols, index_t ld, int layer, int tag,
            std::vector<std::unique_ptr<Submatrix>>& types, std::vector<MPI_Request>& sent) {
    if (rows * cols == 0) return;  // the receiver computes the same size and posts nothing
    types.push_back(std::make_unique<Submatrix>(from, rows, cols, ld));
    sent.emplace_back();
    MPI_Isend(from, 1, types.back()->type(), layer, tag, grid_.across(), &sent.back());
    stats_.replicate_bytes += static_cast<double>(rows * cols) * sizeof(T);
  }

  LayerShare<T> receive_share() {
    const KRange r = range(grid_.layer_index());
    LayerShare<T> mine{std::make_unique<DistMatrix<T>>(grid_.layer(), column_share(ad_, r)),
                       std::make_unique<DistMatrix<T>>(grid_.layer(), row_share(bd_, r))};
    MPI_Request got[2];
    receive(*mine.a, kTagA, got[0]);
    receive(*mine.b, kTagB, got[1]);
    MPI_Waitall(2, got, MPI_STATUSES_IGNORE);
    return mine;
  }

  void receive(DistMatrix<T>& x, int tag, MPI_Request& request) {
    const index_t count = x.local_rows() * x.local_cols();
    request = MPI_REQUEST_NULL;
    if (count == 0) return;
    MPI_Irecv(x.data(), as_int(count, "a share"), mpi_type<T>(), 0, tag, grid_.across(), &request);
    stats_.replicate_bytes += static_cast<double>(count) * sizeof(T);
  }

  const LayeredGrid& grid_;
  const ProcCoord& me_;
  Summa25dStats& stats_;
  index_t k_ = 0, kb_ = 0;
  BlockCyclic ad_, bd_;  // op(A), op(B) as placed on layer 0
  detail::PlacedOperands<T> placed_;
};

// C summed over the layers into layer 0: MPI_Reduce_scatter of each rank's
// block (as one run of mloc nloc elements, cut into c nearly equal pieces),
// then MPI_Gatherv of the pieces to layer 0.
template <class T>
void sum_over_layers(DistMatrix<T>& c, const LayeredGrid& grid, Summa25dStats& stats) {
  const int layers = grid.layers(), me = grid.layer_index();
  const index_t mloc = c.local_rows(), nloc = c.local_cols(), total = mloc * nloc;
  const bool tight = c.lld() == mloc || nloc <= 1;
  std::vector<T> packed(tight ? 0 : static_cast<std::size_t>(total));
  T* block = tight ? c.data() : packed.data();
  if (!tight)
    for (index_t j = 0; j < nloc; ++j) std::copy_n(c.data() + j * c.lld(), mloc, block + j * mloc);
  std::vector<int> counts(static_cast<std::size_t>(layers)), displs(static_cast<std::size_t>(layers), 0);
  for (int l = 0; l < layers; ++l) {
    counts[static_cast<std::size_t>(l)] = as_int(total / layers + (l < total % layers ? 1 : 0), "C");
    if (l > 0)
      displs[static_cast<std::size_t>(l)] =
          displs[static_cast<std::size_t>(l - 1)] + counts[static_cast<std::size_t>(l - 1)];
  }
  const int mine = counts[static_cast<std::size_t>(me)];
  std::vector<T> piece(static_cast<std::size_t>(std::max(1, mine)));
  double t0 = now_ms();
  MPI_Reduce_scatter(block, piece.data(), counts.data(), mpi_type<T>(), MPI_SUM, grid.across());
  stats.reduce_ms += now_ms() - t0;
  stats.reduce_bytes += static_cast<double>(layers - 1) * mine * sizeof(T);
  t0 = now_ms();
  MPI_Gatherv(piece.data(), mine, mpi_type<T>(), block, counts.data(), displs.data(), mpi_type<T>(), 0, grid.across());
  stats.gather_ms += now_ms() - t0;
  stats.gather_bytes += static_cast<double>(me == 0 ? total - mine : mine) * sizeof(T);
  if (me == 0 && !tight)
    for (index_t j = 0; j < nloc; ++j) std::copy_n(block + j * mloc, mloc, c.data() + j * c.lld());
}

template <class T>
void check_arguments(bool ta, bool tb, const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c,
                     const LayeredGrid& grid, const SummaOptions& options) {
  if (&c.grid() != &grid.layer()) throw Error("summa_25d: A, B and C must be distributed over grid.layer()");
  detail::check_shapes(ta, tb, a, b, c, options);
  if (options.transport == Transport::nccl)
    throw Error("summa_25d: panels over NCCL are not implemented for the 2.5-D schedule (use Transport::mpi)");
  if (options.panel < 0) throw Error("summa_25d: negative panel width");
}

}  // namespace

LayeredGrid::LayeredGrid(int prows, int pcols, int layers, MPI_Comm comm)
    : whole_({layers, prows, pcols}, comm), layer_comm_(split_by_layer(whole_)), layer_({prows, pcols}, layer_comm_) {}

LayeredGrid::~LayeredGrid() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && layer_comm_ != MPI_COMM_NULL) MPI_Comm_free(&layer_comm_);
}

KRange layer_k_range(index_t k, index_t kb, int layer, int layers) {
  if (kb < 1 || layers < 1 || layer < 0 || layer >= layers) throw Error("layer_k_range: bad panel width or layer");
  const index_t panels = (k + kb - 1) / kb, base = panels / layers, extra = panels % layers;
  const index_t first = layer * base + std::min<index_t>(layer, extra), count = base + (layer < extra ? 1 : 0);
  return {std::min(k, first * kb), std::min(k, (first + count) * kb)};
}

template <class T>
Summa25dStats summa_25d(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                        DistMatrix<T>& c, const LayeredGrid& grid, const SummaOptions& options) {
  const bool ta = trans_a == Trans::yes, tb = trans_b == Trans::yes;
  check_arguments(ta, tb, a, b, c, grid, options);
  Summa25dStats stats;
  double t0 = now_ms();
  Replication<T> replication(ta, tb, a, b, c, grid, options.panel, stats);
  const LayerShare<T> share = replication.share_of_this_layer();
  stats.replicate_ms = now_ms() - t0;
  const KRange range = layer_k_range(ta ? a.rows() : a.cols(), replication.panel(), grid.layer_index(), grid.layers());
  SummaOptions layer_options = options;
  layer_options.panel = replication.panel();
  t0 = now_ms();
  // beta C once, on layer 0; the other layers start from zero (C is not read there).
  const SummaStats layer = summa<T>(Trans::no, Trans::no, alpha, *share.a, *share.b,
                                    grid.layer_index() == 0 ? beta : T(0), c, layer_options);
  stats.layer_ms = now_ms() - t0;
  const double redistributed = stats.redistribute_bytes;
  static_cast<SummaStats&>(stats) = layer;
  stats.redistribute_bytes += redistributed;
  stats.k_begin = range.begin, stats.k_end = range.end;
  if (grid.layers() > 1) sum_over_layers(c, grid, stats);
  return stats;
}

template Summa25dStats summa_25d<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&, float,
                                        DistMatrix<float>&, const LayeredGrid&, const SummaOptions&);
template Summa25dStats summa_25d<double>(Trans, Trans, double, const DistMatrix<double>&, const DistMatrix<double>&,
                                         double, DistMatrix<double>&, const LayeredGrid&, const SummaOptions&);

}  // namespace parray::mpi
