// Dynamic layouts: Parray's array types with sizes known at run time.
//
// A layout maps logical coordinates to storage offsets. Its dimensions nest and
// form a tree (Parray's `[[3][2]][4]`): every node is itself a layout with a
// size and an offset function, so the same storage can be indexed flat, as 2-D
// over the top-level dimensions, or through any sub-dimension (A_0, A_1, A_0_1).
//
//   leaf      size n, stride s:   offset(i) = i * s
//   nested    children d0..dk:    i is split row-major over the children (the
//                                 last child varies fastest, the first takes
//                                 whatever is left) and the children's offsets
//                                 are added.
//
// Referencing dimensions (Parray's `[#A_1][#A_0]`) build a new layout from an
// existing one's nodes, over the same storage: transposition, regrouping,
// splitting and padding are all just new trees over old leaves.
//
// Layout::parse() reads Parray's own notation so that code and tests can be
// written exactly as in the paper:
//   Layout A = Layout::parse("[[3][2]][4]");
//   Layout B = Layout::parse("[#A_1][#A_0]", {{"A", A}});
#pragma once

#include <cctype>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parray/core.hpp"

namespace parray {

class Layout {
 public:
  using Symbols = std::map<std::string, Layout, std::less<>>;

  // A one-dimensional layout of `size` elements `stride` apart.
  static Layout leaf(index_t size, index_t stride) {
    if (size < 0) throw Error("layout: negative dimension size " + std::to_string(size));
    if (stride < 0) throw Error("layout: negative stride " + std::to_string(stride));
    Layout l;
    l.size_ = size;
    l.stride_ = stride;
    return l;
  }

  // Parray's `[d0][d1]...` over existing dimensions: the size is the product of
  // the children's sizes.
  static Layout nest(std::vector<Layout> dims) {
    if (dims.empty()) throw Error("layout: a nested dimension needs at least one child");
    if (dims.size() == 1) return std::move(dims.front());
    Layout l;
    l.size_ = 1;
    for (const Layout& d : dims) l.size_ = checked_mul(l.size_, d.size());
    l.dims_ = std::move(dims);
    return l;
  }

  // A natural (row-major, compact) array `[s0][s1]...`.
  static Layout dense(std::initializer_list<index_t> sizes) {
    return dense(std::vector<index_t>(sizes));
  }
  static Layout dense(const std::vector<index_t>& sizes) {
    if (sizes.empty()) throw Error("layout: a dense layout needs at least one dimension");
    std::vector<Layout> dims(sizes.size());
    index_t stride = 1;
    for (std::size_t d = sizes.size(); d-- > 0;) {
      dims[d] = leaf(sizes[d], stride);
      stride = checked_mul(stride, sizes[d]);
    }
    return nest(std::move(dims));
  }

  // Parray's type notation; see the header comment. References `#NAME_i_j`
  // look up NAME in `symbols`; a size before a reference (`16 #A_1`) resizes
  // it (padding); nested brackets before a reference (`[[4][8] #A_1]`) split
  // it into those extents.
  static Layout parse(std::string_view text, const Symbols& symbols = {});

  bool is_leaf() const { return dims_.empty(); }
  index_t size() const { return size_; }
  // Number of top-level dimensions: 1 for a leaf.
  int rank() const { return is_leaf() ? 1 : static_cast<int>(dims_.size()); }
  index_t stride() const {
    if (!is_leaf()) throw Error("layout: stride() of a nested dimension");
    return stride_;
  }

  // Sub-type A_k (for a leaf, A_0 is the leaf itself).
  const Layout& dim(int k) const {
    if (is_leaf() && k == 0) return *this;
    if (k < 0 || k >= rank())
      throw Error("layout: dimension " + std::to_string(k) + " out of range for " + str());
    return dims_[static_cast<std::size_t>(k)];
  }
  // Sub-type along a path: dim({0, 1}) is Parray's A_0_1.
  const Layout& dim(std::initializer_list<int> path) const {
    const Layout* l = this;
    for (int k : path) l = &l->dim(k);
    return *l;
  }
  const Layout& dim(const std::vector<int>& path) const {
    const Layout* l = this;
    for (int k : path) l = &l->dim(k);
    return *l;
  }

  // Parray's `n #A_k`: same offsets, logical size n (at most the current size),
  // e.g. a [16][17] padded tile seen as [16][16].
  Layout resized(index_t n) const {
    if (n < 0 || n > size_)
      throw Error("layout: cannot resize a dimension of size " + std::to_string(size_) + " to " +
                  std::to_string(n));
    Layout l = *this;
    l.size_ = n;
    return l;
  }

  // Split this one-dimensional leaf into nested extents, e.g. a leaf of 1024
  // into [[64][16]]; the extents' product must cover the size.
  Layout split(const std::vector<index_t>& extents) const {
    if (!is_leaf()) throw Error("layout: only a leaf dimension can be split");
    index_t product = 1;
    for (index_t e : extents) product = checked_mul(product, e);
    if (product < size_)
      throw Error("layout: split extents cover " + std::to_string(product) + " of " +
                  std::to_string(size_) + " elements");
    std::vector<Layout> dims(extents.size());
    index_t stride = stride_;
    for (std::size_t d = extents.size(); d-- > 0;) {
      dims[d] = leaf(extents[d], stride);
      stride = checked_mul(stride, extents[d]);
    }
    return nest(std::move(dims)).resized(size_);
  }

  // Offset of flat logical index i (Parray's x[$A[i]$]).
  index_t offset(index_t i) const {
    if (is_leaf()) return i * stride_;
    index_t off = 0;
    for (std::size_t d = dims_.size(); d-- > 1;) {
      const index_t n = dims_[d].size_;
      off += dims_[d].offset(i % n);
      i /= n;
    }
    return off + dims_[0].offset(i);
  }

  // Offset of one coordinate per top-level dimension (Parray's x[$A[5][2]$]).
  index_t offset(std::initializer_list<index_t> coords) const {
    if (static_cast<int>(coords.size()) != rank())
      throw Error("layout: " + std::to_string(coords.size()) + " coordinates for a rank-" +
                  std::to_string(rank()) + " layout " + str());
    if (is_leaf()) return offset(*coords.begin());
    index_t off = 0;
    std::size_t d = 0;
    for (index_t c : coords) off += dims_[d++].offset(c);
    return off;
  }
  template <class... I>
  index_t operator()(I... coords) const {
    return offset({static_cast<index_t>(coords)...});
  }

  // Upper bound of the storage the layout touches: 1 + its largest offset.
  index_t span() const { return size_ == 0 ? 0 : max_offset() + 1; }

  // Leaves in order (outermost first), as (size, stride) pairs.
  void leaves(std::vector<std::pair<index_t, index_t>>& out) const {
    if (is_leaf()) {
      out.emplace_back(size_, stride_);
      return;
    }
    for (const Layout& d : dims_) d.leaves(out);
  }

  // Parray-like notation with strides: [[3:8][2:4]][4:1]; a resized node shows
  // its size first: [5 [3:8][2:4]].
  // Built with append: GCC 12 warns falsely (-Wrestrict) on chains of operator+.
  std::string str() const {
    std::string s;
    if (is_leaf())
      return s.append("[").append(std::to_string(size_)).append(":").append(std::to_string(stride_)).append("]");
    for (const Layout& d : dims_) s.append(d.str());
    index_t product = 1;
    for (const Layout& d : dims_) product *= d.size_;
    if (product == size_) return s;
    return std::string("[").append(std::to_string(size_)).append(" ").append(s).append("]");
  }

  friend bool operator==(const Layout& a, const Layout& b) {
    return a.size_ == b.size_ && a.stride_ == b.stride_ && a.dims_ == b.dims_;
  }

  static index_t checked_mul(index_t a, index_t b) {
    index_t r;
    if (__builtin_mul_overflow(a, b, &r)) throw Error("layout: size overflows 64-bit indexing");
    return r;
  }

 private:
  // The largest offset over the logical range [0, size).
  index_t max_offset() const {
    if (is_leaf()) return (size_ - 1) * stride_;
    // The first child takes the remainder, so bound its index by that; the
    // other children can reach their full range (an upper bound when resized).
    index_t inner = 1;
    index_t off = 0;
    for (std::size_t d = dims_.size(); d-- > 1;) {
      off += dims_[d].max_offset();
      inner = checked_mul(inner, dims_[d].size_);
    }
    const index_t top = (size_ - 1) / inner;
    return off + dims_[0].resized(std::min(dims_[0].size_, top + 1)).max_offset();
  }

  std::vector<Layout> dims_;
  index_t size_ = 1;
  index_t stride_ = 0;
};

// ---- the parser -----------------------------------------------------------

namespace detail {

class TypeParser {
 public:
  TypeParser(std::string_view text, const Layout::Symbols& symbols)
      : text_(text), symbols_(symbols) {}

  Layout parse() {
    std::vector<Item> items = parse_list();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    if (items.empty()) fail("empty type");
    return build(items);
  }

 private:
  // A parsed dimension: either a dense extent (stride assigned later) or a
  // finished layout (from a reference).
  struct Item {
    bool dense = false;
    index_t extent = 0;
    std::vector<Item> children;  // nested dense group
    Layout layout;
    bool has_layout = false;
  };

  [[noreturn]] void fail(const std::string& why) const {
    throw Error("layout type \"" + std::string(text_) + "\": " + why + " at position " +
                std::to_string(pos_));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  index_t number() {
    skip_space();
    if (pos_ >= text_.size() || !std::isdigit(static_cast<unsigned char>(text_[pos_])))
      fail("expected a number");
    index_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      v = Layout::checked_mul(v, 10) + (text_[pos_++] - '0');
    }
    return v;
  }

  std::vector<Item> parse_list() {
    std::vector<Item> items;
    while (peek('[')) items.push_back(parse_dim());
    return items;
  }

  Item parse_dim() {
    expect('[');
    Item item;
    if (peek('#')) {
      item.layout = reference();
      item.has_layout = true;
    } else if (peek('[')) {
      std::vector<Item> children = parse_list();
      if (peek('#')) {  // [[a][b] #X]: split a referenced leaf into extents a, b
        Layout ref = reference();
        std::vector<index_t> extents;
        for (const Item& c : children) {
          if (!c.dense || !c.children.empty()) fail("a split takes plain extents");
          extents.push_back(c.extent);
        }
        item.layout = ref.split(extents);
        item.has_layout = true;
      } else {
        item.dense = true;
        item.children = std::move(children);
      }
    } else {
      index_t n = number();
      if (peek('#')) {  // [16 #A_1]: resize a reference
        item.layout = reference().resized(n);
        item.has_layout = true;
      } else {
        item.dense = true;
        item.extent = n;
      }
    }
    expect(']');
    return item;
  }

  Layout reference() {
    expect('#');
    skip_space();
    std::size_t start = pos_;
    // The name is letters and digits; '_' starts the sub-dimension path.
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    std::string_view name = text_.substr(start, pos_ - start);
    if (name.empty()) fail("expected a type name after '#'");
    auto it = symbols_.find(name);
    if (it == symbols_.end()) fail("unknown type '" + std::string(name) + "'");
    std::vector<int> path;
    while (pos_ < text_.size() && text_[pos_] == '_') {
      ++pos_;
      path.push_back(static_cast<int>(number()));
    }
    return it->second.dim(path);
  }

  // Dense items get compact row-major strides over all dense leaves of the
  // type; references keep theirs. Mixing both would leave the dense part's
  // storage undefined, so it is refused.
  Layout build(const std::vector<Item>& items) {
    bool any_dense = false, any_ref = false;
    scan(items, any_dense, any_ref);
    if (any_dense && any_ref) fail("cannot mix dense extents and references in one type");
    if (any_ref) return from_refs(items);
    index_t stride = 1;
    return dense_group(items, stride);
  }
  static void scan(const std::vector<Item>& items, bool& dense, bool& ref) {
    for (const Item& i : items) {
      if (i.has_layout) ref = true;
      else if (i.children.empty()) dense = true;
      else scan(i.children, dense, ref);
    }
  }
  static Layout from_refs(const std::vector<Item>& items) {
    std::vector<Layout> dims;
    for (const Item& i : items) dims.push_back(i.has_layout ? i.layout : from_refs(i.children));
    return Layout::nest(std::move(dims));
  }
  // Assigns strides from the last leaf backwards.
  static Layout dense_group(const std::vector<Item>& items, index_t& stride) {
    std::vector<Layout> dims(items.size());
    for (std::size_t d = items.size(); d-- > 0;) {
      const Item& i = items[d];
      if (i.children.empty()) {
        dims[d] = Layout::leaf(i.extent, stride);
        stride = Layout::checked_mul(stride, i.extent);
      } else {
        dims[d] = dense_group(i.children, stride);
      }
    }
    return Layout::nest(std::move(dims));
  }

  std::string_view text_;
  const Layout::Symbols& symbols_;
  std::size_t pos_ = 0;
};

}  // namespace detail

inline Layout Layout::parse(std::string_view text, const Symbols& symbols) {
  return detail::TypeParser(text, symbols).parse();
}

}  // namespace parray
