// Portable microkernels: plain C++ that the compiler vectorises for the
// baseline instruction set. 4 x 8 keeps 32 accumulators, which fits the 16
// SSE registers as 8 (FP32) or 16 (FP64) vectors; it exists so that parray runs
// (and is tested) on any x86-64 or other CPU, not to be fast.
#include "microkernel.hpp"

namespace parray::cpu {

namespace {

constexpr int kMr = 4, kNr = 8;

template <class T>
void kernel(index_t k, const T* __restrict a, const T* __restrict b, T alpha, T beta, T* c,
            const index_t* row_offset, const T* /*b_next: no prefetch here*/) {
  T acc[kMr][kNr] = {};
  for (index_t p = 0; p < k; ++p) {
    for (int i = 0; i < kMr; ++i)
      for (int j = 0; j < kNr; ++j) acc[i][j] += a[i] * b[j];
    a += kMr;
    b += kNr;
  }
  for (int i = 0; i < kMr; ++i) {
    T* row = c + row_offset[i];
    for (int j = 0; j < kNr; ++j) row[j] = beta == T(0) ? alpha * acc[i][j] : alpha * acc[i][j] + beta * row[j];
  }
}

}  // namespace

const MicroKernel<float>& microkernel_portable_f32() {
  static const MicroKernel<float> k{kMr, kNr, &kernel<float>, "portable 4x8"};
  return k;
}
const MicroKernel<double>& microkernel_portable_f64() {
  static const MicroKernel<double> k{kMr, kNr, &kernel<double>, "portable 4x8"};
  return k;
}

}  // namespace parray::cpu
