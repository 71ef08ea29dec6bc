// Launches in thread-block clusters along x, for a step whose blocks share
// operand tiles by TMA multicast (step 15's pairs sharing B).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "parray/core.hpp"
#include "parray/cuda/check.hpp"

namespace parray::cuda {

// The launch of `grid` blocks of `threads` in clusters of `cluster` along x
// (`attribute` holds what the config points to).
inline cudaLaunchConfig_t cluster_config(int cluster, unsigned grid, int threads, int smem, cudaStream_t s,
                                         cudaLaunchAttribute& attribute) {
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = unsigned(cluster);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(unsigned(threads));
  config.dynamicSmemBytes = std::size_t(smem);
  config.stream = s;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

// Clusters of Cfg::kCluster blocks of `kernel` resident at once (the GPCs'
// SM counts leave some SMs out of any pair), for a persistent grid: once per
// kernel (the GPUs of one host are alike).
template <class Cfg, class Kernel>
int max_clusters(Kernel kernel, int smem, int sms) {
  static const int n = [&] {
    cudaLaunchAttribute attribute{};
    const cudaLaunchConfig_t config =
        cluster_config(Cfg::kCluster, unsigned(Cfg::kCluster * sms), Cfg::kThreads, smem, nullptr, attribute);
    int clusters = 0;
    PARRAY_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    if (clusters < 1) throw Error("no cluster of " + std::to_string(Cfg::kCluster) + " blocks of this kernel fits");
    return clusters;
  }();
  return n;
}

}  // namespace parray::cuda
