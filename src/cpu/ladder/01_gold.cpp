// Step 1, gold: the plain triple loop, one thread.
//
// The reference point of the ladder and the paper's fig-8 loop (the CPU/GPU GEMM report's
// "Gold"): for each element of C, a register accumulator runs along a row of
// A and a column of B. It reads every operand through its layout, so it works
// for any Parray type, but a row-major B is read with a stride of N elements,
// one cache line per multiply-add, which is why it is the slowest step and
// why every later step first changes how B is read.
#include "common.hpp"

namespace parray::ladder {

namespace {

struct Gold {
  template <class T, class A, class B, class C>
  void operator()(const GemmCall<T>& call, const A& a, const B& b, const C& c) const {
    triple_loop(a, b, c, call.a.cols(), call.alpha, call.beta, 0, call.c.rows(), 0, call.c.cols());
  }
};

}  // namespace

GemmImpl gold() {
  return ladder_step<Gold>("gold", "plain i,j,k triple loop, one thread (paper fig. 8, the CPU/GPU GEMM report's Gold)", false,
                           "any layout, any M, N, K; always one thread");
}

}  // namespace parray::ladder
