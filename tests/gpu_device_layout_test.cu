// One offset semantics on host and device: a kernel evaluates a DeviceLayout
// (a __grid_constant__ parameter) at every flat index, every (i, j) and
// through a sub-type, and the results must equal the host Layout's.
#include <gtest/gtest.h>

#include <vector>

#include "parray/array.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda_runtime.hpp"
#include "parray/device_layout.hpp"
#include "parray/named_layouts.hpp"

using namespace parray;

namespace {

// out[0, size): flat offsets; out[size, 2 size): offsets of (i, j) in row-major
// order of the coordinates (rank 2); out[2 size, 2 size + size(A_1)): A_1's offsets.
__global__ void offsets_kernel(const __grid_constant__ DeviceLayout type, index_t* out) {
  const index_t n = type.size();
  const index_t x = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x < n) out[x] = type.offset(x);
  if (x < n && type.rank() == 2) {
    const index_t cols = type.sub(1).size();
    out[n + x] = type(x / cols, x % cols);
  }
  if (type.rank() >= 2 && x < type.sub(1).size()) out[2 * n + x] = type.sub(1).offset(x);
}

std::vector<index_t> host_offsets(const Layout& l) {
  const index_t n = l.size();
  std::vector<index_t> v(std::size_t(2 * n + (l.rank() >= 2 ? l.dim(1).size() : 0)), -1);
  for (index_t x = 0; x < n; ++x) v[std::size_t(x)] = l.offset(x);
  if (l.rank() == 2)
    for (index_t x = 0; x < n; ++x) v[std::size_t(n + x)] = l(x / l.dim(1).size(), x % l.dim(1).size());
  if (l.rank() >= 2)
    for (index_t x = 0; x < l.dim(1).size(); ++x) v[std::size_t(2 * n + x)] = l.dim(1).offset(x);
  return v;
}

std::vector<index_t> device_offsets(const Layout& l, std::size_t count) {
  index_t* d = nullptr;
  PARRAY_CUDA_CHECK(cudaMalloc(&d, count * sizeof(index_t)));
  PARRAY_CUDA_CHECK(cudaMemset(d, 0xff, count * sizeof(index_t)));  // -1: an unwritten slot shows
  offsets_kernel<<<unsigned((l.size() + 127) / 128), 128>>>(DeviceLayout::from(l), d);
  PARRAY_CUDA_CHECK_LAUNCH();
  std::vector<index_t> v(count);
  PARRAY_CUDA_CHECK(cudaMemcpy(v.data(), d, count * sizeof(index_t), cudaMemcpyDeviceToHost));
  PARRAY_CUDA_CHECK(cudaFree(d));
  return v;
}

}  // namespace

TEST(GpuDeviceLayout, DeviceOffsetsEqualHostOffsets) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const Layout a = Layout::parse("[[3][2]][4]");
  std::vector<Layout> types = {a, Layout::parse("[#A_1][[#A_0_1][#A_0_0]]", {{"A", a}}),
                               Layout::parse("[[4][4]][[2][[3][5]]]")};
  for (const std::string& name : matrix_layout_names())
    for (index_t r : {5, 64, 97}) types.push_back(make_matrix_type(name, r, r + 6).view);
  for (const Layout& l : types) {
    SCOPED_TRACE(l.str());
    const std::vector<index_t> want = host_offsets(l);
    EXPECT_EQ(device_offsets(l, want.size()), want);
  }
}
