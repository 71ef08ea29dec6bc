// The README's example, built against an installed parray: a GEMM on the
// paper's fig. 17 layout (two halves seen as one matrix), checked element by
// element against a plain triple loop in FP64. Exit status 0 only when every
// element agrees.
#include <cmath>
#include <cstdio>

#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/gemm.hpp"

int main() {
  using namespace parray;
  const index_t n = 96;
  Layout::Symbols s;
  s["S"] = Layout::parse("[2][96][48]");              // storage: two 96x48 halves
  Layout M = Layout::parse("[#S_1][[#S_0][#S_2]]", s);  // seen as one 96x96 matrix
  Array<float> a(s["S"]), b(s["S"]), c(s["S"]);
  auto av = a.view(M), bv = b.view(M), cv = c.view(M);
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      av(i, j) = float((i * 7 + j * 3) % 11) - 5.0f;
      bv(i, j) = float((i * 5 + j) % 13) - 6.0f;
      cv(i, j) = std::nanf("");  // beta = 0: never read
    }
  gemm(1.0f, a.view(M), b.view(M), 0.0f, c.view(M));
  int bad = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < n; ++j) {
      double ref = 0;
      for (index_t t = 0; t < n; ++t) ref += double(av(i, t)) * double(bv(t, j));
      if (!(std::abs(double(cv(i, j)) - ref) <= 1e-3)) ++bad;  // small integers: exact in FP32
    }
  std::printf("parray %s: %dx%d GEMM on fig. 17's layout, %d wrong elements\n", PARRAY_VERSION, int(n), int(n), bad);
  return bad == 0 ? 0 : 1;
}
