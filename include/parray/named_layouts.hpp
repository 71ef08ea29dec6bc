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

inline MatrixType make_matrix_type(const std::string& name, index_t r, index_t c) {
  if (r < 0 || c < 0) throw Error("matrix layout: negative size");
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
  throw Error("unknown matrix layout '" + name + "' (known: " + known + ")");
}

}  // namespace parray
