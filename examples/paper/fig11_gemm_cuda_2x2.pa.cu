// Fig 11 in the Parray language, as printed: the GEMM on 2 x 2 CUDA
// threads; against fig 10 M is in device memory and the thread array is
// cuda [2][2] with the kernel's parameters a, b, c. Filled in: main, N/2 for
// the paper's 512 (N the first argument), the input data, the check against
// the FP64 product, and the skip (exit 77) without a GPU.
#include "pa_support.hpp"

#mainhost {
  if (paper::no_gpu("fig 11")) return paper::kSkipped;
  const int N = paper::size_argument(argc, argv);
#parray {dmem float [[2][N/2]][[2][N/2]]} M
#parray {cuda(float* a, float* b, float* c) [2][2]} MY_TA
  INIT_GPU(0);
#create M(a)
#create M(b)
#create M(c)
  paper::fill_operands(M.layout(), parray::Memory::device, a, b, c);
#detour MY_TA(a, b, c) {
    for (int i = 0; i < $dim_0_1(M)$; i++)
      for (int j = 0; j < $dim_1_1(M)$; j++) {
        float* pa = a + $M[[$tid_0$][i]][0]$;
        float* pb = b + $M[0][[$tid_1$][j]]$;
        float Cvalue = 0;
        for (int k = 0; k < $dim_1(M)$; k++)
          Cvalue += pa[$M[0][k]$]
                  * pb[$M[k][0]$];
        c[$M[[$tid_0$][i]][[$tid_1$][j]]$]
            = Cvalue;
      }
  }
  const int status = paper::check_operands("fig 11 (cuda [2][2])", M.layout(), M.layout(), parray::Memory::device, a, b, c);
#destroy M(a)
#destroy M(b)
#destroy M(c)
  return status;
}
