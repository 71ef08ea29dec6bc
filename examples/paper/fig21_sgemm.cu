// Fig 21: the paper's SGEMM (after Volkov and Demmel) on three storages of
// the same N x N matrices: row-major, fig 17's [2][N][N/2] and fig 18(a)'s
// [4][N][N/4]. The types are the paper's, over `type`, the matrix type of
// the storage at hand:
//
//   #parray {cuda(float a, float b, float c) [[N/16][N/256]][[4][32]]} CUDA
//   #parray {dmem float [[N/16][[4][4]] #type_0][[N/32][32] #type_1]} A
//   #parray {dmem float [[N/32][32] #type_0][[N/256][[128][2]] #type_1]} B
//   #parray {dmem float [#A_0][#B_1]} C
//   #parray {dmem float [#C_0_1][#C_1_1_1]} C0
//   #parray {smem float [32][17]} S
//   #parray {smem float [32 #S_0][[4][4] #S_1]} S0
//   #parray {rmem float [16][2]} R
//
// The kernel is parray's ladder step 11 (src/cuda/gemm/11_parray_fig21.cuh),
// launched through that CUDA thread array by the registry's
// cuda-11-parray-fig21: each thread takes its base offsets from the types
// once and steps along them, as the paper's code does (its fig 22 reports the
// blocked storages at row-major's speed; docs/layouts.md has parray's
// figures). The program prints the types, checks each
// product against FP64 and prints each storage's speed and its ratio to
// row-major (CUDA events, 3 warm-up runs, median of 10).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "pa_support.hpp"
#include "paper_gemm.hpp"
#include "parray/cuda/check.hpp"
#include "parray/gemm.hpp"
#include "parray/registry.hpp"
#include "parray/thread_shape.hpp"

namespace {

using parray::Layout;

// The paper's types over `type`; cnt(B_1_1_1): B's column pair is adjacent.
void print_types(const Layout& type, const Layout::Constants& n) {
  const Layout A = Layout::parse("[[N/16][[4][4]] #type_0][[N/32][32] #type_1]", {{"type", type}}, n);
  const Layout B = Layout::parse("[[N/32][32] #type_0][[N/256][[128][2]] #type_1]", {{"type", type}}, n);
  const Layout C = Layout::parse("[#A_0][#B_1]", {{"A", A}, {"B", B}});
  const Layout C0 = Layout::parse("[#C_0_1][#C_1_1_1]", {{"C", C}});
  const Layout S = Layout::parse("[32][17]");
  const Layout S0 = Layout::parse("[32 #S_0][[4][4] 16 #S_1]", {{"S", S}});
  const parray::ThreadShape cuda = parray::ThreadShape::parse("[[N/16][N/256]][[4][32]]", n);
  const Layout& b111 = B.dim(1).dim(1).dim(1);
  std::printf("  CUDA %s\n  A  %s\n  B  %s\n  C  %s\n  C0 %s (%lld elements a thread)\n  S0 %s\n", cuda.str().c_str(),
              A.str().c_str(), B.str().c_str(), C.str().c_str(), C0.str().c_str(), static_cast<long long>(C0.size()),
              S0.str().c_str());
  std::printf("  $size(A_1_0)$ = %lld steps of K, $cnt(B_1_1_1)$ = %s\n",
              static_cast<long long>(A.dim(1).dim(0).size()),
              b111.is_leaf() && b111.stride() == 1 ? "1 (one float2)" : "0 (two loads)");
}

// Median milliseconds of one GEMM on device views.
double time_gemm(const parray::GemmImpl& impl, parray::MatrixView<const float> a, parray::MatrixView<const float> b,
                 parray::MatrixView<float> c) {
  return paper::median_ms([&] { parray::gemm<float>(impl, 1.f, a, b, 0.f, c); });
}

int run(int argc, char** argv) {
  const Layout::Constants n = paper::size_from(argc, argv);
  const parray::index_t N = n.at("N");
  if (N % 256 != 0) throw parray::Error("fig 21 takes N a multiple of 256 (its types split N by 256)");
  const struct {
    const char* name;
    const char* storage;
    const char* view;
  } storages[] = {{"row-major", "[N][N]", "[#A_0][#A_1]"},
                  {"fig 17", "[2][N][N/2]", "[#A_1][[#A_0][#A_2]]"},
                  {"fig 18(a)", "[4][N][N/4]", "[#A_1][[#A_0][#A_2]]"}};
  const bool gpu = !paper::no_gpu("fig 21");
  const parray::GemmImpl* impl = gpu ? &parray::registry().find("cuda-11-parray-fig21") : nullptr;
  double row_major_ms = 0;
  int status = 0;
  for (const auto& s : storages) {
    const parray::ArrayType<float, parray::dmem> storage(s.storage, {}, n);
    const Layout type = Layout::parse(s.view, {{"A", storage.layout()}});
    std::printf("%s: type %s over the storage %s\n", s.name, type.str().c_str(), storage.layout().str().c_str());
    print_types(type, n);
    if (!gpu) continue;
    paper::Operands x(storage);
    const parray::MatrixLayout l = parray::MatrixLayout::from(type);
    const parray::MatrixView<const float> a{x.a.data(), l, parray::Memory::device},
        b{x.b.data(), l, parray::Memory::device};
    const parray::MatrixView<float> c{x.c.data(), l, parray::Memory::device};
    parray::gemm<float>(*impl, 1.f, a, b, 0.f, c);
    PARRAY_CUDA_CHECK(cudaDeviceSynchronize());
    status |= x.check((std::string("fig 21, ") + s.name).c_str(), type);
    const double ms = time_gemm(*impl, a, b, c);
    if (row_major_ms == 0) row_major_ms = ms;
    std::printf("fig 21, %s: %.3f ms, %.2f TFLOP/s, %.1f %% of row-major\n", s.name, ms,
                2.0 * double(N) * double(N) * double(N) / (ms * 1e9), 100.0 * row_major_ms / ms);
  }
  return gpu ? status : paper::kSkipped;
}

}  // namespace

int main(int argc, char** argv) { return paper::guarded("fig 21", [&] { return run(argc, argv); }); }
