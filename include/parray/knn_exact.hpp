// What "exact" means for parray's k-NN, and the two pieces that keep it on
// every device (docs/knn.md, "The exactness guarantee").
//
// The answer is defined by the FP64 key of each (query, base vector) pair,
//   L2:  sum over t of (q_t - x_t)^2      IP:  -(sum over t of q_t x_t),
// accumulated in component order with one fused multiply-add per component
// (exact_key below); results are the k smallest keys, ties by base index. The
// fused multiply-add makes the key the same bit pattern on every CPU and GPU.
//
// The search finds candidates with the fast FP32 expansion ||q||^2 + ||x||^2
// - 2 q.x (or -q.x), lowered by a rigorous bound on its distance from the
// FP64 key (filter_lower), keeps the kc smallest lower bounds per query, and
// decides them with exact_key. The answer is proven complete when the largest
// lower bound kept is above the k-th exact key: every vector left out has a
// lower bound, hence a key, at least that large. A query that fails the proof
// is searched again with more candidates, up to all N.
#pragma once

#include <cmath>
#include <limits>

#include "parray/core.hpp"

namespace parray {

// The FP64 key that defines the answer (smaller is better). X is float, double,
// or anything that converts exactly to double.
template <class Q, class X>
PARRAY_HD inline double exact_key(const Q* q, const X* x, index_t d, bool l2) {
  double s = 0;
  if (l2) {
    for (index_t t = 0; t < d; ++t) {
      const double diff = double(q[t]) - double(x[t]);
      s = fma(diff, diff, s);
    }
    return s;
  }
  for (index_t t = 0; t < d; ++t) s = fma(double(q[t]), double(x[t]), s);
  return -s;
}

// The bound |expansion - exact key| <= beta (|q| + |x|)^2 + eta for L2 and
// beta |q| |x| + eta for IP, where |.| are the (approximate) norms of the
// vectors the expansion saw (centered ones when the base was centered).
// u is the unit roundoff of the filter's arithmetic (2^-24 in FP32). The
// terms, in units of u (|q| + |x|)^2:
//   the inner product 2 q.x in any summation order      d / 2   (gamma_d)
//   ||q||^2, and ||x||^2 as the square of its rounded root  d + 3
//   forming the key and its bound, 10 roundings             <= 20
//   centering (q - mu and x - mu rounded)                   2
//   the FP64 key's own error                                (d + 1) 2^-29
// 2d + 24 units cover them; the factor 1.25 covers the second-order terms and
// the norms inside the bound being approximate themselves. eta covers
// underflow: up to 2d + 24 roundings of absolute error at most 2^-126 each
// (flush-to-zero included).
// gamma: a term gamma (|q| + |x|) more, for inner products whose inputs
// were converted to a narrower format (FilterArithmetic): zero otherwise.
struct FilterBound {
  double beta = 0, eta = 0, gamma = 0;
};

template <class T>
inline FilterBound filter_bound(index_t d) {
  const double u = std::numeric_limits<T>::epsilon() / 2;
  const double units = 2.0 * double(d) + 24.0;
  return {1.25 * units * u / (1.0 - units * u), 2.0 * units * std::ldexp(1.0, -126)};
}

// The arithmetic of a GEMM that computes the filter's inner products in
// FP32 data: input_unit, the relative error of converting an input to the
// format its products take (0: none; TF32 2^-10 and BF16 2^-7 cover
// truncation as well as rounding), input_min, the smallest normal magnitude
// of that format (an input below it may become anything within input_min of
// it, flushed or rounded as a subnormal), and sum_unit, the unit roundoff of
// its sums (2^-24 for FP32 rounded to nearest; 2^-23 covers tensor cores,
// which may truncate).
struct FilterArithmetic {
  double input_unit = 0, input_min = 0, sum_unit = 0x1p-24;
};

// filter_bound for such a GEMM. With q~ = q (1 + e) + f for each input
// (|e| <= input_unit = v, |f| <= input_min = m), summed over the d products:
//   |q~.x~ - q.x| <= (2v + v^2) |q| |x| + (1 + v) m sqrt(d) (|q| + |x|) + d m^2,
// doubled in the L2 expansion's 2 q.x, where 2 |q| |x| <= (|q| + |x|)^2 / 2:
// beta gains 2v + v^2 (enough for IP's |q| |x| too), gamma is
// 2 (1 + v) m sqrt(d) and eta gains 2 d m^2. The sums' error keeps the 2d + 24
// units of the FP32 bound at sum_unit. With the defaults it is the FP32 bound.
inline FilterBound filter_bound(index_t d, const FilterArithmetic& f) {
  const double units = 2.0 * double(d) + 24.0, v = f.input_unit, m = f.input_min;
  const double relative = units * f.sum_unit + 2.0 * v + v * v;
  return {1.25 * relative / (1.0 - relative),
          2.0 * units * std::ldexp(1.0, -126) + 2.0 * double(d) * m * m,
          1.25 * 2.0 * (1.0 + v) * m * std::sqrt(double(d))};
}

// The per-query half of the lower bound below, computed once per query from
// its squared norm qn and norm qr:
//   L2:  key >= (1 - beta)(qn + xr^2) - (2 beta qr + gamma) xr - gamma qr - 2 q.x - eta
//        (the expansion minus beta (qr + xr)^2 + gamma (qr + xr) + eta, regrouped)
//   IP:  key >= -q.x - (beta qr + gamma) xr - gamma qr - eta
// so that a base vector costs one norm xr and four operations.
template <class T>
struct QueryTerms {
  T a, b, c;  // lower = c xr^2 + b xr + a - 2 dot (IP: b xr + a - dot)
};

template <class T>
PARRAY_HD inline QueryTerms<T> query_terms(bool l2, T qn, T qr, T beta, T eta, T gamma = T(0)) {
  if (l2) return {(T(1) - beta) * qn - gamma * qr - eta, T(-2) * beta * qr - gamma, T(1) - beta};
  return {-eta - gamma * qr, -beta * qr - gamma, T(0)};
}

// A lower bound of the exact key from the GEMM's q.x and the base vector's
// norm xr. Anything not finite (FP32 overflow of huge data) becomes
// -infinity: always a candidate.
template <class T>
PARRAY_HD inline T filter_lower(bool l2, T dot, const QueryTerms<T>& t, T xr) {
  // Whether the compiler fuses these multiply-adds or not, each step is one
  // or two roundings: within the bound's allowance either way.
  const T v = l2 ? ((t.c * (xr * xr) + t.a) + t.b * xr) - T(2) * dot : (t.b * xr + t.a) - dot;
  return v - v == T(0) ? v : T(-INFINITY);
}

// Candidates kept per query in the first round: enough more than k that the
// proof holds on ordinary data, so that few queries need a second pass over
// the base. The points whose lower bound can fall below the k-th key lie in
// a shell as thick as the bound, so the margin grows with beta: a k/8 share
// (at least 8) for FP32's bound (beta ~2e-5 at d = 128), and 160 beta more
// of max(k, 64), enough for TF32's (beta ~2.5e-3) on 128-d uniform data
// (docs/perf-notes.md, k-NN; tests/knn_filter_bound_test.cpp).
inline index_t first_candidates(index_t k, index_t n, double beta) {
  const double share = 0.125 + 160.0 * beta;
  const index_t margin = index_t(double(k > 64 ? k : 64) * share);
  const index_t kc = k + (margin > 8 ? margin : 8);
  return kc < n ? kc : n;
}

// Centering by the base's mean pays when the offset dominates the spread:
// ||mu||^2 > mean ||x - mu||^2 halves (or better) the bound's (|q| + |x|)^2.
inline bool centering_pays(double mean_sq_norm, double mu_sq_norm) {
  return mu_sq_norm > mean_sq_norm - mu_sq_norm;
}

}  // namespace parray
