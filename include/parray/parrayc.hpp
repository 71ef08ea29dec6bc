// What the C++ that parrayc generates calls besides the library's own API
// (docs/parray-language.md): types parsed with the .pa line in their errors,
// #create's storage, $dim$ as a C int, $cnt$, static split types, #copy
// inside kernels and between memory kinds, and #mainhost's error report.
#pragma once

#include <climits>
#include <cstdint>
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

// Device code that a kernel rarely runs, kept out of its loops' registers.
#if defined(__CUDACC__)
#define PARRAY_PA_OUT_OF_LINE __noinline__
#else
#define PARRAY_PA_OUT_OF_LINE
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

// The builds of a translated kernel (docs/parray-language.md): parrayc
// emits the kernel once per build, and the host launches the fastest one
// that the types at hand allow (DeviceSub says which they allow).
//   strided     every node a $...$ offset reads is one stride: an offset is
//               one multiply, nothing to branch on, so loops over it unroll
//               into straight code
//   two_digits  every such node has at most two digits (a blocked dimension:
//               blocks and the place in a block) and fewer than 2^32
//               elements: an offset is a division by a constant the host
//               prepared (a multiply-high and a shift) and three multiply-adds,
//               again without a branch
//   general     anything: a stride one multiply, a blocked node's digits
//               inline, a node that is no mixed-radix number through the
//               type's table, out of line; a branch per access
// In the first two, the types those nodes belong to span fewer than 2^31
// elements (an offset is an int), every node a #copy reads has at most two
// digits (walked with a counter, no division) and every $cnt$ holds (it is
// `true`).
enum class Build { general, two_digits, strided };

// A host-created type's sub-type as a kernel reads it ($A_1_0[i]$,
// $size(A_1_1)$, $cnt(B_1_1_1)$): made on the host before the launch and
// captured by the kernel, so that its digits, size and contiguity lie at
// fixed places of the kernel's parameters (operands read from the constant
// bank, as a hand-written kernel's strides are) instead of being looked up in
// the type's table at every access.
class DeviceSub {
 public:
  static constexpr int kMaxDigits = 4;

  static DeviceSub of(DeviceLayout::Sub s) {
    DeviceSub d;
    d.node_ = s.node_index();
    d.size_ = s.size();
    d.contiguous_ = ::parray::pa::contiguous(s);
    d.narrow_ = d.size_ <= index_t{UINT32_MAX};
    d.int_offsets_ = s.table().span() <= index_t{INT32_MAX};
    index_t extent[kMaxDigits], stride[kMaxDigits];
    int count = 0;
    if (s.digits(kMaxDigits, count, extent, stride)) d.set_digits(merged(count, extent, stride), extent, stride);
    return d;
  }
  PARRAY_HD index_t size() const { return size_; }
  PARRAY_HD bool contiguous() const { return contiguous_; }
  // What Build::strided reads: one stride, every offset of the type an int.
  PARRAY_HD bool strided() const { return digits_ == 1 && int_offsets_; }
  // At most two digits (a tile's rows and its elements in a row): what a
  // #copy walks outside the general build.
  PARRAY_HD bool two_digits() const { return digits_ == 1 || digits_ == 2; }
  // What Build::two_digits reads: at most two digits, fewer than 2^32
  // elements, every offset of the type an int.
  PARRAY_HD bool fast_two_digits() const { return fast_; }
  // The offset of flat index i in build B (what the host found this node
  // to be allows it); `table` is the type's DeviceLayout. Outside the
  // general build an int, as the paper's C offsets are: the type's span is
  // under 2^31 there, so a sum of a coordinate's offsets is one too, and an
  // int takes one register where an index_t takes two (fig 21's kernel: 68
  // registers with index_t offsets, 61 with int, so eight blocks of 128 on an
  // SM instead of seven; its two-digit build 74 and 58).
  template <Build B>
  PARRAY_HD std::conditional_t<B == Build::general, index_t, int> offset(const DeviceLayout& table,
                                                                           index_t i) const {
    if constexpr (B == Build::strided) {
      return static_cast<int>(i) * static_cast<int>(stride_[kInner]);
    } else if constexpr (B == Build::two_digits) {
      const auto x = static_cast<std::uint32_t>(i);
      const std::uint32_t q = quotient(x);
      return static_cast<int>(q) * static_cast<int>(outer_stride_) +
             static_cast<int>(x - q * divisor_) * static_cast<int>(inner_stride_);
    } else {
      if (digits_ == 1) return i * stride_[kInner];
      if (digits_ > 0) return narrow_ ? mixed<std::uint32_t>(i) : mixed<index_t>(i);
      return table_offset(table, i);
    }
  }
  // A two_digits() type's offsets in order without a division: `inner`
  // counts the inner digit, `offset` is the current element's; both start at 0.
  PARRAY_HD void advance(index_t& inner, index_t& offset) const {
    offset += stride_[kInner];
    if (++inner == extent_[kInner]) inner = 0, offset += stride_[kInner - 1] - extent_[kInner] * stride_[kInner];
  }

 private:
  static constexpr int kInner = kMaxDigits - 1;  // digits are stored innermost last

  // Adjacent digits that are one run (the outer's stride is the inner's
  // times its extent: [[N/32][32]] of a row) made one digit: a split of a
  // stride stays a stride. Returns the number of digits left.
  static int merged(int count, index_t* extent, index_t* stride) {
    int kept = 0;
    for (int l = 0; l < count; ++l) {
      if (kept > 0 && stride[kept - 1] == stride[l] * extent[l]) {
        extent[kept - 1] *= extent[l];
        stride[kept - 1] = stride[l];
        continue;
      }
      extent[kept] = extent[l], stride[kept] = stride[l];
      ++kept;
    }
    return kept;
  }
  // Digits outermost first, stored innermost last; the outermost takes what
  // is left of the index (its extent unbounded), the levels outside it are
  // digits of extent 1 and stride 0.
  void set_digits(int count, const index_t* extent, const index_t* stride) {
    digits_ = static_cast<std::int8_t>(count);
    const int first = kMaxDigits - count;
    for (int l = 0; l < kMaxDigits; ++l) {
      extent_[l] = l < first ? 1 : l == first ? INT64_MAX : extent[l - first];
      stride_[l] = l < first ? 0 : stride[l - first];
    }
    // A stride is two digits whose inner one has extent 1 and stride 0.
    const bool one = count == 1;
    fast_ = two_digits() && narrow_ && int_offsets_ && (one || (extent[1] > 0 && extent[1] <= index_t{UINT32_MAX}));
    if (!fast_) return;
    divisor_ = one ? 1u : static_cast<std::uint32_t>(extent[1]);
    inner_stride_ = one ? 0 : stride[1];
    outer_stride_ = stride[0];
    // x / d = (mulhi(x, magic) + x) >> shift for every 32-bit x, with
    // shift = ceil(log2 d), magic = 2^32 (2^shift - d) / d + 1
    // (Granlund and Montgomery; d = 1: magic 1, shift 0).
    while ((std::uint64_t{1} << shift_) < divisor_) ++shift_;
    magic_ = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift_) - divisor_)) /
                                            divisor_ +
                                        1);
  }
  PARRAY_HD std::uint32_t quotient(std::uint32_t x) const {
#if defined(__CUDA_ARCH__)
    const std::uint64_t high = __umulhi(x, magic_);
#else
    const std::uint64_t high = (std::uint64_t{x} * magic_) >> 32;
#endif
    return static_cast<std::uint32_t>((high + x) >> shift_);
  }
  PARRAY_PA_OUT_OF_LINE PARRAY_HD index_t table_offset(const DeviceLayout& table, index_t i) const {
    return table.node_offset(node_, i);
  }
  template <class I>
  PARRAY_HD index_t mixed(index_t i) const {
    const int first = kMaxDigits - digits_;
    I x = static_cast<I>(i);
    index_t off = 0;
    for (int l = kInner; l > first; --l) {
      const I e = static_cast<I>(extent_[l]);
      off += static_cast<index_t>(x % e) * stride_[l];
      x /= e;
    }
    return off + static_cast<index_t>(x) * stride_[first];
  }

  std::int8_t digits_ = 0;  // 0: through the table
  bool contiguous_ = false, narrow_ = false, int_offsets_ = false, fast_ = false;
  std::int16_t node_ = 0;
  index_t size_ = 0;
  index_t extent_[kMaxDigits] = {}, stride_[kMaxDigits] = {};
  // Build::two_digits: the inner digit's divisor, its magic number and shift.
  std::uint32_t divisor_ = 1, magic_ = 1, shift_ = 0;
  index_t inner_stride_ = 0, outer_stride_ = 0;
};

// A DeviceSub with its table, as #copy inside a kernel takes a type. Outside
// the general build it has at most two digits and is walked in order
// (copy_elements): a counter of the inner digit, no division, so that an
// unrolled copy of a register tile (#copy R(r) to C0(c)) costs an add per
// element and few registers (a walk over four digits took 11 more
// registers in fig 21, a seventh of its blocks per SM).
template <Build B>
struct SubOf {
  const DeviceSub& sub;
  const DeviceLayout& table;
  PARRAY_HD index_t size() const { return sub.size(); }
  PARRAY_HD index_t offset(index_t i) const { return sub.offset<Build::general>(table, i); }

  struct Walk {
    const DeviceSub& sub;
    index_t inner = 0, at = 0;
    PARRAY_HD index_t offset(index_t) const { return at; }
    PARRAY_HD void next() { sub.advance(inner, at); }
  };
  struct Indexed {
    const SubOf& type;
    PARRAY_HD index_t offset(index_t i) const { return type.offset(i); }
    PARRAY_HD void next() {}
  };
  PARRAY_HD auto walk() const {
    if constexpr (B != Build::general) return Walk{sub};
    else return Indexed{*this};
  }
};

// A static (smem, rmem) type as an object, for #copy.
template <class S>
struct Static {
  PARRAY_HD static constexpr index_t size() { return S::size; }
  PARRAY_HD static constexpr index_t offset(index_t i) { return S::offset(i); }
  struct Walk {
    PARRAY_HD static constexpr index_t offset(index_t i) { return S::offset(i); }
    PARRAY_HD void next() {}
  };
  PARRAY_HD static Walk walk() { return {}; }
};
// The element count of a #copy side that is a Static, else 0 (known at run time).
template <class T>
PARRAY_HD constexpr index_t static_size() {
  if constexpr (requires { T::size(); }) return T::size();
  else return 0;
}

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
  // A static side's size is a constant: the loop unrolls, as a hand-written
  // copy of that tile does, and its offsets are constants.
  constexpr index_t n = static_size<SrcType>() ? static_size<SrcType>() : static_size<DstType>();
  auto from = src_type.walk();
  auto to = dst_type.walk();
  if constexpr (n > 0) {
#ifdef __CUDA_ARCH__
#pragma unroll
#endif
    for (index_t i = 0; i < n; ++i, from.next(), to.next()) dst[to.offset(i)] = src[from.offset(i)];
  } else {
    for (index_t i = 0; i < src_type.size(); ++i, from.next(), to.next()) dst[to.offset(i)] = src[from.offset(i)];
  }
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
