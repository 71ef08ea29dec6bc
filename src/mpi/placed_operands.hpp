// Inside SUMMA (summa.cpp, summa_25d.cpp): the operands put into the shape
// SUMMA multiplies, op(A) as M x K in C's row blocks and op(B) as K x N in
// C's column blocks, both cut into panels of kb along K.
#pragma once

#include <memory>

#include "parray/mpi/summa.hpp"

namespace parray::mpi::detail {

inline bool a_lines_up(bool ta, const BlockCyclic& ad, const BlockCyclic& cd) {
  return !ta && ad.mb == cd.mb && ad.rsrc == cd.rsrc;
}
inline bool b_lines_up(bool tb, const BlockCyclic& bd, const BlockCyclic& cd) {
  return !tb && bd.nb == cd.nb && bd.csrc == cd.csrc;
}

// op(A) M x K, op(B) K x N and C M x N on one process array, or parray::Error.
template <class T>
void check_shapes(bool ta, bool tb, const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c,
                  const SummaOptions& options) {
  const index_t m = c.dist().m, n = c.dist().n, k = ta ? a.rows() : a.cols();
  if ((ta ? a.cols() : a.rows()) != m || (tb ? b.cols() : b.rows()) != k || (tb ? b.rows() : b.cols()) != n)
    throw Error("summa: op(A) is " + std::to_string(ta ? a.cols() : a.rows()) + "x" + std::to_string(k) + ", op(B) " +
                std::to_string(tb ? b.cols() : b.rows()) + "x" + std::to_string(tb ? b.rows() : b.cols()) + ", C " +
                std::to_string(m) + "x" + std::to_string(n));
  if (&a.grid() != &c.grid() || &b.grid() != &c.grid()) throw Error("summa: A, B and C must live on one process array");
  if (options.threads < 0) throw Error("summa: negative thread count");
  if (options.progress_pieces < 0) throw Error("summa: negative progress_pieces");
}

// The panel width: `panel` when given, else that of an operand that already
// lines up with C (so that it needs no redistribution), else C's column block.
inline index_t panel_width(bool ta, bool tb, const BlockCyclic& ad, const BlockCyclic& bd, const BlockCyclic& cd,
                           index_t panel) {
  if (panel > 0) return panel;
  return a_lines_up(ta, ad, cd) ? ad.nb : b_lines_up(tb, bd, cd) ? bd.mb : cd.nb;
}

// Where op(A) lies as SUMMA multiplies it: A's own distribution when it
// lines up with C in panels of kb, else the one it is redistributed into.
inline BlockCyclic placed_a(bool ta, const BlockCyclic& ad, const BlockCyclic& cd, index_t k, index_t kb) {
  if (a_lines_up(ta, ad, cd) && ad.nb == kb) return ad;
  return {cd.m, k, cd.mb, kb, cd.prows, cd.pcols, cd.rsrc, 0};
}
inline BlockCyclic placed_b(bool tb, const BlockCyclic& bd, const BlockCyclic& cd, index_t k, index_t kb) {
  if (b_lines_up(tb, bd, cd) && bd.mb == kb) return bd;
  return {k, cd.n, kb, cd.nb, cd.prows, cd.pcols, 0, cd.csrc};
}

// The operands as SUMMA multiplies them: the caller's own where they already
// have that shape, else redistributed copies.
template <class T>
struct PlacedOperands {
  std::unique_ptr<DistMatrix<T>> a_moved, b_moved;
  const DistMatrix<T>* a = nullptr;
  const DistMatrix<T>* b = nullptr;
  index_t kb = 0;
};

template <class T>
PlacedOperands<T> place_operands(bool ta, bool tb, const DistMatrix<T>& a, const DistMatrix<T>& b,
                                 const DistMatrix<T>& c, index_t k, index_t panel, SummaStats& stats) {
  PlacedOperands<T> p;
  p.kb = panel_width(ta, tb, a.dist(), b.dist(), c.dist(), panel);
  p.a = &a, p.b = &b;
  const BlockCyclic ad = placed_a(ta, a.dist(), c.dist(), k, p.kb), bd = placed_b(tb, b.dist(), c.dist(), k, p.kb);
  if (ta || !ad.same_as(a.dist())) {  // a square A may have the very distribution, transposed
    p.a_moved = std::make_unique<DistMatrix<T>>(c.grid(), ad);
    stats.redistribute_bytes += redistribute(a, *p.a_moved, ta);
    p.a = p.a_moved.get();
  }
  if (tb || !bd.same_as(b.dist())) {
    p.b_moved = std::make_unique<DistMatrix<T>>(c.grid(), bd);
    stats.redistribute_bytes += redistribute(b, *p.b_moved, tb);
    p.b = p.b_moved.get();
  }
  return p;
}

}  // namespace parray::mpi::detail
