// Fig 7 in the Parray language, as printed: the main host detours to a
// CUDA thread array that transposes a 128 x 128 matrix of float2 through a
// shared tile [16][17] seen as [#A_0][16 #A_1]. Filled in: the
// initialisation (#create of the two arrays, input data), the check of every
// element, and the skip (exit 77) without a GPU.
#include <stdio.h>

#include <vector>

#parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA
#parray {cuda(float2* worki, float2* worko) [[128/16][128/16]][[16][16]]} MY_CUDA_TA
#parray {smem float2 [16][17]} A
#parray {smem float2 [#A_0][16 #A_1]} B

#mainhost {
  if (!parray::cuda_available()) {
    printf("fig 7: no CUDA device, skipped\n");
    return 77;
  }
#create DATA(adri)
#create DATA(adro)
  std::vector<float2> host($size(DATA)$), back($size(DATA)$);
  for (size_t i = 0; i < host.size(); ++i) host[i] = {float(i) + 0.5f, -float(i % 1021) - 0.25f};
  PARRAY_CUDA_CHECK(cudaMemcpy(adri, host.data(), host.size() * sizeof(float2), cudaMemcpyHostToDevice));
  PARRAY_CUDA_CHECK(cudaMemset(adro, 0xff, host.size() * sizeof(float2)));  // NaN
#detour MY_CUDA_TA(adri, adro) {
#create A(tile)
  tile[$B[$tid_1_0$][$tid_1_1$]$] = worki[$DATA[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
#sync
  worko[$DATA[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$B[$tid_1_1$][$tid_1_0$]$];
}
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  PARRAY_CUDA_CHECK(cudaMemcpy(back.data(), adro, back.size() * sizeof(float2), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < 128; ++i)
    for (int j = 0; j < 128; ++j) {
      const float2 a = host[size_t(i * 128 + j)], b = back[size_t(j * 128 + i)];
      wrong += a.x != b.x || a.y != b.y;
    }
#destroy DATA(adri)
#destroy DATA(adro)
  printf("fig 7: %s\n", wrong == 0 ? "check ok (the transpose, every element)" : "CHECK FAILED");
  return wrong == 0 ? 0 : 1;
}
