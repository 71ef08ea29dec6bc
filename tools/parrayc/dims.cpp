// The dimensions of a #parray declaration read into a tree (internal.hpp),
// and the small text helpers the translator's parts share. The tree is what
// the translator needs to know (names used, the shape, static types); the
// full checks of a type are Layout::parse's, when the program runs.
#include <cctype>

#include "parrayc/internal.hpp"

namespace parray::pa {

Position position_in(Position start, std::string_view text, std::size_t k) {
  Position p = start;
  for (std::size_t j = 0; j < k && j < text.size(); ++j) {
    if (text[j] == '\n')
      ++p.line, p.column = 1;
    else
      ++p.column;
  }
  return p;
}

bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

bool split_path(std::string_view word, std::size_t name_length, std::vector<int>& path) {
  path.clear();
  std::size_t i = name_length;
  while (i < word.size()) {
    if (word[i] != '_' || i + 1 >= word.size() || !std::isdigit(static_cast<unsigned char>(word[i + 1]))) return false;
    ++i;
    long long k = 0;
    while (i < word.size() && std::isdigit(static_cast<unsigned char>(word[i]))) {
      k = k * 10 + (word[i++] - '0');
      if (k > 1000000) return false;
    }
    path.push_back(static_cast<int>(k));
  }
  return true;
}

std::string quoted(std::string_view text) {
  std::string s = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') s += '\\';
    s += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  }
  s += '"';
  return s;
}

namespace {

class DimsReader {
 public:
  DimsReader(std::string_view t, const FailAt& fail) : t_(t), fail_(fail) {}

  std::vector<Dim> list() {
    std::vector<Dim> out;
    blanks();
    while (peek() == '[') {
      out.push_back(bracket());
      blanks();
    }
    return out;
  }
  bool done() {
    blanks();
    return i_ >= t_.size();
  }
  std::size_t where() const { return i_; }

 private:
  char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  void blanks() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }

  // '[' then, in this order, each optional: a group, a size (and :stride), a
  // group (after a size), a '#' reference; then ']'.
  Dim bracket() {
    Dim d;
    d.at = i_++;
    blanks();
    if (peek() == '[') d.children = list();
    d.size = extent_text(d);
    blanks();
    if (peek() == '[') {
      if (!d.children.empty()) fail_(i_, "two groups of dimensions in one bracket");
      d.children = list();
    }
    blanks();
    if (peek() == '#') {
      const std::size_t hash = i_++;
      blanks();
      const std::size_t from = i_;
      while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
      d.ref = std::string(t_.substr(from, i_ - from));
      if (d.ref.empty() || !is_ident_start(d.ref[0])) fail_(hash, "'#' needs a type name after it");
      if (!d.stride.empty()) fail_(hash, "a reference has no stride");
    }
    blanks();
    if (peek() != ']')
      fail_(i_ < t_.size() ? i_ : d.at, i_ < t_.size() ? "unexpected text in a dimension" : "'[' is never closed");
    ++i_;
    if (d.children.empty() && d.ref.empty() && d.size.empty()) fail_(d.at, "an empty dimension '[]'");
    return d;
  }

  // An extent expression up to '[', '#' or ']' (parentheses balanced), and
  // a ":stride" after it.
  std::string extent_text(Dim& d) {
    std::string* into = &d.size;
    int parens = 0;
    for (; i_ < t_.size(); ++i_) {
      const char c = t_[i_];
      if (parens == 0 && (c == '[' || c == '#' || c == ']')) break;
      if (c == '(') ++parens;
      if (c == ')' && --parens < 0) fail_(i_, "')' without its '('");
      if (c == ':' && parens == 0) {
        if (into == &d.stride) fail_(i_, "two ':' in one dimension");
        into = &d.stride;
        continue;
      }
      if (!(is_ident_char(c) || std::isspace(static_cast<unsigned char>(c)) ||
            std::string_view("+-*/%()").find(c) != std::string_view::npos))
        fail_(i_, std::string("unexpected '") + c + "' in an extent");
      *into += c;
    }
    if (parens != 0) fail_(i_, "'(' is never closed");
    trim(d.size);
    trim(d.stride);
    if (into == &d.stride && d.stride.empty()) fail_(i_, "':' needs a stride after it");
    return d.size;
  }
  static void trim(std::string& s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    std::size_t k = 0;
    while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
    s.erase(0, k);
  }

  std::string_view t_;
  const FailAt& fail_;
  std::size_t i_ = 0;
};

void names_in_text(const std::string& e, std::set<std::string>& constants) {
  for (std::size_t i = 0; i < e.size();) {
    if (is_ident_start(e[i])) {
      std::size_t j = i;
      while (j < e.size() && is_ident_char(e[j])) ++j;
      constants.insert(e.substr(i, j - i));
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(e[i]))) {
      while (i < e.size() && is_ident_char(e[i])) ++i;  // a number with a suffix is one token
    } else {
      ++i;
    }
  }
}

}  // namespace

std::vector<Dim> parse_dims(std::string_view text, const FailAt& fail) {
  DimsReader r(text, fail);
  std::vector<Dim> dims = r.list();
  if (dims.empty()) fail(r.where(), "the dimensions, e.g. [1024][1024]");
  if (!r.done()) fail(r.where(), "unexpected text after the dimensions");
  return dims;
}

void names_in(const std::vector<Dim>& dims, std::vector<std::pair<std::string, std::size_t>>& refs,
              std::set<std::string>& constants) {
  for (const Dim& d : dims) {
    names_in_text(d.size, constants);
    names_in_text(d.stride, constants);
    if (!d.ref.empty()) refs.emplace_back(d.ref.substr(0, d.ref.find('_')), d.at);
    names_in(d.children, refs, constants);
  }
}

}  // namespace parray::pa
