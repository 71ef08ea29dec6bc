// Candidate tile shapes of ladder step 12, for tuning (PARRAY_CUDA_BEST_SHAPE;
// docs/perf-notes.md has what each measured). Only row-major A and B
// (k-contiguous A, n-contiguous B) and strided C are instantiated here; any
// other case returns false and runs the default shape.
#include "pipelined_common.cuh"

namespace parray::cuda {

using namespace pipelined;
using ladder::BestShape;

namespace {
//                    BM   BN  BK  WM  WN WMI WNI TM TN ST MINB
using S0 = BestShape<128, 128, 16, 64, 32, 2, 2, 4, 4, 3, 2>;  // the default: 256 threads, 8 x 8
using S1 = BestShape<128, 128, 16, 64, 32, 2, 2, 4, 4, 4, 2>;  // 4 stages
using S2 = BestShape<128, 128, 16, 64, 64, 1, 4, 8, 4, 3, 1>;  // step 10's geometry: 128 threads, 8 x 16
using S3 = BestShape<128, 256, 16, 64, 64, 1, 4, 8, 4, 3, 1>;  // 256 threads, 8 x 16
using S4 = BestShape<256, 128, 16, 64, 64, 1, 4, 8, 4, 3, 1>;  // 256 threads, 8 x 16
using S5 = BestShape<128, 128, 8, 64, 32, 2, 2, 4, 4, 4, 2>;   // BK = 8, 4 stages
using S6 = BestShape<128, 128, 32, 64, 64, 1, 4, 8, 4, 3, 1>;  // step 10's geometry with BK = 32
using S7 = BestShape<128, 128, 16, 32, 64, 2, 2, 4, 4, 3, 2>;  // 8 x 8, warps of 32 x 64
}  // namespace

namespace {
// Row-major-like (A along k, B along n) or its transpose (A along m, B along k).
template <class S, class OpA, class OpB, class OpC>
void launch_oriented(const LoadPlan& p, const OpA& a, const OpB& b, const OpC& c) {
  if (p.a_k_contig) launch_best<S, true, false>(a, b, c);
  else launch_best<S, false, true>(a, b, c);
}
}  // namespace

bool gemm_best_candidate(const GemmCall<float>& call, int shape) {
  bool done = false;
  with_operands(call, [&](auto a, auto b, auto c) {
    if constexpr (decltype(a)::strided) {
      const LoadPlan p = plan(a, b, c, call);
      if (p.a_k_contig == p.b_k_contig) return;
      done = true;
      switch (shape) {
        case 0: launch_oriented<S0>(p, a, b, c); break;
        case 1: launch_oriented<S1>(p, a, b, c); break;
        case 2: launch_oriented<S2>(p, a, b, c); break;
        case 3: launch_oriented<S3>(p, a, b, c); break;
        case 4: launch_oriented<S4>(p, a, b, c); break;
        case 5: launch_oriented<S5>(p, a, b, c); break;
        case 6: launch_oriented<S6>(p, a, b, c); break;
        case 7: launch_oriented<S7>(p, a, b, c); break;
        default: throw Error("PARRAY_CUDA_BEST_SHAPE=" + std::to_string(shape) + ": no such shape (0..7)");
      }
    }
  });
  return done;
}

}  // namespace parray::cuda
