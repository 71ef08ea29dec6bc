// One thread-array model on the GPU: a CUDA thread array's coordinates equal
// a CPU thread array's of the same shape (ThreadIndex), one body template runs
// on both, #sync over a block works with the kernel-local memory kinds
// (smem, rmem), and shapes the hardware cannot launch are refused on the host.
#include <gtest/gtest.h>

#include <vector>

#include "parray/array.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"
#include "parray/memory_kind.hpp"
#include "parray/thread_array.hpp"

using namespace parray;
using parray::cuda::CudaThread;
using parray::cuda::CudaThreadArray;

namespace {

constexpr int kFields = 7;  // tid, tid_0, tid_0_0, tid_0_1, tid_1, tid_1_0, tid_1_1

// The body shared by the CPU and the GPU: record what the thread sees.
template <class Thread>
PARRAY_HD void record(const Thread& t, int* out) {
  int* o = out + t.tid() * kFields;
  o[0] = t.tid();
  o[1] = t.tid(0);
  o[2] = t.tid(0, 0);
  o[3] = t.shape().sub_rank(0) > 1 ? t.tid(0, 1) : -1;
  o[4] = t.rank() > 1 ? t.tid(1) : -1;
  o[5] = t.rank() > 1 ? t.tid(1, 0) : -1;
  o[6] = t.rank() > 1 && t.shape().sub_rank(1) > 1 ? t.tid(1, 1) : -1;
}

std::vector<int> on_gpu(const ThreadShape& shape) {
  Array<int> out(Layout::parse("[" + std::to_string(shape.size() * kFields) + "]"), Memory::device);
  int* p = out.data();
  PARRAY_CUDA_CHECK(cudaMemset(p, 0xff, sizeof(int) * std::size_t(shape.size() * kFields)));
  CudaThreadArray(shape).detour([=] __device__(const CudaThread& t) { record(t, p); });
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int> host(std::size_t(shape.size() * kFields));
  PARRAY_CUDA_CHECK(cudaMemcpy(host.data(), p, host.size() * sizeof(int), cudaMemcpyDeviceToHost));
  return host;
}

std::vector<int> on_cpu(const ThreadShape& shape) {
  std::vector<int> host(std::size_t(shape.size() * kFields), -2);
  for (int flat = 0; flat < shape.size(); ++flat) record(ThreadIndex(shape, flat), host.data());
  return host;
}

// The body of fig 7's transpose for an n x n matrix, n a multiple of 16
// (a __device__ lambda cannot live in a test's body, a private function).
void transpose_fig7(const float* src, float* dst, int n) {
  CudaThreadArray(ThreadShape::nested({{n / 16, n / 16}, {16, 16}})).detour([=] __device__(const CudaThread& t) {
    using A = SDense<16, 17>;                            // smem [16][17]
    using B = SNest<A::dim<0>, SResize<16, A::dim<1>>>;  // [#A_0][16 #A_1]
    using R = SDense<1>;                                 // rmem [1]
    auto tile = smem::create<float, A>();
    auto r = rmem::create<float, R>();
    const int row = t.tid(0, 0) * 16 + t.tid(1, 0), col = t.tid(0, 1) * 16 + t.tid(1, 1);
    r(0) = src[row * n + col];
    tile[B::offset(t.tid(1, 0), t.tid(1, 1))] = r(0);  // tile[$B[$tid_1_0$][$tid_1_1$]$]
    t.sync(1);
    // Thread (y, x) of block (by, bx) writes element (x, y) of the tile to (bx*16 + y, by*16 + x).
    dst[(t.tid(0, 1) * 16 + t.tid(1, 0)) * n + t.tid(0, 0) * 16 + t.tid(1, 1)] = tile(t.tid(1, 1), t.tid(1, 0));
  });
}

}  // namespace

// [[grid]][[block]] and logical shapes: every thread runs once and sees the
// coordinates a CPU thread of the same shape sees.
TEST(GpuThreadArray, SameCoordinatesAsTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  for (const char* text : {"[[2][3]][[4][8]]", "[[8][8]][[16][16]]", "[[5]][[3][7]]", "[[2][2][3]][[2][4][8]]",
                           "[2][2]", "[37][53]", "[1000]", "[3][5][70]", "[1024][1024]"}) {
    const ThreadShape shape = ThreadShape::parse(text);
    EXPECT_EQ(on_gpu(shape), on_cpu(shape)) << text;
  }
}

// The explicit form is CUDA's grid and block, as the paper says:
// $tid_0_0$ = blockIdx.y, $tid_1_1$ = threadIdx.x.
TEST(GpuThreadArray, ExplicitShapeIsGridThenBlock) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const CudaThreadArray fig7(ThreadShape::parse("[[128/16][128/16]][[16][16]]"));
  EXPECT_EQ(fig7.grid().x, 8u);
  EXPECT_EQ(fig7.grid().y, 8u);
  EXPECT_EQ(fig7.block().x, 16u);
  EXPECT_EQ(fig7.block().y, 16u);
  const CudaThreadArray logical({1024, 1024});  // over one block: tiles of 16 x 16
  EXPECT_EQ(logical.block().x * logical.block().y, 256u);
  EXPECT_EQ(CudaThreadArray({2, 2}).grid().x, 1u);  // fits one block of its own shape
}

TEST(GpuThreadArray, RefusesWhatCannotLaunch) {
  EXPECT_THROW(CudaThreadArray(ThreadShape::parse("[[4]][[64][32]]")), Error);  // 2048 threads a block
  EXPECT_THROW(CudaThreadArray(ThreadShape::parse("[[70000][2]][[32]]")), Error);  // grid y over 65535
  EXPECT_THROW(CudaThreadArray({2, 2, 2, 2}), Error);  // a logical array of rank 4
}

// Fig 7's transpose: a block stages a 16 x 16 tile in `smem float2 [16][17]`
// through the view [#A_0][16 #A_1], #sync over the block (sync(1)), and
// writes it transposed; each thread also keeps its element in an rmem array.
TEST(GpuThreadArray, BlockSyncWithSharedAndRegisterArrays) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  constexpr int n = 128;
  std::vector<float> host(n * n);
  for (int i = 0; i < n * n; ++i) host[std::size_t(i)] = float(i % 977) + 0.25f;
  Array<float> in(Layout::parse("[128][128]"), Memory::device), out(Layout::parse("[128][128]"), Memory::device);
  PARRAY_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), host.size() * 4, cudaMemcpyHostToDevice));
  PARRAY_CUDA_CHECK(cudaMemset(out.data(), 0xff, host.size() * 4));
  const float* src = in.data();
  float* dst = out.data();
  transpose_fig7(src, dst, n);
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> back(host.size());
  PARRAY_CUDA_CHECK(cudaMemcpy(back.data(), dst, back.size() * 4, cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) wrong += back[std::size_t(j * n + i)] != host[std::size_t(i * n + j)];
  EXPECT_EQ(wrong, 0);
}
