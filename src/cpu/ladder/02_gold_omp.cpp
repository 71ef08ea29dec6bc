// Step 2, gold-omp: the same triple loop, rows of C shared out by OpenMP.
//
// Adds threads and nothing else (the CPU/GPU GEMM report's "Gold with OpenMP"): the rows of
// C are independent, so `parallel for` over them needs no synchronisation.
// schedule(dynamic) hands out one row at a time, as the report does. Each
// thread still reads B column by column, as slowly as step 1; but threads on
// neighbouring rows walk the same columns of B at the same time and share
// the cache misses, so two threads gain more than a second core's worth
// (docs/perf-notes.md).
#include "common.hpp"

namespace parray::ladder {

namespace {

struct GoldOmp {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    const index_t m = call.c.rows(), n = call.c.cols(), k = call.a.cols();
#pragma omp parallel for schedule(dynamic) num_threads(call.threads)
    for (index_t i = 0; i < m; ++i) triple_loop(a, b, c, k, call.alpha, call.beta, i, i + 1, 0, n);
  }
};

}  // namespace

GemmImpl gold_omp() {
  return ladder_step<GoldOmp>("gold-omp",
                              "triple loop, OpenMP parallel for over rows of C (the CPU/GPU GEMM report's Gold with OpenMP)",
                              true, "any layout, any M, N, K");
}

}  // namespace parray::ladder
