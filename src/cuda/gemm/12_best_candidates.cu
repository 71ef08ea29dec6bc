// Candidate tile shapes of ladder step 12, for tuning (gpu.best_shape;
// docs/perf-notes.md has what each measured); S14, the 64 x 64 tile, is also
// the default GEMM's kernel for small products (gemm/auto.cpp). Only row-major A and B
// (k-contiguous A, n-contiguous B) and strided C are instantiated here; any
// other case returns false and runs the default shape.
#include "gemm/pipelined_common.cuh"

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
using S8 = BestShape<128, 256, 8, 64, 64, 1, 4, 8, 4, 4, 1>;    // the wide tile with BK = 8, 4 stages (cuBLAS's
                                                                 // SIMT kernel on Hopper: 256 x 128 x 8, 3 stages)
using S9 = BestShape<128, 256, 8, 64, 64, 1, 4, 8, 4, 3, 1>;    // the wide tile with BK = 8, 3 stages
using S10 = BestShape<128, 256, 32, 64, 64, 1, 4, 8, 4, 3, 1>;  // the wide tile with BK = 32: half the barriers
using S11 = BestShape<128, 256, 16, 64, 64, 1, 4, 8, 4, 3, 1, 8>;  // the wide tile, 8 k-steps per loop body
using S12 = BestShape<128, 256, 16, 64, 64, 1, 4, 8, 4, 3, 1, 4>;  // the wide tile, 4 k-steps per loop body
using S13 = BestShape<128, 256, 32, 64, 64, 1, 4, 8, 4, 3, 1, 8>;  // BK = 32, 8 k-steps per loop body
using S14 = BestShape<64, 64, 16, 32, 32, 1, 1, 4, 8, 3, 4>;       // 64 x 64, 128 threads, 4 x 8: small products
static_assert(kBestSmallShape == 14, "the small products' shape is S14");
using S15 = BestShape<128, 128, 16, 64, 32, 2, 2, 4, 4, 3, 2, 8>;  // the default with 8 k-steps per loop body
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
  set_problem(call, "cuda-12-best");  // the problem and the call's stream, also when called directly
  bool done = false;
  with_operands(call, [&](auto a, auto b, auto c) {
    if constexpr (decltype(a)::strided) {
      const LoadPlan p = plan(a, b, c, call);
      if (p.a_k_contig && p.b_k_contig && shape == 0) {  // the default shape on row-major A, column-major B
        launch_best<S0, true, true>(a, b, c);
        done = true;
        return;
      }
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
        case 8: launch_oriented<S8>(p, a, b, c); break;
        case 9: launch_oriented<S9>(p, a, b, c); break;
        case 10: launch_oriented<S10>(p, a, b, c); break;
        case 11: launch_oriented<S11>(p, a, b, c); break;
        case 12: launch_oriented<S12>(p, a, b, c); break;
        case 13: launch_oriented<S13>(p, a, b, c); break;
        case 14: launch_oriented<S14>(p, a, b, c); break;
        case 15: launch_oriented<S15>(p, a, b, c); break;
        default: throw Error("gpu.best_shape=" + std::to_string(shape) + ": no such shape (0..15)");
      }
    }
  });
  return done;
}

}  // namespace parray::cuda
