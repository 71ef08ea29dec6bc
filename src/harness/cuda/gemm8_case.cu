// Gemm8Case (src/harness/include/harness/gemm8_case.hpp): an FP8 GEMM's
// operands and scales on the GPU, its FP64 reference over the dequantised
// values (exact in FP32), and the check of docs/verification.md's "FP8 data".
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "../../cuda/gemm/element16.cuh"
#include "case_data.cuh"
#include "harness/gemm8_case.hpp"
#include "harness/reference.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda_runtime.hpp"

namespace parray {

namespace {

using case_data::DeviceBytes;
using case_data::uniform;

// Where an element's scale lies: one for the tensor, one per row and K block
// (A's 1 x 128), or one per 128 x 128 block (B's).
struct ScaleIndex {
  enum Kind { tensor, row_block, square_block } kind;
  long long rows;  // row_block: the rows (M); square_block: ceil(N / 128)
  __device__ long long operator()(long long i, long long k) const {
    if (kind == tensor) return 0;
    if (kind == row_block) return k / 128 * rows + i;
    return k / 128 * rows + i / 128;
  }
};

// rows x cols FP8 values (NaN bytes in the ld - cols padding): uniform in
// [-8, 8) quantised (E4M3 reaches 448, E5M2 57344; the small ones land on
// subnormals and zero as real data does), their dequantised values
// (value x scale, exact in FP32) and magnitudes.
template <bool E5>
__global__ void fill_fp8(std::uint8_t* x, float* deq, float* magnitude, long long rows, long long cols, long long ld,
                         const float* scale, ScaleIndex at, std::uint64_t seed) {
  for (long long e = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; e < rows * ld;
       e += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long i = e / ld, k = e % ld;
    if (k >= cols) {
      x[e] = 0x7f;  // NaN in E4M3 and in E5M2
      continue;
    }
    float v;
    if constexpr (E5) {
      const __nv_fp8_e5m2 q(8.f * uniform(seed, e));
      x[e] = q.__x;
      v = float(q);
    } else {
      const __nv_fp8_e4m3 q(8.f * uniform(seed, e));
      x[e] = q.__x;
      v = float(q);
    }
    const float d = v * scale[at(i, k)];
    deq[e] = d;
    magnitude[e] = fabsf(d);
  }
}

std::size_t out_bytes(Fp8Out t) { return t == Fp8Out::f32 ? 4 : 2; }

// Random scales with 5 significant bits, 2^-4 .. 2 (times an FP8 value, of
// 4 significant bits at most: exact in FP32). At most 2, so that a sum over
// K = 4096 of products up to 16^2 stays inside FP16's range.
std::vector<float> random_scales(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> s(n);
  for (float& x : s) x = std::ldexp(1.f + float(rng() % 16) / 16.f, int(rng() % 5) - 4);
  return s;
}

double output_roundoff(Fp8Out t) { return t == Fp8Out::f32 ? 0x1p-24 : t == Fp8Out::bf16 ? 0x1p-8 : 0x1p-11; }

}  // namespace

struct Gemm8Case::State {
  Gemm8Problem p;
  index_t lda, ldb, ldc, k_blocks, n_blocks;
  DeviceBytes a, b, c, c_init, sa, sb, a32, b32, a_abs, b_abs, c0_32, ref, ref_abs;
  std::vector<double> host_ref, host_abs;
  std::vector<float> host_c0;

  explicit State(const Gemm8Problem& q)
      : p(q),
        lda((q.k + 15) / 16 * 16 + q.pad),
        ldb(lda),
        ldc(q.n + q.pad),
        k_blocks((q.k + 127) / 128),
        n_blocks((q.n + 127) / 128),
        a(std::size_t(q.m) * lda),
        b(std::size_t(q.n) * ldb),
        c(std::size_t(q.m) * ldc * out_bytes(q.out)),
        c_init(std::size_t(q.m) * ldc * out_bytes(q.out)),
        sa(std::size_t(q.scaling == Fp8Scaling::blockwise ? k_blocks * q.m : 1) * 4),
        sb(std::size_t(q.scaling == Fp8Scaling::blockwise ? k_blocks * n_blocks : 1) * 4),
        a32(std::size_t(q.m) * lda * 4),
        b32(std::size_t(q.n) * ldb * 4),
        a_abs(std::size_t(q.m) * lda * 4),
        b_abs(std::size_t(q.n) * ldb * 4),
        c0_32(std::size_t(q.m) * ldc * 4),
        ref(std::size_t(q.m) * q.n * 8),
        ref_abs(std::size_t(q.m) * q.n * 8) {}
};

namespace {

void fill_operand(Fp8 t, void* x, float* deq, float* magnitude, index_t rows, index_t cols, index_t ld,
                  const float* scale, ScaleIndex at, std::uint64_t seed) {
  const unsigned g = case_data::grid_for(rows * ld);
  auto* bytes = static_cast<std::uint8_t*>(x);
  if (t == Fp8::e5m2) fill_fp8<true><<<g, 256>>>(bytes, deq, magnitude, rows, cols, ld, scale, at, seed);
  else fill_fp8<false><<<g, 256>>>(bytes, deq, magnitude, rows, cols, ld, scale, at, seed);
  PARRAY_CUDA_CHECK_LAUNCH();
}

void fill_output(Fp8Out t, void* c, float* exact, index_t rows, index_t cols, index_t ld, std::uint64_t seed) {
  if (t == Fp8Out::f32) case_data::fill_matrix<float>(c, exact, nullptr, rows, cols, ld, seed);
  else if (t == Fp8Out::bf16) case_data::fill_matrix<__nv_bfloat16>(c, exact, nullptr, rows, cols, ld, seed);
  else case_data::fill_matrix<__half>(c, exact, nullptr, rows, cols, ld, seed);
}

}  // namespace

Gemm8Case::Gemm8Case(const Gemm8Problem& q) {
  if (q.m < 1 || q.n < 1 || q.k < 1 || q.pad < 0 || q.pad % 16)
    throw Error("gemm8 case: sizes must be positive and the padding a multiple of 16");
  s_ = std::make_unique<State>(q);
  State& s = *s_;
  const bool blockwise = q.scaling == Fp8Scaling::blockwise;
  const std::vector<float> sa = random_scales(blockwise ? s.k_blocks * q.m : 1, q.seed + 3);
  const std::vector<float> sb = random_scales(blockwise ? s.k_blocks * s.n_blocks : 1, q.seed + 4);
  PARRAY_CUDA_CHECK(cudaMemcpy(s.sa.p, sa.data(), sa.size() * 4, cudaMemcpyHostToDevice));
  PARRAY_CUDA_CHECK(cudaMemcpy(s.sb.p, sb.data(), sb.size() * 4, cudaMemcpyHostToDevice));
  const ScaleIndex at_a{blockwise ? ScaleIndex::row_block : ScaleIndex::tensor, q.m};
  const ScaleIndex at_b{blockwise ? ScaleIndex::square_block : ScaleIndex::tensor, s.n_blocks};
  fill_operand(q.type_a, s.a.p, s.a32.as<float>(), s.a_abs.as<float>(), q.m, q.k, s.lda, s.sa.as<float>(), at_a,
               q.seed);
  fill_operand(q.type_b, s.b.p, s.b32.as<float>(), s.b_abs.as<float>(), q.n, q.k, s.ldb, s.sb.as<float>(), at_b,
               q.seed + 1);
  fill_output(q.out, s.c_init.p, q.beta != 0.f ? s.c0_32.as<float>() : nullptr, q.m, q.beta != 0.f ? q.n : 0, s.ldc,
              q.seed + 2);
  // B is stored N x K: op(B) = its transpose, a column-major K x N view.
  const MatrixView<const float> a32{s.a32.as<const float>(), MatrixLayout::row_major(q.m, q.k, s.lda), Memory::device};
  const MatrixView<const float> b32{s.b32.as<const float>(), MatrixLayout::col_major(q.k, q.n, s.ldb), Memory::device};
  const MatrixView<const float> a_abs{s.a_abs.as<const float>(), MatrixLayout::row_major(q.m, q.k, s.lda),
                                      Memory::device};
  const MatrixView<const float> b_abs{s.b_abs.as<const float>(), MatrixLayout::col_major(q.k, q.n, s.ldb),
                                      Memory::device};
  const MatrixView<const float> c0{s.c0_32.as<const float>(), MatrixLayout::row_major(q.m, q.n, s.ldc), Memory::device};
  const MatrixView<double> out{s.ref.as<double>(), MatrixLayout::row_major(q.m, q.n, q.n), Memory::device};
  const MatrixView<double> out_abs{s.ref_abs.as<double>(), MatrixLayout::row_major(q.m, q.n, q.n), Memory::device};
  cuda::reference_gemm_f64<float>(q.alpha, a32, b32, q.beta, q.beta != 0.f ? c0 : MatrixView<const float>{}, out);
  cuda::reference_gemm_f64<float>(1.0, a_abs, b_abs, 0.0, MatrixView<const float>{}, out_abs);
  s.host_ref.resize(std::size_t(q.m) * q.n);
  s.host_abs.resize(std::size_t(q.m) * q.n);
  PARRAY_CUDA_CHECK(cudaMemcpy(s.host_ref.data(), s.ref.p, s.host_ref.size() * 8, cudaMemcpyDeviceToHost));
  PARRAY_CUDA_CHECK(cudaMemcpy(s.host_abs.data(), s.ref_abs.p, s.host_abs.size() * 8, cudaMemcpyDeviceToHost));
  if (q.beta != 0.f) {
    s.host_c0.resize(std::size_t(q.m) * s.ldc);
    PARRAY_CUDA_CHECK(cudaMemcpy(s.host_c0.data(), s.c0_32.p, s.host_c0.size() * 4, cudaMemcpyDeviceToHost));
  }
}

Gemm8Case::~Gemm8Case() = default;

Gemm8Args Gemm8Case::args() const {
  const State& s = *s_;
  Gemm8Args g;
  static_cast<Gemm8Shape&>(g) = s.p;
  g.a = s.a.p, g.lda = s.lda, g.b = s.b.p, g.ldb = s.ldb, g.c = s.c.p, g.ldc = s.ldc;
  g.scale_a = s.sa.as<const float>(), g.scale_b = s.sb.as<const float>();
  return g;
}

void Gemm8Case::run(const std::string& impl) { run(impl, args()); }

void Gemm8Case::run(const std::string& impl, const Gemm8Args& g) {
  const State& s = *s_;
  PARRAY_CUDA_CHECK(
      cudaMemcpy(s.c.p, s.c_init.p, std::size_t(s.p.m) * s.ldc * out_bytes(s.p.out), cudaMemcpyDeviceToDevice));
  gemm8(g, impl);
  cuda::synchronize();
}

// docs/verification.md, "FP8 data": each k-tile's 128 products are exact and
// summed by the tensor cores, whose FP8 accumulator keeps fewer bits than
// FP32 (taken as unit roundoff 2^-13 per addition); the k-tiles' sums are
// added in FP32; C is rounded to its type.
Gemm16Check Gemm8Case::check() const {
  const State& s = *s_;
  const Gemm8Problem& p = s.p;
  const std::size_t eb = out_bytes(p.out);
  std::vector<unsigned char> raw(std::size_t(p.m) * s.ldc * eb);
  PARRAY_CUDA_CHECK(cudaMemcpy(raw.data(), s.c.p, raw.size(), cudaMemcpyDeviceToHost));
  const double u_out = output_roundoff(p.out);
  const double gamma = 128.0 * 0x1p-13 + 2.0 * double(p.k / 128 + 4) * 0x1p-24 + 2.0 * u_out;
  return case_data::judge_c(raw, p.m, p.n, s.ldc, eb, p.out == Fp8Out::bf16, s.host_ref, s.host_abs, s.host_c0,
                            p.alpha, p.beta, gamma, 0x1p-9 + 2.0 * u_out);
}

double Gemm8Case::time_ms(const std::string& impl, int reps) {
  const Gemm8Args g = args();
  return case_data::median_event_ms([&] { gemm8(g, impl); }, reps);
}

}  // namespace parray
