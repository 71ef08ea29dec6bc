// The GPUs of one multi-GPU GEMM and what is kept between calls: per GPU a
// compute stream, a copy-in/communication stream and a copy-out stream, and
// (with NCCL) three communicators: all the GPUs, the GPU's row and the GPU's
// column of the P x Q array. Created once per (devices, P, Q) and kept for the
// life of the process: NCCL initialisation costs far more than a GEMM panel.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "common.hpp"

namespace parray::multigpu::detail {

struct GpuSlot {
  int device = 0;
  std::unique_ptr<Stream> compute, in, out;
#if PARRAY_HAVE_NCCL
  ncclComm_t world = nullptr, row = nullptr, col = nullptr;
#endif
};

struct Team {
  std::vector<int> devices;
  int P = 1, Q = 1;
  std::vector<GpuSlot> gpu;  // thread-array order: (p, q) at p * Q + q
  std::mutex busy;           // one GEMM at a time uses the streams and communicators
  GpuThreadArray threads() const { return GpuThreadArray(devices, P, Q); }
};

// The team for these GPUs as a P x Q array; `nccl`: with communicators.
Team& team(const std::vector<int>& devices, int P, int Q, bool nccl);

}  // namespace parray::multigpu::detail
