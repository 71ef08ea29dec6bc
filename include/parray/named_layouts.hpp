// Named physical layouts for an r x c matrix, as used by the CLI, tests and
// benchmarks (--layout-a/-b/-c). Each is a storage type plus the rank-2 view
// of it that the GEMM sees, built with Parray's referencing dimensions:
//
//   row        [r][c]                                   row-major
//   col        storage [c][r], view [#S_1][#S_0]        column-major (a transposed view)
//   row-pad    storage [r][c+pad], view [#S_0][c #S_1]  row-major with ld > c
//   fig17      storage [2][r][h], view [#S_1][c [#S_0][#S_2]]   two column halves
//              stored one after the other (paper fig. 16/17), h = ceil(c/2)
//   fig17x4    storage [4][r][q], the same with four column quarters (fig. 18a)
//   fig18      storage [2][2][r2][c2], view [r [#S_0][#S_2]][c [#S_1][#S_3]]
//              2x2 blocks stored contiguously (fig. 18b), r2 = ceil(r/2)
//
// For sizes that do not divide, the storage is padded and the view resized.
//
// Beside the names, any Parray type: "[r][c]" (a dense type, its own
// storage), or "{STORAGE}VIEW" — a dense storage type and a rank-2 view of it
// written with references to S, e.g. "{[2][64][24]}[#S_1][[#S_0][#S_2]]"
// (the CLI's --storage-a "[2][64][24]" --layout-a "[#S_1][[#S_0][#S_2]]").
#pragma once

#include <string>
#include <vector>

#include "parray/layout.hpp"

namespace parray {

struct MatrixType {
  Layout storage;  // what is allocated
  Layout view;     // the rank-2 logical matrix over it
};

inline const std::vector<std::string>& matrix_layout_names() {
  static const std::vector<std::string> names = {"row", "col", "row-pad", "fig17", "fig17x4", "fig18"};
  return names;
}

// A layout given as a Parray type (see above), checked against the r x c
// operand it must describe.
inline MatrixType matrix_type_from_text(const std::string& text, index_t r, index_t c) {
  MatrixType t;
  if (text.front() == '{') {
    const std::size_t close = text.find('}');
    if (close == std::string::npos) throw Error("layout type \"" + text + "\": '{' without '}'");
    t.storage = Layout::parse(text.substr(1, close - 1));
    t.view = Layout::parse(text.substr(close + 1), {{"S", t.storage}});
  } else {
    t.storage = t.view = Layout::parse(text);
  }
  if (t.view.rank() != 2 || t.view.dim(0).size() != r || t.view.dim(1).size() != c)
    throw Error("layout type \"" + text + "\" is " +
                (t.view.rank() == 2 ? std::to_string(t.view.dim(0).size()) + "x" + std::to_string(t.view.dim(1).size())
                                    : "of rank " + std::to_string(t.view.rank())) +
                ", the operand is " + std::to_string(r) + "x" + std::to_string(c));
  if (t.view.span() > t.storage.size())
    throw Error("layout type \"" + text + "\" reaches past its storage of " + std::to_string(t.storage.size()) +
                " elements");
  return t;
}

inline bool is_layout_type_text(const std::string& s) { return !s.empty() && (s.front() == '[' || s.front() == '{'); }

inline MatrixType make_matrix_type(const std::string& name, index_t r, index_t c) {
  if (r < 0 || c < 0) throw Error("matrix layout: negative size");
  if (is_layout_type_text(name)) return matrix_type_from_text(name, r, c);
  auto ceil_div = [](index_t a, index_t b) { return (a + b - 1) / b; };
  Layout::Symbols s;
  if (name == "row") {
    Layout S = Layout::dense({r, c});
    return {S, S};
  }
  if (name == "col") {
    s["S"] = Layout::dense({c, r});
    return {s["S"], Layout::parse("[#S_1][#S_0]", s)};
  }
  if (name == "row-pad") {
    // An odd pad so that rows do not start on the same cache-line offset.
    s["S"] = Layout::dense({r, c + 3});
    return {s["S"], Layout::nest({s["S"].dim(0), s["S"].dim(1).resized(c)})};
  }
  if (name == "fig17" || name == "fig17x4") {
    const index_t parts = name == "fig17" ? 2 : 4;
    s["S"] = Layout::dense({parts, r, ceil_div(std::max<index_t>(c, 1), parts)});
    Layout cols = Layout::parse("[[#S_0][#S_2]]", s).resized(c);
    return {s["S"], Layout::nest({s["S"].dim(1), cols})};
  }
  if (name == "fig18") {
    s["S"] = Layout::dense({2, 2, ceil_div(std::max<index_t>(r, 1), 2), ceil_div(std::max<index_t>(c, 1), 2)});
    Layout rows = Layout::parse("[[#S_0][#S_2]]", s).resized(r);
    Layout cols = Layout::parse("[[#S_1][#S_3]]", s).resized(c);
    return {s["S"], Layout::nest({rows, cols})};
  }
  std::string known;
  for (const std::string& n : matrix_layout_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error("unknown matrix layout '" + name + "' (known: " + known + ", or a Parray type such as [#S_1][#S_0] over --storage)");
}

}  // namespace parray
