// Launcher of GEMM step 17 (gemm/17_short_k.cuh): K <= 32, any strided
// layouts. A C whose columns are contiguous (column-major) is computed as
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
  if (k > ladder::ShortK::kMax) return "K > 32 (step 17 keeps A's and B's K-long panels in shared memory)";
  if (!a.is_strided() || !b.is_strided() || !c.is_strided()) return "A, B and C must be strided layouts";
  return "";
}

bool gemm_short_k(const GemmCall<float>& call) {
  using S = ladder::ShortK;
  MatrixView<const float> a = call.a, b = call.b;
  MatrixView<float> c = call.c;
  if (!short_k_unsupported(a.cols(), a.layout, b.layout, c.layout).empty()) return false;
  if (c.layout.rows.stride[0] == 1 && c.layout.cols.stride[0] != 1 && c.cols() > 1) {  // C^T = B^T A^T
    std::swap(a, b);
    a = a.t(), b = b.t(), c = c.t();
  }
  const index_t m = c.rows(), n = c.cols(), k = a.cols();
  if (m == 0 || n == 0) return true;
  const ladder::ShortKOperands o{a.data, a.layout.rows.stride[0], a.layout.cols.stride[0],
                                 b.data, b.layout.rows.stride[0], b.layout.cols.stride[0],
                                 c.data, c.layout.rows.stride[0], c.layout.cols.stride[0]};
  const index_t tiles_n = (n + S::BN - 1) / S::BN, tiles = (m + S::BM - 1) / S::BM * tiles_n;
  if (tiles > 0x7fffffff) throw Error("cuda-17-short-k: too many tiles for one grid");
  const bool vec_c = (n == 1 || o.csc == 1) && o.rsc % 4 == 0 && reinterpret_cast<std::uintptr_t>(c.data) % 16 == 0;
  const cudaStream_t s = on_stream(call.stream);
  if (vec_c) ladder::short_k_gemm<true><<<unsigned(tiles), S::NT, 0, s>>>(m, n, int(k), call.alpha, call.beta, o, tiles_n);
  else ladder::short_k_gemm<false><<<unsigned(tiles), S::NT, 0, s>>>(m, n, int(k), call.alpha, call.beta, o, tiles_n);
  PARRAY_CUDA_CHECK_LAUNCH();
  return true;
}

void gemm_short_k_only(const GemmCall<float>& call) {
  if (!gemm_short_k(call))
    throw Error("cuda-17-short-k: " + short_k_unsupported(call.a.cols(), call.a.layout, call.b.layout, call.c.layout));
}

}  // namespace parray::cuda
