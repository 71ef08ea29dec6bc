// What the C++ that parrayc generates calls besides the library's own API
// (docs/parray-language.md): types parsed with the .pa line in their errors,
// #create's storage, $dim$ as a C int, $cnt$, static split types, #copy
// inside kernels and between memory kinds, and #mainhost's error report.
#pragma once

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "parray/array.hpp"
#include "parray/core.hpp"
#include "parray/device_layout.hpp"
#include "parray/layout.hpp"
#include "parray/memory_kind.hpp"
#include "parray/static_layout.hpp"
#include "parray/thread_array.hpp"
#include "parray/thread_shape.hpp"
#ifdef __CUDACC__
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"
#endif

namespace parray::pa {

// A declaration's type; an error names the .pa file and line first.
inline Layout parse_type(const char* where, std::string_view dims, const Layout::Symbols& symbols = {},
                         const Layout::Constants& constants = {}) {
  try {
    return Layout::parse(dims, symbols, constants);
  } catch (const Error& e) {
    throw Error(std::string(where).append(": ").append(e.what()));
  }
}

inline ThreadShape parse_shape(const char* where, std::string_view dims, const Layout::Constants& constants = {}) {
  try {
    return ThreadShape::parse(dims, constants);
  } catch (const Error& e) {
    throw Error(std::string(where).append(": ").append(e.what()));
  }
}

// Pinned memory is host memory that the CUDA runtime locks; where there is
// no CUDA runtime the same array is created in paged memory (said once).
inline Memory usable(Memory m) {
  if (m != Memory::pinned || cuda_available()) return m;
  static const bool said =
      std::fprintf(stderr, "parray: no CUDA runtime, pinned arrays are created in paged memory\n") > 0;
  (void)said;
  return Memory::paged;
}

// #create TYPE(x): the storage of x, freed by #destroy or at the end of its scope.
template <class T>
class Storage {
 public:
  Storage(const Layout& type, Memory memory) : array_(std::in_place, type, usable(memory)) {}
  T* data() { return array_ ? array_->data() : nullptr; }
  Memory memory() const { return array_ ? array_->memory() : Memory::paged; }
  void destroy(const char* where) {
    if (!array_) throw Error(std::string(where).append(": #destroy of an array that is already destroyed"));
    array_.reset();
  }

 private:
  std::optional<Array<T>> array_;
};

// $dim(A)$, $size(A)$: a C int, as the paper's printf("%d") takes it.
PARRAY_HD inline int count(index_t n) {
  if (n > INT_MAX) {
#ifdef __CUDA_ARCH__
    __trap();
#else
    throw Error("$dim$/$size$: " + std::to_string(n) + " elements do not fit a C int");
#endif
  }
  return static_cast<int>(n);
}

// $cnt(A)$: the type's elements lie one after another in its order.
PARRAY_HD inline bool contiguous_from(DeviceLayout::Sub s, index_t& stride) {
  if (s.is_leaf()) {
    const bool ok = s.size() <= 1 || s.stride() == stride;
    stride *= s.size();
    return ok;
  }
  const index_t start = stride;
  for (int k = s.rank() - 1; k >= 0; --k)
    if (!contiguous_from(s.sub(k), stride)) return false;
  stride = start * s.size();
  return true;
}
PARRAY_HD inline bool contiguous(DeviceLayout::Sub s) {
  index_t stride = 1;
  return contiguous_from(s, stride);
}
template <class S>
PARRAY_HD constexpr bool contiguous() {
  for (index_t i = 0; i < S::size; ++i)
    if (S::offset(i) != S::offset(0) + i) return false;
  return true;
}

// A static (smem, rmem) type as an object, for #copy.
template <class S>
struct Static {
  PARRAY_HD static constexpr index_t size() { return S::size; }
  PARRAY_HD static constexpr index_t offset(index_t i) { return S::offset(i); }
};

// A static split of a one-dimensional static type: [[4][4] 16 #S_1] is
// SSplit<SResize<16, S::dim<1>>, 4, 4>.
template <class Base, index_t... Extents>
struct SSplitOf;
template <class Base, index_t Extent>
struct SSplitOf<Base, Extent> {
  using type = SLeaf<Extent, Base::stride()>;
};
template <class Base, index_t First, index_t... Rest>
struct SSplitOf<Base, First, Rest...> {
  static constexpr index_t inner = (index_t{1} * ... * Rest);
  using type = SNest<SLeaf<First, Base::stride() * inner>, typename SSplitOf<Base, Rest...>::type>;
};
template <class Base, index_t... Extents>
struct SSplitCheck {
  static_assert(Base::rank == 1, "a static split divides a one-dimensional type");
  static_assert((index_t{1} * ... * Extents) == Base::size,
                "a split's extents must cover what it splits (resize first: [[4][4] 16 #S_1])");
  using type = typename SSplitOf<Base, Extents...>::type;
};
template <class Base, index_t... Extents>
using SSplit = typename SSplitCheck<Base, Extents...>::type;

// #copy SRC(p) to DST(q) where the program runs (host memory on the host, a
// kernel's own pointers in a kernel): element i of SRC's order to element i
// of DST's.
template <class Src, class SrcType, class Dst, class DstType>
PARRAY_HD void copy_elements(const Src& src, const SrcType& src_type, Dst&& dst, const DstType& dst_type) {
  if (src_type.size() != dst_type.size()) {
#ifdef __CUDA_ARCH__
    printf("parray #copy: the two types have different sizes\n");
    __trap();
#else
    throw Error("#copy: the source type has " + std::to_string(src_type.size()) + " elements, the destination " +
                std::to_string(dst_type.size()));
#endif
  }
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
  for (index_t i = 0; i < src_type.size(); ++i) dst[dst_type.offset(i)] = src[src_type.offset(i)];
}

// #copy on the host between arrays of any memory kinds: host memory on both
// sides element by element (any rank); device memory on either side through
// parray::copy of two matrix views (rank 2).
template <class T>
void copy_arrays(const char* where, const T* src, const Layout& src_type, Memory src_memory, T* dst,
                 const Layout& dst_type, Memory dst_memory) {
  try {
    if (src_memory != Memory::device && dst_memory != Memory::device) return copy(src, src_type, dst, dst_type);
    const MatrixView<const T> s{src, MatrixLayout::from(src_type), src_memory};
    const MatrixView<T> d{dst, MatrixLayout::from(dst_type), dst_memory};
    copy(s, d);
  } catch (const Error& e) {
    throw Error(std::string(where).append(": ").append(e.what()));
  }
}

// A declaration at file scope is made before main() runs, where nothing can
// catch its error: the error is one line and exit status 2 there.
template <class F>
auto or_exit(F&& make) -> decltype(make()) {
  try {
    return make();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "parray: error: %s\n", e.what());
    std::exit(2);
  }
}

// #mainhost's error: one line, exit status 2.
inline int report(const std::exception& e) {
  std::fprintf(stderr, "parray: error: %s\n", e.what());
  return 2;
}

#ifdef __CUDACC__
// The paper's INIT_GPU(d): the device the host thread uses.
inline void init_gpu(int device) { PARRAY_CUDA_CHECK(cudaSetDevice(device)); }
#else
inline void init_gpu(int) { throw Error("INIT_GPU: a program without CUDA code (.pa.cu) has no GPU to use"); }
#endif

}  // namespace parray::pa

#define INIT_GPU(device) ::parray::pa::init_gpu(device)
