// Fig 7: the main host detours to a CUDA thread array that transposes a
// 128 x 128 matrix of float2 through shared memory. DATA splits the matrix
// into 8 x 8 tiles of 16 x 16; block (tid_0_0, tid_0_1) stages its tile in
// a shared array [16][17] through the view [#A_0][16 #A_1] (the padding
// column keeps a warp's transposed reads on different banks), synchronises
// its threads (#sync over the block) and writes the tile to the mirrored
// block.
//
//   #parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA
//   #parray {cuda(float2 worki, float2 worko) [[128/16][128/16]][[16][16]]} MY_CUDA_TA
//   #parray {smem float2 [16][17]} A
//   #parray {smem float2 [#A_0][16 #A_1]} B
//   #mainhost {
//     #detour MY_CUDA_TA(adri, adro) {
//       #create A(tile)
//       tile[$B[$tid_1_0$][$tid_1_1$]$] = worki[$DATA[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
//       #sync
//       worko[$DATA[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$B[$tid_1_1$][$tid_1_0$]$];
//     }
//   }
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "parray/array.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/thread_array.cuh"
#include "parray/device_layout.hpp"
#include "parray/memory_kind.hpp"

using parray::cuda::CudaThread;
using parray::cuda::CudaThreadArray;

namespace {

int run() {
  if (!parray::cuda_available()) {
    std::printf("fig 7: no CUDA device, skipped\n");
    return 77;
  }
  const parray::Layout::Constants n{{"N", 128}};
  const parray::ArrayType<float2, parray::dmem> DATA("[[N/16][16]][[N/16][16]]", {}, n);
  const CudaThreadArray MY_CUDA_TA(parray::ThreadShape::parse("[[N/16][N/16]][[16][16]]", n));
  using A = parray::SDense<16, 17>;                                    // smem float2 [16][17]
  using B = parray::SNest<A::dim<0>, parray::SResize<16, A::dim<1>>>;  // smem float2 [#A_0][16 #A_1]

  parray::Array<float2> in = DATA.create(), out = DATA.create();
  std::vector<float2> host(std::size_t(DATA.size()));
  for (std::size_t i = 0; i < host.size(); ++i) host[i] = {float(i) + 0.5f, -float(i % 1021) - 0.25f};
  PARRAY_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), host.size() * sizeof(float2), cudaMemcpyHostToDevice));
  PARRAY_CUDA_CHECK(cudaMemset(out.data(), 0xff, host.size() * sizeof(float2)));  // NaN
  const parray::DeviceLayout data = parray::DeviceLayout::from(DATA.layout());
  const float2* worki = in.data();
  float2* worko = out.data();

  MY_CUDA_TA.detour([=] __device__(const CudaThread& t) {
    auto tile = parray::smem::create<float2, A>();  // #create A(tile)
    tile[B::offset(t.tid(1, 0), t.tid(1, 1))] =
        worki[data(t.tid(0, 0) * 16 + t.tid(1, 0), t.tid(0, 1) * 16 + t.tid(1, 1))];
    t.sync(1);  // #sync: the block
    worko[data(t.tid(0, 1) * 16 + t.tid(1, 0), t.tid(0, 0) * 16 + t.tid(1, 1))] =
        tile[B::offset(t.tid(1, 1), t.tid(1, 0))];
  });
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<float2> back(host.size());
  PARRAY_CUDA_CHECK(cudaMemcpy(back.data(), worko, back.size() * sizeof(float2), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) {
      const float2 a = host[std::size_t(i * 128 + j)], b = back[std::size_t(j * 128 + i)];
      wrong += a.x != b.x || a.y != b.y;
    }
  std::printf("fig 7: DATA = %s, thread array %s: %s\n", DATA.layout().str().c_str(), MY_CUDA_TA.shape().str().c_str(),
              wrong == 0 ? "check ok (the transpose, every element)" : "CHECK FAILED");
  return wrong == 0 ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fig 7: %s\n", e.what());
    return 2;
  }
}
