// $...$ expressions (internal.hpp): a recursive-descent parser over the
// expression's text, which turns
//
//   $A[i]$, $A[5][2]$, $A[[i][j]][k]$, $A_1_0[i]$   offsets through the type
//   $dim(A_0)$, $dim_0_1(M)$, $size(R)$, $cnt(B)$   sizes and contiguity
//   $tid$, $tid_0$, $tid_1_0$, $dim_1$, $size$      the detour's thread coordinates
//
// into calls on the type's DeviceLayout (host types; in a CUDA kernel a
// DeviceSub per node, made before the launch) or static type (smem, rmem),
// and sizes that the declarations fix into constants. An index is a C expression in which thread coordinates nest
// ($M[[$tid_0$][i]][0]$), or a group of indices over a nested dimension.
#include <cctype>

#include "parray/core.hpp"
#include "parrayc/internal.hpp"

namespace parray::pa {

namespace {

// One index: a C expression, or a group [i][j] over a nested dimension.
struct Index {
  bool group = false;
  std::string expr;
  std::vector<Index> kids;
  std::size_t at = 0;
};

class ExpressionParser {
 public:
  ExpressionParser(Translator& tr, std::string_view inner, Position at) : tr_(tr), t_(inner), at_(at) {}

  std::string run() {
    blanks();
    const std::size_t word_at = i_;
    const std::string w = word();
    if (w.empty()) fail(word_at, "expected a type, or tid, dim, size, cnt");
    blanks();
    if (i_ >= t_.size()) return thread_term(w, word_at);
    if (t_[i_] == '(') return query(w, word_at);
    if (t_[i_] == '[') return access(w, word_at);
    fail(i_, "unexpected '" + std::string(1, t_[i_]) + "' after '" + w + "'");
  }

 private:
  [[noreturn]] void fail(std::size_t k, const std::string& what) const {
    tr_.fail(position_in(at_, t_, k), what + " in $" + std::string(t_) + "$");
  }
  void blanks() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  std::string word() {
    const std::size_t from = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return std::string(t_.substr(from, i_ - from));
  }
  void expect_end() {
    blanks();
    if (i_ < t_.size()) fail(i_, "unexpected text '" + std::string(t_.substr(i_)) + "'");
  }

  std::string thread_term(const std::string& w, std::size_t word_at) {
    std::string out;
    if (!tr_.thread_term(w, position_in(at_, t_, word_at), out))
      fail(word_at, "'" + w + "' alone is neither a thread coordinate ($tid$, $tid_0$, $dim_1$, $size$) nor " +
                        "an offset (a type needs its indices: $" + w + "[i]$)");
    return out;
  }

  // dim(T), size(T), cnt(T), dim_0_1(T) = dim(T_0_1).
  std::string query(const std::string& w, std::size_t word_at) {
    std::vector<int> extra;
    std::string what;
    for (const char* q : {"dim", "size", "cnt"})
      if (w.compare(0, std::string_view(q).size(), q) == 0 && split_path(w, std::string_view(q).size(), extra))
        what = q;
    if (what.empty()) fail(word_at, "'" + w + "(...)' is not a query: dim(T), size(T), cnt(T), dim_0_1(T)");
    if (what != "dim" && !extra.empty()) fail(word_at, "only dim takes a sub-type path (dim_0_1(T))");
    ++i_;
    blanks();
    const std::size_t name_at = i_;
    const std::string name = word();
    if (name.empty()) fail(name_at, "expected a type name in " + what + "(...)");
    blanks();
    if (i_ >= t_.size() || t_[i_] != ')') fail(i_, "expected ')' after the type name");
    ++i_;
    expect_end();
    std::vector<int> path;
    const Symbol& s = tr_.resolve(name, position_in(at_, t_, name_at), path);
    path.insert(path.end(), extra.begin(), extra.end());
    const Translator::Node n = tr_.node_of(s, path, name, position_in(at_, t_, name_at));
    return what == "cnt" ? tr_.contiguous_of(n) : tr_.size_of(n);
  }

  std::string access(const std::string& name, std::size_t name_at) {
    std::vector<int> path;
    const Symbol& s = tr_.resolve(name, position_in(at_, t_, name_at), path);
    const Translator::Node n = tr_.node_of(s, path, name, position_in(at_, t_, name_at));
    std::vector<Index> indices;
    while (i_ < t_.size() && t_[i_] == '[') {
      indices.push_back(index());
      blanks();
    }
    expect_end();
    return offset(n, name, indices);
  }

  // '[' then a group of indices or a C expression, then ']'.
  Index index() {
    Index x;
    x.at = i_++;
    blanks();
    if (i_ < t_.size() && t_[i_] == '[') {
      x.group = true;
      while (i_ < t_.size() && t_[i_] == '[') {
        x.kids.push_back(index());
        blanks();
      }
      if (i_ >= t_.size() || t_[i_] != ']') fail(i_ < t_.size() ? i_ : x.at, "a group of indices is [[i][j]]");
      ++i_;
      return x;
    }
    int depth = 0;
    for (; i_ < t_.size(); ++i_) {
      const char c = t_[i_];
      if (c == ']' && depth == 0) break;
      if (c == '(' || c == '[' || c == '{') ++depth;
      if ((c == ')' || c == ']' || c == '}') && --depth < 0) fail(i_, std::string("'") + c + "' without its opening");
      if (c == ',' && depth == 0) fail(i_, "',' in an index (one index a bracket: [i][j])");
      if (c == '$') {
        x.expr += nested_term();
        --i_;
        continue;
      }
      x.expr += c;
    }
    if (i_ >= t_.size()) fail(x.at, "'[' is never closed");
    ++i_;
    if (x.expr.find_first_not_of(" \t\r\n") == std::string::npos) fail(x.at, "an empty index '[]'");
    return x;
  }

  // $tid_0$ inside an index; leaves the cursor after its closing '$'.
  std::string nested_term() {
    const std::size_t from = i_++;
    const std::string w = word();
    if (w.empty() || i_ >= t_.size() || t_[i_] != '$')
      fail(from, "a '$' inside an expression starts a term like $tid_0$");
    ++i_;
    std::string out;
    if (!tr_.thread_term(w, position_in(at_, t_, from), out))
      fail(from,
           "only thread coordinates ($tid$, $tid_0$, $dim_1$, $size$) nest inside an expression, not $" + w + "$");
    return "(" + out + ")";
  }

  // The offset of `indices` in node n: one index is the flat index of the
  // node; several are one per dimension of the node, their offsets added.
  std::string offset(const Translator::Node& n, const std::string& shown, const std::vector<Index>& indices) {
    if (indices.size() == 1) {
      const Index& x = indices[0];
      if (x.group) return offset(n, shown, x.kids);
      return tr_.offset_of(n, x.expr);
    }
    if (n.shape.leaf()) fail(indices[1].at, shown + " is one-dimensional: it takes one index");
    if (n.shape.known && n.shape.kids.size() != indices.size())
      fail(indices[0].at, shown + " has " + std::to_string(n.shape.kids.size()) + " dimensions, " +
                              std::to_string(indices.size()) + " indices given");
    std::string out = "(";
    for (std::size_t d = 0; d < indices.size(); ++d) {
      const std::string child_shown = shown + "_" + std::to_string(d);
      out += (d ? " + " : "") + offset(tr_.child_of(n, static_cast<int>(d)), child_shown, {indices[d]});
    }
    return out + ")";
  }

  Translator& tr_;
  std::string_view t_;
  Position at_;
  std::size_t i_ = 0;
};

// The end of the $...$ that starts at t[i] (after its closing '$'), with
// nested $name$ terms, as the scanner reads it; npos when it never closes.
std::size_t expression_end(std::string_view t, std::size_t i) {
  for (++i; i < t.size(); ++i) {
    if (t[i] != '$') continue;
    std::size_t e = i + 1;
    while (e < t.size() && is_ident_char(t[e])) ++e;
    if (e > i + 1 && e < t.size() && t[e] == '$') {
      i = e;
      continue;
    }
    return i + 1;
  }
  return std::string_view::npos;
}

}  // namespace

std::string Translator::expression(std::string_view text, Position at) {
  if (text.size() < 2 || text.front() != '$' || text.back() != '$') fail(at, "a '$' expression is $...$");
  Position inner = at;
  ++inner.column;
  std::string out(1, '(');
  out.append(ExpressionParser(*this, text.substr(1, text.size() - 2), inner).run()).append(1, ')');
  return out;
}

std::string Translator::with_expressions(std::string_view text, Position at) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    if (text[i] != '$') {
      out += text[i++];
      continue;
    }
    const std::size_t end = expression_end(text, i);
    if (end == std::string_view::npos) fail(position_in(at, text, i), "'$' expression is never closed by a '$'");
    out += expression(text.substr(i, end - i), position_in(at, text, i));
    i = end;
  }
  return out;
}

bool Translator::thread_term(std::string_view word, Position at, std::string& out) const {
  std::vector<int> path;
  std::string head;
  for (const char* h : {"tid", "dim", "size"})
    if (word.substr(0, std::string_view(h).size()) == h && split_path(word, std::string_view(h).size(), path)) head = h;
  if (head.empty() || (head == "dim" && path.empty()) || (head == "size" && !path.empty())) return false;
  if (path.size() > 2) fail(at, "$" + std::string(word) + "$: thread coordinates have at most two levels (tid_1_0)");
  const Detour* d = detour();
  if (!d)
    fail(at,
         std::string(1, '$').append(word).append("$ outside a #detour: thread coordinates belong to a detour's body"));
  out = d->coord + "." + head + "(";
  for (std::size_t k = 0; k < path.size(); ++k) out += (k ? ", " : "") + std::to_string(path[k]);
  out += ")";
  return true;
}

const Symbol& Translator::resolve(std::string_view word, Position at, std::vector<int>& path) const {
  for (std::size_t k = word.size(); k > 0; --k) {
    if (k < word.size() && word[k] != '_') continue;
    auto it = symbols_.find(word.substr(0, k));
    if (it != symbols_.end() && split_path(word, k, path)) return it->second;
  }
  fail(at, std::string(1, '\'').append(word).append("' is not a declared type (#parray {...} NAME)"));
}

Translator::Node Translator::node_of(const Symbol& s, const std::vector<int>& path, const std::string& shown,
                                     Position at) {
  const std::string& name = s.decl.name;
  if (s.form == Form::thread)
    fail(at, "'" + name + "' is a thread array: its coordinates are $tid$, $tid_0$, ... inside #detour " + name);
  if (s.form == Form::param)
    fail(at, "'" + name + "' is a #subprog's type parameter: declare a type over it (#parray {float [#" + name +
                 "_0][#" + name + "_1]} M) and use that");
  Node n;
  n.is_static = s.form == Form::local;
  n.shape = s.shape;
  if (n.is_static) {
    n.text = name;
  } else if (!detours_.empty() && detours_.back().cuda) {
    n.type = name;  // a DeviceSub, named when the path is complete (child_of)
  } else {
    n.text = "parray_pa_" + name + ".type()";
  }
  std::string walked = name;
  for (std::size_t k = 0; k < path.size(); ++k) {
    const int step = path[k];
    if (n.shape.leaf()) {
      if (step != 0 || k + 1 != path.size())
        fail(at, walked + " is one-dimensional: its only sub-type is itself, " + walked + "_0 (in " + shown + ")");
      break;
    }
    if (n.shape.known && static_cast<std::size_t>(step) >= n.shape.kids.size())
      fail(at, walked + " has " + std::to_string(n.shape.kids.size()) + " dimensions, so no " + walked + "_" +
                   std::to_string(step));
    n = child_of(n, step);
    walked.append(1, '_').append(std::to_string(step));
  }
  if (n.in_kernel()) n = child_of(n, -1);
  return n;
}

// Sub-type d of n (d = -1: n itself, named). In a kernel each node that an
// expression reads is a DeviceSub of its own, parray_pa_n_A_1_0, made before
// the launch (kernel_sub).
Translator::Node Translator::child_of(const Node& n, int d) {
  Node c = n;
  if (d >= 0) c.shape = n.shape.known && !n.shape.leaf() ? Shape(n.shape.kids[static_cast<std::size_t>(d)]) : Shape{};
  if (n.is_static) {
    c.text += "::dim<" + std::to_string(d) + ">";
  } else if (n.in_kernel()) {
    if (d >= 0) c.path.push_back(d);
    c.text = "parray_pa_n_" + c.type;
    for (int step : c.path) c.text.append(1, '_').append(std::to_string(step));
  } else {
    c.text += ".sub(" + std::to_string(d) + ")";
  }
  return c;
}

// The kernel's DeviceSub of n, and with `table` the type's DeviceLayout too
// (what a DeviceSub that is no mixed-radix number reads offsets from).
const std::string& Translator::kernel_sub(const Node& n, bool table) {
  Detour& d = detours_.back();
  d.subs[n.text] = {n.type, n.path};
  if (table) d.used.insert(n.type);
  return n.text;
}

std::string Translator::offset_of(const Node& n, const std::string& index) {
  if (n.is_static) return n.text + "::offset(" + index + ")";
  if (!n.in_kernel()) return n.text + ".offset(" + index + ")";
  detours_.back().offsets.insert(kernel_sub(n, true));
  return n.text + ".offset<parray_pa_build>(parray_pa_k_" + n.type + ", " + index + ")";
}

std::string Translator::size_of(const Node& n) {
  if (!n.shape.size.empty()) return n.shape.size;  // fixed by the declaration: a constant
  if (n.is_static) return "static_cast<int>(" + n.text + "::size)";
  return "::parray::pa::count(" + (n.in_kernel() ? kernel_sub(n, false) : n.text) + ".size())";
}

std::string Translator::contiguous_of(const Node& n) {
  if (n.is_static) return "::parray::pa::contiguous<" + n.text + ">()";
  if (n.in_kernel()) {
    detours_.back().counts.insert(kernel_sub(n, false));
    return "(parray_pa_build != ::parray::pa::Build::general || " + n.text + ".contiguous())";
  }
  return "::parray::pa::contiguous(" + n.text + ")";
}

std::string Translator::copy_side(const Node& n) {
  if (n.is_static) return "::parray::pa::Static<" + n.text + ">{}";
  detours_.back().copies.insert(kernel_sub(n, true));
  return "::parray::pa::SubOf<parray_pa_build>{" + n.text + ", parray_pa_k_" + n.type + "}";
}

}  // namespace parray::pa
