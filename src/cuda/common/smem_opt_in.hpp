// The dynamic shared-memory opt-in of a kernel (beyond the default 48 KB),
// set once per kernel and device.
#pragma once

#include <cuda_runtime_api.h>

#include <mutex>
#include <set>
#include <utility>

#include "parray/cuda/check.hpp"

namespace parray::cuda {

template <class Kernel>
void allow_smem(Kernel k, int bytes) {
  PARRAY_CUDA_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

// allow_smem once per (kernel, device): the opt-in is an attribute of the
// kernel in each device's context, and several host threads may drive
// several GPUs (the multi-GPU GEMMs), so "once per process" is not enough;
// setting it on every call costs host time inside a short GEMM. Keyed by the
// kernel's address: instantiations of one kernel template share a function
// type, so a static inside this template would be shared by all.
// A thread's own record answers every call after its first for a (kernel,
// device): no lock on the call's path; the shared record, behind its mutex,
// only on a thread's first call.
template <class Kernel>
void allow_smem_on_current_device(Kernel k, int bytes) {
  int device = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&device));
  const std::pair<const void*, int> key{reinterpret_cast<const void*>(k), device};
  thread_local std::set<std::pair<const void*, int>> seen;
  if (seen.count(key)) return;
  static std::mutex mu;
  static std::set<std::pair<const void*, int>> done;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!done.count(key)) {
      allow_smem(k, bytes);
      done.insert(key);
    }
  }
  seen.insert(key);
}

}  // namespace parray::cuda
