// Launchers of ladder steps 10 (cp.async pipeline) and 11 (the paper's
// figure-21 kernel), FP32.
#include "gemm/11_parray_fig21.cuh"
#include "gemm/pipelined_common.cuh"

#include <array>
#include <atomic>

namespace parray::cuda {

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    PARRAY_CUDA_CHECK(cudaGetDevice(&dev));
    PARRAY_CUDA_CHECK(cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev));
    return v;
  }();
  return n;
}

using namespace pipelined;

namespace {
// Step 10: 128 x 128 x 16, 128 threads, warp tile 64 x 64, 3 stages.
template <bool AK, bool BK_>
struct LaunchCpAsync {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan& p) {
    constexpr int BM = 128, BN = 128, BK = 16, ST = 3;
    constexpr int smem = ST * BK * (BM + 4 + BN + 4) * 4;
    auto k = ladder::cp_async_pipelined<BM, BN, BK, 64, 64, 4, 8, 4, 128, ST, AK, BK_, OpA, OpB, OpC>;
    allow_smem(k, smem);
    k<<<dim3(ceil_div(cur.N, BN), ceil_div(cur.M, BM)), 128, smem, cur_stream>>>(cur.M, cur.N, cur.K, cur.alpha, a, b,
                                                                                 cur.beta, c, p.veca, p.vecb, p.cvec);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
};

}  // namespace

void gemm_cp_async(const GemmCall<float>& call) {
  set_problem(call, "cuda-10-cp-async");
  if (ceil_div(cur.M, 128) > 65535) throw Error("cuda-10-cp-async: M too large for grid y");
  with_operands(call, [&](auto a, auto b, auto c) { by_contiguity<LaunchCpAsync>(plan(a, b, c, call), a, b, c); });
}

namespace {
// Blocks of fig 21's unbounded build per SM, asked of the runtime once per
// device and body type (the occupancy query costs microseconds a call).
template <class Body>
int unbounded_blocks_per_sm(const CudaThreadArray& t) {
  static std::array<std::atomic<int>, 64> fit{};  // 0: not asked yet
  int dev = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&dev));
  if (dev < 0 || dev >= int(fit.size())) return t.blocks_per_sm<128, 0, Body>();
  if (fit[dev].load(std::memory_order_relaxed) == 0) fit[dev].store(t.blocks_per_sm<128, 0, Body>());
  return fit[dev].load(std::memory_order_relaxed);
}
}  // namespace

void gemm_parray_fig21(const GemmCall<float>& call) {
  set_problem(call, "cuda-11-parray-fig21");
  if (ceil_div(cur.M, 16) > 65535) throw Error("cuda-11-parray-fig21: M over 65535 * 16");
  with_operands(call, [&](auto a, auto b, auto c) {
    // $cnt(B_1_1_1)$, the part the kernel cannot see per thread: every row
    // offset of B even and B 8-byte aligned, so that a column pair that is
    // adjacent at an even offset (the kernel's test) is one float2 on every row.
    bool rows_even = true;
    if constexpr (decltype(b)::strided) {
      rows_even = b.rs % 2 == 0;
    } else {
      for (int l = 0; l < b.l.rows.levels; ++l) rows_even = rows_even && b.l.rows.stride[l] % 2 == 0;
    }
    const bool pairs = rows_even && reinterpret_cast<std::uintptr_t>(b.p) % 8 == 0;
    // #parray {cuda(float a, float b, float c) [[M/16][N/256]][[4][32]]} CUDA
    const CudaThreadArray CUDA(ThreadShape::nested({{int(ceil_div(cur.M, 16)), int(ceil_div(cur.N, 256))}, {4, 32}}));
    ladder::ParrayFig21<decltype(a), decltype(b), decltype(c)> body{cur.M, cur.N, cur.K, cur.alpha, a, b,
                                                                    cur.beta, c, pairs, {}, {}};
    // Bounded to 8 blocks per SM (64 registers, a few spills) where the grid
    // is more than one wave of the unbounded build: nested operands, which fit
    // 5 blocks unbounded, on any such grid; strided ones, which fit 7, only where
    // the bound makes the grid one wave (a longer grid runs faster at 7 without spills).
    using Body = decltype(body);
    const std::uint64_t blocks = std::uint64_t(CUDA.grid().x) * CUDA.grid().y, sms = sm_count();
    const bool past_one_wave = blocks > std::uint64_t(unbounded_blocks_per_sm<Body>(CUDA)) * sms;
    if constexpr (!decltype(a)::strided) {  // with_operands: all three nested, or all strided
      body.a_k = ladder::KRuns::along(a.l.cols, cur.K);
      body.b_k = ladder::KRuns::along(b.l.rows, cur.K);
    }
    const bool bounded = past_one_wave && (!decltype(a)::strided || blocks <= 8 * sms);
    if (bounded) CUDA.detour<128, 8>(body, cur_stream);
    else CUDA.detour<128>(body, cur_stream);
  });
}

}  // namespace parray::cuda
