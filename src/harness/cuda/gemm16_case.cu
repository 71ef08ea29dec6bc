// Gemm16Case (src/harness/include/harness/gemm16_case.hpp): a 16-bit GEMM's operands on the
// GPU, its FP64 reference (cuda::reference_gemm_f64 over exact FP32 copies of
// the 16-bit values) and the check of docs/verification.md's "16-bit data".
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../cuda/gemm/element16.cuh"
#include "case_data.cuh"
#include "parray/cuda/check.hpp"
#include "harness/reference.hpp"
#include "parray/cuda_runtime.hpp"
#include "harness/gemm16_case.hpp"

namespace parray {

namespace {

using case_data::DeviceBytes;

using case_data::fill_matrix;

void fill_any(Type16 type, bool as_f32, void* x, float* exact, float* magnitude, index_t rows, index_t cols, index_t ld,
              std::uint64_t seed) {
  if (as_f32) fill_matrix<float>(x, exact, magnitude, rows, cols, ld, seed);
  else if (type == Type16::bf16) fill_matrix<__nv_bfloat16>(x, exact, magnitude, rows, cols, ld, seed);
  else fill_matrix<__half>(x, exact, magnitude, rows, cols, ld, seed);
}

// Unit roundoff of C's type: what rounding the result to it may add.
double output_roundoff(const Gemm16Problem& p) {
  if (p.c_f32) return 0x1p-24;
  return p.type == Type16::bf16 ? 0x1p-8 : 0x1p-11;
}

}  // namespace

struct Gemm16Case::State {
  Gemm16Problem p;
  index_t a_rows, a_cols, b_rows, b_cols, lda, ldb, ldc;
  index_t a_count, b_count, batch;  // matrices stored of A and B; products
  index_t stride_a, stride_b, stride_c;
  std::size_t c_elem;
  DeviceBytes a, b, c, c_init, a32, b32, a_abs, b_abs, c0_32, ref, ref_abs;
  std::vector<double> host_ref, host_abs;
  std::vector<float> host_c0;

  explicit State(const Gemm16Problem& q)
      : p(q),
        a_rows(q.trans_a == Trans::no ? q.m : q.k),
        a_cols(q.trans_a == Trans::no ? q.k : q.m),
        b_rows(q.trans_b == Trans::no ? q.k : q.n),
        b_cols(q.trans_b == Trans::no ? q.n : q.k),
        lda(a_cols + q.pad),
        ldb(b_cols + q.pad),
        ldc(q.n + q.pad),
        a_count(q.broadcast_a ? 1 : q.batch),
        b_count(q.broadcast_b ? 1 : q.batch),
        batch(q.batch),
        stride_a(q.broadcast_a ? 0 : a_rows * lda),
        stride_b(q.broadcast_b ? 0 : b_rows * ldb),
        stride_c(q.m * ldc),
        c_elem(q.c_f32 ? 4 : 2),
        a(std::size_t(a_count * a_rows) * lda * 2),
        b(std::size_t(b_count * b_rows) * ldb * 2),
        c(std::size_t(batch * q.m) * ldc * c_elem),
        c_init(std::size_t(batch * q.m) * ldc * c_elem),
        a32(std::size_t(a_count * a_rows) * lda * 4),
        b32(std::size_t(b_count * b_rows) * ldb * 4),
        a_abs(std::size_t(a_count * a_rows) * lda * 4),
        b_abs(std::size_t(b_count * b_rows) * ldb * 4),
        c0_32(std::size_t(batch * q.m) * ldc * 4),
        ref(std::size_t(batch * q.m) * q.n * 8),
        ref_abs(std::size_t(batch * q.m) * q.n * 8) {}
};

Gemm16Case::Gemm16Case(const Gemm16Problem& q) {
  if (q.m < 1 || q.n < 1 || q.k < 1 || q.pad < 0 || q.batch < 1)
    throw Error("gemm16 case: sizes and the batch must be positive");
  s_ = std::make_unique<State>(q);
  State& s = *s_;
  // A stack of matrices is one taller matrix of the same row stride.
  fill_any(q.type, false, s.a.p, s.a32.as<float>(), s.a_abs.as<float>(), s.a_count * s.a_rows, s.a_cols, s.lda, q.seed);
  fill_any(q.type, false, s.b.p, s.b32.as<float>(), s.b_abs.as<float>(), s.b_count * s.b_rows, s.b_cols, s.ldb,
           q.seed + 1);
  if (q.beta != 0.f) {
    fill_any(q.type, q.c_f32, s.c_init.p, s.c0_32.as<float>(), nullptr, s.batch * q.m, q.n, s.ldc, q.seed + 2);
  } else {  // all NaN: C must not be read, and every element must be written
    fill_any(q.type, q.c_f32, s.c_init.p, nullptr, nullptr, s.batch * q.m, 0, s.ldc, q.seed + 2);
  }
  const auto view = [](const DeviceBytes& d, index_t offset, index_t rows, index_t cols, index_t ld, bool transposed) {
    const MatrixLayout l =
        transposed ? MatrixLayout::col_major(rows, cols, ld) : MatrixLayout::row_major(rows, cols, ld);
    return MatrixView<const float>{d.as<const float>() + offset, l, Memory::device};
  };
  const bool ta = q.trans_a == Trans::yes, tb = q.trans_b == Trans::yes;
  for (index_t z = 0; z < s.batch; ++z) {
    const index_t oa = z * s.stride_a, ob = z * s.stride_b, oc = z * q.m * q.n;
    const MatrixView<double> out{s.ref.as<double>() + oc, MatrixLayout::row_major(q.m, q.n, q.n), Memory::device};
    const MatrixView<double> out_abs{s.ref_abs.as<double>() + oc, MatrixLayout::row_major(q.m, q.n, q.n),
                                     Memory::device};
    const MatrixView<const float> c0 = view(s.c0_32, z * s.stride_c, q.m, q.n, s.ldc, false);
    cuda::reference_gemm_f64<float>(q.alpha, view(s.a32, oa, q.m, q.k, s.lda, ta),
                                    view(s.b32, ob, q.k, q.n, s.ldb, tb), q.beta,
                                    q.beta != 0.f ? c0 : MatrixView<const float>{}, out);
    cuda::reference_gemm_f64<float>(1.0, view(s.a_abs, oa, q.m, q.k, s.lda, ta), view(s.b_abs, ob, q.k, q.n, s.ldb, tb),
                                    0.0, MatrixView<const float>{}, out_abs);
  }
  s.host_ref.resize(std::size_t(s.batch * q.m) * q.n);
  s.host_abs.resize(std::size_t(s.batch * q.m) * q.n);
  PARRAY_CUDA_CHECK(cudaMemcpy(s.host_ref.data(), s.ref.p, s.host_ref.size() * 8, cudaMemcpyDeviceToHost));
  PARRAY_CUDA_CHECK(cudaMemcpy(s.host_abs.data(), s.ref_abs.p, s.host_abs.size() * 8, cudaMemcpyDeviceToHost));
  if (q.beta != 0.f) {
    s.host_c0.resize(std::size_t(s.batch * q.m) * s.ldc);
    PARRAY_CUDA_CHECK(cudaMemcpy(s.host_c0.data(), s.c0_32.p, s.host_c0.size() * 4, cudaMemcpyDeviceToHost));
  }
}

Gemm16Case::~Gemm16Case() = default;

const Gemm16Problem& Gemm16Case::problem() const { return s_->p; }

Gemm16Args Gemm16Case::args() const {
  const State& s = *s_;
  Gemm16Args g;
  static_cast<Gemm16Shape&>(g) = s.p;
  g.a = s.a.p, g.lda = s.lda, g.b = s.b.p, g.ldb = s.ldb, g.c = s.c.p, g.ldc = s.ldc;
  g.batch = s.batch, g.stride_a = s.stride_a, g.stride_b = s.stride_b, g.stride_c = s.stride_c;
  return g;
}

void Gemm16Case::run(const std::string& impl) {
  const State& s = *s_;
  PARRAY_CUDA_CHECK(
      cudaMemcpy(s.c.p, s.c_init.p, std::size_t(s.batch * s.p.m) * s.ldc * s.c_elem, cudaMemcpyDeviceToDevice));
  gemm16(args(), impl);
  cuda::synchronize();
}

Gemm16Check Gemm16Case::check() const {
  const State& s = *s_;
  const Gemm16Problem& p = s.p;
  std::vector<unsigned char> raw(std::size_t(s.batch * p.m) * s.ldc * s.c_elem);
  PARRAY_CUDA_CHECK(cudaMemcpy(raw.data(), s.c.p, raw.size(), cudaMemcpyDeviceToHost));
  // Element bound: the worst case of an FP32 sum of K terms by truncation, (K +
  // 4) 2^-23, and C's rounding to its type; see docs/verification.md.
  const double u_out = output_roundoff(p), gamma = 2.0 * double(p.k + 4) * 0x1p-24 + 2.0 * u_out;
  const double tol = 4.0 * 0x1p-24 * (std::sqrt(double(p.k)) + 4.0) + 2.0 * double(p.k) * 0x1p-24 + 2.0 * u_out;
  // The stack's rows in turn: row i is row i % M of matrix i / M.
  return case_data::judge_c(raw, s.batch * p.m, p.n, s.ldc, s.c_elem, p.type == Type16::bf16, s.host_ref, s.host_abs,
                            s.host_c0, p.alpha, p.beta, gamma, tol);
}

double Gemm16Case::time_ms(const std::string& impl, int reps) {
  const Gemm16Args g = args();
  return case_data::median_event_ms([&] { gemm16(g, impl); }, reps);
}

}  // namespace parray
