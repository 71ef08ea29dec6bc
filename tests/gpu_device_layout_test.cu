// One offset semantics on host and device: a kernel evaluates a DeviceLayout
// (a __grid_constant__ parameter) at every flat index, every (i, j) and
// through a sub-type, and every sub-type as a translated kernel reads it (a
// DeviceSub), and the results must equal the host Layout's.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "parray/array.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda_runtime.hpp"
#include "parray/device_layout.hpp"
#include "parray/named_layouts.hpp"
#include "parray/parrayc.hpp"

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

// A translated kernel's form of sub-type `sub` (parrayc.hpp): out[4 x + f]
// is form f of its offset at x (the general build's; the strided build's,
// #copy's walk and the two-digit build's where the sub-type has that form,
// else -2).
__global__ void kernel_sub_offsets(const __grid_constant__ DeviceLayout type, const pa::DeviceSub sub, index_t* out) {
  const index_t x = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= sub.size()) return;
  out[4 * x] = sub.offset<pa::Build::general>(type, x);
  out[4 * x + 1] = sub.strided() ? sub.offset<pa::Build::strided>(type, x) : -2;
  out[4 * x + 3] = sub.fast_two_digits() ? sub.offset<pa::Build::two_digits>(type, x) : -2;
  if (x == 0 && sub.two_digits()) {  // the walk of #copy, by one thread
    index_t inner = 0, at = 0;
    for (index_t i = 0; i < sub.size(); ++i, sub.advance(inner, at)) out[4 * i + 2] = at;
  } else if (!sub.two_digits()) {
    out[4 * x + 2] = -2;
  }
}

// Each sub-type's offsets in every form, on the device, against the host Layout.
void expect_kernel_subs_same(const Layout& l, const DeviceLayout& table, const DeviceLayout::Sub& d) {
  const pa::DeviceSub sub = pa::DeviceSub::of(d);
  const std::size_t n = std::size_t(l.size());
  index_t* out = nullptr;
  PARRAY_CUDA_CHECK(cudaMalloc(&out, 4 * n * sizeof(index_t)));
  PARRAY_CUDA_CHECK(cudaMemset(out, 0xff, 4 * n * sizeof(index_t)));
  kernel_sub_offsets<<<unsigned((n + 127) / 128), 128>>>(table, sub, out);
  PARRAY_CUDA_CHECK_LAUNCH();
  std::vector<index_t> got(4 * n);
  PARRAY_CUDA_CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(index_t), cudaMemcpyDeviceToHost));
  PARRAY_CUDA_CHECK(cudaFree(out));
  for (std::size_t x = 0; x < n; ++x) {
    const index_t want = l.offset(index_t(x));
    ASSERT_EQ(got[4 * x], want) << "x = " << x;
    ASSERT_EQ(got[4 * x + 1], sub.strided() ? want : -2) << "x = " << x;
    ASSERT_EQ(got[4 * x + 2], sub.two_digits() ? want : -2) << "x = " << x;
    ASSERT_EQ(got[4 * x + 3], sub.fast_two_digits() ? want : -2) << "x = " << x;
  }
  if (l.is_leaf()) return;
  for (int k = 0; k < l.rank(); ++k) expect_kernel_subs_same(l.dim(k), table, d.sub(k));
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
    const DeviceLayout table = DeviceLayout::from(l);
    expect_kernel_subs_same(l, table, table.type());
  }
}

// #copy across memory kinds and layouts: every named layout to every other,
// host (paged, pinned) <-> device and device <-> device, at an odd size; the
// destination poisoned first, every element compared. A destination with
// holes (a column block of a wider matrix) must keep the holes' data.
TEST(GpuCopy, AnyLayoutAnyKindInOneCall) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const index_t r = 37, c = 45;
  const std::vector<std::pair<Memory, Memory>> kinds = {{Memory::paged, Memory::device},
                                                        {Memory::pinned, Memory::device},
                                                        {Memory::device, Memory::device},
                                                        {Memory::device, Memory::paged},
                                                        {Memory::device, Memory::pinned}};
  for (const std::string& from : matrix_layout_names())
    for (const std::string& to : matrix_layout_names())
      for (auto [src_kind, dst_kind] : kinds) {
        SCOPED_TRACE(from + " -> " + to + ", " + memory_name(src_kind) + " -> " + memory_name(dst_kind));
        const MatrixType st = make_matrix_type(from, r, c), dt = make_matrix_type(to, r, c);
        Array<float> src_host(st.storage, Memory::paged), dst_host(dt.storage, Memory::paged);
        for (index_t i = 0; i < src_host.storage_elements(); ++i) src_host[i] = float(i % 977) + 0.5f;
        for (index_t i = 0; i < dst_host.storage_elements(); ++i) dst_host[i] = -1.f;  // poison
        Array<float> src(st.storage, src_kind), dst(dt.storage, dst_kind);
        copy_bytes(src.data(), src_kind, src_host.data(), Memory::paged, std::size_t(src.storage_elements()) * 4);
        copy_bytes(dst.data(), dst_kind, dst_host.data(), Memory::paged, std::size_t(dst.storage_elements()) * 4);
        copy<float>(MatrixView<const float>(src.view(st.view)), dst.view(dt.view));
        copy_bytes(dst_host.data(), Memory::paged, dst.data(), dst_kind, std::size_t(dst.storage_elements()) * 4);
        const MatrixView<float> s = src_host.view(st.view), d = dst_host.view(dt.view);
        for (index_t i = 0; i < r; ++i)
          for (index_t j = 0; j < c; ++j) ASSERT_EQ(d(i, j), s(i, j)) << "(" << i << ", " << j << ")";
      }
}

TEST(GpuCopy, ADestinationWithHolesKeepsThem) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device: GPU tests skipped";
  const index_t r = 19, c = 23, ld = 40;  // a 19 x 23 block of a 19 x 40 row-major matrix
  std::vector<float> wide(std::size_t(r * ld), 7.f), want(wide);
  Array<float> src(Layout::dense({c, r}), Memory::device);  // column-major source
  std::vector<float> src_host(std::size_t(r * c));
  for (std::size_t x = 0; x < src_host.size(); ++x) src_host[x] = float(x);
  copy_bytes(src.data(), Memory::device, src_host.data(), Memory::paged, src_host.size() * 4);
  const MatrixView<const float> s{src.data(), MatrixLayout::col_major(r, c, r), Memory::device};
  copy<float>(s, MatrixView<float>{wide.data(), MatrixLayout::row_major(r, c, ld), Memory::paged});
  for (index_t i = 0; i < r; ++i)
    for (index_t j = 0; j < c; ++j) want[std::size_t(i * ld + j)] = src_host[std::size_t(j * r + i)];
  EXPECT_EQ(wide, want);
}
