// Property tests of the type algebra (include/parray/layout.hpp): seeded
// random types built by random compositions (dense types with nesting,
// references, transposition, padding, splits of leaves and of nested
// dimensions, nested splits, sub-types of referenced types) checked against
// two references that do not use Layout::offset:
//   * the tree's meaning: a leaf's offsets are i*s, a nested node's the
//     row-major sums of its children's (flatten to leaves, mixed radix per
//     level), cut to its size;
//   * the construction's meaning (Model): a reference is the named type's
//     node, a resize cuts it, a split regroups the flat index of what it
//     splits: its node of place value p has offsets f(x*p).
// Plus: print -> parse round trips, is_injective() against enumeration, and
// every error case throwing parray::Error with its position.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <limits>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "device_layout_check.hpp"
#include "parray/layout.hpp"

namespace {

using namespace parray;

constexpr index_t kUnknown = -1;  // an offset the construction does not define (past a split's size)

// ---- the tree's meaning ----

std::vector<index_t> tree_offsets(const Layout& l) {
  if (l.is_leaf()) {
    std::vector<index_t> t(static_cast<std::size_t>(l.size()));
    for (index_t i = 0; i < l.size(); ++i) t[static_cast<std::size_t>(i)] = i * l.stride();
    return t;
  }
  std::vector<index_t> acc{0};
  for (int k = 0; k < l.rank(); ++k) {
    const std::vector<index_t> child = tree_offsets(l.dim(k));
    std::vector<index_t> next;
    next.reserve(acc.size() * child.size());
    for (index_t a : acc)
      for (index_t c : child) next.push_back(a + c);
    acc = std::move(next);
  }
  acc.resize(static_cast<std::size_t>(l.size()));
  return acc;
}

// Checks offset() against the tree's meaning on a node and every node below
// it, and returns the node's offsets.
std::vector<index_t> expect_tree_semantics(const Layout& l, const std::string& where) {
  std::vector<index_t> t;
  if (l.is_leaf()) {
    t = tree_offsets(l);
  } else {
    t = {0};
    for (int k = 0; k < l.rank(); ++k) {
      const std::vector<index_t> child = expect_tree_semantics(l.dim(k), where + "_" + std::to_string(k));
      std::vector<index_t> next;
      next.reserve(t.size() * child.size());
      for (index_t a : t)
        for (index_t c : child) next.push_back(a + c);
      t = std::move(next);
    }
    t.resize(static_cast<std::size_t>(l.size()));
  }
  for (index_t i = 0; i < l.size(); ++i)
    if (l.offset(i) != t[static_cast<std::size_t>(i)]) {
      ADD_FAILURE() << where << " element " << i << ": offset " << l.offset(i) << ", meaning "
                    << t[static_cast<std::size_t>(i)];
      break;
    }
  return t;
}

bool all_distinct(std::vector<index_t> t) {
  std::sort(t.begin(), t.end());
  return std::adjacent_find(t.begin(), t.end()) == t.end();
}

// ---- the construction's meaning ----

struct Model {
  std::vector<index_t> table;  // offset of each element, kUnknown where undefined
  std::vector<Model> dims;     // sub-types; empty where the construction has none
};

Model cut(Model m, index_t n) {
  m.table.resize(static_cast<std::size_t>(n));
  return m;
}

// A group of dimensions: row-major sums of the children's offsets.
Model group(std::vector<Model> dims) {
  if (dims.size() == 1) return std::move(dims.front());
  Model m;
  m.table = {0};
  for (const Model& d : dims) {
    std::vector<index_t> next;
    for (index_t a : m.table)
      for (index_t c : d.table) next.push_back(a == kUnknown || c == kUnknown ? kUnknown : a + c);
    m.table = std::move(next);
  }
  m.dims = std::move(dims);
  return m;
}

// A tree of extents, as written in a dense type or a split.
struct Shape {
  index_t extent = 1;         // leaves
  std::vector<Shape> dims;    // groups (at least two)
  index_t size() const {
    index_t n = dims.empty() ? extent : 1;
    for (const Shape& d : dims) n *= d.size();
    return n;
  }
};

// The nodes of a split of f (defined below n) into `shape`: the node of place
// value p has offsets f(x * p).
Model regroup(const std::vector<index_t>& f, const Shape& shape, index_t place) {
  Model m;
  const index_t n = static_cast<index_t>(f.size());
  for (index_t x = 0; x < shape.size(); ++x)
    m.table.push_back(x * place < n ? f[static_cast<std::size_t>(x * place)] : kUnknown);
  std::vector<Model> dims(shape.dims.size());
  for (std::size_t k = shape.dims.size(); k-- > 0;) {
    dims[k] = regroup(f, shape.dims[k], place);
    place *= shape.dims[k].size();
  }
  m.dims = std::move(dims);
  return m;
}

Model split_model(const std::vector<index_t>& f, const Shape& shape) {
  return cut(regroup(f, shape, 1), static_cast<index_t>(f.size()));
}

// Checks a layout against its model, node by node where the model has nodes
// (a split's extent may be a nest of pieces in the layout, a leaf in the model).
void expect_model(const Layout& l, const Model& m, const std::string& where) {
  ASSERT_EQ(static_cast<index_t>(m.table.size()), l.size()) << where;
  for (index_t i = 0; i < l.size(); ++i) {
    const index_t want = m.table[static_cast<std::size_t>(i)];
    if (want != kUnknown && l.offset(i) != want) {
      FAIL() << where << " element " << i << ": offset " << l.offset(i) << ", construction " << want;
    }
  }
  if (m.dims.empty()) return;
  ASSERT_EQ(static_cast<std::size_t>(l.rank()), m.dims.size()) << where;
  for (int k = 0; k < l.rank(); ++k)
    expect_model(l.dim(k), m.dims[static_cast<std::size_t>(k)], where + "_" + std::to_string(k));
}

// ---- errors ----

// The position an Error names; npos (and a test failure) where the call does
// not throw a parray::Error naming the type text and a position.
std::size_t error_position(const std::string& text, const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    const std::string what = e.what();
    const std::string key = " at position ";
    const std::size_t at = what.rfind(key);
    EXPECT_NE(what.find("\"" + text + "\""), std::string::npos) << what;
    EXPECT_NE(at, std::string::npos) << what;
    return at == std::string::npos ? std::string::npos : std::stoull(what.substr(at + key.size()));
  } catch (const std::exception& e) {
    ADD_FAILURE() << text << ": not a parray::Error: " << e.what();
    return std::string::npos;
  }
  ADD_FAILURE() << text << ": no error";
  return std::string::npos;
}

// ---- the generator ----

const Layout::Constants kConstants = {{"N", 16}, {"M", 7}, {"Z", 0}, {"BIG", index_t{1} << 62}};
constexpr index_t kMaxCheckedSize = 4096;

struct Entry {
  std::string name;
  Layout layout;
  Model model;
};

// A node of a pool entry and the path that names it.
struct Target {
  std::string text;  // #NAME_i_j
  const Layout* layout;
  const Model* model;
  bool leaf_self = false;  // the path ends with a leaf's _0
  bool over_empty = false;  // the named type is empty: parse does not check aliasing
};

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : rng_(seed) {}

  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  std::size_t pick_index(std::size_t n) { return static_cast<std::size_t>(pick(static_cast<int>(n))); }
  index_t range(index_t lo, index_t hi) { return std::uniform_int_distribution<index_t>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  int nested_splits() const { return nested_splits_; }  // aligned splits of nested dimensions generated
  const Layout::Symbols& symbols() const { return symbols_; }

  void add(Layout layout, Model model) {
    Entry e{"T" + std::to_string(next_name_++), std::move(layout), std::move(model)};
    symbols_[e.name] = e.layout;
    pool_.push_back(std::move(e));
    if (pool_.size() > 16) {  // keep the first storages and the recent views
      symbols_.erase(pool_[4].name);
      pool_.erase(pool_.begin() + 4);
    }
  }

  // An extent, sometimes written as an expression over the constants.
  std::string extent_text(index_t e) {
    const std::string v = std::to_string(e);
    switch (pick(6)) {
      case 0: return "(" + v + "+N)-N";
      case 1: return v + "*M/M";
      case 2: return "(" + v + "*N+M)/N";
      case 3: return "Z*BIG+" + v;
      default: return v;
    }
  }

  // A random tree over these leaf extents, in order.
  Shape nest_extents(const std::vector<index_t>& extents, std::size_t lo, std::size_t hi) {
    if (hi - lo == 1) return Shape{extents[lo], {}};
    Shape s;
    std::size_t at = lo;
    while (at < hi) {
      const std::size_t left = hi - at;
      std::size_t take = left == 1 || (at == lo && chance(0.3)) ? 1 : 1 + pick_index(left);
      if (at == lo && take == left) take = left - 1;  // at least two children
      s.dims.push_back(nest_extents(extents, at, at + take));
      at += take;
    }
    return s;
  }
  std::string shape_text(const Shape& s, bool outer) {
    if (s.dims.empty()) return "[" + extent_text(s.extent) + "]";
    std::string t;
    for (const Shape& d : s.dims) t += shape_text(d, false);
    return outer ? t : "[" + t + "]";
  }
  // The dims of a shape as a split writes them: [[a][b] #X] has dims [a][b].
  std::string split_dims_text(const Shape& s) { return s.dims.empty() ? shape_text(s, false) : shape_text(s, true); }

  std::vector<index_t> random_extents(index_t max_total) {
    std::vector<index_t> e;
    index_t total = 1;
    const int n = 1 + pick(4);
    for (int i = 0; i < n; ++i) {
      const index_t x = range(1, std::max<index_t>(1, std::min<index_t>(8, max_total / total)));
      e.push_back(x);
      total *= x;
    }
    if (chance(0.05)) e[static_cast<std::size_t>(pick(n))] = 0;
    return e;
  }

  // A dense type [..][..] (perhaps a resized group) and its model: the flat
  // offsets of a compact row-major array are 0, 1, 2, ...
  std::pair<std::string, Model> dense_type() {
    const std::vector<index_t> e = random_extents(256);
    const Shape s = nest_extents(e, 0, e.size());
    std::vector<index_t> identity(static_cast<std::size_t>(s.size()));
    for (std::size_t i = 0; i < identity.size(); ++i) identity[i] = static_cast<index_t>(i);
    Model m = regroup(identity, s, 1);
    if (!s.dims.empty() && chance(0.2)) {
      const index_t k = range(0, s.size());
      return {"[" + extent_text(k) + " " + shape_text(s, true) + "]", cut(std::move(m), k)};
    }
    return {shape_text(s, true), std::move(m)};
  }

  // A random node of a random pool entry. A leaf's _0 is used only where the
  // layout's node is a leaf too (a split's extent may be a nest of pieces).
  Target target() {
    const Entry& e = pool_[pick_index(pool_.size())];
    Target t{"#" + e.name, &e.layout, &e.model};
    t.over_empty = e.layout.size() == 0;
    while (chance(0.6)) {
      if (t.model->dims.empty()) {
        if (t.layout->is_leaf() && chance(0.3)) {
          t.text += "_0";
          t.leaf_self = true;
        }
        break;
      }
      const int k = pick(t.layout->rank());
      t.text += "_" + std::to_string(k);
      t.layout = &t.layout->dim(k);
      t.model = &t.model->dims[static_cast<std::size_t>(k)];
    }
    return t;
  }

  // A split of `l` (already resized to its size) that aligns with its digits:
  // its leaves' extents refined into factors, regrouped into runs. For a
  // leaf any extents covering it. nullopt where the layout has a resized
  // inner node (not one mixed-radix number).
  std::optional<Shape> aligned_shape(const Layout& l) {
    std::vector<std::pair<index_t, index_t>> leaves;
    l.leaves(leaves);
    if (!l.is_leaf() && !inner_exact(l)) return std::nullopt;
    std::vector<index_t> sizes;
    if (l.is_leaf()) sizes.push_back(l.size() + (chance(0.3) ? range(0, 3) : 0));
    else for (const auto& [n, s] : leaves) sizes.push_back(n);
    std::vector<index_t> factors;
    for (index_t n : sizes) {
      while (n > 1 && chance(0.5)) {
        std::vector<index_t> divisors;
        for (index_t d = 2; d < n; ++d)
          if (n % d == 0) divisors.push_back(d);
        if (divisors.empty()) break;
        const index_t d = divisors[pick_index(divisors.size())];
        factors.push_back(n / d);
        n = d;
      }
      factors.push_back(n);
      if (chance(0.1)) factors.push_back(1);
    }
    std::vector<index_t> runs;
    for (std::size_t i = 0; i < factors.size();) {
      const std::size_t take = 1 + pick_index(std::min<std::size_t>(3, factors.size() - i));
      index_t p = 1;
      for (std::size_t j = i; j < i + take; ++j) p *= factors[j];
      runs.push_back(p);
      i += take;
    }
    return nest_extents(runs, 0, runs.size());
  }
  static bool inner_exact(const Layout& l) {
    for (int k = 0; k < l.rank() && !l.is_leaf(); ++k) {
      const Layout& d = l.dim(k);
      if (d.is_leaf()) continue;
      index_t product = 1;
      for (int j = 0; j < d.rank(); ++j) product *= d.dim(j).size();
      if (product != d.size() || !inner_exact(d)) return false;
    }
    return true;
  }

  // Any extents covering n, nested at random: may or may not align.
  Shape random_shape(index_t n) {
    index_t total = std::max<index_t>(n, 1) + (chance(0.3) ? range(0, 3) : 0);
    std::vector<index_t> e;
    while (total > 1 && e.size() < 4) {
      std::vector<index_t> divisors;
      for (index_t d = 1; d <= total; ++d)
        if (total % d == 0) divisors.push_back(d);
      const index_t d = divisors[pick_index(divisors.size())];
      e.push_back(d);
      total /= d;
    }
    if (total > 1 || e.empty()) e.push_back(total);
    return nest_extents(e, 0, e.size());
  }

  // One dimension of a view and its model; every form is valid.
  std::pair<std::string, Model> view_item(int depth) {
    const int kinds = depth < 2 ? 6 : 5;
    switch (pick(kinds)) {
      case 0: {  // reference
        const Target t = target();
        return {"[" + t.text + "]", *t.model};
      }
      case 1: {  // resized reference
        const Target t = target();
        const index_t k = range(0, t.layout->size());
        return {"[" + extent_text(k) + " " + t.text + "]", cut(*t.model, k)};
      }
      case 2:
      case 3: {  // split, after a resize in case 3
        const Target t = target();
        const index_t k = range(0, t.layout->size());
        const Layout source = t.layout->resized(k);
        const std::optional<Shape> s = aligned_shape(source);
        if (!s) return view_item(depth);
        const std::string size = k == t.layout->size() && chance(0.5) ? "" : extent_text(k) + " ";
        if (!source.is_leaf()) ++nested_splits_;
        return {"[" + split_dims_text(*s) + " " + size + t.text + "]", split_model(cut(*t.model, k).table, *s)};
      }
      case 4: {  // explicit leaf
        const index_t n = range(0, 6), s = range(0, 20);
        Model m;
        for (index_t i = 0; i < n; ++i) m.table.push_back(i * s);
        return {"[" + std::to_string(n) + ":" + std::to_string(s) + "]", m};
      }
      default: {  // a group, perhaps resized
        auto [text, m] = items(2 + pick(2), depth + 1);
        if (chance(0.3)) {
          const index_t k = range(0, static_cast<index_t>(m.table.size()));
          return {"[" + extent_text(k) + " " + text + "]", cut(std::move(m), k)};
        }
        return {"[" + text + "]", std::move(m)};
      }
    }
  }

  std::pair<std::string, Model> view_type() { return items(1 + pick(3), 0); }

  // Whether a type's text names an empty type (parse does not check aliasing then).
  bool references_empty(const std::string& text) const {
    for (std::size_t at = text.find('#'); at != std::string::npos; at = text.find('#', at + 1)) {
      std::size_t end = at + 1;
      while (end < text.size() && std::isalnum(static_cast<unsigned char>(text[end]))) ++end;
      if (symbols_.at(text.substr(at + 1, end - at - 1)).size() == 0) return true;
    }
    return false;
  }

  // Up to n dimensions side by side, as many as keep the size checkable.
  std::pair<std::string, Model> items(int n, int depth) {
    std::vector<Model> dims;
    std::string text;
    index_t size = 1;
    while (n-- > 0) {
      auto [t, m] = view_item(depth);
      const index_t next = size * std::max<index_t>(1, static_cast<index_t>(m.table.size()));
      if (!dims.empty() && next > kMaxCheckedSize) continue;
      size = next;
      text += t;
      dims.push_back(std::move(m));
    }
    return {text, group(std::move(dims))};
  }

 private:
  std::mt19937_64 rng_;
  std::vector<Entry> pool_;
  Layout::Symbols symbols_;
  int next_name_ = 0;
  int nested_splits_ = 0;
};

constexpr Layout::ParseOptions kAliasing{.allow_aliasing = true};

// Every check on one parsed layout, its device form included (where the type
// fits the device table).
void check_layout(const Layout& l, const std::string& text) {
  SCOPED_TRACE(text + " = " + l.str());
  ASSERT_TRUE(Layout::parse(l.str(), {}, {}, kAliasing) == l) << "round trip through " << l.str();
  const std::vector<index_t> offsets = expect_tree_semantics(l, "type");
  ASSERT_EQ(l.is_injective(), all_distinct(offsets));
  std::optional<DeviceLayout> device;
  try {
    device = DeviceLayout::from(l);
  } catch (const Error&) {
    return;  // more nodes than DeviceLayout::kMaxNodes
  }
  testing_support::expect_device_same(l, device->type(), "device type");
}

struct Counts {
  int types = 0, aliasing = 0, errors = 0;
  int random_split_ok = 0, random_split_refused = 0;  // of nested dimensions (leaves always split)
  int aligned_nested_splits = 0;
};

void run_seed(std::uint64_t seed, Counts& counts) {
  Generator g(seed);
  for (int i = 0; i < 4; ++i) {
    auto [text, model] = g.dense_type();
    const Layout l = Layout::parse(text, {}, kConstants);
    check_layout(l, text);
    expect_model(l, model, text);
    g.add(l, model);
  }
  for (int round = 0; round < 110; ++round) {
    auto [text, model] = round % 5 == 0 ? g.dense_type() : g.view_type();
    if (static_cast<index_t>(model.table.size()) > kMaxCheckedSize) continue;
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + text);
    const Layout l = Layout::parse(text, g.symbols(), kConstants, kAliasing);
    ++counts.types;
    check_layout(l, text);
    expect_model(l, model, "type");
    if (l.is_injective() || g.references_empty(text)) {
      EXPECT_TRUE(Layout::parse(text, g.symbols(), kConstants) == l);
    } else {
      ++counts.aliasing;
      error_position(text, [&] { Layout::parse(text, g.symbols(), kConstants); });
    }
    if (testing::Test::HasFatalFailure()) return;

    // A split that may not align: refused with a position, or right.
    const Target t = g.target();
    const Shape s = g.random_shape(t.layout->size());
    const std::string split = "[" + g.split_dims_text(s) + " " + t.text + "]";
    try {
      const Layout r = Layout::parse(split, g.symbols(), kConstants, kAliasing);
      if (!t.layout->is_leaf()) ++counts.random_split_ok;
      check_layout(r, split);
      expect_model(r, split_model(t.model->table, s), split);
    } catch (const Error&) {
      ++counts.random_split_refused;
      EXPECT_FALSE(t.layout->is_leaf()) << split;
      const auto at = error_position(split, [&] { Layout::parse(split, g.symbols(), kConstants, kAliasing); });
      EXPECT_EQ(at, 1u) << split;  // the split's first extent
    }

    // Error cases at known positions.
    ++counts.errors;
    {  // a path past a leaf's _0 or past the rank, refused at its '_'
      std::string deeper = t.text;
      std::size_t at = 1 + t.text.size();
      if (t.layout->is_leaf() && !t.leaf_self) {
        deeper += "_0_0";
        at += 2;
      } else {
        deeper += t.layout->is_leaf() ? "_0" : "_" + std::to_string(t.layout->rank());
      }
      const std::string bad = "[" + deeper + "]";
      EXPECT_EQ(error_position(bad, [&] { Layout::parse(bad, g.symbols()); }), at) << bad;
    }
    {
      const std::string bad = "[" + std::to_string(t.layout->size() + 1 + g.range(0, 3)) + " " + t.text + "]";
      EXPECT_EQ(error_position(bad, [&] { Layout::parse(bad, g.symbols()); }), std::size_t{1});
    }
    if (t.layout->size() >= 2) {
      const std::string bad = "[[" + std::to_string(t.layout->size() - 1) + "] " + t.text + "]";
      EXPECT_EQ(error_position(bad, [&] { Layout::parse(bad, g.symbols()); }), std::size_t{1});
    }
    if (t.layout->size() >= 2 && t.layout->size() <= 64 && t.layout->is_injective() && !t.over_empty) {
      const std::string twice = "[2:1][[" + t.text + "][" + t.text + "]]";  // refused at the inner group
      EXPECT_EQ(error_position(twice, [&] { Layout::parse(twice, g.symbols()); }), 5u);
    }
    {
      const std::string bad = "[2][" + t.text + "]";
      EXPECT_EQ(error_position(bad, [&] { Layout::parse(bad, g.symbols()); }), std::size_t{3});
    }
    {
      const std::string bad = "[" + t.text + "][#Nope_0]";
      EXPECT_EQ(error_position(bad, [&] { Layout::parse(bad, g.symbols()); }), t.text.size() + 4);
    }
    {
      const std::string bad = text + "[(N+1)/(M-M)]";
      const std::size_t slash = text.size() + 6;
      EXPECT_EQ(error_position(bad, [&] { Layout::parse(bad, g.symbols(), kConstants, kAliasing); }), slash);
    }
    {  // any prefix either parses or is refused at a position within it
      const std::size_t cut_at = static_cast<std::size_t>(g.range(0, static_cast<index_t>(text.size()) - 1));
      const std::string prefix = text.substr(0, cut_at);
      try {
        Layout::parse(prefix, g.symbols(), kConstants, kAliasing);
      } catch (const Error&) {
        const auto at = error_position(prefix, [&] { Layout::parse(prefix, g.symbols(), kConstants, kAliasing); });
        EXPECT_LE(at, prefix.size()) << prefix;
      }
    }
    if (testing::Test::HasFailure()) return;
    if (l.is_injective() || g.chance(0.2)) g.add(l, model);  // last: the pool may drop an entry
  }
  counts.aligned_nested_splits += g.nested_splits();
}

TEST(LayoutProperty, RandomCompositions) {
  Counts counts;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    run_seed(seed, counts);
    if (HasFailure()) break;
  }
  RecordProperty("types", counts.types);
  std::printf("%d types (%d aliasing), %d aligned splits of nested dimensions, random splits of nested "
              "dimensions %d accepted / %d refused, %d error rounds\n",
              counts.types, counts.aliasing, counts.aligned_nested_splits, counts.random_split_ok,
              counts.random_split_refused, counts.errors);
  EXPECT_GT(counts.types, 2000);
  EXPECT_GT(counts.aligned_nested_splits, 300);
  EXPECT_GT(counts.random_split_ok, 100);
  EXPECT_GT(counts.random_split_refused, 100);
}

// ---- integer expressions against C's semantics ----

struct Expr {
  enum Kind { number, name, unknown_name, binary, negate } kind = number;
  index_t value = 0;
  std::string text;  // number or name
  char op = 0;
  std::vector<Expr> args;
};

int precedence(const Expr& e) {
  if (e.kind == Expr::binary) return e.op == '+' || e.op == '-' ? 1 : 2;
  return e.kind == Expr::negate ? 3 : 4;
}

// Renders with the fewest parentheses the grammar needs (binary operators
// are left-associative, unary minus binds tightest) and evaluates in the
// parser's order, so that the first error is the one it reports.
struct Rendered {
  std::string text;
  std::optional<index_t> value;  // nullopt: an error at error_at
  std::size_t error_at = 0;
};

std::string wrap(const std::string& t, bool parens) { return parens ? "(" + t + ")" : t; }

Rendered render(const Expr& e, std::size_t base, std::mt19937_64& rng) {
  Rendered r;
  if (e.kind == Expr::number || e.kind == Expr::name || e.kind == Expr::unknown_name) {
    r.text = e.text;
    if (e.kind == Expr::unknown_name) r.error_at = base;
    else r.value = e.kind == Expr::number ? e.value : kConstants.find(e.text)->second;
    return r;
  }
  if (e.kind == Expr::negate) {
    const bool parens = precedence(e.args[0]) < 3;
    const Rendered a = render(e.args[0], base + 1 + (parens ? 1 : 0), rng);
    r.text = "-" + wrap(a.text, parens);
    if (!a.value) r.error_at = a.error_at;
    else if (*a.value == std::numeric_limits<index_t>::min()) r.error_at = base;
    else r.value = -*a.value;
    return r;
  }
  auto space = [&] { return std::bernoulli_distribution(0.3)(rng) ? std::string(" ") : std::string(); };
  const bool left_parens = precedence(e.args[0]) < precedence(e);
  const bool right_parens = precedence(e.args[1]) <= precedence(e);
  const Rendered a = render(e.args[0], base + (left_parens ? 1 : 0), rng);
  const std::string left = wrap(a.text, left_parens), before = space(), after = space();
  const std::size_t op_at = base + left.size() + before.size();
  const Rendered b = render(e.args[1], op_at + 1 + after.size() + (right_parens ? 1 : 0), rng);
  r.text = left + before + e.op + after + wrap(b.text, right_parens);
  if (!a.value || !b.value) {
    r.error_at = !a.value ? a.error_at : b.error_at;
    return r;
  }
  const index_t x = *a.value, y = *b.value;
  index_t v = 0;
  bool bad = false;
  if (e.op == '+') bad = __builtin_add_overflow(x, y, &v);
  else if (e.op == '-') bad = __builtin_sub_overflow(x, y, &v);
  else if (e.op == '*') bad = __builtin_mul_overflow(x, y, &v);
  else if (y == 0 || (x == std::numeric_limits<index_t>::min() && y == -1)) bad = true;
  else v = e.op == '/' ? x / y : x % y;
  if (bad) r.error_at = op_at;
  else r.value = v;
  return r;
}

Expr random_expr(std::mt19937_64& rng, int depth) {
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  Expr e;
  if (depth == 0 || pick(3) == 0) {
    const int k = pick(12);
    if (k < 7) {
      e.value = std::vector<index_t>{0, 1, 2, 3, 7, 16, 100}[static_cast<std::size_t>(k)];
    } else if (k == 7) {
      e.value = std::numeric_limits<index_t>::max();
    } else if (k < 11) {
      e.kind = Expr::name;
      e.text = std::vector<std::string>{"N", "M", "BIG"}[static_cast<std::size_t>(k - 8)];
      return e;
    } else {
      e.kind = pick(4) == 0 ? Expr::unknown_name : Expr::name;
      e.text = e.kind == Expr::name ? "Z" : "Q";
      return e;
    }
    e.text = std::to_string(e.value);
    return e;
  }
  if (pick(8) == 0) {
    e.kind = Expr::negate;
    e.args.push_back(random_expr(rng, depth - 1));
    return e;
  }
  e.kind = Expr::binary;
  e.op = "+-*/%"[pick(5)];
  e.args.push_back(random_expr(rng, depth - 1));
  e.args.push_back(random_expr(rng, depth - 1));
  return e;
}

TEST(LayoutProperty, ExtentExpressions) {
  std::mt19937_64 rng(7);
  int values = 0, errors = 0;
  for (int i = 0; i < 3000; ++i) {
    const Rendered r = render(random_expr(rng, 4), 1, rng);
    const std::string text = "[" + r.text + "]";
    if (r.value && *r.value >= 0) {
      ASSERT_EQ(Layout::parse(text, {}, kConstants).size(), *r.value) << text;
      ++values;
    } else {
      const std::size_t at = r.value ? 1 : r.error_at;  // a negative value is refused at its start
      ASSERT_EQ(error_position(text, [&] { Layout::parse(text, {}, kConstants); }), at) << text;
      ++errors;
    }
  }
  EXPECT_GT(values, 1000);
  EXPECT_GT(errors, 300);
}

}  // namespace
