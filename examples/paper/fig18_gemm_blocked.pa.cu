// Fig 18 in the Parray language, as printed: two more storages for fig
// 13's GEMM, body and thread array unchanged: (a) four column blocks of
// N x N/4, [4][N][N/4] seen as [#A_1][[#A_0][#A_2]]; (b) 2 x 2 square blocks,
// [2][2][N/2][N/2] seen as [[#A_0][#A_2]][[#A_1][#A_3]]. Filled in: main, N
// for the paper's 1024 (the first argument), the input data, the check
// against the FP64 product, and the skip (exit 77) without a GPU.
#include "pa_support.hpp"

#mainhost {
  if (paper::no_gpu("fig 18")) return paper::kSkipped;
  const int N = paper::size_argument(argc, argv);
  int status = 0;
  {  // fig 18(a)
#parray {dmem float [4][N][N/4]} A
#parray {float [#A_1][[#A_0][#A_2]]} M
#parray {cuda(float* a, float* b, float* c) [N][N]} MY_TA
    INIT_GPU(0);
#create M(a)
#create M(b)
#create M(c)
    paper::fill_operands(A.layout(), parray::Memory::device, a, b, c);
#detour MY_TA(a, b, c) {
      float* pa = a + $M[$tid_0$][0]$;
      float* pb = b + $M[0][$tid_1$]$;
      float Cvalue = 0;
      for (int k = 0; k < $dim_1(M)$; k++)
        Cvalue += pa[$M[0][k]$]
                * pb[$M[k][0]$];
      c[$M[$tid_0$][$tid_1$]$] = Cvalue;
    }
    status |= paper::check_operands("fig 18(a) (storage [4][N][N/4])", M, A.layout(), parray::Memory::device, a, b, c);
#destroy M(a)
#destroy M(b)
#destroy M(c)
  }
  {  // fig 18(b)
#parray {dmem float [2][2][N/2][N/2]} A
#parray {float [[#A_0][#A_2]][[#A_1][#A_3]]} M
#parray {cuda(float* a, float* b, float* c) [N][N]} MY_TA
    INIT_GPU(0);
#create M(a)
#create M(b)
#create M(c)
    paper::fill_operands(A.layout(), parray::Memory::device, a, b, c);
#detour MY_TA(a, b, c) {
      float* pa = a + $M[$tid_0$][0]$;
      float* pb = b + $M[0][$tid_1$]$;
      float Cvalue = 0;
      for (int k = 0; k < $dim_1(M)$; k++)
        Cvalue += pa[$M[0][k]$]
                * pb[$M[k][0]$];
      c[$M[$tid_0$][$tid_1$]$] = Cvalue;
    }
    status |= paper::check_operands("fig 18(b) (storage [2][2][N/2][N/2])", M, A.layout(), parray::Memory::device, a, b, c);
#destroy M(a)
#destroy M(b)
#destroy M(c)
  }
  return status;
}
