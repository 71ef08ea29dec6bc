// 2.5-D (communication-avoiding) SUMMA: c layers of a P x Q process grid
// (Solomonik and Demmel, 2011; docs/distributed.md, "2.5-D SUMMA").
//
//   parray::mpi::LayeredGrid grid(2, 2, 2);            // mpi [2][2][2]: 2 layers of 2x2, 8 ranks
//   parray::mpi::DistMatrix<double> a(grid.layer(), da), b(grid.layer(), db), c(grid.layer(), dc);
//   // fill a and b on layer 0 (the other layers' blocks are not read)
//   summa_25d<double>(Trans::no, Trans::no, 1.0, a, b, 0.0, c, grid);   // C on layer 0
//
// The process array is mpi [c][P][Q], layers outermost: layer l is the ranks
// l P Q .. (l + 1) P Q - 1, row-major inside the layer, as the cost model
// (src/core/dist_model.cpp) places them. Every rank passes A, B and C
// distributed over its own layer's P x Q grid (grid.layer()), with the same
// distributions on every layer. The operands are read on layer 0; each layer
// receives from it the part of A's columns and B's rows (of op(A), op(B)) that
// it multiplies. Layer l runs parray's SUMMA over its own contiguous range of
// K, then the layers' partial products are summed by a reduce-scatter along
// the layer dimension (each rank ends with 1/c of its C block summed, as the
// model assumes) and the pieces are gathered into C on layer 0. beta C is
// applied once, on layer 0; on the other layers C is the layer's workspace
// (never read, overwritten).
#pragma once

#include "parray/mpi/summa.hpp"

namespace parray::mpi {

// The 3-D process array of 2.5-D SUMMA: `layers` copies of a prows x pcols
// grid. Collective over comm, whose size must be prows pcols layers
// (parray::Error otherwise).
class LayeredGrid {
 public:
  LayeredGrid(int prows, int pcols, int layers, MPI_Comm comm = MPI_COMM_WORLD);
  ~LayeredGrid();
  LayeredGrid(const LayeredGrid&) = delete;
  LayeredGrid& operator=(const LayeredGrid&) = delete;

  const MpiThreadArray& whole() const { return whole_; }  // mpi [c][P][Q]; tid(0) is the layer
  const MpiThreadArray& layer() const { return layer_; }  // this rank's layer, a P x Q grid
  // The c ranks at this rank's (row, column) of every layer; rank there = layer.
  MPI_Comm across() const { return whole_.coord().along[0]; }
  int layers() const { return whole_.shape().dim(0); }
  int layer_index() const { return whole_.coord().tid(0); }

 private:
  MpiThreadArray whole_;
  MPI_Comm layer_comm_ = MPI_COMM_NULL;
  MpiThreadArray layer_;
};

// What one 2.5-D call moved on this rank: SummaStats of the layer's SUMMA
// (bcast_bytes, recv_bytes: the panels broadcast within the layer;
// redistribute_bytes: transposed or misaligned operands lined up on layer 0)
// and the traffic along the layer dimension.
struct Summa25dStats : SummaStats {
  index_t k_begin = 0, k_end = 0;  // the columns of op(A) (rows of op(B)) this rank's layer multiplies
  double replicate_bytes = 0;      // the layers' shares of A and B: sent (layer 0) or received (other layers)
  double reduce_bytes = 0;         // partial sums of C received in the reduce-scatter over the layers
  double gather_bytes = 0;         // summed pieces of C: received (layer 0) or sent (other layers)
  // replicate_ms: lining up op(A) and op(B) on layer 0 (redistribute) and sending the layers their shares
  // (on the other layers: waiting for them)
  double replicate_ms = 0, layer_ms = 0, reduce_ms = 0, gather_ms = 0;
};

// C = alpha op(A) op(B) + beta C over grid (see the top of this file), with
// the host MPI transport (options.transport == nccl throws parray::Error) and
// the local GEMM options.local. Collective over grid.whole().
template <class T>
Summa25dStats summa_25d(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                        DistMatrix<T>& c, const LayeredGrid& grid, const SummaOptions& options = {});

// A layer's share of K in panels of kb: of the T = ceil(K / kb) panels, layer l
// of c takes a contiguous run of T / c, the first T mod c layers one more (a
// layer takes none where T < c).
struct KRange {
  index_t begin = 0, end = 0;  // columns of op(A)
};
KRange layer_k_range(index_t k, index_t kb, int layer, int layers);

extern template Summa25dStats summa_25d<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&,
                                               float, DistMatrix<float>&, const LayeredGrid&, const SummaOptions&);
extern template Summa25dStats summa_25d<double>(Trans, Trans, double, const DistMatrix<double>&,
                                                const DistMatrix<double>&, double, DistMatrix<double>&,
                                                const LayeredGrid&, const SummaOptions&);

}  // namespace parray::mpi
