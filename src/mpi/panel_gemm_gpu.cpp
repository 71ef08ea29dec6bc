// SUMMA's local GEMM on a GPU (panel_gemm.hpp). Open MPI is not assumed to be
// CUDA-aware, so panels travel between ranks in host memory: a rank receives
// them into pinned buffers, and a copy stream uploads panel k+1 while panel k
// is multiplied on the default stream (where parray's GPU GEMMs launch). The
// local blocks of A, B and C stay on the device for the whole call: a rank's
// own panels are multiplied from there, and C comes back once, at the end.
//
// Order between the two streams, per slot s (= step & 1):
//   copy stream:    wait used[s] -> upload panels into dev panel s -> record copied[s]
//   default stream: wait copied[s] -> GEMM from dev panel s -> record used[s]
// and the host waits for copied[s] before receiving the next broadcast into
// host panel s.
#include "panel_gemm.hpp"

#include "parray/config.hpp"

#if PARRAY_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "parray/cuda/check.hpp"
#endif

namespace parray::mpi::detail {

#if PARRAY_HAVE_CUDA

int gpu_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // no driver or no device: clear the error, report none
    return 0;
  }
  return n;
}

void use_gpu(int device) { PARRAY_CUDA_CHECK(cudaSetDevice(device)); }

namespace {

// Device memory freed by the destructor.
template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  explicit DeviceBuffer(index_t count = 0)
      : p(static_cast<T*>(allocate_bytes(Memory::device, static_cast<std::size_t>(count) * sizeof(T)))) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { free_bytes(Memory::device, p); }
};

// rows x cols column-major, between host (ld_host) and device (ld_dev).
template <class T>
void copy_matrix(T* dst, index_t ld_dst, const T* src, index_t ld_src, index_t rows, index_t cols, cudaMemcpyKind kind,
                 cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  PARRAY_CUDA_CHECK(cudaMemcpy2DAsync(dst, static_cast<std::size_t>(ld_dst) * sizeof(T), src,
                                      static_cast<std::size_t>(ld_src) * sizeof(T),
                                      static_cast<std::size_t>(rows) * sizeof(T), static_cast<std::size_t>(cols), kind,
                                      stream));
}

}  // namespace

template <class T>
struct GpuPanelGemm<T>::State {
  std::string impl;
  index_t mloc = 0, nloc = 0, b_rows = 0;
  DeviceBuffer<T> a, b, c;          // local blocks: mloc x a_cols (ld mloc), b_rows x nloc (ld b_rows), mloc x nloc
  DeviceBuffer<T> apanel[2], bpanel[2];  // received panels: mloc x kb, kb x nloc
  cudaStream_t copy = nullptr;
  cudaEvent_t copied[2] = {nullptr, nullptr}, used[2] = {nullptr, nullptr};

  State(index_t mloc_, index_t nloc_, index_t kb, index_t a_cols, index_t b_rows_)
      : mloc(mloc_), nloc(nloc_), b_rows(b_rows_), a(mloc_ * a_cols), b(b_rows_ * nloc_), c(mloc_ * nloc_),
        apanel{DeviceBuffer<T>(mloc_ * kb), DeviceBuffer<T>(mloc_ * kb)},
        bpanel{DeviceBuffer<T>(kb * nloc_), DeviceBuffer<T>(kb * nloc_)} {}
  ~State() {
    // Nothing may still read the buffers when they are freed.
    if (copy) cudaStreamSynchronize(copy);
    cudaStreamSynchronize(nullptr);
    for (int s = 0; s < 2; ++s) {
      if (copied[s]) cudaEventDestroy(copied[s]);
      if (used[s]) cudaEventDestroy(used[s]);
    }
    if (copy) cudaStreamDestroy(copy);
  }
  index_t lda() const { return std::max<index_t>(1, mloc); }
  index_t ldb() const { return std::max<index_t>(1, b_rows); }
};

template <class T>
GpuPanelGemm<T>::GpuPanelGemm(const LocalGemmPlan& plan, index_t mloc, index_t nloc, index_t kb, const T* a,
                              index_t a_cols, index_t lda, const T* b, index_t b_rows, index_t ldb, const T* c,
                              index_t ldc, bool read_c) {
  use_gpu(plan.gpu);
  s_ = std::make_unique<State>(mloc, nloc, kb, a_cols, b_rows);
  s_->impl = plan.impl;
  // Non-blocking: the legacy default stream, where the GEMMs run, would
  // otherwise serialise with every copy.
  PARRAY_CUDA_CHECK(cudaStreamCreateWithFlags(&s_->copy, cudaStreamNonBlocking));
  for (int s = 0; s < 2; ++s) {
    PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&s_->copied[s], cudaEventDisableTiming));
    PARRAY_CUDA_CHECK(cudaEventCreateWithFlags(&s_->used[s], cudaEventDisableTiming));
  }
  copy_matrix(s_->a.p, s_->lda(), a, lda, mloc, a_cols, cudaMemcpyHostToDevice, s_->copy);
  copy_matrix(s_->b.p, s_->ldb(), b, ldb, b_rows, nloc, cudaMemcpyHostToDevice, s_->copy);
  if (read_c) copy_matrix(s_->c.p, s_->lda(), c, ldc, mloc, nloc, cudaMemcpyHostToDevice, s_->copy);
  // The first GEMM waits for these too: stage() records copied[slot] behind
  // them on the same stream.
}

template <class T>
GpuPanelGemm<T>::~GpuPanelGemm() = default;

template <class T>
void GpuPanelGemm<T>::stage(int slot, const Panel<T>& a, const Panel<T>& b, index_t w) {
  State& s = *s_;
  // The GEMM two steps back read this device slot; wait for it on the copy stream only.
  PARRAY_CUDA_CHECK(cudaStreamWaitEvent(s.copy, s.used[slot], 0));
  if (!a.owned) copy_matrix(s.apanel[slot].p, s.lda(), a.host, a.ld, s.mloc, w, cudaMemcpyHostToDevice, s.copy);
  if (!b.owned) copy_matrix(s.bpanel[slot].p, std::max<index_t>(1, w), b.host, b.ld, w, s.nloc, cudaMemcpyHostToDevice, s.copy);
  PARRAY_CUDA_CHECK(cudaEventRecord(s.copied[slot], s.copy));
}

template <class T>
void GpuPanelGemm<T>::release_host(int slot) {
  PARRAY_CUDA_CHECK(cudaEventSynchronize(s_->copied[slot]));
}

template <class T>
void GpuPanelGemm<T>::multiply(int slot, const Panel<T>& a, const Panel<T>& b, index_t w, T alpha, T beta) {
  State& s = *s_;
  PARRAY_CUDA_CHECK(cudaStreamWaitEvent(nullptr, s.copied[slot], 0));
  const T* da = a.owned ? s.a.p + a.offset * s.lda() : s.apanel[slot].p;
  const index_t lda = a.owned ? s.lda() : std::max<index_t>(1, s.mloc);
  const T* db = b.owned ? s.b.p + b.offset : s.bpanel[slot].p;
  const index_t ldb = b.owned ? s.ldb() : std::max<index_t>(1, w);
  gemm<T>(alpha, MatrixView<const T>{da, MatrixLayout::col_major(s.mloc, w, lda), Memory::device},
          MatrixView<const T>{db, MatrixLayout::col_major(w, s.nloc, ldb), Memory::device}, beta,
          MatrixView<T>{s.c.p, MatrixLayout::col_major(s.mloc, s.nloc, s.lda()), Memory::device}, {s.impl, 1});
  PARRAY_CUDA_CHECK(cudaEventRecord(s.used[slot], nullptr));
}

template <class T>
void GpuPanelGemm<T>::finish(T* c, index_t ldc) {
  State& s = *s_;
  copy_matrix(c, ldc, s.c.p, s.lda(), s.mloc, s.nloc, cudaMemcpyDeviceToHost, nullptr);
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(nullptr));  // C is on the host; kernel faults show here
  PARRAY_CUDA_CHECK(cudaStreamSynchronize(s.copy));
}

#else  // no CUDA: planning refuses the GPU, so these are never constructed

int gpu_count() { return 0; }
void use_gpu(int) { throw Error("no CUDA device in a build without CUDA"); }

template <class T>
struct GpuPanelGemm<T>::State {};

template <class T>
GpuPanelGemm<T>::GpuPanelGemm(const LocalGemmPlan&, index_t, index_t, index_t, const T*, index_t, index_t, const T*,
                              index_t, index_t, const T*, index_t, bool) {
  throw Error("summa: the GPU local GEMM needs a build with CUDA");
}
template <class T>
GpuPanelGemm<T>::~GpuPanelGemm() = default;
template <class T>
void GpuPanelGemm<T>::stage(int, const Panel<T>&, const Panel<T>&, index_t) {}
template <class T>
void GpuPanelGemm<T>::release_host(int) {}
template <class T>
void GpuPanelGemm<T>::multiply(int, const Panel<T>&, const Panel<T>&, index_t, T, T) {}
template <class T>
void GpuPanelGemm<T>::finish(T*, index_t) {}

#endif

template class GpuPanelGemm<float>;
template class GpuPanelGemm<double>;

}  // namespace parray::mpi::detail
