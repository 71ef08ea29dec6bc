// Matrix layouts and views: the form of a 2-D Parray type that kernels use.
//
// A 2-D Parray type has two top-level dimensions, and each maps its coordinate
// to an offset on its own, so offset(i, j) = rows.offset(i) + cols.offset(j).
// Each of the two is an Axis: a mixed-radix number of up to kMaxLevels digits
// (the leaves of that dimension's tree, outermost first). An Axis is a small
// POD, so a MatrixLayout can be passed by value to a CUDA kernel and used in
// __host__ __device__ code. A one-level axis is a plain stride, which the fast
// paths of every implementation recognise.
#pragma once

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "parray/core.hpp"
#include "parray/layout.hpp"

namespace parray {

struct Axis {
  static constexpr int kMaxLevels = 4;
  int levels = 1;
  index_t size = 0;
  // extent[l] is the radix of digit l; the outermost digit (l = 0) takes
  // whatever is left, so extent[0] is informational.
  index_t extent[kMaxLevels] = {0, 0, 0, 0};
  index_t stride[kMaxLevels] = {0, 0, 0, 0};

  static PARRAY_HD Axis strided(index_t size, index_t stride) {
    Axis a;
    a.levels = 1;
    a.size = size;
    a.extent[0] = size;
    a.stride[0] = stride;
    return a;
  }

  PARRAY_HD index_t offset(index_t i) const {
    index_t off = 0;
    for (int l = levels - 1; l > 0; --l) {
      off += (i % extent[l]) * stride[l];
      i /= extent[l];
    }
    return off + i * stride[0];
  }
  PARRAY_HD bool is_strided() const { return levels == 1; }
  PARRAY_HD index_t unit_stride() const { return stride[0]; }

  // Flattens one top-level dimension of a Layout. Nested nodes below the top
  // must be exact (size == product of children): a resized inner node would
  // not be a mixed-radix number.
  static Axis from(const Layout& dim) {
    std::vector<std::pair<index_t, index_t>> leaves;
    collect(dim, true, leaves);
    // Leaves of extent 1 add nothing; drop them (keep at least one).
    std::vector<std::pair<index_t, index_t>> kept;
    for (std::size_t l = 0; l < leaves.size(); ++l)
      if (leaves[l].first != 1 || (l + 1 == leaves.size() && kept.empty())) kept.push_back(leaves[l]);
    if (static_cast<int>(kept.size()) > kMaxLevels)
      throw Error("matrix layout: a dimension with " + std::to_string(kept.size()) +
                  " levels (at most " + std::to_string(kMaxLevels) + ") in " + dim.str());
    Axis a;
    a.levels = static_cast<int>(kept.size());
    a.size = dim.size();
    for (int l = 0; l < a.levels; ++l) {
      a.extent[l] = kept[static_cast<std::size_t>(l)].first;
      a.stride[l] = kept[static_cast<std::size_t>(l)].second;
    }
    if (a.levels == 1) a.extent[0] = a.size;
    return a;
  }

  std::vector<index_t> offsets() const {
    std::vector<index_t> t(static_cast<std::size_t>(size));
    for (index_t i = 0; i < size; ++i) t[static_cast<std::size_t>(i)] = offset(i);
    return t;
  }

  // Largest offset over [0, size), exact for strided axes, an upper bound otherwise.
  index_t max_offset() const {
    if (size == 0) return 0;
    if (levels == 1) return (size - 1) * stride[0];
    index_t inner = 1, off = 0;
    for (int l = levels - 1; l > 0; --l) {
      off += (std::min(extent[l], size) - 1) * stride[l];
      inner *= extent[l];
    }
    return off + ((size - 1) / inner) * stride[0];
  }

 private:
  static void collect(const Layout& node, bool top, std::vector<std::pair<index_t, index_t>>& out) {
    if (node.is_leaf()) {
      out.emplace_back(node.size(), node.stride());
      return;
    }
    index_t product = 1;
    for (int k = 0; k < node.rank(); ++k) product *= node.dim(k).size();
    if (!top && product != node.size())
      throw Error("matrix layout: a resized inner dimension is not supported: " + node.str());
    for (int k = 0; k < node.rank(); ++k) collect(node.dim(k), false, out);
  }
};

struct MatrixLayout {
  Axis rows;
  Axis cols;

  static PARRAY_HD MatrixLayout row_major(index_t m, index_t n, index_t ld) {
    return {Axis::strided(m, ld), Axis::strided(n, 1)};
  }
  static PARRAY_HD MatrixLayout col_major(index_t m, index_t n, index_t ld) {
    return {Axis::strided(m, 1), Axis::strided(n, ld)};
  }
  // From a rank-2 Parray type: dimension 0 gives the rows, dimension 1 the columns.
  static MatrixLayout from(const Layout& type) {
    if (type.rank() != 2)
      throw Error("matrix layout: a matrix type needs 2 top-level dimensions, " + type.str() +
                  " has " + std::to_string(type.rank()));
    return {Axis::from(type.dim(0)), Axis::from(type.dim(1))};
  }

  PARRAY_HD index_t offset(index_t i, index_t j) const { return rows.offset(i) + cols.offset(j); }
  PARRAY_HD MatrixLayout transposed() const { return {cols, rows}; }
  PARRAY_HD bool is_strided() const { return rows.is_strided() && cols.is_strided(); }
  PARRAY_HD bool is_row_major() const { return is_strided() && cols.stride[0] == 1; }
  PARRAY_HD bool is_col_major() const { return is_strided() && rows.stride[0] == 1; }
  index_t span() const {
    return rows.size == 0 || cols.size == 0 ? 0 : rows.max_offset() + cols.max_offset() + 1;
  }

  // A sufficient test that no two elements share an address: sort all digits
  // (both axes) by stride; each must step past everything the smaller ones
  // can reach. Layouts built from a storage type always pass.
  // At most 2 * kMaxLevels digits: kept on the stack (the GEMM dispatcher
  // checks C on every call), and not zeroed first: only the first `count` are
  // read, and an array of std::pair is zeroed with a `rep stos` whose start-up
  // weighs on the dispatcher's own time in a tiny product (docs/perf-notes.md).
  bool non_overlapping() const {
    struct Digit {
      index_t stride, extent;
      bool operator<(const Digit& o) const { return stride != o.stride ? stride < o.stride : extent < o.extent; }
    };
    Digit digits[2 * Axis::kMaxLevels];
    int count = 0;
    for (const Axis* a : {&rows, &cols}) {
      index_t inner = 1;
      for (int l = a->levels - 1; l >= 0; --l) {
        index_t ext = l == 0 ? (a->size + inner - 1) / std::max<index_t>(inner, 1) : a->extent[l];
        if (l > 0) inner *= a->extent[l];
        if (ext > 1) digits[count++] = {a->stride[l], ext};
      }
    }
    // Sorted by insertion, as std::sort does below 16 elements: on this
    // 8-element array std::sort's fixed 16-element first pass made GCC 12
    // warn falsely (-Warray-bounds) in every file that inlines this.
    for (int i = 1; i < count; ++i)
      for (int j = i; j > 0 && digits[j] < digits[j - 1]; --j) std::swap(digits[j], digits[j - 1]);
    index_t reach = 0;  // largest offset reachable with the digits so far
    for (int d = 0; d < count; ++d) {
      if (digits[d].stride <= reach) return false;
      reach += (digits[d].extent - 1) * digits[d].stride;
    }
    return true;
  }

  std::string str() const {
    // Built with append: GCC 12 warns falsely (-Wrestrict) on chains of operator+.
    std::string s;
    for (const Axis* a : {&rows, &cols}) {
      s.append("[").append(std::to_string(a->size));
      for (int l = 0; l < a->levels; ++l)
        s.append(" ").append(std::to_string(a->extent[l])).append(":").append(std::to_string(a->stride[l]));
      s.append("]");
    }
    return s;
  }
};

// Where the storage of an array lives (Parray's paged, pinned, dmem).
enum class Memory { paged, pinned, device };

inline const char* memory_name(Memory m) {
  switch (m) {
    case Memory::paged: return "paged";
    case Memory::pinned: return "pinned";
    case Memory::device: return "device";
  }
  return "?";
}

// A non-owning matrix: storage pointer, layout and memory space.
template <class T>
struct MatrixView {
  T* data = nullptr;
  MatrixLayout layout{};
  Memory memory = Memory::paged;

  PARRAY_HD index_t rows() const { return layout.rows.size; }
  PARRAY_HD index_t cols() const { return layout.cols.size; }
  PARRAY_HD T& operator()(index_t i, index_t j) const { return data[layout.offset(i, j)]; }
  PARRAY_HD MatrixView t() const { return {data, layout.transposed(), memory}; }
  // A view of const elements; only a view of mutable ones converts (a
  // conversion of MatrixView<const T> to itself is one nvcc warns of).
  template <class U = T, class = std::enable_if_t<!std::is_const_v<U>>>
  PARRAY_HD operator MatrixView<const U>() const { return {data, layout, memory}; }
};

}  // namespace parray
