// Launchers of ladder steps 10-12 (FP32): the cp.async pipeline, the paper's
// figure-21 kernel and the best kernel with its per-operand loader choice and
// split-K.
#include "gemm/10_cp_async.cuh"
#include "gemm/11_parray_fig21.cuh"
#include "gemm/12_best.cuh"
#include "parray/cuda/gemm_launchers.hpp"

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

namespace {

// How the loaders of steps 10 and 12 take each operand.
struct LoadPlan {
  bool a_k_contig, b_k_contig;  // operand contiguous along k (else along m / n)
  bool veca, vecb, cvec;        // 16-byte copies allowed (layout + alignment)
};

template <class OpA, class OpB, class OpC>
LoadPlan plan(const OpA& a, const OpB& b, const OpC& c, const GemmCall<float>& call) {
  LoadPlan p{};
  // Contiguity from the innermost digit of each axis (nested layouts too).
  auto inner = [](const Axis& ax) { return ax.stride[ax.levels - 1]; };
  const MatrixLayout &la = call.a.layout, &lb = call.b.layout;
  p.a_k_contig = !(inner(la.rows) == 1 && inner(la.cols) != 1);
  p.b_k_contig = inner(lb.rows) == 1 && inner(lb.cols) != 1;
  if constexpr (OpA::strided) p.veca = !p.a_k_contig && a.rs == 1 && a.cs % 4 == 0 && aligned16(a.p);
  if constexpr (OpB::strided) p.vecb = !p.b_k_contig && b.cs == 1 && b.rs % 4 == 0 && aligned16(b.p);
  if constexpr (OpC::strided) p.cvec = c.cs == 1 && c.rs % 4 == 0 && aligned16(c.p);
  return p;
}

template <class Kernel>
void allow_smem(Kernel k, int bytes) {
  PARRAY_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// Picks the instantiation for the two loaders; layout operands take one
// (k-contiguous A, n-contiguous B: how the figure-17/18 types store blocks).
template <template <bool, bool> class Launch, class OpA, class OpB, class OpC>
void by_contiguity(const LoadPlan& p, const OpA& a, const OpB& b, const OpC& c) {
  if constexpr (OpA::strided) {
    if (p.a_k_contig && !p.b_k_contig) Launch<true, false>::run(a, b, c, p);
    else if (p.a_k_contig) Launch<true, true>::run(a, b, c, p);
    else if (!p.b_k_contig) Launch<false, false>::run(a, b, c, p);
    else Launch<false, true>::run(a, b, c, p);
  } else {
    Launch<true, false>::run(a, b, c, p);
  }
}

struct Problem {
  int M, N, K;
  float alpha, beta;
};
thread_local Problem cur;

// Step 10: 128 x 128 x 16, 128 threads, warp tile 64 x 64, 3 stages.
template <bool AK, bool BK_>
struct LaunchCpAsync {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan& p) {
    constexpr int BM = 128, BN = 128, BK = 16, ST = 3;
    constexpr int smem = ST * BK * (BM + 4 + BN + 4) * 4;
    auto k = ladder::cp_async_pipelined<BM, BN, BK, 64, 64, 4, 8, 4, 128, ST, AK, BK_, OpA, OpB, OpC>;
    allow_smem(k, smem);
    k<<<dim3(ceil_div(cur.N, BN), ceil_div(cur.M, BM)), 128, smem>>>(cur.M, cur.N, cur.K, cur.alpha, a, b, cur.beta,
                                                                      c, p.veca, p.vecb, p.cvec);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
};

template <int BM, int BN, int WM, int WN, int WNITER, bool AK, bool BK_>
struct BestKernel {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan& p) {
    constexpr int BK = 16, ST = 3, TM = 8, TN = 4, NT = (BM / WM) * (BN / WN) * 32;
    constexpr int smem = ST * BK * (BM + 4 + BN + 4) * 4;
    auto k = ladder::best_sgemm<BM, BN, BK, WM, WN, WNITER, TM, TN, NT, ST, AK, BK_, OpA, OpB, OpC>;
    allow_smem(k, smem);
    const index_t tiles = index_t(ceil_div(cur.M, BM)) * ceil_div(cur.N, BN);
    const int kts = int(ceil_div(cur.K, BK));
    // Split K when the tiles cannot fill the SMs and each slice keeps >= 8 k-tiles.
    int splits = 1;
    const int sms = sm_count();
    if (tiles < sms && kts >= 16) splits = int(std::min<index_t>((2 * sms + tiles - 1) / tiles, kts / 8));
    const int per = (kts + splits - 1) / splits;
    splits = (kts + per - 1) / per;
    float* ws = nullptr;
    if (splits > 1)
      PARRAY_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&ws), size_t(splits) * cur.M * cur.N * 4, 0));
    k<<<dim3(unsigned(tiles), 1, splits), NT, smem>>>(cur.M, cur.N, cur.K, cur.alpha, a, b, cur.beta, c, p.veca,
                                                      p.vecb, p.cvec, per, ws);
    PARRAY_CUDA_CHECK_LAUNCH();
    if (splits > 1) {
      const unsigned blocks = std::min<unsigned>(ceil_div(index_t(cur.M) * cur.N, 256), 4u * sms);
      ladder::splitk_reduce<<<blocks, 256>>>(cur.M, cur.N, splits, ws, cur.alpha, cur.beta, c);
      PARRAY_CUDA_CHECK_LAUNCH();
      PARRAY_CUDA_CHECK(cudaFreeAsync(ws, 0));
    }
  }
};
template <bool AK, bool BK_>
struct LaunchBestSquare : BestKernel<128, 128, 64, 32, 2, AK, BK_> {};
template <bool AK, bool BK_>
struct LaunchBestWide : BestKernel<128, 256, 64, 64, 4, AK, BK_> {};

void set_problem(const GemmCall<float>& call, const char* impl) {
  check_int_sizes(call, impl);
  cur = {int(call.c.rows()), int(call.c.cols()), int(call.a.cols()), call.alpha, call.beta};
}

}  // namespace

void gemm_cp_async(const GemmCall<float>& call) {
  set_problem(call, "cuda-10-cp-async");
  if (ceil_div(cur.M, 128) > 65535) throw Error("cuda-10-cp-async: M too large for grid y");
  with_operands(call, [&](auto a, auto b, auto c) { by_contiguity<LaunchCpAsync>(plan(a, b, c, call), a, b, c); });
}

void gemm_parray_fig21(const GemmCall<float>& call) {
  set_problem(call, "cuda-11-parray-fig21");
  if (ceil_div(cur.M, 16) > 65535) throw Error("cuda-11-parray-fig21: M over 65535 * 16");
  with_operands(call, [&](auto a, auto b, auto c) {
    bool pairs = false;  // $cnt(B_1_1_1)$: are B's column pairs adjacent (and float2-aligned)?
    if constexpr (decltype(b)::strided) pairs = b.cs == 1 && b.rs % 2 == 0 && (reinterpret_cast<std::uintptr_t>(b.p) % 8) == 0;
    ladder::parray_fig21<<<dim3(ceil_div(cur.N, 256), ceil_div(cur.M, 16)), dim3(32, 4)>>>(
        cur.M, cur.N, cur.K, cur.alpha, a, b, cur.beta, c, pairs);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

void gemm_best(const GemmCall<float>& call, BestConfig config) {
  set_problem(call, "cuda-12-best");
  with_operands(call, [&](auto a, auto b, auto c) {
    const LoadPlan p = plan(a, b, c, call);
    if (config == BestConfig::square128) by_contiguity<LaunchBestSquare>(p, a, b, c);
    else by_contiguity<LaunchBestWide>(p, a, b, c);
  });
}

}  // namespace parray::cuda
