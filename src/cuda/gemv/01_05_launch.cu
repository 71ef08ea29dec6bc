// Launchers of the GPU GEMV ladder (01-05, the GEMV lab report's four kernels and the
// tuned one) and the cuBLAS SGEMV/DGEMV baseline, registered in the GEMV
// table. Each launcher checks its layout preconditions; the dispatcher
// (src/cpu/gemv/gemv.cpp) has checked sizes, memory spaces and M > 0.
// Every launch goes to the call's stream (GemvCall::stream) and is checked.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/cublas_handle.hpp"
#include "common/cublas_library.hpp"
#include "common/stream_workspace.hpp"
#include "01_global_rows.cuh"
#include "02_coalesced_colmajor.cuh"
#include "03_constant_x.cuh"
#include "04_shared_x.cuh"
#include "05_tuned.cuh"
#include "06_07_launch.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/gemv.hpp"

namespace parray {

namespace {

using namespace cuda::gemv_kernels;

unsigned blocks_for(index_t m, int per_block) {
  const index_t b = (m + per_block - 1) / per_block;
  if (b > 2147483647) throw Error("gpu gemv: M = " + std::to_string(m) + " is too large for one grid");
  return unsigned(std::max<index_t>(b, 1));
}

std::string strided_only(const MatrixLayout& a) {
  return a.is_strided() ? "" : "the GPU GEMV kernels take strided layouts (row-/column-major, any ld), not " + a.str();
}
std::string col_major_only(const MatrixLayout& a) {
  if (!a.is_strided() || !(a.rows.stride[0] == 1 || a.rows.size == 1))
    return "step 2 needs a column-major A (the GEMV lab report transposes A first); got " + a.str();
  return "";
}
std::string unit_stride_only(const MatrixLayout& a) {
  if (!a.is_strided()) return strided_only(a);
  if (a.rows.stride[0] == 1 || a.cols.stride[0] == 1 || a.rows.size == 1 || a.cols.size == 1) return "";
  return "the tuned GEMV needs a row- or column-major A; got " + a.str();
}

template <class T>
void launch_global_rows(const GemvCall<T>& c) {
  const cudaStream_t s = cuda::on_stream(c.stream);
  global_rows<T><<<blocks_for(c.a.rows(), 256), 256, 0, s>>>(c.a.rows(), c.a.cols(), c.a.data,
                                                             c.a.layout.rows.stride[0], c.a.layout.cols.stride[0], c.x,
                                                             c.y, c.alpha, c.beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_coalesced(const GemvCall<T>& c) {
  const cudaStream_t s = cuda::on_stream(c.stream);
  if (std::string why = col_major_only(c.a.layout); !why.empty()) throw Error(why);
  const index_t ld = c.a.cols() <= 1 ? std::max<index_t>(c.a.rows(), 1) : c.a.layout.cols.stride[0];
  coalesced_colmajor<T>
      <<<blocks_for(c.a.rows(), 256), 256, 0, s>>>(c.a.rows(), c.a.cols(), c.a.data, ld, c.x, c.y, c.alpha, c.beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// x's chunk lives in __constant__ memory, one copy per device that every
// host thread and stream shares: a call holds the device's lock while it
// queues its copies and kernels, and waits (stream order) for the last
// call's kernels before its first copy overwrites the chunk. A ladder step,
// not a hot path: the lock is its price.
struct ConstantXOwner {
  std::mutex mu;
  cuda::StreamOrder order;
};
ConstantXOwner& constant_x_owner() {
  static auto* owners = new ConstantXOwner[64];  // per device; never destroyed: CUDA may be torn down first
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  if (device >= 64) throw Error("gemv-gpu-03-constant: device " + std::to_string(device) + " (at most 64)");
  return owners[device];
}

template <class T>
void launch_constant(const GemvCall<T>& c) {
  const cudaStream_t s = cuda::on_stream(c.stream);
  const index_t m = c.a.rows(), n = c.a.cols(), chunk = ConstantX<T>::kChunk;
  const void* symbol = sizeof(T) == 4 ? static_cast<const void*>(&c_x_f32) : static_cast<const void*>(&c_x_f64);
  if (n == 0) {  // y = beta y
    constant_x<T><<<blocks_for(m, 256), 256, 0, s>>>(m, 0, 0, c.a.data, 0, 0, c.y, c.alpha, c.beta);
    PARRAY_CUDA_CHECK_LAUNCH();
    return;
  }
  ConstantXOwner& owner = constant_x_owner();
  std::lock_guard<std::mutex> lock(owner.mu);
  owner.order.enter(s);
  for (index_t j0 = 0; j0 < n; j0 += chunk) {  // x does not fit: chunks, accumulating into y
    const index_t len = std::min(chunk, n - j0);
    PARRAY_CUDA_CHECK(
        cudaMemcpyToSymbolAsync(symbol, c.x + j0, size_t(len) * sizeof(T), 0, cudaMemcpyDeviceToDevice, s));
    constant_x<T><<<blocks_for(m, 256), 256, 0, s>>>(m, j0, len, c.a.data, c.a.layout.rows.stride[0],
                                                     c.a.layout.cols.stride[0], c.y, c.alpha, j0 == 0 ? c.beta : T(1));
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  owner.order.leave(s);
}

template <class T>
void launch_shared(const GemvCall<T>& c) {
  const cudaStream_t s = cuda::on_stream(c.stream);
  shared_x<T, 256><<<blocks_for(c.a.rows(), 256), 256, 0, s>>>(c.a.rows(), c.a.cols(), c.a.data,
                                                               c.a.layout.rows.stride[0], c.a.layout.cols.stride[0],
                                                               c.x, c.y, c.alpha, c.beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// The column-major partial sums' workspace: per host thread and device, grown
// when needed, a use on another stream than the last one's waiting for it
// (common/stream_workspace.hpp). The launches that use it end with workspace_done.
struct GemvWorkspace {
  cuda::StreamOrder order;
  cuda::StreamBuffer buffer;
};
GemvWorkspace& workspace_here() { return cuda::per_thread_on_device<GemvWorkspace>(); }
void* workspace(std::size_t bytes, cudaStream_t s) {
  GemvWorkspace& w = workspace_here();
  return w.buffer.get(bytes, s, w.order, false);
}
void workspace_done(cudaStream_t s) { workspace_here().order.leave(s); }

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <class T>
void launch_tuned(const GemvCall<T>& c) {
  const cudaStream_t s = cuda::on_stream(c.stream);
  if (std::string why = unit_stride_only(c.a.layout); !why.empty()) throw Error(why);
  const index_t m = c.a.rows(), n = c.a.cols();
  constexpr int kVec = 16 / sizeof(T);
  const MatrixLayout& l = c.a.layout;
  const bool row_major = (l.cols.stride[0] == 1 || n == 1) && !(l.rows.stride[0] == 1 && m > 1 && n > 1);
  const int sms = cuda::sm_count();
  if (row_major) {
    const index_t ld = m == 1 ? std::max<index_t>(n, 1) : l.rows.stride[0];
    const bool vec = ld % kVec == 0 && aligned16(c.a.data) && aligned16(c.x);
    const unsigned blocks = unsigned(std::min<index_t>((m + 7) / 8, index_t(sms) * 16));
    if (vec) tuned_rows<T, kVec, 4><<<blocks, 256, 0, s>>>(m, n, c.a.data, ld, c.x, c.y, c.alpha, c.beta);
    else tuned_rows<T, 1, 8><<<blocks, 256, 0, s>>>(m, n, c.a.data, ld, c.x, c.y, c.alpha, c.beta);
    PARRAY_CUDA_CHECK_LAUNCH();
    return;
  }
  const index_t ld = n == 1 ? std::max<index_t>(m, 1) : l.cols.stride[0];
  const bool vec = ld % kVec == 0 && aligned16(c.a.data);
  // The one-kernel version (16 lanes) when it has a block for every SM: it
  // runs faster than the split version below, and 8 lanes were slower
  // (docs/perf-notes.md).
  if (vec) {
    const index_t rows = 16 * kVec, blocks = (m + rows - 1) / rows;
    if (blocks >= sms) {
      if (blocks > 0x7fffffff) throw Error("gemv-gpu-tuned: too many rows");
      tuned_cols_whole<T, kVec, 16, 8><<<unsigned(blocks), 256, 0, s>>>(m, n, c.a.data, ld, c.x, c.y, c.alpha, c.beta);
      PARRAY_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  const int rows_per_block = 256 * (vec ? kVec : 1);
  const index_t row_blocks = (m + rows_per_block - 1) / rows_per_block;
  // Enough blocks for ~8 per SM, each slice at least 32 columns.
  const index_t want = std::max<index_t>(1, index_t(sms) * 8 / std::max<index_t>(row_blocks, 1));
  const int slices = int(std::clamp<index_t>(std::min(want, (n + 31) / 32), 1, 65535));
  const index_t per_slice = (n + slices - 1) / slices;
  T* part = static_cast<T*>(workspace(size_t(slices) * size_t(m) * sizeof(T), s));
  const dim3 grid{unsigned(row_blocks), unsigned(slices), 1u};
  if (vec) tuned_cols_partial<T, kVec, 4><<<grid, 256, 0, s>>>(m, n, c.a.data, ld, c.x, per_slice, part);
  else tuned_cols_partial<T, 1, 8><<<grid, 256, 0, s>>>(m, n, c.a.data, ld, c.x, per_slice, part);
  PARRAY_CUDA_CHECK_LAUNCH();
  tuned_cols_reduce<T><<<blocks_for(m, 256), 256, 0, s>>>(m, slices, part, c.y, c.alpha, c.beta);
  PARRAY_CUDA_CHECK_LAUNCH();
  workspace_done(s);
}

// Step 6 where it applies, else step 5's column kernels (column-major A of
// more rows than step 6's short-column kernel takes).
template <class T>
void launch_shapes(const GemvCall<T>& c) {
  if (std::string why = unit_stride_only(c.a.layout); !why.empty()) throw Error(why);
  if (!cuda::gemv_any_shape(c)) launch_tuned(c);
}

// ---- cuBLAS ------------------------------------------------------------------

// The calling thread's handle, on the call's stream.
cublasHandle_t handle_on(GpuStream stream) {
  const cublasHandle_t h = cuda::cublas_handle_for_current_device();
  cuda::cublas().check(cuda::cublas().SetStream(h, cuda::on_stream(stream)), "cublas gemv", "cublasSetStream");
  return h;
}

template <class T>
void cublas_gemv(const GemvCall<T>& c) {
  if (std::string why = unit_stride_only(c.a.layout); !why.empty()) throw Error(why);
  const MatrixLayout& l = c.a.layout;
  const int m = int(c.a.rows()), n = int(c.a.cols());
  const bool col = (l.rows.stride[0] == 1 || m == 1) && !(l.cols.stride[0] == 1 && n > 1 && m > 1 && l.rows.stride[0] != 1);
  const cublasHandle_t h = handle_on(c.stream);
  cublasStatus_t s;
  if (col) {  // column-major: y = A x
    const int ld = int(n == 1 ? std::max(m, 1) : std::max<index_t>(l.cols.stride[0], std::max(m, 1)));
    if constexpr (sizeof(T) == 4)
      s = cuda::cublas().Sgemv(h, CUBLAS_OP_N, m, n, &c.alpha, c.a.data, ld, c.x, 1, &c.beta, c.y, 1);
    else s = cuda::cublas().Dgemv(h, CUBLAS_OP_N, m, n, &c.alpha, c.a.data, ld, c.x, 1, &c.beta, c.y, 1);
  } else {  // row-major A is a column-major A^T (n x m): y = (A^T)^T x
    const int ld = int(m == 1 ? std::max(n, 1) : l.rows.stride[0]);
    if constexpr (sizeof(T) == 4)
      s = cuda::cublas().Sgemv(h, CUBLAS_OP_T, n, m, &c.alpha, c.a.data, ld, c.x, 1, &c.beta, c.y, 1);
    else s = cuda::cublas().Dgemv(h, CUBLAS_OP_T, n, m, &c.alpha, c.a.data, ld, c.x, 1, &c.beta, c.y, 1);
  }
  cuda::cublas().check(s, "cublas gemv");
}

// One GPU GEMV of the registry: its kernels for FP32 and FP64 and the
// layouts it refuses (unsupported: why not, or "").
template <class F32, class F64, class Why>
void add_gpu_gemv(GemvRegistry& r, std::string name, std::string description, std::string preconditions, F32 f32,
                  F64 f64, Why unsupported, bool baseline = false) {
  GemvImpl i = gpu_impl<GemvImpl>(std::move(name), std::move(description), std::move(preconditions));
  i.baseline = baseline;
  i.run_f32 = f32;
  i.run_f64 = f64;
  i.unsupported = unsupported;
  r.add(std::move(i));
}

}  // namespace

void register_cuda_gemv(GemvRegistry& r) {
  add_gpu_gemv(r, "gemv-gpu-01-global", "the GEMV lab report kernel 1: one thread per row, global memory",
               "strided layouts; coalesced only when column-major", launch_global_rows<float>,
               launch_global_rows<double>, strided_only);
  add_gpu_gemv(r, "gemv-gpu-02-coalesced",
               "the GEMV lab report kernel 2: one thread per row over the transposed (column-major) A", "column-major A",
               launch_coalesced<float>, launch_coalesced<double>, col_major_only);
  add_gpu_gemv(r, "gemv-gpu-03-constant", "the GEMV lab report kernel 3: x in constant memory (32 KiB chunks when it does not fit)",
               "strided layouts", launch_constant<float>, launch_constant<double>, strided_only);
  add_gpu_gemv(r, "gemv-gpu-04-shared", "the GEMV lab report kernel 4: x staged in shared memory, 256 at a time",
               "strided layouts", launch_shared<float>, launch_shared<double>, strided_only);
  add_gpu_gemv(r, "gemv-gpu-tuned",
               "step 5: warp per row with 128-bit loads x4 in flight (row-major); 128-bit column loads with split "
               "columns + ordered reduction (column-major)",
               "row- or column-major A, any ld (128-bit path when ld and pointers are 16-byte aligned)",
               launch_tuned<float>, launch_tuned<double>, unit_stride_only);
  add_gpu_gemv(r, "gemv-gpu-06-shapes",
               "step 6: step 5 sized to the shape: rows read by groups of 4-32 lanes and cut into slices where "
               "they are few, short columns by a few threads each, slices summed in order by the last block",
               "row- or column-major A, any ld (128-bit path when ld and pointers are 16-byte aligned)",
               launch_shapes<float>, launch_shapes<double>, unit_stride_only);
  add_gpu_gemv(r, "gemv-cublas", "cuBLAS cublasSgemv/cublasDgemv: the baseline", "row- or column-major A; sizes < 2^31",
               cublas_gemv<float>, cublas_gemv<double>, unit_stride_only, true);
}

}  // namespace parray
