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
// 128 x 128 x 16, 8 warps of 64 x 32, 8 x 8 per thread (2 x 2 of 4 x 4),
// 3 stages, <= 128 registers: two blocks per SM. The default; on an H200
// (docs/perf-notes.md) 90 % of cuBLAS with A along m (column-major A).
using DefaultShape = ladder::BestShape<128, 128, 16, 64, 32, 2, 2, 4, 4, 3, 2>;
// 128 x 256 x 16, 8 warps of 64 x 64, 8 x 16 per thread, one block per SM:
// with A along k and B along n (row-major A and B) 86.8 / 87.4 % of cuBLAS at
// 4096^3 / 8192^3 against the default's 80.3 / 80.9 % in the same run. Used
// when its tiles still fill the SMs (half as many tiles as the default's).
using WideShape = ladder::BestShape<128, 256, 16, 64, 64, 1, 4, 8, 4, 3, 1>;

template <bool AK, bool BKc>
struct Launch {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan&) {
    if constexpr (OpA::strided && AK && !BKc) {
      const long long wide_tiles = static_cast<long long>(ceil_div(cur.M, WideShape::BM)) * ceil_div(cur.N, WideShape::BN);
      if (wide_tiles >= sm_count()) {
        launch_best<WideShape, AK, BKc>(a, b, c);
        return;
      }
    }
    launch_best<DefaultShape, AK, BKc>(a, b, c);
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
