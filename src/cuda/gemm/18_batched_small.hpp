// Step 18's launcher (gemm/18_batched_small.cu) as the FP32 and 16-bit entry
// points call it: a strided batch of small products, each operand any strided
// layout (element strides of rows and columns), in one launch.
#pragma once

#include <cuda_runtime_api.h>

#include "parray/core.hpp"

namespace parray::cuda {

enum class Elem { f32, bf16, fp16 };

struct SmallBatch {
  const void* a;
  index_t a_rs, a_cs, stride_a;  // element strides: row, column, matrix (0: broadcast)
  const void* b;
  index_t b_rs, b_cs, stride_b;
  void* c;
  index_t c_rs, c_cs, stride_c;
  index_t batch, m, n, k;
  float alpha, beta;
  Elem in, out;  // A and B's element type, C's
};

// Queues the batch on `stream` with the tile plan_batched_small picks (T = 32
// where M and N fit it, else 64). Sizes < 2^31, batch x tiles < 2^31.
void launch_batched_small(const SmallBatch& b, cudaStream_t stream);

}  // namespace parray::cuda
