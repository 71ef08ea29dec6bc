// Fig 8: the GEMM on one CPU thread, in paged memory.
//
//   #parray {paged float [1024][1024]} M
//   #create M(a)  #create M(b)  #create M(c)
//   for i, j: for k < $dim_1(M)$: Cvalue += a[$M[i][k]$] * b[$M[k][j]$];  c[$M[i][j]$] = Cvalue
//
// The main thread is thread 0 of a one-thread array [1][1], whose one
// thread takes all of M's rows and columns in gemm_body.
#include "paper_gemm.hpp"
#include "parray/thread_shape.hpp"

int main(int argc, char** argv) {
  return paper::guarded("fig 8", [&] {
    const parray::ArrayType<float, parray::paged> M("[N][N]", {}, paper::size_from(argc, argv));
    paper::Operands x(M);
    const parray::DeviceLayout m = parray::DeviceLayout::from(M.layout());

    paper::gemm_body(parray::ThreadIndex(parray::ThreadShape{1, 1}, 0), m, x.a.data(), x.b.data(), x.c.data());

    return x.check("fig 8 (one CPU thread)", M.layout());
  });
}
