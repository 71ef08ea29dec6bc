// Launcher of ladder step 12 (gemm/12_best.cuh): the tile shape chosen by
// measurement (docs/perf-notes.md), every transpose case and every layout.
// PARRAY_CUDA_BEST_SHAPE=<n> runs one of the candidate shapes of
// launch_best_sweep.cu instead (row- or column-major operands; for tuning),
// PARRAY_CUDA_BEST_GROUP the tile-order group (default 8, 1 = row by row)
// and PARRAY_CUDA_BEST_SPLITS a fixed K split.
#include "pipelined_common.cuh"

namespace parray::cuda {

using namespace pipelined;

namespace {
// 128 x 128 x 16, 8 warps of 64 x 32, 8 x 8 per thread (2 x 2 of 4 x 4),
// 3 stages, <= 128 registers: two blocks per SM. Measured on an H200
// (docs/perf-notes.md): 81-85 % of cuBLAS, 1-3 points under step 10's
// geometry (candidate S2, 128 threads of 8 x 16), which is the next to measure
// as the default.
using DefaultShape = ladder::BestShape<128, 128, 16, 64, 32, 2, 2, 4, 4, 3, 2>;

template <bool AK, bool BKc>
struct Launch {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan&) {
    launch_best<DefaultShape, AK, BKc>(a, b, c);
  }
};
}  // namespace

void gemm_best(const GemmCall<float>& call) {
  set_problem(call, "cuda-12-best");
  static const int shape = env_int("PARRAY_CUDA_BEST_SHAPE", -1);
  if (shape >= 0 && gemm_best_candidate(call, shape)) return;
  with_operands(call, [&](auto a, auto b, auto c) { by_contiguity<Launch>(plan(a, b, c, call), a, b, c); });
}

}  // namespace parray::cuda
