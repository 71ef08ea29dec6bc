// The device form of a Parray type: the same tree as Layout (nested
// dimensions, sub-types, references, padding, splits — everything a Layout
// can hold) flattened into a fixed table of nodes, trivially copyable, so a
// CUDA kernel takes it by value and indexes through it in __host__ __device__
// code with run-time extents. One offset semantics with Layout (layout.hpp):
//
//   leaf    size n, stride s:  offset(i) = i * s
//   nested  children d0..dk:   i split row-major over the children (the last
//                              fastest, the first takes what is left), the
//                              children's offsets added
//
// Sub-types are views of the table's nodes: `sub(k)` is the paper's A_k,
// `sub(k).sub(j)` A_k_j. Built on the host from a Layout (DeviceLayout::from),
// which checks the table's capacity. A kernel takes it as a
// `const __grid_constant__ DeviceLayout` parameter.
//
// Cost: a coordinate per top-level dimension that is a leaf (row-major,
// column-major, padded) is one multiply-add each, as hand-written strides
// are; a nested dimension adds a division and a remainder per inner digit,
// which a hand-written blocked index needs as well.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "parray/core.hpp"
#include "parray/layout.hpp"
#include "parray/matrix.hpp"  // Axis

namespace parray {

class DeviceLayout {
 public:
  static constexpr int kMaxNodes = 40;  // fig 18(b)'s view of its storage takes 7

  struct Node {
    index_t size = 0;        // logical size (a resized node keeps its children's offsets)
    index_t stride = 0;      // leaves only
    std::int16_t first = 0;  // first child's node index; children are consecutive
    std::int16_t count = 0;  // number of children, 0 for a leaf
    // Its subtree is a mixed-radix number over its leaves in depth-first
    // order (every child but the first as large as its leaves' product, at
    // every level): one division per leaf, no stack. Leaves
    // [leaf_first, leaf_first + leaf_count) of the leaf table.
    bool exact = false;
    std::int16_t leaf_first = 0, leaf_count = 0;
    std::int8_t axis = -1;  // a top-level dimension held as axes_[axis] too, else -1
  };
  static constexpr int kMaxRank = 4;  // top-level dimensions with a direct (mixed-radix) path

  // A sub-type: a node of the table, viewed through a pointer (a kernel that
  // takes its DeviceLayout as a __grid_constant__ parameter reads the table
  // where it lies, never copying it per thread).
  class Sub {
   public:
    PARRAY_HD Sub(const DeviceLayout* table, std::int16_t node) : t_(table), n_(node) {}
    PARRAY_HD index_t size() const { return node().size; }
    PARRAY_HD int rank() const { return node().count == 0 ? 1 : node().count; }
    PARRAY_HD bool is_leaf() const { return node().count == 0; }
    PARRAY_HD index_t stride() const { return node().stride; }
    // Sub-type k (the paper's A_k); a leaf's sub(0) is itself.
    PARRAY_HD Sub sub(int k) const {
      return node().count == 0 ? *this : Sub(t_, static_cast<std::int16_t>(node().first + k));
    }
    // Offset of flat logical index i (the paper's $A[i]$).
    PARRAY_HD index_t offset(index_t i) const {
      return node().axis >= 0 ? t_->axes_[node().axis].offset(i) : t_->offset_of(n_, i);
    }
    // One coordinate per top-level dimension ($A[i][j]$ ...).
    PARRAY_HD index_t operator()(index_t i) const { return offset(i); }
    PARRAY_HD index_t operator()(index_t i, index_t j) const {
      const std::int16_t f = node().first;
      return t_->offset_of(f, i) + t_->offset_of(static_cast<std::int16_t>(f + 1), j);
    }
    PARRAY_HD index_t operator()(index_t i, index_t j, index_t k) const {
      const std::int16_t f = node().first;
      return t_->offset_of(f, i) + t_->offset_of(static_cast<std::int16_t>(f + 1), j) +
             t_->offset_of(static_cast<std::int16_t>(f + 2), k);
    }
    // Its node in the table (DeviceLayout::node_offset), and the table.
    PARRAY_HD std::int16_t node_index() const { return n_; }
    PARRAY_HD const DeviceLayout& table() const { return *t_; }
    // Its offsets as a mixed-radix number of at most `max` digits, outermost
    // first (offset(i) = sum of digit l of i times stride[l], the outermost
    // digit taking what is left); false where it is none (a resized inner
    // node, more digits). Digits of extent 1 are left out.
    bool digits(int max, int& count, index_t* extent, index_t* stride) const {
      const Node& n = node();
      if (n.axis >= 0) {
        const Axis& a = t_->axes_[n.axis];
        if (a.levels > max) return false;
        count = a.levels;
        for (int l = 0; l < count; ++l) extent[l] = a.extent[l], stride[l] = a.stride[l];
        return true;
      }
      if (!n.exact) return false;
      count = 0;
      for (int l = n.leaf_first; l < n.leaf_first + n.leaf_count; ++l) {
        const bool last = l + 1 == n.leaf_first + n.leaf_count;
        if (t_->leaf_size_[l] == 1 && !(last && count == 0)) continue;
        if (count == max) return false;
        extent[count] = t_->leaf_size_[l], stride[count] = t_->leaf_stride_[l];
        ++count;
      }
      return true;
    }

   private:
    PARRAY_HD const Node& node() const { return t_->nodes_[n_]; }
    const DeviceLayout* t_;
    std::int16_t n_;
  };

  // The table of `layout` (parray::Error when it has more than kMaxNodes nodes).
  static DeviceLayout from(const Layout& layout) {
    DeviceLayout d;
    d.node_count_ = 1;
    d.span_ = layout.span();
    d.fill(0, layout);
    if (!layout.is_leaf())
      for (int k = 0; k < layout.rank() && k < kMaxRank; ++k) d.add_axis(k, layout.dim(k));
    return d;
  }

  // The whole type and its parts, as Sub does.
  PARRAY_HD Sub type() const { return Sub(this, 0); }
  PARRAY_HD index_t size() const { return type().size(); }
  PARRAY_HD int rank() const { return type().rank(); }
  PARRAY_HD Sub sub(int k) const { return type().sub(k); }
  PARRAY_HD index_t offset(index_t i) const { return offset_of(0, i); }
  // The whole type's coordinates, through the top-level dimensions' axes
  // where they have one: read at fixed places of the parameter, no pointer
  // chase, the same instructions as a hand-written mixed-radix index.
  PARRAY_HD index_t operator()(index_t i, index_t j) const { return top(0, i) + top(1, j); }
  PARRAY_HD index_t operator()(index_t i, index_t j, index_t k) const { return top(0, i) + top(1, j) + top(2, k); }
  int node_count() const { return node_count_; }
  // One past the largest offset of any coordinate (Layout::span).
  PARRAY_HD index_t span() const { return span_; }
  // The offset of flat index i of the sub-type at `node` (Sub::node_index).
  PARRAY_HD index_t node_offset(std::int16_t node, index_t i) const { return offset_of(node, i); }

 private:
  // Depth-first over the subtree with an explicit stack (no recursion in
  // device code): each node's index is split into its children's digits.
  PARRAY_HD index_t offset_of(std::int16_t root, index_t i) const {
    const Node& r = nodes_[root];
    if (r.count == 0) return i * r.stride;    // the common case: one multiply
    if (r.exact) return leaves_offset(r, i);  // blocked dimensions: one division per inner digit
    std::int16_t stack_node[kMaxNodes];
    index_t stack_index[kMaxNodes];
    int top = 0;
    stack_node[0] = root, stack_index[0] = i;
    index_t off = 0;
    while (top >= 0) {
      const Node& n = nodes_[stack_node[top]];
      index_t x = stack_index[top--];
      if (n.count == 0) {
        off += x * n.stride;
        continue;
      }
      for (int c = n.count - 1; c > 0; --c) {
        const std::int16_t child = static_cast<std::int16_t>(n.first + c);
        const index_t e = nodes_[child].size;
        ++top, stack_node[top] = child, stack_index[top] = x % e;
        x /= e;
      }
      ++top, stack_node[top] = n.first, stack_index[top] = x;
    }
    return off;
  }

  PARRAY_HD index_t top(int k, index_t x) const {
    return direct_[k] ? axes_[k].offset(x) : offset_of(static_cast<std::int16_t>(nodes_[0].first + k), x);
  }

  PARRAY_HD index_t leaves_offset(const Node& n, index_t x) const {
    index_t off = 0;
    for (int l = n.leaf_first + n.leaf_count - 1; l > n.leaf_first; --l) {
      off += (x % leaf_size_[l]) * leaf_stride_[l];
      x /= leaf_size_[l];
    }
    return off + x * leaf_stride_[n.leaf_first];
  }

  // Top-level dimension k as a mixed-radix axis, where it is one (exact
  // nesting, at most Axis::kMaxLevels digits); else it goes through the table.
  void add_axis(int k, const Layout& dim) {
    try {
      axes_[k] = Axis::from(dim);
    } catch (const Error&) {
      return;
    }
    direct_[k] = true;
    nodes_[nodes_[0].first + k].axis = static_cast<std::int8_t>(k);
  }

  // Writes `l` at slot `at`, its children at consecutive new slots.
  void fill(int at, const Layout& l) {
    Node& n = nodes_[at];
    n.size = l.size();
    n.leaf_first = leaf_count_;
    if (l.is_leaf()) {
      n.stride = l.stride();
      n.exact = true;
      n.leaf_count = 1;
      leaf_size_[leaf_count_] = n.size, leaf_stride_[leaf_count_] = n.stride;
      ++leaf_count_;  // at most one leaf per node: within kMaxNodes
      return;
    }
    if (node_count_ + l.rank() > kMaxNodes)
      throw Error("device layout: " + l.str() + " needs more than " + std::to_string(kMaxNodes) + " nodes");
    n.first = static_cast<std::int16_t>(node_count_);
    n.count = static_cast<std::int16_t>(l.rank());
    node_count_ += l.rank();
    n.exact = true;
    for (int k = 0; k < l.rank(); ++k) {
      fill(n.first + k, l.dim(k));
      const Node& c = nodes_[n.first + k];
      n.exact = n.exact && c.exact && (k == 0 || c.size == leaf_product(c));
    }
    n.leaf_count = static_cast<std::int16_t>(leaf_count_ - n.leaf_first);
  }

  index_t leaf_product(const Node& n) const {
    index_t p = 1;
    for (int l = n.leaf_first; l < n.leaf_first + n.leaf_count; ++l) p *= leaf_size_[l];
    return p;
  }

  Axis axes_[kMaxRank] = {};
  bool direct_[kMaxRank] = {};
  Node nodes_[kMaxNodes] = {};
  std::int16_t node_count_ = 0;
  index_t leaf_size_[kMaxNodes] = {}, leaf_stride_[kMaxNodes] = {};  // the leaves, depth first
  std::int16_t leaf_count_ = 0;
  index_t span_ = INT64_MAX;  // unknown until from()
};

// A dimension whose number of digits is part of its C++ type while its
// extents and strides are run-time values: the loop over digits unrolls, as
// in an index written by hand for that storage. with_fixed_matrix() picks the
// instantiation for a rank-2 type on the host, so a kernel templated on it
// runs any matrix type at the cost of its hand-written index.
template <int Levels>
struct FixedAxis {
  index_t extent[Levels];
  index_t stride[Levels];

  static FixedAxis from(const Axis& a) {
    FixedAxis f;
    for (int l = 0; l < Levels; ++l) f.extent[l] = a.extent[l], f.stride[l] = a.stride[l];
    return f;
  }
  PARRAY_HD index_t offset(index_t i) const {
    index_t off = 0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int l = Levels - 1; l > 0; --l) {
      off += (i % extent[l]) * stride[l];
      i /= extent[l];
    }
    return off + i * stride[0];
  }
};

template <int RowLevels, int ColLevels>
struct FixedMatrix {
  FixedAxis<RowLevels> rows;
  FixedAxis<ColLevels> cols;
  PARRAY_HD index_t operator()(index_t i, index_t j) const { return rows.offset(i) + cols.offset(j); }
};

namespace detail {
template <int R, class F>
void with_col_levels(const MatrixLayout& m, F&& f) {
  const FixedAxis<R> rows = FixedAxis<R>::from(m.rows);
  switch (m.cols.levels) {
    case 1: return f(FixedMatrix<R, 1>{rows, FixedAxis<1>::from(m.cols)});
    case 2: return f(FixedMatrix<R, 2>{rows, FixedAxis<2>::from(m.cols)});
    case 3: return f(FixedMatrix<R, 3>{rows, FixedAxis<3>::from(m.cols)});
    default: return f(FixedMatrix<R, 4>{rows, FixedAxis<4>::from(m.cols)});
  }
}
}  // namespace detail

// Calls f(FixedMatrix<R, C>) for the rank-2 type `view` (each dimension a
// mixed-radix number of at most Axis::kMaxLevels digits; parray::Error otherwise).
template <class F>
void with_fixed_matrix(const Layout& view, F&& f) {
  const MatrixLayout m = MatrixLayout::from(view);
  switch (m.rows.levels) {
    case 1: return detail::with_col_levels<1>(m, f);
    case 2: return detail::with_col_levels<2>(m, f);
    case 3: return detail::with_col_levels<3>(m, f);
    default: return detail::with_col_levels<4>(m, f);
  }
}

static_assert(std::is_trivially_copyable_v<DeviceLayout>, "a kernel takes a DeviceLayout by value");

}  // namespace parray
