#include "parray/gemm_check.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace parray {

namespace {
// Unit roundoff 2^-(mantissa bits + 1) of a format.
double unit_roundoff(Precision p) { return std::ldexp(1.0, -(format_of(p).mantissa_bits + 1)); }
// That of the inputs' rounding: 0 where the inputs keep the dtype's precision.
double input_roundoff(Dtype dtype, Precision delivered) {
  return meets(delivered, precision_of(dtype)) ? 0.0 : unit_roundoff(delivered);
}
}  // namespace

double gemm_tolerance(Dtype dtype, index_t k, Precision delivered) {
  const double u = unit_roundoff(precision_of(dtype));
  return 4.0 * u * (std::sqrt(static_cast<double>(std::max<index_t>(k, 0))) + 4.0) +
         4.0 * input_roundoff(dtype, delivered);
}
double gemm_tolerance(Dtype dtype, index_t k) { return gemm_tolerance(dtype, k, precision_of(dtype)); }

double gemm_element_factor(Dtype dtype, index_t k, Precision delivered) {
  const double u = unit_roundoff(precision_of(dtype));
  return 2.0 * static_cast<double>(k + 4) * u + 2.0 * input_roundoff(dtype, delivered);
}
double gemm_element_factor(Dtype dtype, index_t k) { return gemm_element_factor(dtype, k, precision_of(dtype)); }

namespace {

std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A host operand with its row and column offsets tabulated: any layout is
// read at the cost of two loads per element.
template <class T>
struct Operand {
  const T* p = nullptr;
  std::vector<index_t> row, col;
  Operand() = default;
  Operand(MatrixView<const T> v, const char* what) : p(v.data), row(v.layout.rows.offsets()), col(v.layout.cols.offsets()) {
    if (v.memory == Memory::device) throw Error(std::string("gemm check: ") + what + " must be in host memory");
  }
  double operator()(index_t i, index_t j) const { return double(p[row[std::size_t(i)] + col[std::size_t(j)]]); }
};

template <class T>
struct Ops {
  Operand<T> a, b, c, c0;
  index_t M, N, K;
  double alpha, beta;
  // Element (i, j) of the FP64 product and its bound |alpha||A||B| + |beta||C0|.
  double ref(index_t i, index_t j, double* bound) const {
    double s = 0, sa = 0;
    for (index_t p = 0; p < K; ++p) {
      const double x = a(i, p) * b(p, j);
      s += x, sa += std::fabs(x);
    }
    double r = alpha * s;
    *bound = std::fabs(alpha) * sa;
    if (beta != 0) r += beta * c0(i, j), *bound += std::fabs(beta) * std::fabs(c0(i, j));
    return r;
  }
};

// What a check found: the sums of its relative error and the first
// offending elements (i N + j), or kNone; min-reductions, so that a result
// full of NaN costs no lock per element.
constexpr long long kNone = std::numeric_limits<long long>::max();
struct Tally {
  double num = 0, den = 0;
  long long bad_elem = kNone, nonfinite = kNone;
};

// The whole FP64 product, every element against its element-wise bound.
template <class T>
Tally check_full(const Ops<T>& o, double elem_factor) {
  double num = 0, den = 0;
  long long bad_elem = kNone, nonfinite = kNone;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : num, den) reduction(min : nonfinite, bad_elem)
  for (index_t i = 0; i < o.M; ++i)
    for (index_t j = 0; j < o.N; ++j) {
      double bound = 0;
      const double ref = o.ref(i, j, &bound), got = o.c(i, j);
      if (!std::isfinite(got)) nonfinite = std::min<long long>(nonfinite, i * o.N + j);
      else if (std::fabs(got - ref) > elem_factor * bound) bad_elem = std::min<long long>(bad_elem, i * o.N + j);
      num += (got - ref) * (got - ref), den += ref * ref;
    }
  return {num, den, bad_elem, nonfinite};
}

// Relative error of the checksum C w against alpha A (B w) + beta C0 w for random signs w.
template <class T>
void checksum(const Ops<T>& o, std::uint64_t seed, Tally& t) {
  std::vector<double> w(std::size_t(o.N)), y(std::size_t(o.K), 0.0);
  for (index_t j = 0; j < o.N; ++j) w[std::size_t(j)] = (mix(seed * 7919 + std::uint64_t(j)) & 1) ? 1.0 : -1.0;
#pragma omp parallel for schedule(static)
  for (index_t p = 0; p < o.K; ++p) {
    double s = 0;
    for (index_t j = 0; j < o.N; ++j) s += o.b(p, j) * w[std::size_t(j)];
    y[std::size_t(p)] = s;
  }
  double num = 0, den = 0;
#pragma omp parallel for reduction(+ : num, den) schedule(static)
  for (index_t i = 0; i < o.M; ++i) {
    double z = 0, x = 0;
    for (index_t p = 0; p < o.K; ++p) z += o.a(i, p) * y[std::size_t(p)];
    z *= o.alpha;
    for (index_t j = 0; j < o.N; ++j) {
      x += o.c(i, j) * w[std::size_t(j)];
      if (o.beta != 0) z += o.beta * o.c0(i, j) * w[std::size_t(j)];
    }
    num += (x - z) * (x - z), den += z * z;
  }
  t.num = num, t.den = den;
}

// Every element finite, the checksum, and 4096 sampled elements against
// their bounds (a sampled relative error beyond the tolerance goes into `reason`).
template <class T>
Tally check_by_checksum(const Ops<T>& o, double elem_factor, double tolerance, std::uint64_t seed,
                        std::string& reason) {
  Tally t;
  long long bad_elem = kNone, nonfinite = kNone;
#pragma omp parallel for collapse(2) schedule(static) reduction(min : nonfinite)
  for (index_t i = 0; i < o.M; ++i)
    for (index_t j = 0; j < o.N; ++j)
      if (!std::isfinite(o.c(i, j))) nonfinite = std::min<long long>(nonfinite, i * o.N + j);
  checksum(o, seed, t);
  double snum = 0, sden = 0;
#pragma omp parallel for reduction(+ : snum, sden) reduction(min : bad_elem) schedule(dynamic, 64)
  for (int s = 0; s < 4096; ++s) {
    const std::uint64_t h = mix(seed * 104729 + std::uint64_t(s));
    const index_t i = index_t(h % std::uint64_t(o.M)), j = index_t((h >> 32) % std::uint64_t(o.N));
    double bound = 0;
    const double ref = o.ref(i, j, &bound), got = o.c(i, j);
    if (std::isfinite(got) && std::fabs(got - ref) > elem_factor * bound) bad_elem = std::min<long long>(bad_elem, i * o.N + j);
    snum += (got - ref) * (got - ref), sden += ref * ref;
  }
  const double srel = sden > 0 ? std::sqrt(snum / sden) : std::sqrt(snum);
  if (!(srel <= tolerance) && nonfinite == kNone && bad_elem == kNone)
    reason = "sampled elements: relative error " + std::to_string(srel) + " over " + std::to_string(tolerance);
  t.bad_elem = bad_elem, t.nonfinite = nonfinite;
  return t;
}

std::string element_name(long long e, index_t n) {
  return "C(" + std::to_string(e / n) + ", " + std::to_string(e % n) + ")";
}

}  // namespace

template <class T>
GemmCheck check_gemm(T alpha, MatrixView<const T> a, MatrixView<const T> b, T beta, const MatrixView<const T>* c0,
                     MatrixView<const T> c, std::uint64_t seed) {
  const index_t M = c.rows(), N = c.cols(), K = a.cols();
  if (a.rows() != M || b.rows() != K || b.cols() != N)
    throw Error("gemm check: shapes do not agree (A " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                ", B " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()) + ", C " + std::to_string(M) + "x" +
                std::to_string(N) + ")");
  if (beta != T(0) && !c0) throw Error("gemm check: beta != 0 needs C0");
  GemmCheck r;
  if (M == 0 || N == 0) return r.ok = true, r.method = "full", r;
  const Ops<T> o{Operand<T>(a, "A"), Operand<T>(b, "B"), Operand<T>(c, "C"),
                 c0 ? Operand<T>(*c0, "C0") : Operand<T>(), M, N, K, double(alpha), double(beta)};
  const double elem_factor = gemm_element_factor(dtype_of<T>(), K);
  const bool full = double(M) * double(N) * double(K) <= 2147483648.0;
  r.method = full ? "full" : "checksum+samples";
  r.tolerance = (full ? 1 : 2) * gemm_tolerance(dtype_of<T>(), std::max<index_t>(K, 1));
  const Tally t = full ? check_full(o, elem_factor)
                       : check_by_checksum(o, elem_factor, gemm_tolerance(dtype_of<T>(), K), seed, r.reason);
  r.rel_err = t.den > 0 ? std::sqrt(t.num / t.den) : std::sqrt(t.num);
  if (t.nonfinite != kNone) r.reason = element_name(t.nonfinite, N) + " is not finite";
  else if (t.bad_elem != kNone) r.reason = element_name(t.bad_elem, N) + " is outside the element-wise error bound";
  else if (!(r.rel_err <= r.tolerance) && r.reason.empty())
    r.reason = "relative error " + std::to_string(r.rel_err) + " over the tolerance " + std::to_string(r.tolerance);
  r.ok = r.reason.empty();
  return r;
}

template GemmCheck check_gemm<float>(float, MatrixView<const float>, MatrixView<const float>, float,
                                     const MatrixView<const float>*, MatrixView<const float>, std::uint64_t);
template GemmCheck check_gemm<double>(double, MatrixView<const double>, MatrixView<const double>, double,
                                      const MatrixView<const double>*, MatrixView<const double>, std::uint64_t);

}  // namespace parray
