// FP64 verification of a multi-GPU GEMM on the host (multigpu.hpp): the full
// product for small problems, a random-sign checksum plus sampled elements
// for large ones. Same tolerances as the harness (docs/verification.md);
// written here because the harness library sits above this one.
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "common.hpp"

namespace parray::multigpu {

namespace {

constexpr double kUnit = 5.9604644775390625e-08;  // 2^-24, FP32 unit roundoff
double frobenius_tolerance(index_t k) { return 4.0 * kUnit * (std::sqrt(double(std::max<index_t>(k, 1))) + 4.0); }

std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

struct Ops {
  detail::Rows a, b, c, c0;
  index_t M, N, K;
  double alpha, beta;
  double ref(index_t i, index_t j, double* bound) const {  // the FP64 element and |alpha||A||B| + |beta||C0|
    double s = 0, sa = 0;
    const float* ar = a.p + i * a.ld;
    for (index_t p = 0; p < K; ++p) {
      const double x = double(ar[p]) * double(b.p[p * b.ld + j]);
      s += x, sa += std::fabs(x);
    }
    double r = alpha * s;
    *bound = std::fabs(alpha) * sa;
    if (beta != 0) {
      const double c0v = double(c0.p[i * c0.ld + j]);
      r += beta * c0v, *bound += std::fabs(beta) * std::fabs(c0v);
    }
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
Tally check_full(const Ops& o, double elem_factor) {
  const index_t M = o.M, N = o.N, K = o.K;
  double num = 0, den = 0;
  long long bad_elem = kNone, nonfinite = kNone;
#pragma omp parallel reduction(+ : num, den) reduction(min : nonfinite, bad_elem)
  {
    // Row i of the reference and of |alpha||A||B|, accumulated in i-k-j
    // order so that B is read along its rows.
    std::vector<double> acc(static_cast<std::size_t>(N)), mag(static_cast<std::size_t>(N));
#pragma omp for schedule(static)
    for (index_t i = 0; i < M; ++i) {
      std::fill(acc.begin(), acc.end(), 0.0);
      std::fill(mag.begin(), mag.end(), 0.0);
      for (index_t p = 0; p < K; ++p) {
        const double av = double(o.a.p[i * o.a.ld + p]);
        const float* br = o.b.p + p * o.b.ld;
        for (index_t j = 0; j < N; ++j) {
          const double x = av * double(br[j]);
          acc[std::size_t(j)] += x, mag[std::size_t(j)] += std::fabs(x);
        }
      }
      for (index_t j = 0; j < N; ++j) {
        double ref = o.alpha * acc[std::size_t(j)], bound = std::fabs(o.alpha) * mag[std::size_t(j)];
        if (o.beta != 0) {
          const double c0v = double(o.c0.p[i * o.c0.ld + j]);
          ref += o.beta * c0v, bound += std::fabs(o.beta) * std::fabs(c0v);
        }
        const double got = double(o.c.p[i * o.c.ld + j]);
        if (!std::isfinite(got)) {
          nonfinite = std::min<long long>(nonfinite, i * N + j);
        } else if (std::fabs(got - ref) > elem_factor * bound) {
          bad_elem = std::min<long long>(bad_elem, i * N + j);
        }
        num += (got - ref) * (got - ref), den += ref * ref;
      }
    }
  }
  return {num, den, bad_elem, nonfinite};
}

// Every element finite, the checksum C w against alpha A (B w) + beta C0 w
// for random signs w, and 4096 sampled elements against their bounds (what
// they find beyond that goes into `reason`).
Tally check_by_checksum(const Ops& o, double elem_factor, std::uint64_t seed, std::string& reason) {
  const index_t M = o.M, N = o.N, K = o.K;
  double num = 0, den = 0;
  long long bad_elem = kNone, nonfinite = kNone;
#pragma omp parallel for schedule(static) reduction(min : nonfinite)
  for (index_t i = 0; i < M; ++i)
    for (index_t j = 0; j < N; ++j)
      if (!std::isfinite(o.c.p[i * o.c.ld + j])) {
        nonfinite = std::min<long long>(nonfinite, i * N + j);
      }
  // w: random signs; y = B w, z = alpha A y + beta C0 w, x = C w.
  std::vector<double> w(static_cast<std::size_t>(N)), y(std::size_t(K), 0.0);
  for (index_t j = 0; j < N; ++j) w[std::size_t(j)] = (mix(seed * 7919 + std::uint64_t(j)) & 1) ? 1.0 : -1.0;
#pragma omp parallel for schedule(static)
  for (index_t p = 0; p < K; ++p) {
    double s = 0;
    for (index_t j = 0; j < N; ++j) s += double(o.b.p[p * o.b.ld + j]) * w[std::size_t(j)];
    y[std::size_t(p)] = s;
  }
#pragma omp parallel for reduction(+ : num, den) schedule(static)
  for (index_t i = 0; i < M; ++i) {
    double z = 0, x = 0;
    for (index_t p = 0; p < K; ++p) z += double(o.a.p[i * o.a.ld + p]) * y[std::size_t(p)];
    z *= o.alpha;
    for (index_t j = 0; j < N; ++j) {
      x += double(o.c.p[i * o.c.ld + j]) * w[std::size_t(j)];
      if (o.beta != 0) z += o.beta * double(o.c0.p[i * o.c0.ld + j]) * w[std::size_t(j)];
    }
    num += (x - z) * (x - z), den += z * z;
  }
  // Sampled elements: the element-wise bound for each.
  const int samples = 4096;
  double snum = 0, sden = 0;
#pragma omp parallel for reduction(+ : snum, sden) reduction(min : bad_elem) schedule(dynamic, 64)
  for (int s = 0; s < samples; ++s) {
    const std::uint64_t h = mix(seed * 104729 + std::uint64_t(s));
    const index_t i = index_t(h % std::uint64_t(M)), j = index_t((h >> 32) % std::uint64_t(N));
    double bound = 0;
    const double ref = o.ref(i, j, &bound);
    const double got = double(o.c.p[i * o.c.ld + j]);
    if (std::isfinite(got) && std::fabs(got - ref) > elem_factor * bound) {
      bad_elem = std::min<long long>(bad_elem, i * N + j);
    }
    snum += (got - ref) * (got - ref), sden += ref * ref;
  }
  const double srel = sden > 0 ? std::sqrt(snum / sden) : std::sqrt(snum);
  if (!(srel <= frobenius_tolerance(K)) && nonfinite == kNone && bad_elem == kNone)
    reason = "sampled elements: relative error " + std::to_string(srel) + " over " +
             std::to_string(frobenius_tolerance(K));
  return {num, den, bad_elem, nonfinite};
}

}  // namespace

Check verify(float alpha, MatrixView<const float> a, MatrixView<const float> b, float beta,
             const MatrixView<const float>* c0, MatrixView<const float> c, std::uint64_t seed) {
  const index_t M = c.rows(), N = c.cols(), K = a.cols();
  if (beta != 0.f && !c0) throw Error("multigpu verify: beta != 0 needs C0");
  const Ops o{detail::host_rows(a, "A"), detail::host_rows(b, "B"), detail::host_rows(c, "C"),
              c0 ? detail::host_rows(*c0, "C0") : detail::Rows{nullptr, 0}, M, N, K, alpha, beta};
  Check r;
  const double elem_factor = 2.0 * double(K + 4) * kUnit;
  const bool full = double(M) * double(N) * double(K) <= 2147483648.0;
  r.method = full ? "full" : "checksum+samples";
  r.tolerance = full ? frobenius_tolerance(K) : 2 * frobenius_tolerance(K);
  const Tally t = full ? check_full(o, elem_factor) : check_by_checksum(o, elem_factor, seed, r.reason);
  r.rel_err = t.den > 0 ? std::sqrt(t.num / t.den) : std::sqrt(t.num);
  if (t.nonfinite != kNone)
    r.reason = "C(" + std::to_string(t.nonfinite / N) + ", " + std::to_string(t.nonfinite % N) + ") is not finite";
  else if (t.bad_elem != kNone)
    r.reason = "C(" + std::to_string(t.bad_elem / N) + ", " + std::to_string(t.bad_elem % N) +
               ") is outside the element-wise error bound";
  else if (!(r.rel_err <= r.tolerance) && r.reason.empty())
    r.reason = "relative error " + std::to_string(r.rel_err) + " over the tolerance " + std::to_string(r.tolerance);
  r.ok = r.reason.empty();
  return r;
}

}  // namespace parray::multigpu
