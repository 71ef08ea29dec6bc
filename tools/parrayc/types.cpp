// What the translator derives from a declaration's dimensions: the shape of
// its tree (how many dimensions each node has, for the checks of $...$ at
// translation time) and, for smem and rmem, the static layout type
// (static_layout.hpp) that a kernel sizes its arrays with.
#include <cctype>
#include <climits>
#include <string>

#include "parray/core.hpp"
#include "parray/layout.hpp"
#include "parrayc/internal.hpp"

namespace parray::pa {

namespace {

// The value of an extent written with numbers only, as Layout::parse reads
// it; empty where it has names, does not parse or does not fit a C int.
std::string constant_extent(const std::string& e) {
  if (!is_number_expression(e)) return {};
  try {
    const index_t n = Layout::parse(std::string("[").append(e).append("]")).size();
    return n <= INT_MAX ? std::to_string(n) : std::string{};
  } catch (const Error&) {
    return {};
  }
}

// The product of the children's constant sizes, empty unless all have one.
std::string product_of(const std::vector<Shape>& kids) {
  long long p = 1;
  for (const Shape& k : kids) {
    if (k.size.empty()) return {};
    p *= std::stoll(k.size);
    if (p > INT_MAX) return {};
  }
  return std::to_string(p);
}

}  // namespace

bool is_number_expression(const std::string& e) {
  for (char c : e)
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return false;
  return !e.empty();
}

Shape Translator::shape_of(const std::vector<Dim>& dims) const {
  if (dims.size() == 1) return shape_of(dims[0]);
  Shape s;
  s.known = true;
  for (const Dim& d : dims) s.kids.push_back(shape_of(d));
  s.size = product_of(s.kids);
  return s;
}

Shape Translator::shape_of(const Dim& d) const {
  Shape s = referenced_shape(d);
  if (!d.size.empty()) s.size = constant_extent(d.size);  // an extent, or a resize
  return s;
}

// The tree below d: its group's or split's, a leaf's, or the referenced node's.
Shape Translator::referenced_shape(const Dim& d) const {
  if (!d.children.empty()) return shape_of(d.children);  // a group, or a split's extents
  if (d.ref.empty()) return Shape{true, {}, {}};
  const std::string base = d.ref.substr(0, d.ref.find('_'));
  std::vector<int> path;
  auto it = symbols_.find(base);
  if (it == symbols_.end() || !split_path(d.ref, base.size(), path)) return Shape{};
  Shape s = it->second.shape;
  for (int step : path) {
    if (!s.known || s.leaf()) break;  // a leaf's _0 is itself; Layout::parse checks the rest
    if (static_cast<std::size_t>(step) >= s.kids.size()) return Shape{};
    s = Shape(s.kids[static_cast<std::size_t>(step)]);
  }
  return s;
}

namespace {

// Static types: SNest of the dimensions (one is itself), SLeaf<extent,
// stride> with dense strides, references to other static types by ::dim<k>.
class StaticTypeWriter {
 public:
  StaticTypeWriter(const std::map<std::string, Symbol, std::less<>>& symbols, const FailAt& fail)
      : symbols_(symbols), fail_(fail) {}

  std::string of(const std::vector<Dim>& dims) {
    dense_ = !has_reference(dims);
    if (dense_) strides(dims, "1");
    return nest(dims);
  }

 private:
  static bool has_reference(const std::vector<Dim>& dims) {
    for (const Dim& d : dims)
      if (!d.ref.empty() || has_reference(d.children)) return true;
    return false;
  }
  // Dense strides, innermost leaf first: each leaf's stride is the product
  // of the extents after it.
  std::string strides(const std::vector<Dim>& dims, std::string inner) {
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
      if (it->children.empty()) {
        stride_of_[&*it] = inner;
        inner = "(" + it->size + ") * " + inner;
      } else {
        inner = strides(it->children, inner);
      }
    }
    return inner;
  }
  std::string nest(const std::vector<Dim>& dims) {
    if (dims.size() == 1) return dim(dims[0]);
    std::string s = "::parray::SNest<";
    for (std::size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + dim(dims[k]);
    return s + ">";
  }
  std::string dim(const Dim& d) {
    if (d.ref.empty() && !d.children.empty()) return resized(d, nest(d.children));
    if (d.ref.empty()) {
      if (!d.stride.empty()) return "::parray::SLeaf<(" + d.size + "), (" + d.stride + ")>";
      if (!dense_) fail_(d.at, "dense extents mixed with references (a type is all extents or all references)");
      return "::parray::SLeaf<(" + d.size + "), " + stride_of_.at(&d) + ">";
    }
    const std::string base = resized(d, reference(d));
    if (d.children.empty()) return base;
    std::string s = "::parray::pa::SSplit<" + base;
    for (const Dim& e : d.children) {
      if (!e.is_extent() || !e.stride.empty())
        fail_(e.at, "a static split's extents are plain numbers ([[4][4] 16 #S_1])");
      s += ", (" + e.size + ")";
    }
    return s + ">";
  }
  static std::string resized(const Dim& d, const std::string& inner) {
    return d.size.empty() ? inner : "::parray::SResize<(" + d.size + "), " + inner + ">";
  }
  std::string reference(const Dim& d) {
    const std::string base = d.ref.substr(0, d.ref.find('_'));
    std::vector<int> path;
    auto it = symbols_.find(base);
    if (it == symbols_.end())
      fail_(d.at, "unknown type '" + base + "' (declare it before: #parray {...} " + base + ")");
    if (it->second.form != Form::local)
      fail_(d.at, "'" + base + "' is not a smem or rmem type: a kernel-local type refers to kernel-local types");
    if (!split_path(d.ref, base.size(), path)) fail_(d.at, "'#" + d.ref + "': a sub-type path is _N_N...");
    std::string s = base;
    for (int step : path) s += "::dim<" + std::to_string(step) + ">";
    return s;
  }

  const std::map<std::string, Symbol, std::less<>>& symbols_;
  const FailAt& fail_;
  bool dense_ = true;
  std::map<const Dim*, std::string> stride_of_;
};

}  // namespace

std::string Translator::static_type(const std::vector<Dim>& dims, const FailAt& fail) const {
  return StaticTypeWriter(symbols_, fail).of(dims);
}

}  // namespace parray::pa
