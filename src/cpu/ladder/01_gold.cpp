// Step 1, gold: the plain triple loop, one thread.
//
// The reference point of the ladder and the paper's fig-8 loop (seed 001's
// "Gold"): for each element of C, a register accumulator runs along a row of
// A and a column of B. It reads every operand through its layout, so it works
// for any Parray type, but a row-major B is read with a stride of N elements,
// one cache line per multiply-add, which is why it runs at well under one
// GFLOP/s and why every later step first changes how B is read.
#include "common.hpp"

namespace parray::ladder {

GemmImpl gold() {
  return cpu_impl("gold", "plain i,j,k triple loop, one thread (paper fig. 8, seed 001 Gold)", false,
                  "any layout, any M, N, K; always one thread", [](const auto& call) {
                    with_accessors(call, [&](const auto& a, const auto& b, const auto& c) {
                      triple_loop(a, b, c, call.a.cols(), call.alpha, call.beta, 0, call.c.rows(), 0,
                                  call.c.cols());
                    });
                  });
}

}  // namespace parray::ladder
