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
// Thin C: a tile as narrow as C (N or M of 9-64), long along the other side.
using S16 = BestShape<256, 16, 32, 64, 16, 1, 1, 8, 4, 3, 2>;  // N <= 16: 128 threads, 8 x 4
using S17 = BestShape<256, 32, 16, 64, 32, 2, 1, 8, 4, 3, 2>;  // N <= 32: 128 threads, 2 x (8 x 4)
using S18 = BestShape<256, 64, 16, 64, 64, 2, 2, 8, 4, 3, 2>;  // N <= 64: 128 threads, 4 x (8 x 4)
using S19 = BestShape<16, 256, 32, 16, 64, 1, 1, 4, 8, 3, 2>;  // M <= 16
using S20 = BestShape<32, 256, 16, 32, 64, 1, 2, 4, 8, 3, 2>;  // M <= 32
using S21 = BestShape<64, 256, 16, 32, 64, 1, 2, 4, 8, 3, 2>;  // M <= 64: 256 threads, 2 x (4 x 8)
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
        case 16: launch_oriented<S16>(p, a, b, c); break;
        case 17: launch_oriented<S17>(p, a, b, c); break;
        case 18: launch_oriented<S18>(p, a, b, c); break;
        case 19: launch_oriented<S19>(p, a, b, c); break;
        case 20: launch_oriented<S20>(p, a, b, c); break;
        case 21: launch_oriented<S21>(p, a, b, c); break;
        default: throw Error("gpu.best_shape=" + std::to_string(shape) + ": no such shape (0..21)");
      }
    }
  });
  return done;
}

int best_thin_shape(index_t m, index_t n) {
  const ThinTile t = thin_tile(m, n);
  auto is = [&](auto shape) { return shape.BM == t.bm && shape.BN == t.bn && shape.BK == t.bk; };
  if (is(S16{})) return 16;
  if (is(S17{})) return 17;
  if (is(S18{})) return 18;
  if (is(S19{})) return 19;
  if (is(S20{})) return 20;
  if (is(S21{})) return 21;
  throw Error("cuda-12-best: no thin candidate of " + std::to_string(t.bm) + " x " + std::to_string(t.bn));
}

}  // namespace parray::cuda
