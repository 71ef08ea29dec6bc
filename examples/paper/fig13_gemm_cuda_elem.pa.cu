// Figs 12-13 in the Parray language, as printed: one CUDA thread per
// element of C. Fig 12 keeps fig 11's body with M = [[N][1]][[N][1]] (its
// loops run once); fig 13 drops the dimensions of size 1 and the loops.
// Filled in: main, N for the paper's 1024 (the first argument), the input
// data, the check against the FP64 product, and the skip (exit 77) without a
// GPU.
#include "pa_support.hpp"

#mainhost {
  if (paper::no_gpu("figs 12-13")) return paper::kSkipped;
  const int N = paper::size_argument(argc, argv);
  int status = 0;
  {  // fig 12
#parray {dmem float [[N][1]][[N][1]]} M
#parray {cuda(float* a, float* b, float* c) [N][N]} MY_TA
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
    status |= paper::check_operands("fig 12 (cuda [N][N])", M.layout(), M.layout(), parray::Memory::device, a, b, c);
#destroy M(a)
#destroy M(b)
#destroy M(c)
  }
  {  // fig 13
#parray {dmem float [N][N]} M
#parray {cuda(float* a, float* b, float* c) [N][N]} MY_TA
    INIT_GPU(0);
#create M(a)
#create M(b)
#create M(c)
    paper::fill_operands(M.layout(), parray::Memory::device, a, b, c);
#detour MY_TA(a, b, c) {
      float* pa = a + $M[$tid_0$][0]$;
      float* pb = b + $M[0][$tid_1$]$;
      float Cvalue = 0;
      for (int k = 0; k < $dim_1(M)$; k++)
        Cvalue += pa[$M[0][k]$]
                * pb[$M[k][0]$];
      c[$M[$tid_0$][$tid_1$]$] = Cvalue;
    }
    status |= paper::check_operands("fig 13 (cuda [N][N])", M.layout(), M.layout(), parray::Memory::device, a, b, c);
#destroy M(a)
#destroy M(b)
#destroy M(c)
  }
  return status;
}
