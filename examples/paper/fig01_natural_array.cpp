// Figs 1-3: a natural array type [[3][2]][4] in pinned memory: created,
// filled through $A[i]$, read through $A[5][2]$, its dimension A_0, and the
// physical order of its elements (fig 3: A[[i][j]][k] at (i * 2 + j) * 4 + k).
//
//   #parray {pinned float [[3][2]][4]} A
//   #create A(x)
//   for (int i = 0; i < $dim(A)$; i++) x[$A[i]$] = i;
//   printf("%f\n", x[$A[5][2]$]);
//   printf("%d\n", $dim(A_0)$);
//   #destroy A(x)
//
// Pinned memory needs the CUDA runtime; without it the same type is created
// in paged memory (said on the first line).
#include <cstdio>

#include "parray/array.hpp"
#include "parray/memory_kind.hpp"

template <class Kind>
int figure_1() {
  const parray::ArrayType<float, Kind> A("[[3][2]][4]");
  std::printf("%s\n", A.str().c_str());
  int wrong = 0;
  {
    parray::Array<float> x = A.create();  // #create A(x)
    const parray::Layout& a = A.layout();
    for (parray::index_t i = 0; i < a.size(); ++i) x[a.offset(i)] = float(i);  // x[$A[i]$] = i
    std::printf("x[$A[5][2]$] = %g\n", x[a(5, 2)]);
    std::printf("$dim(A_0)$ = %lld\n", static_cast<long long>(a.dim(0).size()));
    wrong += x[a(5, 2)] != 22.f;
    wrong += a.dim(0).size() != 6;
    // Fig 3: the physical order, row-major with the right-most dimension fastest.
    const parray::Layout& a0 = a.dim(0);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 4; ++k) {
          const parray::index_t off = a0.offset({i, j}) + a.dim(1).offset(k);  // $A[[i][j]][k]$
          std::printf("A[[%d][%d]][%d] at %lld\n", i, j, k, static_cast<long long>(off));
          wrong += off != (i * 2 + j) * 4 + k;
        }
  }  // #destroy A(x)
  std::printf("%s\n", wrong == 0 ? "check ok" : "CHECK FAILED");
  return wrong == 0 ? 0 : 1;
}

int main() {
  try {
    if (parray::cuda_available()) return figure_1<parray::pinned>();
    std::printf("no CUDA runtime: the type in paged memory\n");
    return figure_1<parray::paged>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fig 1: %s\n", e.what());
    return 2;
  }
}
