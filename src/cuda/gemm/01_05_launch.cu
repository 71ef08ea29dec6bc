// Launchers of ladder steps 1-5 and the paper's figure 11 and 12-13 GEMMs
// (FP32 and FP64).
#include "gemm/01_naive_1d.cuh"
#include "gemm/02_grid_stride_2d.cuh"
#include "gemm/03_coalesced.cuh"
#include "gemm/04_smem_tiles.cuh"
#include "gemm/05_smem_transposed_a.cuh"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/cuda/thread_array.cuh"

namespace parray::cuda {

namespace {
void check_grid_y(index_t y, const char* impl) {
  if (y > 65535)
    throw Error(std::string(impl) + ": needs " + std::to_string(y) + " blocks in grid y (max 65535)");
}
}  // namespace

template <class T>
void gemm_naive_1d(const GemmCall<T>& call, int bs) {
  const cudaStream_t s = on_stream(call.stream);
  check_int_sizes(call, "cuda-01-naive");
  const int M = int(call.c.rows()), N = int(call.c.cols()), K = int(call.a.cols());
  check_grid_y(ceil_div(N, bs), "cuda-01-naive");
  const dim3 grid(M, ceil_div(N, bs));  // the CUDA lab report: (rows, cols / blocksize)
  with_operands(call, [&](auto a, auto b, auto c) {
    switch (bs) {
      case 32: ladder::naive_1d<32><<<grid, 32, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c); break;
      case 64: ladder::naive_1d<64><<<grid, 64, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c); break;
      case 128: ladder::naive_1d<128><<<grid, 128, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c); break;
      case 256: ladder::naive_1d<256><<<grid, 256, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c); break;
      case 512: ladder::naive_1d<512><<<grid, 512, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c); break;
      default: throw Error("cuda-01-naive: block size " + std::to_string(bs) + " (32, 64, 128, 256 or 512)");
    }
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

template <class T>
void gemm_grid_stride_2d(const GemmCall<T>& call) {
  const cudaStream_t s = on_stream(call.stream);
  check_int_sizes(call, "cuda-02-grid-stride");
  const int M = int(call.c.rows()), N = int(call.c.cols()), K = int(call.a.cols());
  // A bounded grid: the grid-stride loops cover the rest.
  const dim3 grid(std::min(ceil_div(N, 16), 1024u), std::min(ceil_div(M, 16), 1024u));
  with_operands(call, [&](auto a, auto b, auto c) {
    ladder::grid_stride_2d<<<grid, dim3(16, 16), 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

template <class T>
void gemm_coalesced(const GemmCall<T>& call) {
  const cudaStream_t s = on_stream(call.stream);
  check_int_sizes(call, "cuda-03-coalesced");
  const int M = int(call.c.rows()), N = int(call.c.cols()), K = int(call.a.cols());
  const bool cols_fast = !call.c.layout.is_col_major();
  const int fast = cols_fast ? N : M, slow = cols_fast ? M : N;
  check_grid_y(ceil_div(slow, 8), "cuda-03-coalesced");
  const dim3 grid(ceil_div(fast, 32), ceil_div(slow, 8)), block(32, 8);
  with_operands(call, [&](auto a, auto b, auto c) {
    if (cols_fast) ladder::coalesced<true><<<grid, block, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    else ladder::coalesced<false><<<grid, block, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

template <class T>
void gemm_smem_tiles(const GemmCall<T>& call) {
  const cudaStream_t s = on_stream(call.stream);
  check_int_sizes(call, "cuda-04-smem-tiles");
  const int M = int(call.c.rows()), N = int(call.c.cols()), K = int(call.a.cols());
  check_grid_y(ceil_div(M, 16), "cuda-04-smem-tiles");
  with_operands(call, [&](auto a, auto b, auto c) {
    ladder::smem_tiles<16>
        <<<dim3(ceil_div(N, 16), ceil_div(M, 16)), dim3(16, 16), 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

template <class T>
void gemm_smem_transposed_a(const GemmCall<T>& call, bool pad) {
  const cudaStream_t s = on_stream(call.stream);
  check_int_sizes(call, "cuda-05-smem-at");
  const int M = int(call.c.rows()), N = int(call.c.cols()), K = int(call.a.cols());
  check_grid_y(ceil_div(M, 16), "cuda-05-smem-at");
  const dim3 grid(ceil_div(N, 16), ceil_div(M, 16)), block(16, 16);
  with_operands(call, [&](auto a, auto b, auto c) {
    if (pad) ladder::smem_transposed_a<16, 1><<<grid, block, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    else ladder::smem_transposed_a<16, 0><<<grid, block, 0, s>>>(M, N, K, call.alpha, a, b, call.beta, c);
    PARRAY_CUDA_CHECK_LAUNCH();
  });
}

// ---- the paper's GEMMs, written with CUDA thread arrays ---------------------

// Figure 11: thread array [2][2]; thread (tid_0, tid_1) computes quadrant
// [[tid_0][i]][[tid_1][j]] of C with the CPU code of figure 10 unchanged.
template <class T, class OpA, class OpB, class OpC>
void paper_2x2(cudaStream_t s, int M, int N, int K, T alpha, OpA a, OpB b, T beta, OpC c) {
  const int hm = (M + 1) / 2, hn = (N + 1) / 2;  // $dim_0_1(M)$, $dim_1_1(M)$
  CudaThreadArray({2, 2}).detour([=] __device__(CudaThread t) {
    for (int i = int(t.tid(0)) * hm; i < min(M, int(t.tid(0) + 1) * hm); ++i)
      for (int j = int(t.tid(1)) * hn; j < min(N, int(t.tid(1) + 1) * hn); ++j) {
        T cvalue = 0;
        for (int k = 0; k < K; ++k) cvalue += a(i, k) * b(k, j);
        store_c(c(i, j), alpha * cvalue, beta);
      }
  }, s);
}

// Figures 12-13 (and 17-18, which only change the type): thread array
// [M][N], one thread per element; pa = a + $M[tid_0][0]$, pb = b + $M[0][tid_1]$.
template <class T, class OpA, class OpB, class OpC>
void paper_elem(cudaStream_t s, int M, int N, int K, T alpha, OpA a, OpB b, T beta, OpC c) {
  CudaThreadArray::over(M, N, {16, 16}).detour([=] __device__(CudaThread t) {
    if (!t.inside()) return;
    const index_t i = t.tid(0), j = t.tid(1);
    const T* pa = a.p + a.row(i);
    const T* pb = b.p + b.col(j);
    T cvalue = 0;
    for (int k = 0; k < K; ++k) cvalue += pa[a.col(k)] * pb[b.row(k)];
    store_c(c(i, j), alpha * cvalue, beta);
  }, s);
}

template <class T>
void gemm_paper_2x2(const GemmCall<T>& call) {
  check_int_sizes(call, "parray-cuda-2x2");
  with_operands(call, [&](auto a, auto b, auto c) {
    paper_2x2(on_stream(call.stream), int(call.c.rows()), int(call.c.cols()), int(call.a.cols()), call.alpha, a, b,
              call.beta, c);
  });
}

template <class T>
void gemm_paper_elem(const GemmCall<T>& call) {
  check_int_sizes(call, "parray-cuda-elem");
  if (ceil_div(call.c.rows(), 16) > 65535) throw Error("parray-cuda-elem: M over 65535 * 16");
  with_operands(call, [&](auto a, auto b, auto c) {
    paper_elem(on_stream(call.stream), int(call.c.rows()), int(call.c.cols()), int(call.a.cols()), call.alpha, a, b,
               call.beta, c);
  });
}

#define PARRAY_INSTANTIATE(T)                                             \
  template void gemm_naive_1d<T>(const GemmCall<T>&, int);                \
  template void gemm_grid_stride_2d<T>(const GemmCall<T>&);               \
  template void gemm_coalesced<T>(const GemmCall<T>&);                    \
  template void gemm_smem_tiles<T>(const GemmCall<T>&);                   \
  template void gemm_smem_transposed_a<T>(const GemmCall<T>&, bool);      \
  template void gemm_paper_2x2<T>(const GemmCall<T>&);                    \
  template void gemm_paper_elem<T>(const GemmCall<T>&);
PARRAY_INSTANTIATE(float)
PARRAY_INSTANTIATE(double)
#undef PARRAY_INSTANTIATE

}  // namespace parray::cuda
