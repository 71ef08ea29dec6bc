// Fig 10: the GEMM on 2 x 2 Pthreads. Against fig 8 only the types change:
// M is written [[2][N/2]][[2][N/2]] (quadrants), and a thread array
// pthd [2][2] runs the same body, thread (tid_0, tid_1) on quadrant
// [[tid_0][i]][[tid_1][j]] of C.
//
//   #parray {paged float [[2][512]][[2][512]]} M
//   #parray {pthd [2][2]} MY_TA
//   #detour MY_TA(a, b, c) { ... the body of fig 8 over $M[[tid_0][i]][[tid_1][j]]$ ... }
#include "paper_gemm.hpp"
#include "parray/thread_array.hpp"

int main(int argc, char** argv) {
  return paper::guarded("fig 10", [&] {
    const parray::ArrayType<float, parray::paged> M("[[2][N/2]][[2][N/2]]", {}, paper::size_from(argc, argv));
    const parray::CpuThreadArray MY_TA({2, 2});
    paper::Operands x(M);
    const parray::DeviceLayout m = parray::DeviceLayout::from(M.layout());
    float *a = x.a.data(), *b = x.b.data(), *c = x.c.data();

    MY_TA.detour([&](const parray::ThreadCoord& t) { paper::gemm_body(t, m, a, b, c); });

    return x.check("fig 10 (pthd [2][2])", M.layout());
  });
}
