// Launcher of GEMM step 17 (gemm/17_short_k.cuh): K <= 32, any strided
// layouts, FP32 and FP64. A C whose columns are contiguous (column-major) is computed as
// C^T = B^T A^T, so that the kernel's rows of C are always along its unit
// stride where it has one.
#include <cstdint>
#include <string>
#include <utility>

#include "gemm/17_short_k.cuh"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"

namespace parray::cuda {

std::string short_k_unsupported(index_t k, const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) {
  if (k > ladder::ShortK<float>::kMax) return "K > 32 (step 17 keeps A's and B's K-long panels in shared memory)";
  if (!a.is_strided() || !b.is_strided() || !c.is_strided()) return "A, B and C must be strided layouts";
  return "";
}

namespace {

template <class T>
bool short_k(const GemmCall<T>& call) {
  using S = ladder::ShortK<T>;
  MatrixView<const T> a = call.a, b = call.b;
  MatrixView<T> c = call.c;
  if (!short_k_unsupported(a.cols(), a.layout, b.layout, c.layout).empty()) return false;
  if (c.layout.rows.stride[0] == 1 && c.layout.cols.stride[0] != 1 && c.cols() > 1) {  // C^T = B^T A^T
    std::swap(a, b);
    a = a.t(), b = b.t(), c = c.t();
  }
  const index_t m = c.rows(), n = c.cols(), k = a.cols();
  if (m == 0 || n == 0) return true;
  const ladder::ShortKOperands<T> o{a.data, a.layout.rows.stride[0], a.layout.cols.stride[0],
                                 b.data, b.layout.rows.stride[0], b.layout.cols.stride[0],
                                 c.data, c.layout.rows.stride[0], c.layout.cols.stride[0]};
  const index_t tiles_n = (n + S::BN - 1) / S::BN, tiles = (m + S::BM - 1) / S::BM * tiles_n;
  if (tiles > 0x7fffffff) throw Error("cuda-17-short-k: too many tiles for one grid");
  const bool vec_c =
      (n == 1 || o.csc == 1) && o.rsc % S::TN == 0 && reinterpret_cast<std::uintptr_t>(c.data) % 16 == 0;
  const cudaStream_t s = on_stream(call.stream);
  const bool read_c = call.beta != T(0);
  const auto kernel = vec_c ? (read_c ? ladder::short_k_gemm<T, true, true> : ladder::short_k_gemm<T, true, false>)
                            : (read_c ? ladder::short_k_gemm<T, false, true> : ladder::short_k_gemm<T, false, false>);
  kernel<<<unsigned(tiles), S::NT, 0, s>>>(m, n, int(k), call.alpha, call.beta, o, tiles_n);
  PARRAY_CUDA_CHECK_LAUNCH();
  return true;
}

template <class T>
void short_k_only(const GemmCall<T>& call) {
  if (!short_k(call))
    throw Error("cuda-17-short-k: " + short_k_unsupported(call.a.cols(), call.a.layout, call.b.layout, call.c.layout));
}

}  // namespace

bool gemm_short_k(const GemmCall<float>& call) { return short_k(call); }
bool gemm_short_k(const GemmCall<double>& call) { return short_k(call); }
void gemm_short_k_only(const GemmCall<float>& call) { short_k_only(call); }
void gemm_short_k_only(const GemmCall<double>& call) { short_k_only(call); }

}  // namespace parray::cuda
