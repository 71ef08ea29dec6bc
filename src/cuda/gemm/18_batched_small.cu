// Launcher of ladder step 18 (gemm/18_batched_small.cuh): a strided batch of
// small products in one launch, FP32 or 16-bit inputs, FP32 sums.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "gemm/18_batched_small.hpp"
#include "gemm/18_batched_small.cuh"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/plan.hpp"

namespace parray::cuda {

namespace {

template <int T, class In, class Out>
void launch_typed(const SmallBatch& b, cudaStream_t stream) {
  using Tile = ladder::SmallTile<T>;
  ladder::SmallBatchParams<In, Out> p{};
  p.a = {static_cast<const In*>(b.a), b.a_rs, b.a_cs};
  p.b = {static_cast<const In*>(b.b), b.b_rs, b.b_cs};
  p.c = {static_cast<Out*>(b.c), b.c_rs, b.c_cs};
  p.stride_a = b.stride_a, p.stride_b = b.stride_b, p.stride_c = b.stride_c;
  p.M = int(b.m), p.N = int(b.n), p.K = int(b.k);
  p.tiles_m = int(ceil_div(b.m, T)), p.tiles_n = int(ceil_div(b.n, T));
  p.alpha = b.alpha, p.beta = b.beta;
  // A thread writes its 4 columns as two pairs where C's rows are contiguous
  // and every row and matrix starts 16 bytes aligned.
  const index_t e = index_t(sizeof(Out));
  p.c_vec = b.c_cs == 1 && b.c_rs * e % 16 == 0 && b.stride_c * e % 16 == 0 &&
            reinterpret_cast<std::uintptr_t>(b.c) % 16 == 0;
  const long long blocks = static_cast<long long>(p.tiles_m) * p.tiles_n * b.batch;
  if (blocks > 0x7fffffff) throw Error("cuda-18: more than 2^31 tiles in the batch");
  ladder::gemm_batched_small<Tile, In, Out><<<unsigned(blocks), Tile::kThreads, 0, stream>>>(p);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template <int T, class In>
void launch_in(const SmallBatch& b, cudaStream_t stream) {
  switch (b.out) {
    case Elem::f32: return launch_typed<T, In, float>(b, stream);
    case Elem::bf16: return launch_typed<T, In, __nv_bfloat16>(b, stream);
    case Elem::fp16: return launch_typed<T, In, __half>(b, stream);
  }
}

template <int T>
void launch_tile(const SmallBatch& b, cudaStream_t stream) {
  switch (b.in) {
    case Elem::f32: return launch_in<T, float>(b, stream);
    case Elem::bf16: return launch_in<T, __nv_bfloat16>(b, stream);
    case Elem::fp16: return launch_in<T, __half>(b, stream);
  }
}

}  // namespace

void launch_batched_small(const SmallBatch& b, cudaStream_t stream) {
  if (b.m > 0x7fffffff || b.n > 0x7fffffff || b.k > 0x7fffffff) throw Error("cuda-18: a dimension of 2^31 or more");
  if (b.m <= 32 && b.n <= 32) launch_tile<32>(b, stream);
  else launch_tile<64>(b, stream);
}

std::string batched_small_unsupported(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) {
  for (const MatrixLayout* l : {&a, &b, &c})
    if (!l->is_strided()) return "step 18 takes strided operands (not " + l->str() + ")";
  return "";
}

bool gemm_batched_small(const GemmBatchCall<float>& call) {
  const GemmCall<float>& f = call.first;
  if (!batched_small_unsupported(f.a.layout, f.b.layout, f.c.layout).empty()) return false;
  SmallBatch b{};
  b.a = f.a.data, b.a_rs = f.a.layout.rows.stride[0], b.a_cs = f.a.layout.cols.stride[0], b.stride_a = call.stride_a;
  b.b = f.b.data, b.b_rs = f.b.layout.rows.stride[0], b.b_cs = f.b.layout.cols.stride[0], b.stride_b = call.stride_b;
  b.c = f.c.data, b.c_rs = f.c.layout.rows.stride[0], b.c_cs = f.c.layout.cols.stride[0], b.stride_c = call.stride_c;
  b.batch = call.batch, b.m = f.c.rows(), b.n = f.c.cols(), b.k = f.a.cols();
  b.alpha = f.alpha, b.beta = f.beta;
  b.in = b.out = Elem::f32;
  launch_batched_small(b, on_stream(f.stream));
  return true;
}

void gemm_batched_small_one(const GemmCall<float>& call) {
  if (!gemm_batched_small(GemmBatchCall<float>{call, 1, 0, 0, 0}))
    throw Error("cuda-18-batched-small: " +
                batched_small_unsupported(call.a.layout, call.b.layout, call.c.layout));
}

// Step 15's batch entry for the precision asked: the tensor-core kernel of
// that precision, 3xTF32 for FP32.
using BatchEntry = bool (*)(const GemmBatchCall<float>&);
BatchEntry tensor_batch_for(Precision asked) {
  switch (asked) {
    case Precision::tf32: return gemm_persistent_tf32_batch;
    case Precision::bf16: return gemm_persistent_bf16_batch;
    case Precision::fp16: return gemm_persistent_fp16_batch;
    default: return gemm_persistent_3xtf32_batch;
  }
}

// The fastest the planner predicts of step 18 (FP32 sums meet any precision
// asked), step 15's batch at the precision asked (where wgmma runs) and the
// products in turn, each planned as a call of its own and costing at least
// the host's time of a call (false: the caller runs them).
bool gemm_batched_auto(const GemmBatchCall<float>& call) {
  const GemmCall<float>& f = call.first;
  BatchProblem p;
  p.batch = call.batch, p.m = f.c.rows(), p.n = f.c.cols(), p.k = f.a.cols();
  p.reads_c = f.beta != 0.f;
  p.broadcast_a = call.stride_a == 0, p.broadcast_b = call.stride_b == 0;
  const GpuModel& gpu = current_gpu_model();
  PlanProblem one;
  one.m = p.m, one.n = p.n, one.k = p.k, one.precision = f.precision;
  const double in_turn_us = double(p.batch) * std::max(kHostUsPerCall, plan_gemm(gpu, one).chosen.predicted_us);
  const double small_us = plan_batched_small(gpu, p).predicted_us;
  const double tensor_us = gpu.tensor_kernels ? predict_batched_tensor_us(gpu, p, f.precision) : in_turn_us;
  if (tensor_us < std::min(small_us, in_turn_us) && tensor_batch_for(f.precision)(call)) return true;
  if (small_us >= in_turn_us) return false;
  return gemm_batched_small(call);
}

}  // namespace parray::cuda
