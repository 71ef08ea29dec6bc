// Verification of a distributed GEMM without gathering it (docs/verification.md,
// "Distributed results"): C = alpha op(A) op(B) + beta C0 on block-cyclic
// matrices, checked where the blocks lie.
//
// 1. Every local element of C finite (NaN never passes).
// 2. The checksum: x = C w against z = alpha op(A) (op(B) w) + beta C0 w in
//    FP64, for a random +-1 vector w the same on every rank, each rank adding
//    its local part and MPI_Allreduce summing over the grid. Since
//    E|dC w|^2 = |dC|_F^2, |x - z| / |z| estimates C's relative Frobenius
//    error: it must be at most 2 tol(K) (gemm_tolerance).
// 3. `samples` elements C(i, j) (the same on every rank) against the FP64 dot
//    product of op(A)'s row i and op(B)'s column j, whose pieces the ranks
//    owning them contribute through one MPI_Allreduce: each within the
//    element-wise bound gemm_element_factor(K) (|alpha| |op(A)||op(B)| + |beta| |C0|)_ij.
#pragma once

#include <cstdint>
#include <string>

#include "parray/gemm.hpp"
#include "parray/mpi/dist_matrix.hpp"

namespace parray::mpi {

struct DistCheck {
  bool ok = false;
  double rel_err = 0;       // of the checksum, |x - z| / |z|
  double tolerance = 0;     // 2 tol(K)
  int samples = 0;          // elements compared with their FP64 dot product
  double worst_sample = 0;  // the largest |C_ij - ref_ij| / bound_ij among them
  std::string reason;       // why it failed; empty when ok
};

// Collective over C's process array; every rank gets the same verdict. c0 is
// C's value before the product (null when beta == 0). A, B, C0 and C live on
// one array, op(A) is M x K and op(B) K x N in any distributions.
template <class T>
DistCheck check_distributed_gemm(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b,
                                 T beta, const DistMatrix<T>* c0, const DistMatrix<T>& c, int samples = 48,
                                 std::uint64_t seed = 1);

extern template DistCheck check_distributed_gemm<float>(Trans, Trans, float, const DistMatrix<float>&,
                                                        const DistMatrix<float>&, float, const DistMatrix<float>*,
                                                        const DistMatrix<float>&, int, std::uint64_t);
extern template DistCheck check_distributed_gemm<double>(Trans, Trans, double, const DistMatrix<double>&,
                                                         const DistMatrix<double>&, double, const DistMatrix<double>*,
                                                         const DistMatrix<double>&, int, std::uint64_t);

}  // namespace parray::mpi
