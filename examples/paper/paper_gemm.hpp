// What the paper's GEMM figures share: the one GEMM body of figs 8, 10, 11,
// 12-13, 17 and 18, and the setup and check around it.
//
// The figures evolve the GEMM from one CPU thread to 2 x 2 Pthreads, to
// 2 x 2 CUDA threads, to one CUDA thread per element, and then to other
// physical storages, by changing only the types. Here that is literal: every
// program calls gemm_body() and differs from the others in its type
// declarations (the matrix type M, its memory kind, the thread array).
#pragma once

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "parray/array.hpp"
#include "parray/device_layout.hpp"
#include "parray/gemm_check.hpp"
#include "parray/memory_kind.hpp"

namespace paper {

using parray::index_t;

// C = A B, square matrices of type M, computed by thread t of a thread array
// T. Thread (tid_0, tid_1) takes the rows [[$tid_0$][i]] and the columns
// [[$tid_1$][j]]: the rows of M_0 split into dim(T_0) equal parts — the
// paper's $dim_0_1(M)$ where M is written [[2][512]][[2][512]] (fig 10), and 1
// where each thread owns one element (figs 12-13, 17, 18).
template <class Thread>
PARRAY_HD void gemm_body(const Thread& t, const parray::DeviceLayout& M, const float* a, const float* b, float* c) {
  const index_t rows = M.sub(0).size() / t.dim(0), cols = M.sub(1).size() / t.dim(1);
  for (index_t i = 0; i < rows; ++i)
    for (index_t j = 0; j < cols; ++j) {
      const index_t row = t.tid(0) * rows + i, col = t.tid(1) * cols + j;
      const float* pa = a + M(row, 0);  // pa = a + $M[[tid_0][i]][0]$
      const float* pb = b + M(0, col);  // pb = b + $M[0][[tid_1][j]]$
      float cvalue = 0;
      for (index_t k = 0; k < M.sub(1).size(); ++k) cvalue += pa[M(0, k)] * pb[M(k, 0)];
      c[M(row, col)] = cvalue;  // c[$M[[tid_0][i]][[tid_1][j]]$] = Cvalue
    }
}

// What the paper leaves out: input data (random, never zero) in the storage
// of a and b, C poisoned with NaN before the run.
inline void fill_inputs(std::vector<float>& a, std::vector<float>& b, std::vector<float>& c) {
  std::mt19937 gen(2011);
  std::uniform_real_distribution<float> mag(0.1f, 1.f);
  std::bernoulli_distribution sign(0.5);
  for (auto* v : {&a, &b})
    for (float& x : *v) x = sign(gen) ? mag(gen) : -mag(gen);
  for (float& x : c) x = std::nanf("");
}

// Checks c = a b through the matrix type M against the FP64 product
// (parray::check_gemm); prints one line; the program's exit status.
inline int check(const char* figure, const parray::Layout& M, const std::vector<float>& a, const std::vector<float>& b,
                 const std::vector<float>& c) {
  using parray::MatrixView;
  const parray::MatrixLayout l = parray::MatrixLayout::from(M);
  const MatrixView<const float> va{a.data(), l}, vb{b.data(), l}, vc{c.data(), l};
  const parray::GemmCheck r = parray::check_gemm<float>(1.f, va, vb, 0.f, nullptr, vc);
  std::printf("%s: M = %s, %lld x %lld: %s (relative error %.2e, tolerance %.2e)\n", figure, M.str().c_str(),
              static_cast<long long>(l.rows.size), static_cast<long long>(l.cols.size),
              r.ok ? "check ok" : ("CHECK FAILED: " + r.reason).c_str(), r.rel_err, r.tolerance);
  return r.ok ? 0 : 1;
}

// #create M(a), M(b), M(c) in M's memory kind, with host images of the
// three: a and b random, c poisoned, copied into the arrays; check() copies
// c back and checks it.
template <class Kind>
struct Operands {
  explicit Operands(const parray::ArrayType<float, Kind>& M)
      : a(M.create()), b(M.create()), c(M.create()), ha(bytes_of(a) / 4), hb(ha.size()), hc(ha.size()) {
    fill_inputs(ha, hb, hc);
    upload(ha, a);
    upload(hb, b);
    upload(hc, c);
  }
  int check(const char* figure, const parray::Layout& M) {
    parray::copy_bytes(hc.data(), parray::Memory::paged, c.data(), c.memory(), bytes_of(c));
    return paper::check(figure, M, ha, hb, hc);
  }
  parray::Array<float> a, b, c;
  std::vector<float> ha, hb, hc;

 private:
  static std::size_t bytes_of(const parray::Array<float>& x) { return std::size_t(x.storage_elements()) * 4; }
  static void upload(const std::vector<float>& h, parray::Array<float>& x) {
    parray::copy_bytes(x.data(), x.memory(), h.data(), parray::Memory::paged, bytes_of(x));
  }
};

// The matrix size: the paper's 1024, or the program's first argument.
inline parray::Layout::Constants size_from(int argc, char** argv) {
  const long n = argc > 1 ? std::stol(argv[1]) : 1024;
  if (n < 4 || n % 4 != 0) throw parray::Error("N must be a positive multiple of 4, got " + std::to_string(n));
  return {{"N", static_cast<index_t>(n)}};
}

// Exit status of a program that needs a GPU where none is (ctest: skipped).
constexpr int kSkipped = 77;

// A figure's main(): runs it; an error is one line and exit status 2.
template <class F>
int guarded(const char* figure, F&& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", figure, e.what());
    return 2;
  }
}

// True (and says so) where there is no GPU to run a CUDA figure on.
inline bool no_gpu(const char* figure) {
  if (parray::cuda_available()) return false;
  std::printf("%s: no CUDA device, skipped\n", figure);
  return true;
}

}  // namespace paper
