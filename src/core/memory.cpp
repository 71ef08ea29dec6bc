// Allocation per memory space. Paged memory comes from the C++ runtime;
// pinned (page-locked) and device memory from the CUDA runtime when parray is
// built with CUDA.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "parray/array.hpp"
#include "parray/config.hpp"

#if PARRAY_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace parray {

namespace {
constexpr std::size_t kAlignment = 64;  // a cache line, and enough for AVX-512 loads

[[noreturn]] void out_of_memory(Memory m, std::size_t bytes, const std::string& why) {
  throw Error("cannot allocate " + std::to_string(bytes) + " bytes of " + memory_name(m) +
              " memory: " + why);
}

#if PARRAY_HAVE_CUDA
void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(e));
}
#endif
}  // namespace

bool cuda_available() {
#if PARRAY_HAVE_CUDA
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
#else
  return false;
#endif
}

void* allocate_bytes(Memory memory, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  switch (memory) {
    case Memory::paged: {
      const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
      if (rounded < bytes) out_of_memory(memory, bytes, "size overflows");
      void* p = std::aligned_alloc(kAlignment, rounded);
      if (!p) out_of_memory(memory, bytes, "the system refused");
      return p;
    }
    case Memory::pinned:
    case Memory::device: {
#if PARRAY_HAVE_CUDA
      if (!cuda_available()) out_of_memory(memory, bytes, "no CUDA device is present");
      void* p = nullptr;
      cudaError_t e = memory == Memory::pinned ? cudaMallocHost(&p, bytes) : cudaMalloc(&p, bytes);
      if (e != cudaSuccess) {
        cudaGetLastError();  // clear the sticky error so later calls work
        out_of_memory(memory, bytes, cudaGetErrorString(e));
      }
      return p;
#else
      out_of_memory(memory, bytes, "parray was built without CUDA");
#endif
    }
  }
  out_of_memory(memory, bytes, "unknown memory space");
}

void free_bytes(Memory memory, void* p) noexcept {
  if (!p) return;
  switch (memory) {
    case Memory::paged: std::free(p); return;
#if PARRAY_HAVE_CUDA
    case Memory::pinned: cudaFreeHost(p); return;
    case Memory::device: cudaFree(p); return;
#else
    default: return;
#endif
  }
}

void copy_bytes(void* dst, Memory dst_memory, const void* src, Memory src_memory, std::size_t bytes, GpuStream stream) {
  if (bytes == 0) return;
  if (dst_memory != Memory::device && src_memory != Memory::device) {
    std::memcpy(dst, src, bytes);
    return;
  }
#if PARRAY_HAVE_CUDA
  // The caller's stream, never the legacy default stream; waited for, so the
  // bytes are there (and a pageable source may be reused) on return.
  const cudaStream_t s = stream ? stream : cudaStreamPerThread;
  check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s), "copy to or from device memory");
  check_cuda(cudaStreamSynchronize(s), "copy to or from device memory");
#else
  (void)stream;
  throw Error("copy to or from device memory: parray was built without CUDA");
#endif
}

}  // namespace parray
