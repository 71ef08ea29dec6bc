// GEMM on 16-bit data (include/parray/gemm16.hpp): the argument checks, the
// cuBLAS baseline, and the launcher of ladder step 16
// (gemm/16_wgmma_16bit.cuh): tensor maps straight over the operands (a
// padded copy only where a row is not 16-byte aligned, which TMA needs), C
// staged in shared memory and stored by TMA where its rows are aligned, a row
// at a time elsewhere.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "cublas_handle.hpp"
#include "gemm/16_wgmma_16bit.cuh"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/gemm16.hpp"
#include "smem_opt_in.hpp"
#include "split_pass.cuh"
#include "tensor_map.hpp"

namespace parray {

namespace {

using cuda::PoolBuffer;

void check_args(const Gemm16Args& g) {
  const auto fail = [](const std::string& why) { throw Error("gemm16: " + why); };
  if (g.m < 0 || g.n < 0 || g.k < 0) fail("negative dimension");
  if (g.m > 0x7fffffff || g.n > 0x7fffffff || g.k > 0x7fffffff) fail("a dimension of 2^31 or more");
  const index_t a_cols = g.trans_a == Trans::no ? g.k : g.m, b_cols = g.trans_b == Trans::no ? g.n : g.k;
  if (g.lda < std::max<index_t>(1, a_cols)) fail("lda " + std::to_string(g.lda) + " < " + std::to_string(a_cols));
  if (g.ldb < std::max<index_t>(1, b_cols)) fail("ldb " + std::to_string(g.ldb) + " < " + std::to_string(b_cols));
  if (g.ldc < std::max<index_t>(1, g.n)) fail("ldc " + std::to_string(g.ldc) + " < " + std::to_string(g.n));
  if (g.m > 0 && g.n > 0 && !g.c) fail("C is null");
  if (g.m > 0 && g.n > 0 && g.k > 0 && g.alpha != 0.f && (!g.a || !g.b)) fail("A or B is null");
}

// ---- C = beta C (K = 0 or alpha = 0), C not read for beta = 0 ---------------

template <class Out>
void scale_only(const Gemm16Args& g) {
  const long long n = g.m * g.n;
  const cuda::StridedOperand<Out> c{static_cast<Out*>(g.c), g.ldc, 1};
  cuda::ladder::scale_c<<<unsigned(std::min<long long>((n + 255) / 256, 4096)), 256, 0, cuda::on_stream(g.stream)>>>(
      c, int(g.m), int(g.n), g.beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// ---- cuBLAS ------------------------------------------------------------------

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
// gets B first, each operand with its own transpose flag.
void gemm16_cublas(const Gemm16Args& g) {
  const cudaDataType t = g.type == Type16::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType tc = g.c_f32 ? CUDA_R_32F : t;
  const auto op = [](Trans x) { return x == Trans::no ? CUBLAS_OP_N : CUBLAS_OP_T; };
  const cublasHandle_t h = cuda::cublas_handle_for_current_device();
  if (cublasSetStream(h, cuda::on_stream(g.stream)) != CUBLAS_STATUS_SUCCESS)
    throw Error("cublas: cublasSetStream failed");
  const cublasStatus_t s =
      cublasGemmEx(h, op(g.trans_b), op(g.trans_a), int(g.n), int(g.m), int(g.k), &g.alpha, g.b, t,
                   int(g.ldb), g.a, t, int(g.lda), &g.beta, g.c, tc, int(g.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cublas: cublasGemmEx: ") + cublasGetStatusString(s));
}

// ---- step 16 -----------------------------------------------------------------

// An operand as TMA needs it: rows 16-byte aligned. Otherwise a copy with its
// rows padded (cudaMemcpy2D), from the pool.
struct AlignedOperand {
  const void* p;
  index_t ld;
  std::optional<PoolBuffer> copy;
  AlignedOperand(const void* data, index_t ld_, index_t rows, index_t cols, cudaStream_t s) : p(data), ld(ld_) {
    if (reinterpret_cast<std::uintptr_t>(data) % 16 == 0 && ld % 8 == 0) return;
    ld = (cols + 7) / 8 * 8;
    copy.emplace(std::size_t(rows) * ld / 2 + 4, s);
    PARRAY_CUDA_CHECK(cudaMemcpy2DAsync(copy->p, ld * 2, data, ld_ * 2, cols * 2, rows, cudaMemcpyDeviceToDevice, s));
    p = copy->p;
  }
};

template <class Cfg>
void launch16(const Gemm16Args& g) {
  using Out = typename Cfg::Out;
  const CUtensorMapDataType t = g.type == Type16::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const index_t M = g.m, N = g.n, K = g.k;
  // Stored shapes: A is M x K, or K x M (MN-major); B is K x N (MN-major), or N x K.
  const cudaStream_t s = cuda::on_stream(g.stream);
  const AlignedOperand a(g.a, g.lda, Cfg::kAMn ? K : M, Cfg::kAMn ? M : K, s);
  const AlignedOperand b(g.b, g.ldb, Cfg::kBMn ? K : N, Cfg::kBMn ? N : K, s);
  cuda::ladder::Wgmma16Params<Out> p{};
  p.a = Cfg::kAMn ? cuda::tensor_map_2d(t, a.p, M, K, a.ld * 2, 64, Cfg::BK, true)
                  : cuda::tensor_map_2d(t, a.p, K, M, a.ld * 2, Cfg::BK, Cfg::BM, true);
  p.b = Cfg::kBMn ? cuda::tensor_map_2d(t, b.p, N, K, b.ld * 2, 64, Cfg::BK, true)
                  : cuda::tensor_map_2d(t, b.p, K, N, b.ld * 2, Cfg::BK, Cfg::BN, true);
  p.c_by_tma = reinterpret_cast<std::uintptr_t>(g.c) % 16 == 0 && g.ldc * sizeof(Out) % 16 == 0;
  if (p.c_by_tma) {
    const CUtensorMapDataType tc = g.c_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : t;
    const cuda::BlockedMatrix c{g.c, M, N, 1, 1, g.ldc * index_t(sizeof(Out)), 0, 0};  // one block
    p.c = cuda::tensor_map_blocked(tc, c, cuda::ladder::StagedC::kCols<Out>, 64, true);
  }
  p.c_data = static_cast<Out*>(g.c);
  p.ldc = g.ldc;
  p.M = int(M), p.N = int(N);
  p.k_tiles = int(cuda::ceil_div(K, Cfg::BK));
  p.tiles_m = int(cuda::ceil_div(M, Cfg::BM)), p.tiles_n = int(cuda::ceil_div(N, Cfg::BN));
  p.alpha = g.alpha, p.beta = g.beta;
  const auto kernel = cuda::ladder::gemm_wgmma_16bit<Cfg>;
  cuda::allow_smem_on_current_device(kernel, Cfg::kSmemBytes);
  const long long tiles = static_cast<long long>(p.tiles_m) * p.tiles_n;
  if (tiles > 0x7fffffff) throw Error("cuda-16: more than 2^31 tiles of C");
  const unsigned grid = unsigned(std::min<long long>(tiles, cuda::sm_count()));
  kernel<<<grid, Cfg::kThreads, Cfg::kSmemBytes, s>>>(p);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template <class Format, class Out>
void gemm16_step16(const Gemm16Args& g) {
  using namespace cuda::ladder;
  // A row-major A is K-major; a row-major B is MN-major.
  const bool a_mn = g.trans_a == Trans::yes, b_mn = g.trans_b == Trans::no;
  if (!a_mn && b_mn) launch16<Wgmma16Tiles<Format, false, true, Out>>(g);
  else if (!a_mn) launch16<Wgmma16Tiles<Format, false, false, Out>>(g);
  else if (b_mn) launch16<Wgmma16Tiles<Format, true, true, Out>>(g);
  else launch16<Wgmma16Tiles<Format, true, false, Out>>(g);
}

void gemm16_parray(const Gemm16Args& g) {
  using namespace cuda::ladder;
  if (g.type == Type16::bf16) {
    if (g.c_f32) gemm16_step16<Bf16Format, float>(g);
    else gemm16_step16<Bf16Format, __nv_bfloat16>(g);
  } else {
    if (g.c_f32) gemm16_step16<Fp16Format, float>(g);
    else gemm16_step16<Fp16Format, __half>(g);
  }
}

}  // namespace

const std::vector<std::string>& gemm16_impls() {
  static const std::vector<std::string> names = {"cuda-16", "cublas"};
  return names;
}

std::string gemm16_unsupported(const std::string& impl) {
  if (impl == "cublas") return "";
  if (impl == "cuda-16") return cuda::wgmma_unsupported();
  return "unknown 16-bit GEMM '" + impl + "' (cuda-16, cublas)";
}

void gemm16(const Gemm16Args& g, const std::string& impl) {
  const std::string why = gemm16_unsupported(impl);
  if (!why.empty()) throw Error(impl + ": " + why);
  check_args(g);
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0 || g.alpha == 0.f) {
    if (g.c_f32) scale_only<float>(g);
    else if (g.type == Type16::bf16) scale_only<__nv_bfloat16>(g);
    else scale_only<__half>(g);
    return;
  }
  if (impl == "cublas") gemm16_cublas(g);
  else gemm16_parray(g);
}

}  // namespace parray
