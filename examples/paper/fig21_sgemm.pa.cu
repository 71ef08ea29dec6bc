// Fig 21 in the Parray language, as printed: the paper's SGEMM (after
// Volkov and Demmel) as a subprogram over `type`, the matrix type of the
// storage at hand: 128 threads a block as [4][32], a 16 x 256 tile of C a
// block, A's 16 x 32 tile staged transposed in shared memory [32][17], each
// thread's 16 x 2 of C in registers, B read as float2 where $cnt(B_1_1_1)$.
// Two changes from the print: the split [[4][4] #S_1] of a 17-wide S is
// written [[4][4] 16 #S_1] (parray does not infer the resize,
// docs/parray-language.md), and the m loop has the `#pragma unroll` that the
// print gives the j loop: nvcc 13 leaves this 32-step loop rolled, which
// halves the speed (docs/parray-language.md has the figures). Filled in: N,
// main over three storages (row-major, fig 17's [2][N][N/2], fig 18(a)'s
// [4][N][N/4]), the input data, the check against the FP64 product, the time
// (CUDA events, median of 10 after 3 warm-up runs), the skip without a GPU.
#include "pa_support.hpp"

static int N;  // the matrix size, the first argument

#subprog SGEMM(da, db, dc, type)
#global {
#parray {cuda(float* a, float* b, float* c) [[N/16][N/256]][[4][32]]} CUDA
#parray {dmem float [[N/16][[4][4]] #type_0][[N/32][32] #type_1]} A
#parray {dmem float [[N/32][32] #type_0][[N/256][[128][2]] #type_1]} B
#parray {dmem float [#A_0][#B_1]} C
#parray {dmem float [#C_0_1][#C_1_1_1]} C0
#parray {smem float [32][17]} S // avoid bank conflict
#parray {smem float [32 #S_0][[4][4] 16 #S_1]} S0
#parray {rmem float [16][2]} R
}
#detour CUDA(da, db, dc) {
#create S(s)
#create R(r)
#pragma unroll
  for (int i = 0; i < $size(R)$; i++) r[i] = 0;
  a +=
    $A[[$tid_0_0$][[0][$tid_1_0$]]][[0][$tid_1_1$]]$;
  b += $B[0][[$tid_0_1$][[$tid_1$][0]]]$;
  c += $C[[$tid_0_0$][0]][[$tid_0_1$][[$tid_1$][0]]]$;
  for (int i = 0; i < $size(A_1_0)$; i++) {
#copy A_0_1_0(a + $A_1_0[i]$) to S0_1_0(s + $S0[$tid_1_1$][[0][$tid_1_0$]]$)
#sync_1
#pragma unroll
    for (int m = 0; m < $size(A_1_1)$; m++) {
      float2 b2;
      float* b1 = b + $B_0[i][m]$;
      if ($cnt(B_1_1_1)$) b2 = ((float2*)b1)[0];
      else { b2.x = b1[0]; b2.y = b1[$B_1_1_1[1]$]; }
#pragma unroll
      for (int j = 0; j < 16; j++) {
        r[$R[j][0]$] += b2.x * s[$S[m][j]$];
        r[$R[j][1]$] += b2.y * s[$S[m][j]$];
      }
    }
#sync_1
  }
#copy R(r) to C0(c)
}
#end

// The product through `type` over `storage`: checked, then timed.
static int run(const char* name, const parray::Layout& storage, const parray::Layout& type, float* a, float* b,
               float* c) {
  paper::fill_operands(storage, parray::Memory::device, a, b, c);
  SGEMM(a, b, c, type);
  PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
  const int status = paper::check_operands(name, type, storage, parray::Memory::device, a, b, c);
  const double t = paper::median_ms([&] { SGEMM(a, b, c, type); });
  printf("%s: %.3f ms, %.2f TFLOP/s\n", name, t, 2.0 * double(N) * N * N / (t * 1e9));
  return status;
}

#mainhost {
  if (paper::no_gpu("fig 21")) return paper::kSkipped;
  N = paper::size_argument(argc, argv);
  if (N % 256 != 0) throw parray::Error("fig 21 takes N a multiple of 256 (its types split N by 256)");
  int status = 0;
  {
#parray {dmem float [N][N]} T
#parray {float [#T_0][#T_1]} M
#create T(a)
#create T(b)
#create T(c)
    status |= run("fig 21, row-major", T.layout(), M, a, b, c);
  }
  {
#parray {dmem float [2][N][N/2]} T
#parray {float [#T_1][[#T_0][#T_2]]} M
#create T(a)
#create T(b)
#create T(c)
    status |= run("fig 21, fig 17's storage", T.layout(), M, a, b, c);
  }
  {
#parray {dmem float [4][N][N/4]} T
#parray {float [#T_1][[#T_0][#T_2]]} M
#create T(a)
#create T(b)
#create T(c)
    status |= run("fig 21, fig 18(a)'s storage", T.layout(), M, a, b, c);
  }
  return status;
}
