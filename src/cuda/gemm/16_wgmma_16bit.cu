// GEMM on 16-bit data (include/parray/gemm16.hpp): the argument checks, the
// cuBLAS baseline, and the launcher of ladder step 16
// (gemm/16_wgmma_16bit.cuh): tensor maps straight over the operands (a
// padded copy only where a row is not 16-byte aligned, which TMA needs), C
// staged in shared memory and stored by TMA where its rows are aligned, a row
// at a time elsewhere.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "common/cublas_library.hpp"
#include "gemm/18_batched_small.hpp"
#include "common/cublas_handle.hpp"
#include "gemm/16_wgmma_16bit.cuh"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/gemm16.hpp"
#include "parray/plan.hpp"
#include "common/smem_opt_in.hpp"
#include "gemm/split_pass.cuh"
#include "gemm/tensor_map.hpp"

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
  if (g.batch < 0) fail("batch " + std::to_string(g.batch) + " is negative");
  if (g.batch > 0x7fffffff) fail("a batch of 2^31 or more");
  if (g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0) fail("a batch stride is negative");
  const index_t c_extent = (g.m - 1) * g.ldc + g.n;
  if (g.batch > 1 && g.m > 0 && g.n > 0 && g.stride_c < c_extent)
    fail("C's batch stride " + std::to_string(g.stride_c) + " is less than one C's extent " + std::to_string(c_extent) +
         ": the products' results would overlap");
  if (g.m > 0 && g.n > 0 && g.k > 0 && g.alpha != 0.f && (!g.a || !g.b)) fail("A or B is null");
}

// ---- C = beta C (K = 0 or alpha = 0), C not read for beta = 0 ---------------

template <class Out>
void scale_only(const Gemm16Args& g) {
  const long long n = g.m * g.n;
  for (index_t i = 0; i < g.batch; ++i) {
    const cuda::StridedOperand<Out> c{static_cast<Out*>(g.c) + i * g.stride_c, g.ldc, 1};
    cuda::ladder::scale_c<<<unsigned(std::min<long long>((n + 255) / 256, 4096)), 256, 0, cuda::on_stream(g.stream)>>>(
        c, int(g.m), int(g.n), g.beta);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
}

// ---- cuBLAS ------------------------------------------------------------------

// Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS
// gets B first, each operand with its own transpose flag.
void gemm16_cublas(const Gemm16Args& g) {
  const cudaDataType t = g.type == Type16::bf16 ? CUDA_R_16BF : CUDA_R_16F;
  const cudaDataType tc = g.c_f32 ? CUDA_R_32F : t;
  const auto op = [](Trans x) { return x == Trans::no ? CUBLAS_OP_N : CUBLAS_OP_T; };
  const cublasHandle_t h = cuda::cublas_handle_for_current_device();
  if (cuda::cublas().SetStream(h, cuda::on_stream(g.stream)) != CUBLAS_STATUS_SUCCESS)
    throw Error("cublas: cublasSetStream failed");
  if (g.batch != 1) {
    const cublasStatus_t s = cuda::cublas().GemmStridedBatchedEx(
        h, op(g.trans_b), op(g.trans_a), int(g.n), int(g.m), int(g.k), &g.alpha, g.b, t, int(g.ldb), g.stride_b, g.a,
        t, int(g.lda), g.stride_a, &g.beta, g.c, tc, int(g.ldc), g.stride_c, int(g.batch), CUBLAS_COMPUTE_32F,
        CUBLAS_GEMM_DEFAULT);
    cuda::cublas().check(s, "cublas", "cublasGemmStridedBatchedEx");
    return;
  }
  const cublasStatus_t s =
      cuda::cublas().GemmEx(h, op(g.trans_b), op(g.trans_a), int(g.n), int(g.m), int(g.k), &g.alpha, g.b, t,
                   int(g.ldb), g.a, t, int(g.lda), &g.beta, g.c, tc, int(g.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  cuda::cublas().check(s, "cublas", "cublasGemmEx");
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

// Whether every matrix of a batch is where TMA can read it in place: the
// first 16-byte aligned, rows and matrices 16 bytes apart.
bool tma_ready(const void* p, index_t ld, index_t stride, int elem_bytes) {
  return reinterpret_cast<std::uintptr_t>(p) % 16 == 0 && ld * elem_bytes % 16 == 0 && stride * elem_bytes % 16 == 0;
}

template <class Cfg>
void launch16(const Gemm16Args& g) {
  using Out = typename Cfg::Out;
  const CUtensorMapDataType t = g.type == Type16::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  const index_t M = g.m, N = g.n, K = g.k;
  // Stored shapes: A is M x K, or K x M (MN-major); B is K x N (MN-major), or N x K.
  const cudaStream_t s = cuda::on_stream(g.stream);
  const index_t a_rows = Cfg::kAMn ? K : M, a_cols = Cfg::kAMn ? M : K;
  const index_t b_rows = Cfg::kBMn ? K : N, b_cols = Cfg::kBMn ? N : K;
  // One matrix may be copied with its rows padded; a batch comes here only
  // where TMA reads it in place (gemm16 runs it matrix by matrix otherwise).
  const AlignedOperand a(g.a, g.lda, a_rows, a_cols, s);
  const AlignedOperand b(g.b, g.ldb, b_rows, b_cols, s);
  const index_t batch = std::max<index_t>(g.batch, 1);
  cuda::ladder::Wgmma16Params<Out> p{};
  using cuda::tensor_map_batch;
  p.a = Cfg::kAMn ? tensor_map_batch(t, a.p, a_rows, a_cols, a.ld, batch, g.stride_a, 2, 64, Cfg::BK, true)
                  : tensor_map_batch(t, a.p, a_rows, a_cols, a.ld, batch, g.stride_a, 2, Cfg::BK, Cfg::BM, true);
  p.b = Cfg::kBMn ? tensor_map_batch(t, b.p, b_rows, b_cols, b.ld, batch, g.stride_b, 2, 64, Cfg::BK, true)
                  : tensor_map_batch(t, b.p, b_rows, b_cols, b.ld, batch, g.stride_b, 2, Cfg::BK, Cfg::BN, true);
  p.a_batched = g.stride_a != 0, p.b_batched = g.stride_b != 0;
  p.c_by_tma = tma_ready(g.c, g.ldc, batch > 1 ? g.stride_c : 0, int(sizeof(Out))) &&
               cuda::tma_stores_whole_rows(N, int(sizeof(Out)));
  if (p.c_by_tma) {
    const CUtensorMapDataType tc = g.c_f32 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32 : t;
    p.c = tensor_map_batch(tc, g.c, M, N, g.ldc, batch, batch > 1 ? g.stride_c : 0, int(sizeof(Out)),
                           cuda::ladder::StagedC::kCols<Out>, 64, true);
  }
  p.c_data = static_cast<Out*>(g.c);
  p.ldc = g.ldc, p.c_stride = g.stride_c;
  p.M = int(M), p.N = int(N), p.batch = int(batch);
  p.k_tiles = int(cuda::ceil_div(K, Cfg::BK));
  p.tiles_m = int(cuda::ceil_div(M, Cfg::BM)), p.tiles_n = int(cuda::ceil_div(N, Cfg::BN));
  p.alpha = g.alpha, p.beta = g.beta;
  const auto kernel = cuda::ladder::gemm_wgmma_16bit<Cfg>;
  cuda::allow_smem_on_current_device(kernel, Cfg::kSmemBytes);
  const long long tiles = static_cast<long long>(p.tiles_m) * p.tiles_n * batch;
  if (tiles > 0x7fffffff) throw Error("cuda-16: more than 2^31 tiles of C in the batch");
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

void gemm16_parray_one_launch(const Gemm16Args& g) {
  using namespace cuda::ladder;
  if (g.type == Type16::bf16) {
    if (g.c_f32) gemm16_step16<Bf16Format, float>(g);
    else gemm16_step16<Bf16Format, __nv_bfloat16>(g);
  } else {
    if (g.c_f32) gemm16_step16<Fp16Format, float>(g);
    else gemm16_step16<Fp16Format, __half>(g);
  }
}

// Step 18: the batch on the CUDA cores, a block per 32 x 32 or 64 x 64 tile.
void gemm16_small(const Gemm16Args& g) {
  const cuda::Elem in = g.type == Type16::bf16 ? cuda::Elem::bf16 : cuda::Elem::fp16;
  cuda::SmallBatch b{};
  const bool ta = g.trans_a == Trans::yes, tb = g.trans_b == Trans::yes;
  b.a = g.a, b.a_rs = ta ? 1 : g.lda, b.a_cs = ta ? g.lda : 1, b.stride_a = g.stride_a;
  b.b = g.b, b.b_rs = tb ? 1 : g.ldb, b.b_cs = tb ? g.ldb : 1, b.stride_b = g.stride_b;
  b.c = g.c, b.c_rs = g.ldc, b.c_cs = 1, b.stride_c = g.stride_c;
  b.batch = g.batch, b.m = g.m, b.n = g.n, b.k = g.k;
  b.alpha = g.alpha, b.beta = g.beta;
  b.in = in, b.out = g.c_f32 ? cuda::Elem::f32 : in;
  cuda::launch_batched_small(b, cuda::on_stream(g.stream));
}

// Whether the planner predicts step 18 faster than step 16 on this batch
// (small matrices: step 16's 128 x 256 tile computes a 32 x 32 one 32 times).
bool small_batch_wins(const Gemm16Args& g) {
  if (g.batch < 2) return false;
  BatchProblem p;
  p.batch = g.batch, p.m = g.m, p.n = g.n, p.k = g.k;
  p.in_bytes = 2, p.out_bytes = g.c_f32 ? 4 : 2;
  p.reads_c = g.beta != 0.f;
  p.broadcast_a = g.stride_a == 0, p.broadcast_b = g.stride_b == 0;
  const GpuModel gpu = cuda::current_gpu_model();
  return plan_batched_small(gpu, p).predicted_us < predict_batched_16bit_us(gpu, p);
}

// Step 16: a batch runs as one launch where TMA reads every matrix in place
// (rows and matrices 16 bytes apart), else matrix by matrix, each through
// its own aligned copy.
void gemm16_step16_batch(const Gemm16Args& g) {
  const index_t sa = g.batch > 1 ? g.stride_a : 0, sb = g.batch > 1 ? g.stride_b : 0;
  if (g.batch == 1 || (tma_ready(g.a, g.lda, sa, 2) && tma_ready(g.b, g.ldb, sb, 2)))
    return gemm16_parray_one_launch(g);
  const int c_bytes = g.c_f32 ? 4 : 2;
  for (index_t i = 0; i < g.batch; ++i) {
    Gemm16Args one = g;
    one.batch = 1;
    one.a = static_cast<const char*>(g.a) + i * g.stride_a * 2;
    one.b = static_cast<const char*>(g.b) + i * g.stride_b * 2;
    one.c = static_cast<char*>(g.c) + i * g.stride_c * c_bytes;
    gemm16_parray_one_launch(one);
  }
}

}  // namespace

const std::vector<std::string>& gemm16_impls() {
  static const std::vector<std::string> names = {"gpu", "cuda-16", "cuda-18", "cublas"};
  return names;
}

std::string gemm16_unsupported(const std::string& impl) {
  if (impl == "cublas" || impl == "cuda-18") return "";
  if (impl == "cuda-16" || impl == "gpu") return cuda::wgmma_unsupported();
  return "unknown 16-bit GEMM '" + impl + "' (gpu, cuda-16, cuda-18, cublas)";
}

void gemm16(const Gemm16Args& g, const std::string& impl) {
  const std::string why = gemm16_unsupported(impl);
  if (!why.empty()) throw Error(impl + ": " + why);
  check_args(g);
  if (g.m == 0 || g.n == 0 || g.batch == 0) return;
  if (g.k == 0 || g.alpha == 0.f) {
    if (g.c_f32) scale_only<float>(g);
    else if (g.type == Type16::bf16) scale_only<__nv_bfloat16>(g);
    else scale_only<__half>(g);
    return;
  }
  if (impl == "cublas") gemm16_cublas(g);
  else if (impl == "cuda-18" || (impl == "gpu" && small_batch_wins(g))) gemm16_small(g);
  else gemm16_step16_batch(g);
}

}  // namespace parray
