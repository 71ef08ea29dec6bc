// Step 7, parray-pthd-2x2: the paper's fig. 10, a 2x2 array of CPU threads
// over the four quadrants of C.
//
// Adds Parray's thread arrays. Fig. 10 declares `pthd [2][2]` and a matrix
// type [[2][512]][[2][512]]; `#detour` runs the fig-8 loop on every thread,
// and thread ($tid_0$, $tid_1$) takes rows [[tid_0][i]] and columns
// [[tid_1][j]] of C: its quadrant. CpuThreadArray({2, 2}).detour is that
// construct, and the loop body is step 1's, unchanged, on a quarter of C.
// Quadrants of odd sizes split at ceil(M/2) and ceil(N/2). Always four
// threads (the array's shape is the program's), whatever GemmCall::threads
// says; a thread whose quadrant is empty (M or N == 1) does nothing.
//
// The four threads share step 2's gain (neighbouring rows share B's cache
// misses) and the cores.
#include "common.hpp"
#include "parray/thread_array.hpp"

namespace parray::ladder {

namespace {

struct PthdQuadrants {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    const index_t m = call.c.rows(), n = call.c.cols();
    // half[d][t] .. half[d][t + 1]: the rows (d = 0) or columns (d = 1) of thread coordinate t
    const index_t half[2][3] = {{0, ceil_div(m, 2), m}, {0, ceil_div(n, 2), n}};
    CpuThreadArray({2, 2}).detour([&](const ThreadCoord& t) {
      triple_loop(a, b, c, call.a.cols(), call.alpha, call.beta, half[0][t[0]], half[0][t[0] + 1],
                  half[1][t[1]], half[1][t[1] + 1]);
    });
  }
};

}  // namespace

GemmImpl parray_pthd_2x2() {
  return ladder_step<PthdQuadrants>(
      "parray-pthd-2x2",
      "fig-8 triple loop on a 2x2 CPU thread array, one quadrant of C each (paper fig. 10)", false,
      "any layout, any M, N, K; always 4 threads (pthd [2][2]), ignores --threads");
}

}  // namespace parray::ladder
