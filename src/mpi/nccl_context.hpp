// Inside the NCCL transport (gpu_context.cpp, summa_nccl.cpp): what a
// GpuProcessContext holds, and the CUDA/NCCL helpers of src/cuda/multigpu
// (streams, events, PARRAY_NCCL_CHECK) reused here. Only in builds with NCCL.
#pragma once

#include "parray/config.hpp"

#if PARRAY_HAVE_NCCL
#include <memory>

#include "../cuda/multigpu/common.hpp"
#include "parray/mpi/gpu.hpp"

namespace parray::mpi {

struct GpuProcessContext::Comms {
  // Panels travel here; non-blocking, so that the legacy default stream, where
  // parray's GPU GEMMs run, does not serialise with it, and high priority, so
  // that a broadcast is not held back by a GEMM that fills the GPU.
  std::unique_ptr<multigpu::detail::Stream> stream;
  ncclComm_t row = nullptr;  // my process row, NCCL rank = column; null when the row is one rank
  ncclComm_t col = nullptr;  // my process column, NCCL rank = row; null when the column is one rank
  ~Comms();

  // Device memory for SUMMA's panel slots, at least `bytes`, kept between
  // calls (a cudaMalloc and cudaFree per call would cost, and cudaFree waits
  // for the whole device).
  void* panel_space(std::size_t bytes) const {
    if (!panels || panels->storage_elements() < static_cast<index_t>(bytes)) {
      panels.reset();  // the old slots first: the device may not hold both
      panels = std::make_unique<Array<unsigned char>>(
          Layout::dense({static_cast<index_t>(std::max<std::size_t>(bytes, 1))}), Memory::device);
    }
    return panels->data();
  }

 private:
  mutable std::unique_ptr<Array<unsigned char>> panels;
};

template <class T>
ncclDataType_t nccl_type();
template <>
inline ncclDataType_t nccl_type<float>() {
  return ncclFloat;
}
template <>
inline ncclDataType_t nccl_type<double>() {
  return ncclDouble;
}

}  // namespace parray::mpi
#endif
