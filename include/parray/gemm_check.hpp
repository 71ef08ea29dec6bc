// FP64 verification of C = alpha op(A) op(B) + beta C0 without a stored
// reference, for results that no GemmCase holds: the multi-GPU GEMM, one MPI
// rank's product, anything a user computed. docs/verification.md gives the
// tolerances; GemmCase (harness.hpp) applies the same ones to its shared
// FP64 reference.
#pragma once

#include <cstdint>
#include <string>

#include "parray/matrix.hpp"
#include "parray/precision.hpp"

namespace parray {

// Relative Frobenius tolerance of a GEMM result of inner dimension K:
// 4 u (sqrt(K) + 4), u the unit roundoff of the dtype; for an implementation
// that rounds its inputs to a narrower format (`delivered`, precision.hpp)
// 4 v more, v that format's unit roundoff (each product's inputs carry a
// relative error up to v each; it does not grow with K).
double gemm_tolerance(Dtype dtype, index_t k);
double gemm_tolerance(Dtype dtype, index_t k, Precision delivered);
// The element-wise forward-error factor 2 (K + 4) u (+ 2 v for rounded
// inputs): |C_ij - ref_ij| may be at most that times
// (|alpha| |A||B| + |beta| |C0|)_ij.
double gemm_element_factor(Dtype dtype, index_t k);
double gemm_element_factor(Dtype dtype, index_t k, Precision delivered);

struct GemmCheck {
  bool ok = false;
  double rel_err = 0;    // relative Frobenius error (of the checksum vector when not full)
  double tolerance = 0;
  std::string method;    // "full", or "checksum+samples"
  std::string reason;    // why it failed
};

// C against alpha A B + beta C0 (c0 null when beta == 0), views of any
// layout in host memory. Up to 2^31 multiply-adds: the full FP64 product
// (relative Frobenius error <= gemm_tolerance and every element within its
// element-wise bound). Above: every element finite, C w against
// alpha A (B w) + beta C0 w for a random +-1 vector w (E|dC w|^2 = |dC|_F^2,
// so the checksum's relative error estimates C's: tolerance twice the full
// one), and 4096 sampled elements checked as in the full case.
template <class T>
GemmCheck check_gemm(T alpha, MatrixView<const T> a, MatrixView<const T> b, T beta, const MatrixView<const T>* c0,
                     MatrixView<const T> c, std::uint64_t seed = 1);

extern template GemmCheck check_gemm<float>(float, MatrixView<const float>, MatrixView<const float>, float,
                                            const MatrixView<const float>*, MatrixView<const float>, std::uint64_t);
extern template GemmCheck check_gemm<double>(double, MatrixView<const double>, MatrixView<const double>, double,
                                             const MatrixView<const double>*, MatrixView<const double>, std::uint64_t);

}  // namespace parray
