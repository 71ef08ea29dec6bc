// gpu-auto, the default GPU GEMM: per call, the fastest of parray's
// FP32-accurate GPU kernels at the nearest shape of this GPU's speed table
// (include/parray/dispatch.hpp). Every candidate takes any layout and any
// shape, so the choice is only about speed; a call goes to cuda-12-best where
// no table says otherwise.
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <mutex>

#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/dispatch.hpp"
#include "parray/tuning.hpp"

namespace parray::cuda {

namespace {

const char* const kFallback = "cuda-12-best";

// The FP32-accurate kernels: steps 12 and 13 everywhere, steps 14 and 15 on a
// Hopper GPU.
const std::vector<std::string>& candidates() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = {"cuda-12-best", "cuda-13-3xtf32"};
    if (wgmma_unsupported().empty()) v.insert(v.end(), {"cuda-14-3xtf32", "cuda-15-3xtf32"});
    return v;
  }();
  return names;
}

// gpu.speed_table when set, else the built-in table of this GPU (read once).
const SpeedTable& speed_table() {
  static const SpeedTable table = [] {
    if (!gpu_tuning().speed_table.empty()) return SpeedTable::from_file(gpu_tuning().speed_table);
    int dev = 0;
    cudaDeviceProp prop{};
    PARRAY_CUDA_CHECK(cudaGetDevice(&dev));
    PARRAY_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    return builtin_speed_table(prop.name);
  }();
  return table;
}

}  // namespace

std::string gemm_auto_choice(index_t m, index_t n, index_t k) {
  const std::string pick = speed_table().fastest(Dtype::f32, m, n, k, candidates());
  return pick.empty() ? kFallback : pick;
}

namespace {

// The implementation picked for a shape, remembered: the table's search and
// the registry's look-up by name are host time inside every call, a few
// microseconds, a visible share of a GEMM that takes 70-170 us (thin shapes,
// K = 17). Forgotten if the registry's storage moves (a late registration).
const GemmImpl& picked_for(index_t m, index_t n, index_t k) {
  static std::mutex mu;
  static std::map<std::array<index_t, 3>, const GemmImpl*> picked;
  static const GemmImpl* storage = nullptr;
  constexpr std::size_t kMaxShapes = 4096;
  std::lock_guard<std::mutex> lock(mu);
  if (storage != registry().all().data() || picked.size() > kMaxShapes) {
    picked.clear();
    storage = registry().all().data();
  }
  const auto [at, fresh] = picked.try_emplace({m, n, k}, nullptr);
  if (fresh) at->second = &registry().find(gemm_auto_choice(m, n, k));
  return *at->second;
}

}  // namespace

void gemm_auto(const GemmCall<float>& call) { picked_for(call.c.rows(), call.c.cols(), call.a.cols()).run_f32(call); }

}  // namespace parray::cuda
