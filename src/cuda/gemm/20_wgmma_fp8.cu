// GEMM on FP8 data (include/parray/gemm8.hpp): the argument checks, the
// cuBLASLt baseline, and the launcher of ladder step 20
// (gemm/20_wgmma_fp8.cuh): tensor maps straight over A (M x K) and B (N x K),
// C staged in shared memory and stored by TMA where its rows are aligned, a
// row at a time elsewhere.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "common/cublas_library.hpp"
#include "common/smem_opt_in.hpp"
#include "gemm/20_wgmma_fp8.cuh"
#include "gemm/split_pass.cuh"
#include "gemm/tensor_map.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/gemm8.hpp"

namespace parray {

namespace {

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

void check_args(const Gemm8Args& g) {
  const auto fail = [](const std::string& why) { throw Error("gemm8: " + why); };
  if (g.m < 0 || g.n < 0 || g.k < 0) fail("negative dimension");
  if (g.m > 0x7fffffff || g.n > 0x7fffffff || g.k > 0x7fffffff) fail("a dimension of 2^31 or more");
  if (g.lda < std::max<index_t>(1, g.k)) fail("lda " + std::to_string(g.lda) + " < K = " + std::to_string(g.k));
  if (g.ldb < std::max<index_t>(1, g.k))
    fail("ldb " + std::to_string(g.ldb) + " < K = " + std::to_string(g.k) + " (B is stored N x K)");
  if (g.ldc < std::max<index_t>(1, g.n)) fail("ldc " + std::to_string(g.ldc) + " < N = " + std::to_string(g.n));
  if (g.m > 0 && g.n > 0 && !g.c) fail("C is null");
  if (g.m == 0 || g.n == 0 || g.k == 0 || g.alpha == 0.f) return;
  if (!g.a || !g.b) fail("A or B is null");
  if (!g.scale_a || !g.scale_b) fail("scale_a or scale_b is null");
  if (!aligned16(g.a) || !aligned16(g.b) || g.lda % 16 || g.ldb % 16)
    fail("A's and B's rows must be 16-byte aligned (pointers 16-byte aligned, lda and ldb multiples of 16): "
         "the copy engine reads FP8 tiles only so");
}

template <class Out>
void scale_only(const Gemm8Args& g) {
  const long long n = g.m * g.n;
  const cuda::StridedOperand<Out> c{static_cast<Out*>(g.c), g.ldc, 1};
  cuda::ladder::scale_c<<<unsigned(std::min<long long>((n + 255) / 256, 4096)), 256, 0, cuda::on_stream(g.stream)>>>(
      c, int(g.m), int(g.n), g.beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// ---- cuBLASLt ------------------------------------------------------------------

cudaDataType fp8_type(Fp8 t) { return t == Fp8::e4m3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }
cudaDataType out_type(Fp8Out t) {
  return t == Fp8Out::bf16 ? CUDA_R_16BF : t == Fp8Out::fp16 ? CUDA_R_16F : CUDA_R_32F;
}

// One shape's matmul description and the algorithm cuBLASLt's heuristic
// chose for it, made once per thread and shape so that a timed loop times
// the matmul, not its set-up.
struct LtPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

constexpr std::size_t kLtWorkspace = 32u << 20;

cublasLtHandle_t lt_handle() {
  thread_local cublasLtHandle_t h = [] {
    cublasLtHandle_t x = nullptr;
    cuda::cublaslt().check(cuda::cublaslt().Create(&x), "cublaslt", "cublasLtCreate");
    return x;
  }();
  return h;
}

// Row-major C = A B^T (A M x K, B N x K) is column-major C^T = B^T' A with
// cuBLASLt's A = our B, transposed (its FP8 matmul takes only this "TN" form).
LtPlan make_lt_plan(const Gemm8Args& g) {
  const auto& lt = cuda::cublaslt();
  LtPlan p;
  lt.check(lt.MatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublaslt", "cublasLtMatmulDescCreate");
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  lt.check(lt.MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "cublaslt", "TRANSA");
  lt.check(lt.MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n), "cublaslt", "TRANSB");
  lt.check(lt.MatrixLayoutCreate(&p.a, fp8_type(g.type_b), std::uint64_t(g.k), std::uint64_t(g.n), g.ldb), "cublaslt",
           "cublasLtMatrixLayoutCreate");
  lt.check(lt.MatrixLayoutCreate(&p.b, fp8_type(g.type_a), std::uint64_t(g.k), std::uint64_t(g.m), g.lda), "cublaslt",
           "cublasLtMatrixLayoutCreate");
  lt.check(lt.MatrixLayoutCreate(&p.c, out_type(g.out), std::uint64_t(g.n), std::uint64_t(g.m), g.ldc), "cublaslt",
           "cublasLtMatrixLayoutCreate");
  cublasLtMatmulPreference_t pref = nullptr;
  lt.check(lt.MatmulPreferenceCreate(&pref), "cublaslt", "cublasLtMatmulPreferenceCreate");
  const std::size_t ws = kLtWorkspace;
  lt.check(lt.MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
           "cublaslt", "MAX_WORKSPACE_BYTES");
  cublasLtMatmulHeuristicResult_t found{};
  int count = 0;
  const cublasStatus_t s =
      lt.MatmulAlgoGetHeuristic(lt_handle(), p.desc, p.a, p.b, p.c, p.c, pref, 1, &found, &count);
  lt.MatmulPreferenceDestroy(pref);
  lt.check(s, "cublaslt", "cublasLtMatmulAlgoGetHeuristic");
  if (count == 0)
    throw Error(std::string("cublaslt: no FP8 algorithm for ") + fp8_name(g.type_a) + " x " + fp8_name(g.type_b) +
                " -> " + fp8_out_name(g.out) + " at this shape");
  p.algo = found.algo;
  return p;
}

const LtPlan& lt_plan(const Gemm8Args& g) {
  using Key = std::tuple<int, int, int, index_t, index_t, index_t, index_t, index_t, index_t, int>;
  thread_local std::map<Key, LtPlan> plans;  // kept for the thread's life, as the handle
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  const Key key{int(g.type_a), int(g.type_b), int(g.out), g.m, g.n, g.k, g.lda, g.ldb, g.ldc, device};
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_lt_plan(g)).first;
  return it->second;
}

void gemm8_cublaslt(const Gemm8Args& g) {
  const auto& lt = cuda::cublaslt();
  const LtPlan& p = lt_plan(g);
  // cuBLASLt's A is our B: its scale is ours of B.
  lt.check(lt.MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &g.scale_b, sizeof g.scale_b),
           "cublaslt", "A_SCALE_POINTER");
  lt.check(lt.MatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &g.scale_a, sizeof g.scale_a),
           "cublaslt", "B_SCALE_POINTER");
  const cudaStream_t s = cuda::on_stream(g.stream);
  const cuda::PoolBuffer ws(kLtWorkspace / sizeof(float), s);
  lt.check(lt.Matmul(lt_handle(), p.desc, &g.alpha, g.b, p.a, g.a, p.b, &g.beta, g.c, p.c, g.c, p.c, &p.algo, ws.p,
                     kLtWorkspace, s),
           "cublaslt", "cublasLtMatmul");
}

// ---- step 20 -----------------------------------------------------------------

template <class Cfg>
void launch20(const Gemm8Args& g) {
  using Out = typename Cfg::Out;
  const cudaStream_t s = cuda::on_stream(g.stream);
  cuda::ladder::Fp8Params<Out> p{};
  p.a = cuda::tensor_map_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, g.a, g.k, g.m, g.lda, Cfg::BK, Cfg::BM, true);
  p.b = cuda::tensor_map_2d(CU_TENSOR_MAP_DATA_TYPE_UINT8, g.b, g.k, g.n, g.ldb, Cfg::BK, Cfg::BN, true);
  p.c_by_tma = aligned16(g.c) && g.ldc * index_t(sizeof(Out)) % 16 == 0 &&
               cuda::tma_stores_whole_rows(g.n, int(sizeof(Out)));
  if (p.c_by_tma) {
    const CUtensorMapDataType tc = g.out == Fp8Out::f32    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : g.out == Fp8Out::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                           : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    const cuda::BlockedMatrix c{g.c, g.m, g.n, 1, 1, g.ldc * index_t(sizeof(Out)), 0, 0};
    p.c = cuda::tensor_map_blocked(tc, c, cuda::ladder::StagedC::kCols<Out>, 64, true);
  }
  p.c_data = static_cast<Out*>(g.c);
  p.ldc = g.ldc;
  p.M = int(g.m), p.N = int(g.n);
  p.k_tiles = int(cuda::ceil_div(g.k, Cfg::BK));
  p.tiles_m = int(cuda::ceil_div(g.m, Cfg::BM)), p.tiles_n = int(cuda::ceil_div(g.n, Cfg::BN));
  p.scale_b_cols = int(cuda::ceil_div(g.n, kFp8ScaleBlock));
  p.alpha = g.alpha, p.beta = g.beta;
  p.scale_a = g.scale_a, p.scale_b = g.scale_b;
  const auto kernel = cuda::ladder::gemm_wgmma_fp8<Cfg>;
  cuda::allow_smem_on_current_device(kernel, Cfg::kSmemBytes);
  const long long tiles = static_cast<long long>(p.tiles_m) * p.tiles_n;
  if (tiles > 0x7fffffff) throw Error("cuda-20: more than 2^31 tiles of C");
  const unsigned grid = unsigned(std::min<long long>(tiles, cuda::sm_count()));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(p);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template <class Out, int A5, int B5>
void step20_scaled(const Gemm8Args& g) {
  using cuda::ladder::Fp8Tiles;
  if (g.scaling == Fp8Scaling::blockwise) launch20<Fp8Tiles<Out, A5, B5, true>>(g);
  else launch20<Fp8Tiles<Out, A5, B5, false>>(g);
}

template <class Out>
void step20_typed(const Gemm8Args& g) {
  const bool a5 = g.type_a == Fp8::e5m2, b5 = g.type_b == Fp8::e5m2;
  if (!a5 && !b5) step20_scaled<Out, 0, 0>(g);
  else if (!a5) step20_scaled<Out, 0, 1>(g);
  else if (!b5) step20_scaled<Out, 1, 0>(g);
  else step20_scaled<Out, 1, 1>(g);
}

void gemm8_step20(const Gemm8Args& g) {
  if (g.out == Fp8Out::bf16) step20_typed<__nv_bfloat16>(g);
  else if (g.out == Fp8Out::fp16) step20_typed<__half>(g);
  else step20_typed<float>(g);
}

}  // namespace

const std::vector<std::string>& gemm8_impls() {
  static const std::vector<std::string> names = {"gpu", "cuda-20", "cublaslt"};
  return names;
}

namespace {

// Why `impl` cannot run this call, as far as its kind and types tell; what
// cuBLASLt's heuristic decides is asked when its plan is made.
std::string unsupported_by_kind(const std::string& impl, const Gemm8Args& g) {
  if (impl == "cuda-20" || impl == "gpu") return cuda::wgmma_unsupported();
  if (impl != "cublaslt") return "unknown FP8 GEMM '" + impl + "' (gpu, cuda-20, cublaslt)";
  if (g.scaling == Fp8Scaling::blockwise) return "cuBLASLt's FP8 matmul on Hopper takes per-tensor scales only";
  if (g.type_a == Fp8::e5m2 && g.type_b == Fp8::e5m2) return "cuBLASLt has no E5M2 x E5M2 matmul";
  return "";
}

}  // namespace

std::string gemm8_unsupported(const std::string& impl, const Gemm8Args& g) {
  const std::string why = unsupported_by_kind(impl, g);
  if (!why.empty() || impl != "cublaslt" || g.m == 0 || g.n == 0 || g.k == 0) return why;
  try {  // its heuristic decides the rest (alignments, K, C's type)
    lt_plan(g);
  } catch (const Error& e) {
    const std::string text = e.what(), prefix = "cublaslt: ";  // the caller names the implementation itself
    return text.rfind(prefix, 0) == 0 ? text.substr(prefix.size()) : text;
  }
  return "";
}

void gemm8(const Gemm8Args& g, const std::string& impl) {
  check_args(g);  // first: a bad argument is named as such, not as what cuBLASLt's heuristic makes of it
  // cuBLASLt's own refusal comes from its plan, made (once per shape) in gemm8_cublaslt.
  const std::string why = unsupported_by_kind(impl, g);
  if (!why.empty()) throw Error(impl + ": " + why);
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.f) {
    if (g.out == Fp8Out::bf16) scale_only<__nv_bfloat16>(g);
    else if (g.out == Fp8Out::fp16) scale_only<__half>(g);
    else scale_only<float>(g);
    return;
  }
  if (impl == "cublaslt") gemm8_cublaslt(g);
  else gemm8_step20(g);
}

}  // namespace parray
