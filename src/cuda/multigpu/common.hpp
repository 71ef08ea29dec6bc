// Pieces shared by the multi-GPU GEMMs (include/parray/multigpu.hpp): owned
// device buffers, streams and events bound to one GPU, ranges, row-major
// checks, and the NCCL error check.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>

#include <string>
#include <utility>
#include <vector>

#include "parray/config.hpp"
#include "parray/cuda/check.hpp"
#include "parray/multigpu.hpp"

#if PARRAY_HAVE_NCCL
#include <nccl.h>

#define PARRAY_NCCL_CHECK(call)                                                                        \
  do {                                                                                                 \
    ncclResult_t parray_nccl_err_ = (call);                                                            \
    if (parray_nccl_err_ != ncclSuccess)                                                               \
      throw ::parray::Error(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + #call + ": " + \
                            ncclGetErrorString(parray_nccl_err_));                                     \
  } while (0)
#endif

namespace parray::multigpu::detail {

// Host wall clock in ms, for a schedule's own elapsed time.
inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Part i of n items over t parts: [begin, end), sizes differ by at most one.
struct Range {
  index_t begin = 0, end = 0;
  index_t size() const { return end - begin; }
};
inline Range part(index_t n, index_t t, index_t i) { return {n * i / t, n * (i + 1) / t}; }

// Row-major host operand: pointer and row stride, or Error naming it.
struct Rows {
  float* p;
  index_t ld;
};
// A row-major operand in host memory or on any GPU: copies to and from it
// use cudaMemcpyDefault, and unified addressing finds where it lives (GPU to
// GPU directly where peer access is on, see team.cpp).
template <class T>
Rows operand_rows(MatrixView<T> v, const char* what) {
  if (!v.layout.is_row_major())
    throw Error(std::string("multigpu: ") + what + " must be row-major (got " + v.layout.str() + ")");
  const index_t ld = v.rows() <= 1 ? std::max<index_t>(1, v.cols()) : v.layout.rows.stride[0];
  return {const_cast<float*>(v.data), ld};
}
template <class T>
Rows host_rows(MatrixView<T> v, const char* what) {
  if (v.memory == Memory::device) throw Error(std::string("multigpu: ") + what + " must be in host memory");
  return operand_rows(v, what);
}

// The caller's work on the legacy default stream of the GPU holding a device
// operand — a cudaMemcpy from pageable memory that filled it returns before
// its last DMA has landed — is finished before the multi-GPU copies, which
// run on non-blocking streams, read the operand (the one-GPU splits' race,
// tests/gpu_stream_order_test.cpp; src/cuda/multilevel/splits.cpp after_callers_work).
// Host operands need nothing.
template <class T>
void wait_for_callers_work(const MatrixView<T>& v) {
  if (v.memory != Memory::device || v.data == nullptr) return;
  cudaPointerAttributes attr{};
  PARRAY_CUDA_CHECK(cudaPointerGetAttributes(&attr, v.data));
  int current = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&current));
  PARRAY_CUDA_CHECK(cudaSetDevice(attr.device));
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(cudaStreamLegacy));
  PARRAY_CUDA_CHECK(cudaSetDevice(current));
}

// Device memory on the current GPU, freed on that GPU.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t floats) : n_(floats) {
    PARRAY_CUDA_CHECK(cudaGetDevice(&device_));
    if (floats) PARRAY_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), floats * sizeof(float)));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ~DeviceBuffer() {
    if (p_) {
      int cur = -1;
      cudaGetDevice(&cur);
      cudaSetDevice(device_);
      cudaFree(p_);  // not checked: a destructor must not throw
      cudaSetDevice(cur);
    }
  }
  float* get() const { return p_; }
  std::size_t floats() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(float); }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(p_, o.p_), std::swap(n_, o.n_), std::swap(device_, o.device_);
  }
  float* p_ = nullptr;
  std::size_t n_ = 0;
  int device_ = 0;
};

// A non-blocking stream and events on the current GPU.
class Stream {
 public:
  // high_priority: the stream's blocks are scheduled before those of normal
  // streams as SMs free up (communication and copies in, so that a GEMM that
  // fills the GPU does not hold back the next panel).
  explicit Stream(bool high_priority = false) {
    int least = 0, greatest = 0;
    PARRAY_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    PARRAY_CUDA_CHECK(cudaStreamCreateWithPriority(&s_, cudaStreamNonBlocking, high_priority ? greatest : least));
  }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_{};
};
class Event {
 public:
  Event() { PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return e_; }
  void record(cudaStream_t s) const { PARRAY_CUDA_CHECK(cudaEventRecord(e_, s)); }
  void wait_on(cudaStream_t s) const { PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s, e_, 0)); }

 private:
  cudaEvent_t e_{};
};

// rows x cols floats between host (row stride hld) and device (row stride dld), async.
inline void copy_rows(float* dst, index_t dld, const float* src, index_t sld, index_t rows, index_t cols,
                      cudaMemcpyKind kind, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  PARRAY_CUDA_CHECK(cudaMemcpy2DAsync(dst, size_t(dld) * sizeof(float), src, size_t(sld) * sizeof(float),
                                      size_t(cols) * sizeof(float), size_t(rows), kind, s));
}

// C = alpha A B + beta C on `s` with step 12 (src/cuda/multilevel/launch.cu)
// or cuBLAS (`how`; row-major operands); nothing to do for an empty C,
// C = beta C for K == 0.
void local_gemm(LocalGemm how, cudaStream_t s, index_t m, index_t n, index_t k, float alpha, const float* a,
                index_t lda, const float* b, index_t ldb, float beta, float* c, index_t ldc);
// y = x + beta y over rows x cols (row strides ldx, ldy), on `s`.
void add_scaled(cudaStream_t s, index_t rows, index_t cols, const float* x, index_t ldx, float beta, float* y,
                index_t ldy);
// Every element NaN, rows x cols at row stride ld, on `s`.
void fill_nan(cudaStream_t s, float* p, index_t rows, index_t cols, index_t ld);

// NCCL_NVLS_ENABLE=0 unless the user set it: NVLink SHARP multicast needs
// fabric resources that a shared machine may not grant (NCCL initialisation
// then fails or hangs), and panel broadcasts gain nothing from it. Called
// before any NCCL initialisation.
void nccl_safe_environment();

}  // namespace parray::multigpu::detail
