// The scanner of parrayc (scan.hpp): one pass over the source with a cursor
// that knows its line and column; literals and comments are skipped whole so
// that a `$` or a `#` inside them is never taken for Parray.
#include "parrayc/scan.hpp"

#include <cctype>

#include "parray/core.hpp"
#include "parrayc/internal.hpp"

namespace parray::pa {

bool is_directive_word(std::string_view w) {
  for (std::string_view d :
       {"parray", "create", "destroy", "copy", "detour", "sync", "mainhost", "global", "subprog", "end"})
    if (w == d) return true;
  // #sync_1, #sync_1_0: a sync over a sub-array.
  return w.size() > 5 && w.substr(0, 5) == "sync_" && std::isdigit(static_cast<unsigned char>(w[5]));
}

namespace {

class Scanner {
 public:
  Scanner(std::string_view s, const std::string& file) : s_(s), file_(file) {}

  std::vector<Segment> run() {
    while (i_ < s_.size()) {
      if (line_start() && s_[first_non_blank()] == '#') {
        directive_or_preprocessor();
      } else if (s_[i_] == '$') {
        expression();
      } else {
        code_token();
      }
    }
    flush_code();
    return out_;
  }

 private:
  // ---- the cursor ----
  char at(std::size_t k) const { return k < s_.size() ? s_[k] : '\0'; }
  void advance() {
    if (s_[i_] == '\n')
      ++pos_.line, pos_.column = 1;
    else
      ++pos_.column;
    ++i_;
  }
  [[noreturn]] void fail(Position p, const std::string& what) const {
    throw Error(file_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": error: " + what);
  }
  bool line_start() const {
    std::size_t k = i_;
    while (k > 0 && (s_[k - 1] == ' ' || s_[k - 1] == '\t')) --k;
    return k == 0 || s_[k - 1] == '\n';
  }
  std::size_t first_non_blank() const {
    std::size_t k = i_;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t')) ++k;
    return k;
  }

  // ---- segments ----
  void keep(std::size_t from, Position p) {  // code from `from` to the cursor
    if (code_.empty()) code_at_ = p;
    code_.append(s_.substr(from, i_ - from));
  }
  void flush_code() {
    if (!code_.empty()) out_.push_back({SegmentKind::code, code_, code_at_, std::move(braces_)});
    code_.clear();
    braces_.clear();
  }
  void emit(SegmentKind kind, std::size_t from, Position p) {
    flush_code();
    out_.push_back({kind, std::string(s_.substr(from, i_ - from)), p, {}});
  }

  // A line starting with '#': a Parray directive, or a preprocessor line
  // (with its backslash continuations), which is code.
  void directive_or_preprocessor() {
    const std::size_t from = i_;
    const Position p = pos_;
    while (s_[i_] != '#') advance();
    const Position hash = pos_;
    advance();
    std::size_t w = i_;
    while (w < s_.size() && (s_[w] == ' ' || s_[w] == '\t')) ++w;
    std::size_t e = w;
    while (e < s_.size() && is_ident_char(s_[e])) ++e;
    const std::string_view word = s_.substr(w, e - w);
    if (!is_directive_word(word)) {
      while (i_ < s_.size() && !(s_[i_] == '\n' && s_[i_ - 1] != '\\')) advance();
      if (i_ < s_.size()) advance();
      keep(from, p);
      return;
    }
    if (word == "parray") {  // #parray {...} NAME: the braces may span lines
      while (i_ < s_.size() && s_[i_] != '{' && s_[i_] != '\n') advance();
      if (at(i_) != '{') fail(hash, "#parray needs a type in braces: #parray {kind type [dims]} NAME");
      int depth = 0;
      do {
        if (s_[i_] == '{') ++depth;
        if (s_[i_] == '}') --depth;
        advance();
      } while (depth > 0 && i_ < s_.size());
      if (depth > 0) fail(hash, "#parray's '{' is never closed");
    }
    directive_rest(word == "copy");
    emit(SegmentKind::directive, from, p);
  }

  // To the directive's end: its line, and the next ones while a parenthesis
  // is open or, for #copy, while it stops after its first array or after
  // 'to' (the paper prints fig 21's #copy A(x) to B(y) over two lines).
  void directive_rest(bool copy) {
    int depth = 0, arrays = 0;
    std::string tail;  // the line's last word or ')', what decides whether a #copy goes on
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\n') {
        const bool unfinished_copy = copy && arrays < 2 && (tail == ")" || tail == "to");
        if (depth == 0 && !unfinished_copy) break;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (--depth == 0) ++arrays;
        tail = ")";
      } else if (is_ident_char(c)) {
        if (!is_ident_char(at(i_ - 1))) tail.clear();
        tail += c;
      } else if (c != ' ' && c != '\t' && c != '\r') {
        tail.clear();
      }
      advance();
    }
  }

  // $...$ with nested $name$ terms.
  void expression() {
    const std::size_t from = i_;
    const Position p = pos_;
    advance();
    while (true) {
      if (i_ >= s_.size()) fail(p, "'$' expression is never closed by a '$'");
      if (s_[i_] == '$') {
        std::size_t e = i_ + 1;
        while (e < s_.size() && is_ident_char(s_[e])) ++e;
        if (e > i_ + 1 && at(e) == '$') {  // a nested term: skip $name$
          while (i_ <= e) advance();
          continue;
        }
        advance();
        break;
      }
      if (s_[i_] == '"' || s_[i_] == '\'') fail(pos_, "a literal inside a '$' expression");
      advance();
    }
    emit(SegmentKind::expression, from, p);
  }

  // One token of code: a comment, a literal, a number, a word or a character.
  void code_token() {
    const std::size_t from = i_;
    const Position p = pos_;
    const char c = s_[i_];
    if (c == '/' && at(i_ + 1) == '/') {
      while (i_ < s_.size() && s_[i_] != '\n') advance();
    } else if (c == '/' && at(i_ + 1) == '*') {
      advance(), advance();
      while (i_ < s_.size() && !(s_[i_] == '*' && at(i_ + 1) == '/')) advance();
      if (i_ >= s_.size()) fail(p, "comment is never closed");
      advance(), advance();
    } else if (c == '"' || c == '\'') {
      quoted(c, p);
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && std::isdigit(static_cast<unsigned char>(at(i_ + 1))))) {
      number();
    } else if (is_ident_char(c)) {
      std::size_t e = i_;
      while (e < s_.size() && is_ident_char(s_[e])) ++e;
      const std::string_view word = s_.substr(i_, e - i_);
      const bool raw = at(e) == '"' && (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR");
      while (i_ < e) advance();
      if (raw) raw_string(p);
    } else {
      advance();
      if (c == '{' || c == '}') {
        keep(from, p);
        braces_.push_back(code_.size() - 1);
        return;
      }
    }
    keep(from, p);
  }

  void quoted(char q, Position p) {
    advance();
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\n') break;
      if (s_[i_] == '\\') advance();
      if (i_ < s_.size()) advance();
    }
    if (at(i_) != q) fail(p, q == '"' ? "string literal is never closed" : "character literal is never closed");
    advance();
  }

  // A pp-number: digits, letters, '.', digit separators, and a sign after an exponent.
  void number() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      const bool exponent_sign =
          (c == '+' || c == '-') && i_ > 0 && std::string_view("eEpP").find(s_[i_ - 1]) != std::string_view::npos;
      if (!(is_ident_char(c) || c == '.' || c == '\'' || exponent_sign)) break;
      advance();
    }
  }

  // R"delim( ... )delim", the cursor on the opening quote.
  void raw_string(Position p) {
    advance();
    const std::size_t d = i_;
    while (i_ < s_.size() && s_[i_] != '(' && s_[i_] != '\n' && i_ - d <= 16) advance();
    if (at(i_) != '(') fail(p, "raw string literal without '(' after its delimiter");
    std::string close(1, ')');
    close += s_.substr(d, i_ - d);
    close += '"';
    const std::size_t end = s_.find(close, i_);
    if (end == std::string_view::npos) fail(p, "raw string literal is never closed");
    while (i_ < end + close.size()) advance();
  }

  std::string_view s_;
  std::string file_;
  std::size_t i_ = 0;
  Position pos_;
  std::string code_;
  std::vector<std::size_t> braces_;
  Position code_at_;
  std::vector<Segment> out_;
};

}  // namespace

std::vector<Segment> scan(std::string_view source, const std::string& file) { return Scanner(source, file).run(); }

}  // namespace parray::pa
