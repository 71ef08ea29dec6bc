// Fig 17 in the Parray language, as printed: fig 13's GEMM on another
// physical storage, two column blocks of N x N/2 one after the other
// ([2][N][N/2]) seen as the N x N matrix M = [#A_1][[#A_0][#A_2]]; body and
// thread array unchanged. Filled in: main, N for the paper's 1024 (the first
// argument), the input data, the check against the FP64 product, and the
// skip (exit 77) without a GPU.
#include "pa_support.hpp"

#mainhost {
  if (paper::no_gpu("fig 17")) return paper::kSkipped;
  const int N = paper::size_argument(argc, argv);
#parray {dmem float [2][N][N/2]} A
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
  const int status = paper::check_operands("fig 17 (storage [2][N][N/2])", M, A.layout(), parray::Memory::device, a, b, c);
#destroy M(a)
#destroy M(b)
#destroy M(c)
  return status;
}
