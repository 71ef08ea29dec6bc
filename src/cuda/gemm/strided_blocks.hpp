// A GEMM on nested (blocked) layouts as a few GEMMs on strided blocks.
//
// Parray's layouts nest: the figure-17 type stores the columns of a matrix as
// two halves one after the other, figure 18 stores 2 x 2 blocks. Inside one
// block of an axis's innermost digit every run is strided, so the product
// splits along the block boundaries into sub-products whose operands are all
// plain strided matrices (offsets and strides read from the layout itself, no
// copy): C_ij (+)= A_ik B_kj, the K blocks in order with beta on the first
// and 1 after. The strided kernels then run unchanged, at their full speed;
// the per-element layout kernel is left for layouts with many small blocks.
// One operand splits the same way into its strided blocks (the tensor-core
// GEMMs' split pass reads a blocked operand block by block).
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <vector>

#include "parray/registry.hpp"

namespace parray::cuda {

// The boundaries [0, b1, ..., size] of an axis's innermost-digit blocks,
// merged with those already in `cuts`.
inline void add_block_cuts(const Axis& axis, std::vector<index_t>& cuts) {
  if (axis.levels > 1) {
    const index_t e = axis.extent[axis.levels - 1];
    for (index_t i = e; i < axis.size; i += e) cuts.push_back(i);
  }
}

inline std::vector<index_t> block_segments(index_t size, const Axis& x, const Axis& y) {
  std::vector<index_t> cuts{0, size};
  add_block_cuts(x, cuts);
  add_block_cuts(y, cuts);
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

// Whether cut lists (boundaries of blocks along axes) make at most max_parts
// blocks, none shorter than min_extent but the last along an axis.
inline bool cuts_fit(std::initializer_list<const std::vector<index_t>*> cuts, std::size_t max_parts,
                     index_t min_extent) {
  std::size_t parts = 1;
  for (const auto* c : cuts) {
    parts *= c->size() - 1;
    for (std::size_t i = 0; i + 2 < c->size(); ++i)
      if ((*c)[i + 1] - (*c)[i] < min_extent) return false;
  }
  return parts <= max_parts;
}

// The strided view of rows [r0, r0 + nr) x cols [c0, c0 + nc) of v, which
// lie inside one block of each axis.
template <class T>
MatrixView<T> strided_block(const MatrixView<T>& v, index_t r0, index_t nr, index_t c0, index_t nc) {
  const Axis &r = v.layout.rows, &c = v.layout.cols;
  MatrixView<T> out = v;
  out.data = v.data + r.offset(r0) + c.offset(c0);
  out.layout = {Axis::strided(nr, r.stride[r.levels - 1]), Axis::strided(nc, c.stride[c.levels - 1])};
  return out;
}

// Calls run(r0, nr, c0, nc) for each strided block of v, when its layout is
// at most max_blocks of them, none shorter than min_extent but the last along
// an axis; returns false (calling nothing) otherwise.
template <class T, class Run>
bool for_each_strided_block(const MatrixView<T>& v, std::size_t max_blocks, index_t min_extent, Run&& run) {
  const auto rows = block_segments(v.rows(), v.layout.rows, v.layout.rows);
  const auto cols = block_segments(v.cols(), v.layout.cols, v.layout.cols);
  if (!cuts_fit({&rows, &cols}, max_blocks, min_extent)) return false;
  for (std::size_t i = 0; i + 1 < rows.size(); ++i)
    for (std::size_t j = 0; j + 1 < cols.size(); ++j)
      run(rows[i], rows[i + 1] - rows[i], cols[j], cols[j + 1] - cols[j]);
  return true;
}

// Calls run(part) for each strided sub-product of `call`, in an order that
// makes the sum over K blocks correct (beta on the first). Returns false
// (calling nothing) when the split would give more than max_parts products
// or a block shorter than min_extent, or when a dimension is empty.
template <class T, class Run>
bool for_each_strided_part(const GemmCall<T>& call, std::size_t max_parts, index_t min_extent, Run&& run) {
  const index_t M = call.c.rows(), N = call.c.cols(), K = call.a.cols();
  if (M == 0 || N == 0 || K == 0) return false;
  const auto ms = block_segments(M, call.a.layout.rows, call.c.layout.rows);
  const auto ns = block_segments(N, call.b.layout.cols, call.c.layout.cols);
  const auto ks = block_segments(K, call.a.layout.cols, call.b.layout.rows);
  if (!cuts_fit({&ms, &ns, &ks}, max_parts, min_extent)) return false;
  for (std::size_t i = 0; i + 1 < ms.size(); ++i)
    for (std::size_t j = 0; j + 1 < ns.size(); ++j)
      for (std::size_t p = 0; p + 1 < ks.size(); ++p) {
        const index_t m0 = ms[i], mn = ms[i + 1] - m0, n0 = ns[j], nn = ns[j + 1] - n0;
        const index_t k0 = ks[p], kn = ks[p + 1] - k0;
        GemmCall<T> part = call;
        part.a = strided_block(call.a, m0, mn, k0, kn);
        part.b = strided_block(call.b, k0, kn, n0, nn);
        part.c = strided_block(call.c, m0, mn, n0, nn);
        part.beta = p == 0 ? call.beta : T(1);
        run(part);
      }
  return true;
}

}  // namespace parray::cuda
