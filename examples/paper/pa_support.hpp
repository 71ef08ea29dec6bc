// What the Parray-language figures (*.pa, *.pa.cu) fill in around the
// paper's code: the matrix size, input data in arrays that #create made, and
// the check of C = A B against the FP64 product (paper_gemm.hpp).
#pragma once

#include <algorithm>
#include <vector>

#include "paper_gemm.hpp"
#include "parray/array.hpp"
#ifdef __CUDACC__
#include "parray/cuda/check.hpp"
#endif

namespace paper {

// Random a and b, NaN in c: three arrays of `storage` in `memory`.
inline void fill_operands(const parray::Layout& storage, parray::Memory memory, float* a, float* b, float* c) {
  const std::size_t n = std::size_t(storage.span());
  std::vector<float> ha(n), hb(n), hc(n);
  fill_inputs(ha, hb, hc);
  for (auto [host, array] : {std::pair{&ha, a}, {&hb, b}, {&hc, c}})
    parray::copy_bytes(array, memory, host->data(), parray::Memory::paged, n * sizeof(float));
}

// Checks c = a b through the matrix type M over `storage` (paper::check);
// the program's exit status.
inline int check_operands(const char* figure, const parray::Layout& M, const parray::Layout& storage,
                          parray::Memory memory, const float* a, const float* b, const float* c) {
  const std::size_t n = std::size_t(storage.span());
  std::vector<float> ha(n), hb(n), hc(n);
  for (auto [host, array] : {std::pair{&ha, a}, {&hb, b}, {&hc, c}})
    parray::copy_bytes(host->data(), parray::Memory::paged, array, memory, n * sizeof(float));
  return check(figure, M, ha, hb, hc);
}

#ifdef __CUDACC__
// Median milliseconds of run() on the GPU (CUDA events), after 3 warm-up runs.
template <class F>
double median_ms(F&& run, int reps = 10) {
  cudaEvent_t start, stop;
  PARRAY_CUDA_CHECK(cudaEventCreate(&start));
  PARRAY_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int rep = 0; rep < reps + 3; ++rep) {
    PARRAY_CUDA_CHECK(cudaEventRecord(start));
    run();
    PARRAY_CUDA_CHECK(cudaEventRecord(stop));
    PARRAY_CUDA_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    PARRAY_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
    if (rep >= 3) ms.push_back(t);
  }
  PARRAY_CUDA_CHECK(cudaEventDestroy(start));
  PARRAY_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(ms.begin(), ms.begin() + long(ms.size() / 2), ms.end());
  return ms[ms.size() / 2];
}
#endif

// N from the program's first argument (the paper's 1024 by default).
inline int size_argument(int argc, char** argv) { return int(size_from(argc, argv).at("N")); }

}  // namespace paper
