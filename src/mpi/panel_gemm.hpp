// Inside SUMMA (summa.cpp): the local multiply of one step's panels, on the
// CPU or on the rank's GPU (panel_gemm_gpu.cpp), and the host buffers panels
// are received into.
#pragma once

#include <chrono>
#include <memory>

#include "parray/array.hpp"
#include "parray/mpi/summa.hpp"

namespace parray::mpi::detail {

// One step's panel of A (mloc x w) or B (w x nloc) as this rank holds it on
// the host: a piece of its own local block (`owned`, starting at local column
// / row `offset`), or a copy received into a panel buffer.
template <class T>
struct Panel {
  const T* host = nullptr;
  index_t ld = 1;
  bool owned = false;
  index_t offset = 0;
};

// A host buffer in paged or pinned memory (pinned where a GPU copies from it
// asynchronously), freed by the destructor.
template <class T>
class HostBuffer {
 public:
  HostBuffer() = default;
  HostBuffer(index_t count, Memory memory)
      : memory_(memory),
        data_(static_cast<T*>(allocate_bytes(memory, static_cast<std::size_t>(count) * sizeof(T)))) {}
  HostBuffer(HostBuffer&& o) noexcept : memory_(o.memory_), data_(o.data_) { o.data_ = nullptr; }
  HostBuffer& operator=(HostBuffer&& o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(data_, o.data_);
    return *this;
  }
  ~HostBuffer() { free_bytes(memory_, data_); }
  T* data() const { return data_; }

 private:
  Memory memory_ = Memory::paged;
  T* data_ = nullptr;
};

// The local GEMM on a GPU for a whole SUMMA call. The constructor uploads the
// local blocks of A, B (and C when beta != 0); stage() queues the upload of a
// step's received panels on a copy stream, so that it overlaps the GEMM of
// the step before; multiply() queues the GEMM after that upload; finish()
// brings C back. Panel buffers are double-buffered by slot (step & 1).
template <class T>
class GpuPanelGemm {
 public:
  GpuPanelGemm(const LocalGemmPlan& plan, index_t mloc, index_t nloc, index_t kb, const T* a, index_t a_cols,
               index_t lda, const T* b, index_t b_rows, index_t ldb, const T* c, index_t ldc, bool read_c);
  ~GpuPanelGemm();
  GpuPanelGemm(const GpuPanelGemm&) = delete;
  GpuPanelGemm& operator=(const GpuPanelGemm&) = delete;

  void stage(int slot, const Panel<T>& a, const Panel<T>& b, index_t w);
  // Returns when slot's received panels have been copied to the device, so
  // that the next broadcast can be received into the same host buffers.
  void release_host(int slot);
  void multiply(int slot, const Panel<T>& a, const Panel<T>& b, index_t w, T alpha, T beta);
  void finish(T* c, index_t ldc);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// SUMMA's steps with transport nccl (summa_nccl.cpp), on operands already
// placed as SUMMA multiplies them: uploaded to the ranks' GPUs (options.gpus),
// multiplied there with panels over NCCL, C brought back; adds to `stats`.
template <class T>
void summa_nccl_from_host(T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta, DistMatrix<T>& c,
                          const SummaOptions& options, SummaStats& stats);

// A steady clock in milliseconds.
inline double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Devices on this host; 0 in a build without CUDA.
int gpu_count();
// Makes `device` this process's current CUDA device (checked).
void use_gpu(int device);

}  // namespace parray::mpi::detail
