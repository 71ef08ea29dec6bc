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
// A node may be resized: it keeps its offsets and shows fewer elements than
// its children hold, which is how padding and sizes that do not divide are
// written.
//
// Referencing dimensions (Parray's `[#A_1][#A_0]`) build a new layout from an
// existing one's nodes, over the same storage: transposition, regrouping,
// splitting and padding are all just new trees over old leaves.
//
// Layout::parse() reads Parray's own notation, and str() prints it back, so
// that code and tests can be written exactly as in the paper:
//   Layout A = Layout::parse("[[3][2]][4]");
//   Layout B = Layout::parse("[#A_1][#A_0]", {{"A", A}});
//
//   [3][4]             dense: compact row-major strides over all its leaves
//   [[3][2]][4]        nested dimensions
//   [N/16][(M+15)/16]  extents are integer expressions (+ - * / % and
//                      parentheses, C's truncating division) over named
//                      constants; division by zero, overflow and unknown
//                      names are errors
//   [20 [4][6]]        a group resized: its first 20 elements of 24
//   [#A_1][#A_0]       references to sub-types of a named type (see below)
//   [16 #A_1]          a reference resized: the first 16 elements of A_1
//   [[64][16] #A_0]    a reference split into extents, which may nest:
//                      [[8][[4][4]] #A_0]; element i of the split is element i
//                      of A_0 (its flat index regrouped row-major); extents
//                      covering more than A_0's size give a resized node
//   [[4][4] 16 #A_1]   resize, then split: the size stays next to the
//                      reference as in [16 #A_1] and the split goes before
//                      both (the paper's [[4][4] #S_1] over a 17-wide S must
//                      say which 16 it means)
//   [5:17]             a leaf of 5 elements 17 apart; str() prints every type
//                      that is not dense with these, e.g. [3:1][4:3]
//
// A type is either all dense extents or all references and explicit leaves:
// dense strides over a mix would leave the references' storage undefined.
//
// Sub-types: A_k is A's k-th top-level dimension, A_k_j that one's j-th, and
// so on, also for types built from references (#B_0_1). A leaf's only
// sub-type is itself, written as one final _0 (the paper writes A_0 for a
// one-dimensional A); a longer path or an index past the rank is an error.
//
// Splitting a nested dimension ([[4][8] #A_0] where A_0 is [[2][16]] or a
// transposed pair of leaves) regroups its flat index as above. Its offsets are
// a tree of leaves when the split's boundaries (the products of its inner
// extents) and those of A_0's mixed-radix digits, after merging digits that
// are contiguous in storage, form one chain in which each divides the next:
// every piece between two neighbouring boundaries then lies within one digit.
// Any other split is refused, naming the two boundaries that do not divide.
//
// Aliasing: parse refuses a type in which two logical elements share a storage
// offset ([#A_1][#A_1]) and names the innermost bracket that aliases. A
// read-only view that aliases on purpose (a broadcast) passes
// ParseOptions{.allow_aliasing = true}. A type that references an empty type
// is not checked: it has no storage to share, yet its dimensions may alias
// (a zero extent makes the strides outside it 0: [2][0][5] has A_0 = [2:0]).
// The C++ builders (leaf, nest, resized, split) do not check; is_injective()
// does.
#pragma once

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parray/core.hpp"

namespace parray {

// Options of Layout::parse (a namespace-level struct so that it can be a
// defaulted argument inside Layout).
struct LayoutParseOptions {
  bool allow_aliasing = false;  // accept types whose elements share storage
};

class Layout {
 public:
  using Symbols = std::map<std::string, Layout, std::less<>>;
  using Constants = std::map<std::string, index_t, std::less<>>;
  using ParseOptions = LayoutParseOptions;

  // Up to this size is_injective() is exact (it enumerates the offsets where
  // the stride test cannot decide).
  static constexpr index_t kExactInjectiveSize = index_t{1} << 22;

  // A one-dimensional layout of `size` elements `stride` apart.
  static Layout leaf(index_t size, index_t stride) {
    if (size < 0) throw Error("layout: negative dimension size " + std::to_string(size));
    if (stride < 0) throw Error("layout: negative stride " + std::to_string(stride));
    checked_mul(std::max<index_t>(size - 1, 0), stride);  // the largest offset must fit
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
    index_t reach = 0;
    for (const Layout& d : dims) {
      l.size_ = checked_mul(l.size_, d.size());
      if (__builtin_add_overflow(reach, d.reach(), &reach))
        throw Error("layout: offsets overflow 64-bit indexing");
    }
    l.dims_ = std::move(dims);
    return l;
  }

  // A natural (row-major, compact) array `[s0][s1]...`.
  static Layout dense(std::initializer_list<index_t> sizes) {
    return dense(std::vector<index_t>(sizes));
  }
  static Layout dense(const std::vector<index_t>& sizes) {
    if (sizes.empty()) throw Error("layout: a dense layout needs at least one dimension");
    return nest(row_major(sizes, 1));
  }

  // Parray's type notation; see the header comment. References `#NAME_i_j`
  // look up NAME in `symbols`, names in extents look up `constants`.
  static Layout parse(std::string_view text, const Symbols& symbols = {}, const Constants& constants = {},
                      ParseOptions options = {});

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
  // Sub-type along a path: dim({0, 1}) is Parray's A_0_1. At a leaf the path
  // may only end with one 0 (the leaf itself).
  const Layout& dim(std::initializer_list<int> path) const { return sub(path.begin(), path.size()); }
  const Layout& dim(const std::vector<int>& path) const { return sub(path.data(), path.size()); }

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

  // Parray's `[[64][[4][4]] #X]`: this dimension's flat index regrouped into
  // the nested extents of `shape` (its tree and sizes count, its strides do
  // not), e.g. X.split(Layout::parse("[64][[4][4]]")). Element i of the result
  // is element i of X; extents that cover more than X's size give a resized
  // result. A nested X splits where the boundaries align with its digits (see
  // the header comment).
  Layout split(const Layout& shape) const {
    if (!shape.is_exact()) throw Error("layout: the extents of a split cannot be resized: " + shape.str());
    std::vector<std::pair<index_t, index_t>> shape_leaves;
    shape.leaves(shape_leaves);
    std::vector<index_t> extents;
    index_t total = 1;
    for (const auto& [n, s] : shape_leaves) {
      extents.push_back(n);
      total = checked_mul(total, n);
    }
    if (total < size_)
      throw Error("layout: split extents cover " + std::to_string(total) + " of " + std::to_string(size_) +
                  " elements (resize first to split fewer)");
    std::vector<Layout> parts = split_parts(extents, total, shape);
    std::size_t next = 0;
    Layout out = with_leaves(shape, parts, next);
    return total == size_ ? out : out.resized(size_);
  }
  // The flat form: a leaf of 1024 into {64, 16}.
  Layout split(const std::vector<index_t>& extents) const { return split(dense(extents)); }

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
  // Debug builds check the coordinates' ranges.
  index_t offset(std::initializer_list<index_t> coords) const {
    if (static_cast<int>(coords.size()) != rank())
      throw Error("layout: " + std::to_string(coords.size()) + " coordinates for a rank-" +
                  std::to_string(rank()) + " layout " + str());
#ifndef NDEBUG
    check_coordinates(coords);
#endif
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

  // Throws unless every coordinate lies within its dimension and together
  // they lie within the size (which a resized type makes smaller than the
  // product of its dimensions).
  void check_coordinates(std::initializer_list<index_t> coords) const {
    if (static_cast<int>(coords.size()) != rank())
      throw Error("layout: " + std::to_string(coords.size()) + " coordinates for a rank-" +
                  std::to_string(rank()) + " layout " + str());
    index_t flat = 0;
    int d = 0;
    for (index_t c : coords) {
      const index_t n = is_leaf() ? size_ : dims_[static_cast<std::size_t>(d)].size_;
      if (c < 0 || c >= n)
        throw Error("layout: coordinate " + std::to_string(c) + " of dimension " + std::to_string(d) +
                    " is outside [0, " + std::to_string(n) + ") in " + str());
      flat = flat * n + c;  // below the product of the sizes, which nest() checked
      ++d;
    }
    if (flat >= size_)
      throw Error("layout: coordinates of element " + std::to_string(flat) + " are past the " +
                  std::to_string(size_) + " elements of " + str());
  }

  // Upper bound of the storage the layout touches: 1 + its largest offset.
  index_t span() const { return size_ == 0 ? 0 : max_offset() + 1; }

  // Whether distinct elements have distinct offsets. A sufficient test first:
  // every leaf taken as an independent digit (a resized node reaches a subset
  // of its digits' combinations), sorted by stride, each stride must exceed
  // the largest offset the smaller ones reach. Where it fails, layouts of at
  // most kExactInjectiveSize elements have their offsets enumerated (exact);
  // larger ones are reported as aliasing, which may refuse an exotic layout
  // whose strides interleave without colliding.
  bool is_injective() const {
    if (size_ <= 1 || strides_separate()) return true;
    if (size_ > kExactInjectiveSize) return false;
    std::vector<index_t> offsets(static_cast<std::size_t>(size_));
    for (index_t i = 0; i < size_; ++i) offsets[static_cast<std::size_t>(i)] = offset(i);
    std::sort(offsets.begin(), offsets.end());
    return std::adjacent_find(offsets.begin(), offsets.end()) == offsets.end();
  }

  // Leaves in order (outermost first), as (size, stride) pairs.
  void leaves(std::vector<std::pair<index_t, index_t>>& out) const {
    if (is_leaf()) {
      out.emplace_back(size_, stride_);
      return;
    }
    for (const Layout& d : dims_) d.leaves(out);
  }

  // The notation, short where it can be: a dense type prints its extents
  // ([[3][2]][4]), any other type its leaves with strides ([3:1][4:3]); a
  // resized node shows its size first ([5 [3][2]]). Layout::parse(str())
  // gives back an equal layout (with allow_aliasing where it aliases).
  std::string str() const {
    const bool dense = is_dense_form();
    std::string s;
    if (is_leaf() || is_resized_node()) {
      print(s, dense);
    } else {
      for (const Layout& d : dims_) d.print(s, dense);
    }
    return s;
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
  using Digits = std::vector<std::pair<index_t, index_t>>;  // (extent, stride), outermost first

  const Layout& sub(const int* path, std::size_t n) const {
    const Layout* l = this;
    for (std::size_t i = 0; i < n; ++i) {
      if (l->is_leaf() && !(path[i] == 0 && i + 1 == n)) {
        std::string p;
        for (std::size_t j = 0; j < n; ++j) p.append("_").append(std::to_string(path[j]));
        throw Error("layout: sub-type path " + p + " goes past the leaf " + l->str() +
                    " (a leaf's only sub-type is itself, one final _0)");
      }
      l = &l->dim(path[i]);
    }
    return *l;
  }

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

  // Sum of the leaves' largest offsets: bounds every offset, so nest() checks
  // it once and offset() cannot overflow within range.
  index_t reach() const {
    if (is_leaf()) return std::max<index_t>(size_ - 1, 0) * stride_;
    index_t r = 0;
    for (const Layout& d : dims_)
      if (__builtin_add_overflow(r, d.reach(), &r)) throw Error("layout: offsets overflow 64-bit indexing");
    return r;
  }

  // Fewer elements than the children hold (this node itself, not below it).
  bool is_resized_node() const {
    if (is_leaf()) return false;
    index_t product = 1;
    for (const Layout& d : dims_) product *= d.size_;  // nest() checked the product
    return product != size_;
  }
  bool is_exact() const {
    if (is_resized_node()) return false;
    return std::all_of(dims_.begin(), dims_.end(), [](const Layout& d) { return d.is_exact(); });
  }

  // Leaves with the strides the dense notation would give them.
  bool is_dense_form() const {
    std::vector<std::pair<index_t, index_t>> l;
    leaves(l);
    index_t stride = 1;
    for (auto it = l.rbegin(); it != l.rend(); ++it) {
      if (it->second != stride || __builtin_mul_overflow(stride, it->first, &stride)) return false;
    }
    return true;
  }

  // One bracketed dimension: [n] or [n:s] for a leaf, [children] for a nested
  // node and [n children] for a resized one.
  void print(std::string& s, bool dense) const {
    s.append("[");
    if (is_leaf()) {
      s.append(std::to_string(size_));
      if (!dense) s.append(":").append(std::to_string(stride_));
    } else {
      if (is_resized_node()) s.append(std::to_string(size_)).append(" ");
      for (const Layout& d : dims_) d.print(s, dense);
    }
    s.append("]");
  }

  bool strides_separate() const {
    std::vector<std::pair<index_t, index_t>> l;
    leaves(l);
    std::sort(l.begin(), l.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    index_t reach = 0;  // the largest offset the digits so far reach
    for (const auto& [n, s] : l) {
      if (n <= 1) continue;
      index_t add;
      if (s <= reach || __builtin_mul_overflow(n - 1, s, &add) || __builtin_add_overflow(reach, add, &reach))
        return false;
    }
    return true;
  }

  // The offset as one mixed-radix number: the leaves in order, each an
  // independent digit. The first digit takes whatever is left, so the first
  // child may be resized; a resized later child breaks the number.
  bool mixed_radix(Digits& out) const {
    if (is_leaf()) {
      out.emplace_back(size_, stride_);
      return true;
    }
    if (!dims_[0].mixed_radix(out)) return false;
    for (std::size_t d = 1; d < dims_.size(); ++d) {
      if (!dims_[d].is_exact()) return false;
      dims_[d].leaves(out);
    }
    return true;
  }

  // The mixed-radix digits with inner digits of extent 1 dropped and digits
  // contiguous in storage merged, so that a split's alignment depends only on
  // the offsets and not on how the tree was written.
  Digits canonical_digits() const {
    Digits raw, out;
    if (!mixed_radix(raw))
      throw Error("layout: cannot split " + str() +
                  ": a resized inner dimension makes its offsets more than one mixed-radix number");
    for (std::size_t m = 0; m < raw.size(); ++m) {
      const auto [e, s] = raw[m];
      if (m > 0 && e == 1) continue;
      index_t whole;
      if (!out.empty() && !__builtin_mul_overflow(s, e, &whole) && out.back().second == whole) {
        // The first digit's extent is never read (it takes whatever is left).
        if (out.size() > 1) out.back().first = checked_mul(out.back().first, e);
        out.back().second = s;
      } else {
        out.emplace_back(e, s);
      }
    }
    return out;
  }

  // The layouts of the split's extents (outermost first). Boundaries are the
  // place values of the split's extents and of this dimension's digits; each
  // piece between two neighbouring boundaries lies within one digit, so it is
  // a leaf, and an extent is the nest of its pieces.
  std::vector<Layout> split_parts(const std::vector<index_t>& extents, index_t total, const Layout& shape) const {
    const Digits digits = canonical_digits();
    if (total == 0 || size_ == 0) return row_major(extents, digits.back().second);  // no element to keep
    std::vector<index_t> radix;
    for (const auto& d : digits) radix.push_back(d.first);
    const std::vector<index_t> place = place_values(radix, total), split_place = place_values(extents, total);
    std::vector<index_t> bounds = place;
    bounds.insert(bounds.end(), split_place.begin(), split_place.end());
    bounds.push_back(total);
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    for (std::size_t t = 0; t + 1 < bounds.size(); ++t)
      if (bounds[t + 1] % bounds[t] != 0)
        throw Error("layout: cannot split " + str() + " into " + shape.str() + ": the boundary " +
                    std::to_string(bounds[t + 1]) + " is not a multiple of " + std::to_string(bounds[t]) +
                    ", so the split does not align with its mixed-radix digits " + digits_str(digits));
    // A piece starting at boundary b lies in the outermost digit whose place
    // value is at most b, and steps by b in units of that place.
    auto stride_at = [&](index_t b) {
      std::size_t m = 0;
      while (place[m] > b) ++m;
      return checked_mul(digits[m].second, b / place[m]);
    };
    std::vector<Layout> parts;
    for (std::size_t j = 0; j < extents.size(); ++j) {
      const index_t lo = split_place[j], hi = lo * extents[j];
      std::vector<Layout> pieces;
      for (std::size_t t = bounds.size() - 1; t-- > 0;)
        if (bounds[t] >= lo && bounds[t] < hi) pieces.push_back(leaf(bounds[t + 1] / bounds[t], stride_at(bounds[t])));
      parts.push_back(pieces.empty() ? leaf(extents[j], stride_at(lo)) : nest(std::move(pieces)));
    }
    return parts;
  }

  // Place value of each digit of a mixed-radix number (the innermost's is 1),
  // capped at `cap`: larger ones never split anything below it.
  static std::vector<index_t> place_values(const std::vector<index_t>& radix, index_t cap) {
    std::vector<index_t> place(radix.size());
    index_t q = 1;
    for (std::size_t m = radix.size(); m-- > 0;) {
      place[m] = q;
      if (__builtin_mul_overflow(q, radix[m], &q) || q > cap) q = cap;
    }
    return place;
  }

  // Leaves of these extents with compact row-major strides from `stride` up.
  static std::vector<Layout> row_major(const std::vector<index_t>& extents, index_t stride) {
    std::vector<Layout> dims(extents.size());
    for (std::size_t d = extents.size(); d-- > 0;) {
      dims[d] = leaf(extents[d], stride);
      stride = checked_mul(stride, extents[d]);
    }
    return dims;
  }

  static std::string digits_str(const Digits& digits) {
    std::string s;
    for (std::size_t m = 0; m < digits.size(); ++m) {
      s.append("[").append(m == 0 ? "*" : std::to_string(digits[m].first));
      s.append(":").append(std::to_string(digits[m].second)).append("]");
    }
    return s;
  }

  // `shape` with its leaves replaced by `parts`, in order.
  static Layout with_leaves(const Layout& shape, std::vector<Layout>& parts, std::size_t& next) {
    if (shape.is_leaf()) return std::move(parts[next++]);
    std::vector<Layout> dims;
    for (const Layout& d : shape.dims_) dims.push_back(with_leaves(d, parts, next));
    return nest(std::move(dims));
  }

  std::vector<Layout> dims_;
  index_t size_ = 1;
  index_t stride_ = 0;
};

// ---- the parser -----------------------------------------------------------

namespace detail {

// A recursive-descent parser over the characters of the notation; every error
// names the type text and the position where it was found.
class TypeParser {
 public:
  TypeParser(std::string_view text, const Layout::Symbols& symbols, const Layout::Constants& constants,
             Layout::ParseOptions options)
      : text_(text), symbols_(symbols), constants_(constants), options_(options) {}

  Layout parse() {
    std::vector<Item> items = parse_list();
    skip_space();
    if (pos_ != text_.size()) fail("unexpected '" + std::string(1, text_[pos_]) + "'");
    if (items.empty()) fail("empty type");
    Layout type = build(items);
    if (!options_.allow_aliasing && !over_empty_ && !type.is_injective()) {
      const std::size_t at = aliasing_at(items);
      fail("distinct elements share a storage offset (aliasing; a read-only view may pass "
           "ParseOptions{.allow_aliasing = true})",
           at == npos ? 0 : at);
    }
    return type;
  }

 private:
  static constexpr std::size_t npos = std::string_view::npos;

  // A parsed dimension: a dense extent (its stride is assigned by build), a
  // finished layout (a reference, split or explicit leaf), or a group of
  // dimensions, perhaps resized. build() leaves every item's layout set.
  struct Item {
    enum class Kind { extent, layout, group } kind = Kind::extent;
    std::size_t pos = 0;  // its '['
    index_t extent = 0;
    Layout layout;
    std::vector<Item> children;
    index_t resize = -1;  // [n [..][..]]
    std::size_t resize_pos = 0;
  };

  [[noreturn]] void fail(const std::string& why, std::size_t at) const {
    throw Error("layout type \"" + std::string(text_) + "\": " + why + " at position " + std::to_string(at));
  }
  [[noreturn]] void fail(const std::string& why) const { fail(why, pos_); }

  // Runs a Layout operation, reporting its error at `at`.
  template <class F>
  auto guarded(std::size_t at, F&& op) const -> decltype(op()) {
    try {
      return op();
    } catch (const Error& e) {
      std::string_view why = e.what();
      if (why.substr(0, 8) == "layout: ") why.remove_prefix(8);
      fail(std::string(why), at);
    }
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
  bool at_digit() const { return pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])); }
  bool at_name_char() const {
    return pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_');
  }

  std::vector<Item> parse_list() {
    std::vector<Item> items;
    while (peek('[')) items.push_back(parse_dim());
    return items;
  }

  Item parse_dim() {
    Item item;
    skip_space();
    item.pos = pos_;
    expect('[');
    if (peek('#')) {
      item.kind = Item::Kind::layout;
      item.layout = reference();
    } else if (peek('[')) {
      std::vector<Item> children = parse_list();
      if (peek('#') || starts_expression()) {
        item.kind = Item::Kind::layout;
        item.layout = split(std::move(children));
      } else {
        item.kind = Item::Kind::group;
        item.children = std::move(children);
      }
    } else {
      sized(item);
    }
    expect(']');
    return item;
  }

  // The forms that start with a size: [n], [n:s], [n #X] and [n [..][..]].
  void sized(Item& item) {
    skip_space();
    const std::size_t at = pos_;
    const index_t n = extent();
    if (peek(':')) {
      ++pos_;
      skip_space();
      const std::size_t stride_at = pos_;
      const index_t s = expression();
      if (s < 0) fail("negative stride " + std::to_string(s), stride_at);
      item.kind = Item::Kind::layout;
      item.layout = guarded(at, [&] { return Layout::leaf(n, s); });
    } else if (peek('#')) {
      const Layout ref = reference();
      item.kind = Item::Kind::layout;
      item.layout = guarded(at, [&] { return ref.resized(n); });
    } else if (peek('[')) {
      item.kind = Item::Kind::group;
      item.children = parse_list();
      item.resize = n;
      item.resize_pos = at;
    } else {
      item.extent = n;
    }
  }

  // [[a][b] #X] or [[a][b] n #X]: the extents are parsed, the rest follows.
  Layout split(std::vector<Item> extents) {
    const std::size_t at = extents.front().pos;
    if (const Item* bad = not_plain(extents)) fail("a split takes plain extents such as [4][[2][2]]", bad->pos);
    index_t stride = 1;
    const Layout shape = dense_group(extents, stride);
    Layout ref;
    if (starts_expression()) {
      skip_space();
      const std::size_t size_at = pos_;
      const index_t n = extent();
      if (!peek('#')) fail("expected '#' and a reference after the size of a split");
      const Layout whole = reference();
      ref = guarded(size_at, [&] { return whole.resized(n); });
    } else {
      ref = reference();
    }
    return guarded(at, [&] { return ref.split(shape); });
  }
  static const Item* not_plain(const std::vector<Item>& items) {
    for (const Item& i : items) {
      if (i.kind == Item::Kind::layout || i.resize >= 0) return &i;
      if (const Item* bad = not_plain(i.children)) return bad;
    }
    return nullptr;
  }

  // #NAME_i_j...: a sub-type of a named type.
  Layout reference() {
    expect('#');
    skip_space();
    const std::size_t start = pos_;
    // The name is letters and digits; '_' starts the sub-type path.
    while (pos_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    const std::string_view name = text_.substr(start, pos_ - start);
    if (name.empty()) fail("expected a type name after '#'");
    auto it = symbols_.find(name);
    if (it == symbols_.end()) fail("unknown type '" + std::string(name) + "'", start);
    over_empty_ = over_empty_ || it->second.size() == 0;
    const Layout* l = &it->second;
    std::string shown(name), leaf_name;  // leaf_name: set once a leaf's _0 was taken
    while (pos_ < text_.size() && text_[pos_] == '_') {
      const std::size_t step = pos_++;
      if (!at_digit()) fail("expected a dimension index after '_'");
      const index_t k = number();
      if (!leaf_name.empty() || (l->is_leaf() && k != 0)) {
        const std::string& leaf = leaf_name.empty() ? shown : leaf_name;
        fail(leaf + " is a leaf: its only sub-type is itself, " + leaf + "_0", step);
      }
      if (l->is_leaf()) {
        leaf_name = shown;
      } else if (k >= l->rank()) {
        fail(shown + " has " + std::to_string(l->rank()) + " dimensions, so no _" + std::to_string(k), step);
      } else {
        l = &l->dim(static_cast<int>(k));
      }
      shown.append("_").append(std::to_string(k));
    }
    return *l;
  }

  // ---- integer expressions over the constants, with C's semantics ----

  bool starts_expression() {
    skip_space();
    return at_name_char() || peek('(') || peek('-');
  }
  index_t extent() {
    skip_space();
    const std::size_t at = pos_;
    const index_t n = expression();
    if (n < 0) fail("negative extent " + std::to_string(n), at);
    return n;
  }
  index_t expression() {
    index_t v = term();
    while (peek('+') || peek('-')) {
      const std::size_t at = pos_;
      const char op = text_[pos_++];
      v = apply(op, v, term(), at);
    }
    return v;
  }
  index_t term() {
    index_t v = unary();
    while (peek('*') || peek('/') || peek('%')) {
      const std::size_t at = pos_;
      const char op = text_[pos_++];
      v = apply(op, v, unary(), at);
    }
    return v;
  }
  index_t unary() {
    if (!peek('-')) return primary();
    const std::size_t at = pos_++;
    return apply('-', 0, unary(), at);
  }
  index_t primary() {
    skip_space();
    const std::size_t at = pos_;
    if (peek('(')) {
      ++pos_;
      const index_t v = expression();
      expect(')');
      return v;
    }
    if (at_digit()) return number();
    if (!at_name_char()) fail("expected a number, a constant or '('");
    while (at_name_char()) ++pos_;
    const std::string_view name = text_.substr(at, pos_ - at);
    auto it = constants_.find(name);
    if (it == constants_.end()) fail("unknown constant '" + std::string(name) + "'", at);
    return it->second;
  }
  index_t number() {
    const std::size_t at = pos_;
    index_t v = 0;
    for (; at_digit(); ++pos_)
      if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[pos_] - '0', &v))
        fail("number overflows 64-bit integers", at);
    return v;
  }
  index_t apply(char op, index_t a, index_t b, std::size_t at) const {
    index_t r = 0;
    bool overflow = false;
    if (op == '+') {
      overflow = __builtin_add_overflow(a, b, &r);
    } else if (op == '-') {
      overflow = __builtin_sub_overflow(a, b, &r);
    } else if (op == '*') {
      overflow = __builtin_mul_overflow(a, b, &r);
    } else {  // '/' and '%' truncate toward zero, as in C
      if (b == 0) fail(op == '/' ? "division by zero" : "remainder by zero", at);
      overflow = a == std::numeric_limits<index_t>::min() && b == -1;
      if (!overflow) r = op == '/' ? a / b : a % b;
    }
    if (overflow) fail(std::string("'") + op + "' overflows 64-bit integers", at);
    return r;
  }

  // ---- from items to a layout ----

  Layout build(std::vector<Item>& items) {
    std::size_t first_dense = npos, first_ref = npos;
    scan(items, first_dense, first_ref);
    if (first_dense != npos && first_ref != npos)
      fail("cannot mix dense extents and references in one type", std::max(first_dense, first_ref));
    if (first_ref != npos) return from_refs(items);
    index_t stride = 1;
    return dense_group(items, stride);
  }
  static void scan(const std::vector<Item>& items, std::size_t& dense, std::size_t& ref) {
    for (const Item& i : items) {
      if (i.kind == Item::Kind::layout) ref = std::min(ref, i.pos);
      else if (i.kind == Item::Kind::extent) dense = std::min(dense, i.pos);
      else scan(i.children, dense, ref);
    }
  }
  Layout from_refs(std::vector<Item>& items) {
    std::vector<Layout> dims;
    for (Item& i : items) {
      if (i.kind == Item::Kind::group) i.layout = finish_group(i, from_refs(i.children));
      dims.push_back(i.layout);
    }
    return guarded(items.front().pos, [&] { return Layout::nest(std::move(dims)); });
  }
  // Dense extents get compact strides, assigned from the last leaf backwards.
  Layout dense_group(std::vector<Item>& items, index_t& stride) {
    std::vector<Layout> dims(items.size());
    for (std::size_t d = items.size(); d-- > 0;) {
      Item& i = items[d];
      if (i.kind == Item::Kind::extent) {
        i.layout = guarded(i.pos, [&] { return Layout::leaf(i.extent, stride); });
        stride = guarded(i.pos, [&] { return Layout::checked_mul(stride, i.extent); });
      } else {
        i.layout = finish_group(i, dense_group(i.children, stride));
      }
      dims[d] = i.layout;
    }
    return guarded(items.front().pos, [&] { return Layout::nest(std::move(dims)); });
  }
  Layout finish_group(const Item& group, const Layout& nested) const {
    if (group.resize < 0) return nested;
    return guarded(group.resize_pos, [&] { return nested.resized(group.resize); });
  }

  // The innermost bracket whose dimension aliases (npos: only the whole type).
  static std::size_t aliasing_at(const std::vector<Item>& items) {
    for (const Item& i : items) {
      if (i.kind == Item::Kind::group) {
        const std::size_t inner = aliasing_at(i.children);
        if (inner != npos) return inner;
      }
      if (!i.layout.is_injective()) return i.pos;
    }
    return npos;
  }

  std::string_view text_;
  const Layout::Symbols& symbols_;
  const Layout::Constants& constants_;
  Layout::ParseOptions options_;
  std::size_t pos_ = 0;
  bool over_empty_ = false;  // a reference to an empty type: no storage to alias
};

}  // namespace detail

inline Layout Layout::parse(std::string_view text, const Symbols& symbols, const Constants& constants,
                            ParseOptions options) {
  return detail::TypeParser(text, symbols, constants, options).parse();
}

}  // namespace parray
