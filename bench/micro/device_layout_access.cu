// What an access through a Parray type costs in a kernel: a gather of an
// 8192 x 8192 FP32 matrix into row-major order, out(i, j) = in[type(i, j)],
// against the same index written by hand with run-time strides, for
// row-major storage and the paper's blocked storages (fig 17 x4, fig 18(b)).
// The type in three forms (device_layout.hpp, matrix.hpp): FixedMatrix (digit
// counts in the C++ type, chosen on the host by with_fixed_matrix), the
// DeviceLayout table (a __grid_constant__ parameter), MatrixLayout (digit
// counts at run time).
// CUDA events, 5 warm-up and 31 timed launches each, median; every variant's
// output checked against the hand-written one. CSV on stdout.
//   nvcc -O3 -std=c++20 -arch=sm_90a -Iinclude -o dla bench/micro/device_layout_access.cu && ./dla
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_check.h"

#include "parray/device_layout.hpp"
#include "parray/named_layouts.hpp"

using parray::index_t;

namespace {

// Hand-written indices with run-time parameters, as a kernel author writes them.
struct RowMajor {
  index_t ld;
  __device__ index_t operator()(index_t i, index_t j) const { return i * ld + j; }
};
// fig 18(b): storage [2][2][hr][hc], row i -> (i / hr, i % hr), column j -> (j / hc, j % hc).
struct Fig18 {
  index_t hr, hc;
  __device__ index_t operator()(index_t i, index_t j) const {
    return (i / hr) * (2 * hr * hc) + (j / hc) * (hr * hc) + (i % hr) * hc + j % hc;
  }
};
// fig 17 x4 (fig 18(a)): storage [4][r][qc], column j -> (j / qc, j % qc).
struct Fig17x4 {
  index_t rows, qc;
  __device__ index_t operator()(index_t i, index_t j) const { return (j / qc) * (rows * qc) + i * qc + j % qc; }
};

template <class Index>
__global__ void gather_hand(const float* in, float* out, index_t rows, index_t cols, Index idx) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j < cols) out[i * cols + j] = in[idx(i, j)];
}

__global__ void gather_type(const float* in, float* out, index_t rows, index_t cols,
                            const __grid_constant__ parray::DeviceLayout type) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j < cols) out[i * cols + j] = in[type(i, j)];
}

// The matrix form (two mixed-radix axes with run-time digit counts, by
// value), as the GEMM kernels take their operands.
__global__ void gather_matrix(const float* in, float* out, index_t rows, index_t cols, parray::MatrixLayout m) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j < cols) out[i * cols + j] = in[m.offset(i, j)];
}

template <class Fixed>
__global__ void gather_fixed(const float* in, float* out, index_t rows, index_t cols, Fixed type) {
  const index_t j = index_t(blockIdx.x) * blockDim.x + threadIdx.x, i = blockIdx.y;
  if (j < cols) out[i * cols + j] = in[type(i, j)];
}

template <class Launch>
double median_ms(Launch launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int w = 0; w < 5; ++w) launch();
  std::vector<float> ms;
  for (int r = 0; r < 31; ++r) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  std::sort(ms.begin(), ms.end());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return ms[ms.size() / 2];
}

bool same(const float* x, const float* y, std::size_t n) {
  std::vector<float> hx(n), hy(n);
  CHECK(cudaMemcpy(hx.data(), x, n * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hy.data(), y, n * 4, cudaMemcpyDeviceToHost));
  return hx == hy;
}

// One storage: the hand-written index, then the type in each form, each
// output checked against the hand-written one's.
template <class Index>
void compare(const char* name, index_t n, Index hand, const float* in, float* out_hand, float* out_type) {
  const parray::Layout view = parray::make_matrix_type(name, n, n).view;
  const parray::DeviceLayout table = parray::DeviceLayout::from(view);
  const parray::MatrixLayout matrix = parray::MatrixLayout::from(view);
  const dim3 grid(unsigned((n + 255) / 256), unsigned(n)), block(256);
  const std::size_t count = std::size_t(n * n);
  const double t_hand = median_ms([&] { gather_hand<<<grid, block>>>(in, out_hand, n, n, hand); });
  double t_fixed = 0, t_table = 0, t_matrix = 0;
  bool ok = true;
  parray::with_fixed_matrix(view, [&](auto fixed) {
    t_fixed = median_ms([&] { gather_fixed<<<grid, block>>>(in, out_type, n, n, fixed); });
  });
  ok = ok && same(out_hand, out_type, count);
  t_table = median_ms([&] { gather_type<<<grid, block>>>(in, out_type, n, n, table); });
  ok = ok && same(out_hand, out_type, count);
  t_matrix = median_ms([&] { gather_matrix<<<grid, block>>>(in, out_type, n, n, matrix); });
  ok = ok && same(out_hand, out_type, count);
  const double gb = 2.0 * double(n) * double(n) * 4 / 1e9;
  std::printf("%s,%lld,%.4f,%.4f,%.4f,%.4f,%.1f,%.3f,%.3f,%.3f,%s\n", name, (long long)n, t_hand, t_fixed, t_table,
              t_matrix, gb / (t_hand * 1e-3), t_fixed / t_hand, t_table / t_hand, t_matrix / t_hand,
              ok ? "ok" : "MISMATCH");
}

}  // namespace

int main() {
  const index_t n = 8192;
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "%s\n", prop.name);
  const std::size_t elems = std::size_t(n) * std::size_t(n);
  float *in, *a, *b;
  CHECK(cudaMalloc(&in, elems * 4));
  CHECK(cudaMalloc(&a, elems * 4));
  CHECK(cudaMalloc(&b, elems * 4));
  std::vector<float> h(elems);
  for (std::size_t x = 0; x < elems; ++x) h[x] = float(x % 1000003);
  CHECK(cudaMemcpy(in, h.data(), elems * 4, cudaMemcpyHostToDevice));
  std::printf("layout,n,hand_ms,fixed_ms,table_ms,matrix_ms,hand_gbps,fixed_over_hand,table_over_hand,"
              "matrix_over_hand,check\n");
  compare("row", n, RowMajor{n}, in, a, b);
  compare("fig17x4", n, Fig17x4{n, n / 4}, in, a, b);
  compare("fig18", n, Fig18{n / 2, n / 2}, in, a, b);
  CHECK(cudaFree(in));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return 0;
}
