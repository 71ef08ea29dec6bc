// Launcher of ladder step 12 (gemm/12_best.cuh): the tile shape chosen by
// measurement (docs/perf-notes.md), every transpose case and every layout.
// PARRAY_CUDA_BEST_SHAPE=<n> runs one of the candidate shapes of
// launch_best_sweep.cu instead (row- or column-major operands; for tuning),
// PARRAY_CUDA_BEST_GROUP the tile-order group (default 8, 1 = row by row)
// and PARRAY_CUDA_BEST_SPLITS a fixed K split.
#include "pipelined_common.cuh"
#include "strided_blocks.hpp"

namespace parray::cuda {

using namespace pipelined;

namespace {
template <bool AK, bool BKc>
struct Launch {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan&) {
    if constexpr (OpA::strided && AK && !BKc) {
      if (best_wide_fits(cur.M, cur.N)) {
        launch_best<BestWideShape, AK, BKc>(a, b, c);
        return;
      }
    }
    launch_best<BestDefaultShape, AK, BKc>(a, b, c);
  }
};
}  // namespace

void gemm_best(const GemmCall<float>& call) {
  set_problem(call, "cuda-12-best");
  static const int shape = env_int("PARRAY_CUDA_BEST_SHAPE", -1);
  if (shape >= 0 && gemm_best_candidate(call, shape)) return;
  // Blocked layouts (figure 17/18): one strided product per block, through
  // the layout's own offsets (strided_blocks.hpp); many small blocks take the
  // per-element layout kernel below.
  const bool strided = call.a.layout.is_strided() && call.b.layout.is_strided() && call.c.layout.is_strided();
  if (!strided && for_each_strided_part(call, 64, 128, [](const GemmCall<float>& part) { gemm_best(part); })) return;
  with_operands(call, [&](auto a, auto b, auto c) { by_contiguity<Launch>(plan(a, b, c, call), a, b, c); });
}

}  // namespace parray::cuda
