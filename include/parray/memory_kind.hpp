// Parray's memory kinds as part of the type: paged, pinned, dmem (created by
// the host, as Array<T>), smem and rmem (declared inside a kernel).
//
//   #parray {dmem float [[2][512]][[2][512]]} M     ArrayType<float, dmem> M("[[2][512]][[2][512]]");
//   #create M(a)  ...  #destroy M(a)                { auto a = M.create(); ... }   (RAII)
//   #parray {smem float [32][17]} S                 using S = SDense<32, 17>;
//   #create S(s)                                    auto s = smem::create<float, S>();
//   #parray {rmem float [16][2]} R                  using R = SDense<16, 2>;
//   #create R(r)                                    auto r = rmem::create<float, R>();
//   r[$R[j][0]$]                                    r(j, 0)   or   r[R::offset(j, 0)]
//
// A host-created type keeps its layout at run time (ArrayType::layout(),
// device() for kernels); a kernel-local type is a static layout
// (static_layout.hpp), since shared-memory and register arrays are sized when
// the kernel is compiled. An rmem array lives in registers where every index
// into it is a compile-time constant after unrolling, as in the paper's fig 21.
#pragma once

#include <string_view>
#include <utility>

#include "parray/array.hpp"
#include "parray/core.hpp"
#include "parray/layout.hpp"
#include "parray/matrix.hpp"
#include "parray/static_layout.hpp"

namespace parray {

// The host-created kinds, with the memory they allocate.
struct paged {
  static constexpr Memory memory = Memory::paged;
  static constexpr const char* name = "paged";
};
struct pinned {
  static constexpr Memory memory = Memory::pinned;
  static constexpr const char* name = "pinned";
};
struct dmem {
  static constexpr Memory memory = Memory::device;
  static constexpr const char* name = "dmem";
};

// Parray's `#parray {Kind T [dims]} Name`: element type, memory kind and
// layout. create() is `#create`; the Array it returns frees its memory when
// it goes out of scope (`#destroy`).
template <class T, class Kind>
class ArrayType {
 public:
  explicit ArrayType(Layout layout) : layout_(std::move(layout)) {}
  explicit ArrayType(std::string_view text, const Layout::Symbols& symbols = {},
                     const Layout::Constants& constants = {})
      : layout_(Layout::parse(text, symbols, constants)) {}

  using value_type = T;
  using kind = Kind;
  static constexpr Memory memory = Kind::memory;

  const Layout& layout() const { return layout_; }
  index_t size() const { return layout_.size(); }
  Array<T> create() const { return Array<T>(layout_, memory); }
  // "dmem float [[2][512]][[2][512]]"
  std::string str(std::string_view element = "float") const {
    return std::string(Kind::name) + " " + std::string(element) + " " + layout_.str();
  }

 private:
  Layout layout_;
};

#ifdef __CUDACC__
// An array of a kernel-local kind: a pointer to shared memory or registers
// and its static type.
template <class T, class Type, class Storage>
struct LocalArray {
  Storage data;
  using type = Type;
  static constexpr index_t size = Type::size;
  __device__ T& operator[](index_t offset) { return data[offset]; }
  __device__ const T& operator[](index_t offset) const { return data[offset]; }
  // $S[i][j]$ through the type.
  template <class... I>
  __device__ T& operator()(I... coords) {
    return data[Type::offset(static_cast<index_t>(coords)...)];
  }
};

// Shared memory: one array per (T, Type, Tag) in each block, shared by the
// block's threads; Tag tells apart two arrays of the same type in a kernel.
struct smem {
  static constexpr const char* name = "smem";
  template <class T, class Type, int Tag = 0>
  __device__ static LocalArray<T, Type, T*> create() {
    __shared__ alignas(16) T storage[Type::size];
    return {storage};
  }
};

// Registers: each thread's own array.
template <class T, index_t N>
struct RegisterStorage {
  T r[N];
  __device__ T& operator[](index_t i) { return r[i]; }
  __device__ const T& operator[](index_t i) const { return r[i]; }
};
struct rmem {
  static constexpr const char* name = "rmem";
  template <class T, class Type>
  __device__ static LocalArray<T, Type, RegisterStorage<T, Type::size>> create() {
    return {};
  }
};
#endif

}  // namespace parray
