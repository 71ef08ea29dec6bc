// SUMMA over process arrays: C = alpha op(A) op(B) + beta C on distributed matrices.
//
// For each block column k of op(A) (block row k of op(B)), the owning process
// column broadcasts its A panel along the process rows and the owning process
// row broadcasts its B panel along the process columns (MPI_Ibcast); every
// rank then adds A_panel * B_panel to its local C with parray's CPU GEMM. The
// broadcasts of panel k+1 are in flight while panel k is multiplied.
//
// Operands whose distribution does not line up with C's (a transpose, another
// block size, another source process) are first redistributed into one that
// does (redistribute(), one all-to-all); that traffic is counted apart.
#pragma once

#include "parray/gemm.hpp"
#include "parray/mpi/dist_matrix.hpp"

namespace parray::mpi {

struct SummaOptions {
  int threads = 1;       // CPU threads of each rank's local GEMM
  index_t panel = 0;     // panel width in K; 0: C's column block (nb)
};

// What one call moved, counted on this rank.
struct SummaStats {
  double bcast_bytes = 0;        // panels this rank took part in (sent as root or received)
  double recv_bytes = 0;         // of those, received from another rank
  double redistribute_bytes = 0; // sent by redistribute() to line operands up
  index_t steps = 0;             // panels
};

template <class T>
SummaStats summa(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                 DistMatrix<T>& c, const SummaOptions& options = {});

extern template SummaStats summa<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&,
                                        float, DistMatrix<float>&, const SummaOptions&);
extern template SummaStats summa<double>(Trans, Trans, double, const DistMatrix<double>&,
                                         const DistMatrix<double>&, double, DistMatrix<double>&,
                                         const SummaOptions&);

// ScaLAPACK's psgemm / pdgemm on the same grid and data (BLACS "Row" grid
// over MPI_COMM_WORLD). scalapack_available() is false where the build found
// no ScaLAPACK; scalapack_gemm then throws parray::Error.
bool scalapack_available();
template <class T>
void scalapack_gemm(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                    DistMatrix<T>& c);

}  // namespace parray::mpi
