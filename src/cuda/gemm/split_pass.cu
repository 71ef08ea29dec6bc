// The split copies' memory pool (gemm/split_pass.cuh), one per GPU.
#include <cstdint>
#include <map>
#include <mutex>

#include "gemm/split_pass.cuh"

namespace parray::cuda {

namespace {

// The pool of device d, made by the first thread to ask (under the lock).
cudaMemPool_t shared_pool(int d) {
  static std::mutex mu;
  static auto* pools = new std::map<int, cudaMemPool_t>;  // never destroyed: CUDA may be torn down first
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = pools->find(d); it != pools->end()) return it->second;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = d;
  cudaMemPool_t pool = nullptr;
  PARRAY_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  std::uint64_t keep = UINT64_MAX;
  PARRAY_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return (*pools)[d] = pool;
}

}  // namespace

// Each thread keeps the pools it has used: the lock is taken on a thread's
// first call on a device, not on every call.
cudaMemPool_t split_pool() {
  int d = 0;
  PARRAY_CUDA_CHECK(cudaGetDevice(&d));
  thread_local std::map<int, cudaMemPool_t> known;
  if (const auto it = known.find(d); it != known.end()) return it->second;
  return known[d] = shared_pool(d);
}

}  // namespace parray::cuda
