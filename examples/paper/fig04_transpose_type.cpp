// Fig 4: an artificial type. B's dimensions are references to A's, swapped:
// the same storage seen transposed, with no copy.
//
//   #parray {pinned float [4][3]} A
//   #parray {pinned float [#A_1][#A_0]} B
//   #create A(x)
//   x[$A[3][2]$] = 123;
//   printf("array access: %d\n", x[$B[2][3]$]);
//   printf("number of rows = %d\n", $dim(B_0)$);
//   #destroy A(x)
#include <cstdio>

#include "parray/array.hpp"
#include "parray/memory_kind.hpp"

template <class Kind>
int figure_4() {
  const parray::ArrayType<float, Kind> A("[4][3]");
  const parray::ArrayType<float, Kind> B("[#A_1][#A_0]", {{"A", A.layout()}});
  std::printf("%s; %s\n", A.str().c_str(), B.str().c_str());
  parray::Array<float> x = A.create();
  x[A.layout()(3, 2)] = 123;
  const float seen = x[B.layout()(2, 3)];
  std::printf("array access: %g\n", seen);
  std::printf("number of rows = %lld\n", static_cast<long long>(B.layout().dim(0).size()));
  // Every element, not only the paper's one: B[j][i] is A[i][j].
  int wrong = (seen != 123.f) + (B.layout().dim(0).size() != 3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) wrong += A.layout()(i, j) != B.layout()(j, i);
  std::printf("%s\n", wrong == 0 ? "check ok" : "CHECK FAILED");
  return wrong == 0 ? 0 : 1;
}

int main() {
  try {
    if (parray::cuda_available()) return figure_4<parray::pinned>();
    std::printf("no CUDA runtime: the types in paged memory\n");
    return figure_4<parray::paged>();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fig 4: %s\n", e.what());
    return 2;
  }
}
