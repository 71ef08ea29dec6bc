// #parray declarations (scan.hpp): the text between the braces split into
// kind, kernel parameters, element type and dimensions, then the name.
#include <cctype>

#include "parray/core.hpp"
#include "parrayc/internal.hpp"
#include "parrayc/scan.hpp"

namespace parray::pa {

namespace {

bool is_kind(std::string_view w) {
  for (std::string_view k : {"paged", "pinned", "dmem", "smem", "rmem", "pthd", "cuda", "mpi"})
    if (w == k) return true;
  return false;
}

// A cursor over one directive's text that knows where each character is.
class Reader {
 public:
  Reader(const Segment& d, const std::string& file) : t_(d.text), file_(file), start_(d.at) {}

  // Where character k of the text is in the file.
  Position position_of(std::size_t k) const { return position_in(start_, t_, k); }
  [[noreturn]] void fail(std::size_t k, const std::string& what) const {
    const Position p = position_of(k);
    throw Error(file_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": error: " + what);
  }
  void blanks() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  std::string word() {
    const std::size_t from = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    return t_.substr(from, i_ - from);
  }
  // From an opening bracket to its match, the text between.
  std::string balanced(char open, char close) {
    const std::size_t from = i_;
    int depth = 0;
    for (; i_ < t_.size(); ++i_) {
      if (t_[i_] == open) ++depth;
      if (t_[i_] == close && --depth == 0) return t_.substr(from + 1, i_++ - from - 1);
    }
    fail(from, std::string("'") + open + "' is never closed");
  }
  char peek() const { return i_ < t_.size() ? t_[i_] : '\0'; }
  std::size_t where() const { return i_; }
  void skip(std::size_t n) { i_ += n; }

 private:
  std::string t_;
  std::string file_;
  Position start_;
  std::size_t i_ = 0;
};

}  // namespace

Declaration parse_declaration(const Segment& directive, const std::string& file) {
  Reader r(directive, file);
  Declaration d;
  d.at = directive.at;
  r.blanks();
  r.skip(1);  // '#'
  r.blanks();
  if (r.word() != "parray") r.fail(r.where(), "not a #parray declaration");
  r.blanks();
  if (r.peek() != '{') r.fail(r.where(), "#parray needs a type in braces: #parray {kind type [dims]} NAME");
  const std::size_t body_at = r.where();
  const std::string body = r.balanced('{', '}');
  r.blanks();
  const std::size_t name_at = r.where();
  d.name = r.word();
  if (d.name.empty() || std::isdigit(static_cast<unsigned char>(d.name[0])))
    r.fail(name_at, "#parray needs a name after its type");
  r.blanks();
  if (r.peek() != '\0') r.fail(r.where(), "unexpected text after the name '" + d.name + "'");

  // The body, read with positions counted from the '{'.
  Reader b(Segment{SegmentKind::directive, body, r.position_of(body_at + 1), {}}, file);
  auto fail_body = [&](std::size_t k, const std::string& what) { b.fail(k, what); };
  b.blanks();
  std::size_t at = b.where();
  std::string first = b.word();
  if (is_kind(first)) {
    d.kind = first;
    if (d.kind == "cuda") {
      b.blanks();
      if (b.peek() == '(') d.params = b.balanced('(', ')');
    }
    b.blanks();
    at = b.where();
    first = b.peek() == '[' ? "" : b.word();
  }
  if (!first.empty()) {
    if (d.is_thread_array()) fail_body(at, "a " + d.kind + " thread array has no element type ('" + first + "')");
    d.element = first;
  } else if (!d.is_thread_array()) {
    fail_body(at, "an element type (float, double, ...) before the dimensions");
  }
  b.blanks();
  if (d.kind.empty() && is_ident_char(b.peek()))  // two words before the dimensions: the first meant as a kind
    fail_body(at, "'" + first + "' is not a memory kind (paged, pinned, dmem, smem, rmem) or a thread array "
                  "(pthd, cuda, mpi)");
  if (b.peek() != '[') fail_body(b.where(), "the dimensions, e.g. [1024][1024], after the type");
  const std::size_t dims_at = b.where();
  int depth = 0;
  std::size_t end = dims_at;
  for (std::size_t k = dims_at; k < body.size(); ++k) {
    const bool blank = std::isspace(static_cast<unsigned char>(body[k]));
    if (body[k] == '[')
      ++depth;
    else if (body[k] == ']' && --depth < 0)
      fail_body(k, "']' without its '['");
    else if (body[k] != ']' && depth == 0 && !blank)
      fail_body(k, "unexpected text between the dimensions");
    if (!blank) end = k + 1;
  }
  if (depth != 0) fail_body(dims_at, "'[' is never closed");
  d.dims = body.substr(dims_at, end - dims_at);
  return d;
}

}  // namespace parray::pa
