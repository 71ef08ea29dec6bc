// Launcher of ladder step 21 (gemm/21_tf32_bf16.cuh): the split pass writes
// A's and B's TF32 big parts and their BF16 concatenations (any layout of A
// and B), step 15 multiplies the big parts in TF32 into C, and step 16 adds
// the BF16 cross terms as one GEMM over 2K with beta = 1. A row-major C is
// written in place; any other C through a row-major workspace and one pass.
// K below kMinK: step 15's three TF32 products.
#include <string>

#include "gemm/21_tf32_bf16.cuh"
#include "gemm/split_pass.cuh"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/gemm16.hpp"
#include "parray/tuning.hpp"

namespace parray::cuda {

namespace {

constexpr const char* kName = "cuda-21-tf32-bf16";

// Below this K the BF16 roundings can exceed the FP32 verifier's
// element-wise bound (21_tf32_bf16.cuh).
constexpr index_t kMinK = 64;

index_t round_up(index_t v, index_t m) { return (v + m - 1) / m * m; }

// The split copies: big parts X x K (rows ld_big apart, 16-byte aligned) and
// BF16 concatenations X x 2K (rows ld_cat apart), for A (X = M) and B (X = N).
struct SplitCopies {
  index_t ld_big, ld_cat;
  PoolBuffer a_big, b_big, a_cat, b_cat;
  SplitCopies(index_t M, index_t N, index_t K, cudaStream_t s)
      : ld_big(round_up(K, 4)),
        ld_cat(round_up(2 * K, 8)),
        a_big(std::size_t(M * ld_big), s),
        b_big(std::size_t(N * ld_big), s),
        a_cat(std::size_t(M * ld_cat / 2), s),  // two BF16 values a float
        b_cat(std::size_t(N * ld_cat / 2), s) {}
  __nv_bfloat16* cat(const PoolBuffer& b) const { return reinterpret_cast<__nv_bfloat16*>(b.p); }
};

// C (M x N row-major, rows ldc apart) = alpha A B + beta C from the copies:
// the big parts' TF32 product, then the cross terms added in BF16.
void products(const GemmCall<float>& call, const SplitCopies& x, float* c, index_t ldc, float alpha, float beta) {
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  GemmCall<float> big = call;
  big.a = MatrixView<const float>{x.a_big.p, MatrixLayout::row_major(M, K, x.ld_big), Memory::device};
  big.b = MatrixView<const float>{x.b_big.p, MatrixLayout::col_major(K, N, x.ld_big), Memory::device};
  big.c = MatrixView<float>{c, MatrixLayout::row_major(M, N, ldc), Memory::device};
  big.alpha = alpha, big.beta = beta, big.precision = Precision::tf32;
  // Exact products of the big parts (TF32 values), sums promoted to FP32 as
  // the split's are: one TF32 GEMM over all of K would drift by truncation.
  gemm_persistent_tf32_fp32_sums(big);
  Gemm16Args cross;
  cross.type = Type16::bf16, cross.c_f32 = true, cross.trans_b = Trans::yes;
  cross.m = M, cross.n = N, cross.k = 2 * K, cross.alpha = alpha, cross.beta = 1.f;
  cross.a = x.cat(x.a_cat), cross.lda = x.ld_cat, cross.b = x.cat(x.b_cat), cross.ldb = x.ld_cat;
  cross.c = c, cross.ldc = ldc, cross.stream = call.stream;
  gemm16(cross, "cuda-16");
}

}  // namespace

void gemm_tf32_bf16(const GemmCall<float>& call) {
  check_int_sizes(call, kName);
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  if (M == 0 || N == 0 || K == 0) throw Error(std::string(kName) + ": empty product (the dispatcher handles those)");
  if (K < kMinK) return gemm_persistent_3xtf32(call);
  if (2 * K + 8 > 0x7fffffff) throw Error(std::string(kName) + ": 2 K must be below 2^31");
  const cudaStream_t s = on_stream(call.stream);
  const SplitCopies x(M, N, K, s);
  const bool keep = gpu_tuning().tf32x3_small;
  split_operand(s, call.a, false, ladder::Tf32Bf16Split{x.a_big.p, x.ld_big, x.cat(x.a_cat), x.ld_cat, K, keep},
                kName);
  split_operand(s, call.b, true, ladder::Tf32Bf16Split{x.b_big.p, x.ld_big, x.cat(x.b_cat), x.ld_cat, K, keep},
                kName);
  const MatrixLayout& cl = call.c.layout;
  if (cl.is_row_major() && (M <= 1 || cl.rows.stride[0] >= N)) {
    products(call, x, call.c.data, M <= 1 ? N : cl.rows.stride[0], call.alpha, call.beta);
    return;
  }
  // Any other C: the product into a row-major workspace, then C = alpha W + beta C through C's layout.
  PoolBuffer w(std::size_t(M * N), s);
  products(call, x, w.p, N, 1.f, 0.f);
  scatter_workspace(s, call, w.p);
}

}  // namespace parray::cuda
