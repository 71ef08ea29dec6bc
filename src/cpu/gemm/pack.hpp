// Packing for parray's CPU GEMM: operands read through their layouts
// (strided fast path, offset tables for the blocked layouts) into the
// panels the microkernels take (microkernel.hpp), so that every layout costs
// the same in the microkernel.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "microkernel.hpp"
#include "parray/core.hpp"
#include "parray/matrix.hpp"

namespace parray::cpu {

// ---- operand access through the layout -------------------------------------

// One axis of an operand as an offset function: strided or a table.
struct StridedAxis {
  index_t stride;
  index_t operator()(index_t i) const { return i * stride; }
};
struct TableAxis {
  const index_t* offsets;
  index_t operator()(index_t i) const { return offsets[i]; }
};

// Offsets of a non-strided axis, computed once per call (O(M + N + K)).
struct AxisOffsets {
  std::vector<index_t> table;
  explicit AxisOffsets(const Axis& a) {
    if (!a.is_strided()) table = a.offsets();
  }
};

inline index_t axis_offset(const Axis& axis, const AxisOffsets& offsets, index_t i) {
  return axis.is_strided() ? i * axis.stride[0] : offsets.table[static_cast<std::size_t>(i)];
}

// Calls f(row_axis, col_axis) with the cheapest accessor types for a layout.
template <class F>
void with_axes(const MatrixLayout& l, const AxisOffsets& rows, const AxisOffsets& cols, F&& f) {
  const bool rs = l.rows.is_strided(), cs = l.cols.is_strided();
  if (rs && cs) f(StridedAxis{l.rows.stride[0]}, StridedAxis{l.cols.stride[0]});
  else if (rs) f(StridedAxis{l.rows.stride[0]}, TableAxis{cols.table.data()});
  else if (cs) f(TableAxis{rows.table.data()}, StridedAxis{l.cols.stride[0]});
  else f(TableAxis{rows.table.data()}, TableAxis{cols.table.data()});
}

// ---- packing -----------------------------------------------------------------

// Whether n offsets are a contiguous run (true within one block of the
// figure-17/18 layouts too, whatever the axis type).
inline bool consecutive(const index_t* offsets, index_t n) {
  for (index_t i = 1; i < n; ++i)
    if (offsets[i] - offsets[i - 1] != 1) return false;
  return true;
}

// A(i0 .. i0+mc, p0 .. p0+kc) into MR-row panels, column by column, zero-padded
// to a multiple of MR rows. Rows that are a contiguous run (column-major
// A) copy straight; full panels of rows whose columns are adjacent
// (row-major A) go to the microkernel's transposing pack where it has one;
// otherwise MR rows are read in step, one element each.
template <class T, class RowAx, class ColAx>
void pack_a(const T* a, RowAx row, ColAx col, index_t i0, index_t mc, index_t p0, index_t kc, int mr,
            typename MicroKernel<T>::PackRows pack_rows, T* dst) {
  bool unit_cols = false;
  if constexpr (std::is_same_v<ColAx, StridedAxis>) unit_cols = col.stride == 1;
  for (index_t ir = 0; ir < mc; ir += mr) {
    const index_t rows = std::min<index_t>(mr, mc - ir);
    index_t row_off[16];
    for (index_t i = 0; i < rows; ++i) row_off[i] = row(i0 + ir + i);
    const bool unit_rows = consecutive(row_off, rows);
    if (pack_rows && unit_cols && rows == mr && !unit_rows) {
      const T* row_start[16];
      for (index_t i = 0; i < rows; ++i) row_start[i] = a + row_off[i] + p0;
      pack_rows(row_start, kc, dst);
      dst += mr * kc;
      continue;
    }
    for (index_t p = 0; p < kc; ++p) {
      const T* src = a + col(p0 + p);
      if (unit_rows) {
        const T* run = src + row_off[0];
        for (index_t i = 0; i < rows; ++i) dst[i] = run[i];
      } else {
        for (index_t i = 0; i < rows; ++i) dst[i] = src[row_off[i]];
      }
      for (index_t i = rows; i < mr; ++i) dst[i] = T(0);
      dst += mr;
    }
  }
}

// B(p0 .. p0+kc, j0 .. j0+nc) into NR-column panels, row by row, zero-padded.
// Columns that are a contiguous run (row-major B, or inside one block of
// the figure-17/18 layouts) copy straight.
template <class T, class RowAx, class ColAx>
void pack_b_panel(const T* b, RowAx row, ColAx col, index_t p0, index_t kc, index_t j0, index_t cols, int nr, T* dst) {
  index_t col_off[64];
  for (index_t j = 0; j < cols; ++j) col_off[j] = col(j0 + j);
  const bool unit_cols = consecutive(col_off, cols);
  for (index_t p = 0; p < kc; ++p) {
    const T* src = b + row(p0 + p);
    if (unit_cols) {
      const T* run = src + col_off[0];
      for (index_t j = 0; j < cols; ++j) dst[j] = run[j];
    } else {
      for (index_t j = 0; j < cols; ++j) dst[j] = src[col_off[j]];
    }
    for (index_t j = cols; j < nr; ++j) dst[j] = T(0);
    dst += nr;
  }
}

// A run of B's columns that is contiguous in B and lies within one packed
// panel: src is its first column's offset in B's rows; it goes to column
// in_panel of panel `panel` of the block.
struct ColumnRun {
  index_t src, panel, in_panel, len;
};

// Columns j0 .. j0+cols of the block starting at column jc as such runs (the
// same for every K block of it); false (runs left incomplete) when they
// average fewer than 8 columns (column-major B: one column each), where
// packing panel by panel is better.
template <class ColAx>
bool column_runs(ColAx col, index_t jc, index_t j0, index_t cols, int nr, std::vector<ColumnRun>& runs) {
  runs.clear();
  for (index_t j = j0; j < j0 + cols;) {
    const index_t in_panel = (j - jc) % nr;
    ColumnRun run{col(j), (j - jc) / nr, in_panel, 1};
    while (j + run.len < j0 + cols && in_panel + run.len < nr && col(j + run.len) == run.src + run.len) ++run.len;
    j += run.len;
    runs.push_back(run);
    if (static_cast<index_t>(runs.size()) * 8 > cols + 8 * nr) return false;
  }
  return true;
}

// B(p0 .. p0+kc, columns of the runs) into NR-column panels as pack_b_panel
// does, row by row across all the runs, so that each row of B is read as one
// sequential run per contiguous stretch of its columns (row-major B: the
// thread's whole share; the figure-17/18 layouts: one per block). Panel by
// panel, a wide row-major B is read NR elements per row, a row (a page at
// 2048 floats) apart: no stream for the hardware prefetcher to follow; row by
// row takes a quarter less time at 2048^3 (docs/perf-notes.md).
// pad: columns of the last panel past the block's end, zeroed (0: none).
template <class T, class RowAx>
void pack_b_runs(const T* b, RowAx row, index_t p0, index_t kc, const std::vector<ColumnRun>& runs, int nr, T* dst,
                 index_t pad_at, index_t pad) {
  const index_t panel_size = static_cast<index_t>(nr) * kc;
  for (index_t p = 0; p < kc; ++p) {
    const T* src = b + row(p0 + p);
    T* d = dst + p * nr;
    for (const ColumnRun& r : runs)
      for (index_t j = 0; j < r.len; ++j) d[r.panel * panel_size + r.in_panel + j] = src[r.src + j];
    for (index_t j = 0; j < pad; ++j) d[pad_at + j] = T(0);
  }
}

// ---- buffers -------------------------------------------------------------------

template <class T>
T* thread_buffer(std::size_t elements, int which) {
  // Grow-only, 64-byte aligned, one per thread and purpose: no allocation on
  // the steady-state path.
  struct Buffer {
    std::unique_ptr<T[], void (*)(void*)> data{nullptr, std::free};
    std::size_t size = 0;
  };
  thread_local Buffer buffers[4];
  Buffer& b = buffers[which];
  if (b.size < elements) {
    const std::size_t bytes = (elements * sizeof(T) + 63) / 64 * 64;
    b.data.reset(static_cast<T*>(std::aligned_alloc(64, bytes)));
    if (!b.data) throw Error("parray cpu gemm: cannot allocate a " + std::to_string(bytes) + "-byte packing buffer");
    b.size = elements;
  }
  return b.data.get();
}

}  // namespace parray::cpu
