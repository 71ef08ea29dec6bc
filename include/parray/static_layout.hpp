// Static layouts: Parray's array types with sizes fixed at compile time.
//
// Same meaning as the dynamic Layout (layout.hpp), but every size, stride and
// offset is a constant expression and every function is __host__ __device__,
// so kernels can describe their shared-memory tiles and register blocks as
// types (Parray's `smem float [32][17]`, `rmem float [16][2]`):
//
//   using Tile = SDense<16, 17>;                         // [16][17]
//   using View = SNest<Tile::dim<0>, SResize<16, Tile::dim<1>>>;  // [#T_0][16 #T_1]
//   static_assert(View::offset(3, 5) == 3 * 17 + 5);
//
// to_layout<S>() converts to the dynamic form; tests check the two agree.
#pragma once

#include <tuple>
#include <vector>

#include "parray/core.hpp"
#include "parray/layout.hpp"

namespace parray {

// A one-dimensional static layout: Size elements Stride apart.
template <index_t Size, index_t Stride>
struct SLeaf {
  static constexpr index_t size = Size;
  static constexpr int rank = 1;
  static PARRAY_HD constexpr index_t offset(index_t i) { return i * Stride; }
  static PARRAY_HD constexpr index_t stride() { return Stride; }
  template <int K>
  using dim = SLeaf;
  static Layout dynamic() { return Layout::leaf(Size, Stride); }
};

namespace detail {
template <class... D>
struct Product {
  static constexpr index_t value = (index_t{1} * ... * D::size);
};
}  // namespace detail

// Parray's nested dimension [D0][D1]...: a flat index is split row-major over
// the children (last fastest) and the children's offsets are added.
template <class... Dims>
struct SNest {
  static_assert(sizeof...(Dims) >= 1, "a nested dimension needs a child");
  static constexpr index_t size = detail::Product<Dims...>::value;
  static constexpr int rank = sizeof...(Dims);
  template <int K>
  using dim = std::tuple_element_t<K, std::tuple<Dims...>>;

  static PARRAY_HD constexpr index_t offset(index_t i) { return flat<0, Dims...>(i); }

  // One coordinate per top-level dimension: offset(5, 2) is Parray's $A[5][2]$.
  template <class... I, class = std::enable_if_t<sizeof...(I) == sizeof...(Dims) && (sizeof...(I) > 1)>>
  static PARRAY_HD constexpr index_t offset(I... coords) {
    return coords_offset<0, Dims...>(static_cast<index_t>(coords)...);
  }

  static Layout dynamic() { return Layout::nest({Dims::dynamic()...}); }

 private:
  // Splits i over children First, Rest...: the first takes i / size(Rest...).
  template <int Unused, class First, class... Rest>
  static PARRAY_HD constexpr index_t flat(index_t i) {
    if constexpr (sizeof...(Rest) == 0) {
      return First::offset(i);
    } else {
      constexpr index_t inner = detail::Product<Rest...>::value;
      return First::offset(i / inner) + flat<0, Rest...>(i % inner);
    }
  }
  template <int Unused, class First, class... Rest, class... I>
  static PARRAY_HD constexpr index_t coords_offset(index_t c, I... rest) {
    if constexpr (sizeof...(Rest) == 0) {
      return First::offset(c);
    } else {
      return First::offset(c) + coords_offset<0, Rest...>(rest...);
    }
  }
};

// Parray's `n #A_k`: same offsets, logical size N.
template <index_t N, class D>
struct SResize : D {
  static_assert(N <= D::size, "a resized dimension cannot grow");
  static constexpr index_t size = N;
  static Layout dynamic() { return D::dynamic().resized(N); }
};

namespace detail {
template <index_t Stride, index_t... Sizes>
struct DenseBuilder;
template <index_t Stride, index_t Last>
struct DenseBuilder<Stride, Last> {
  using type = std::tuple<SLeaf<Last, Stride>>;
};
template <index_t Stride, index_t First, index_t... Rest>
struct DenseBuilder<Stride, First, Rest...> {
  using inner = DenseBuilder<Stride, Rest...>;
  static constexpr index_t inner_size = (index_t{1} * ... * Rest);
  using type = decltype(std::tuple_cat(std::declval<std::tuple<SLeaf<First, Stride * inner_size>>>(),
                                       std::declval<typename inner::type>()));
};
template <class Tuple>
struct NestOf;
template <class... D>
struct NestOf<std::tuple<D...>> {
  using type = SNest<D...>;
};
}  // namespace detail

// A natural row-major array [S0][S1]...
template <index_t... Sizes>
using SDense = typename detail::NestOf<typename detail::DenseBuilder<1, Sizes...>::type>::type;

template <class S>
Layout to_layout() {
  return S::dynamic();
}

}  // namespace parray
