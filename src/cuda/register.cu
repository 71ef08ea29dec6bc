// register_cuda_backend: every CUDA GEMM of parray (the paper's thread-array
// GEMMs and the numbered ladder) plus the cuBLAS baseline, in one table.
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "common/cublas_handle.hpp"
#include "common/cublas_library.hpp"
#include "gemv/06_07_launch.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/multilevel.hpp"
#include "parray/registry.hpp"

namespace parray {

namespace {

// ---- cuBLAS baseline ---------------------------------------------------------

void cublas_check(cublasStatus_t s, const char* what) {
  cuda::cublas().check(s, "cublas", what);
}

// The calling thread's handle on the current device (FP32 on the CUDA cores
// unless a call names a compute type), on the call's stream.
cublasHandle_t cublas_handle_on(GpuStream stream) {
  const cublasHandle_t h = cuda::cublas_handle_for_current_device();
  cublas_check(cuda::cublas().SetStream(h, cuda::on_stream(stream)), "cublasSetStream");
  return h;
}

// A strided matrix as cuBLAS sees it (column-major): op and leading dimension.
struct Blas {
  cublasOperation_t op;
  long long ld;
};
bool unit(const Axis& a) { return a.is_strided() && (a.stride[0] == 1 || a.size <= 1); }
Blas as_blas(const MatrixLayout& l) {
  if (unit(l.rows)) {  // column-major
    const long long need = std::max<long long>(1, l.rows.size);
    return {CUBLAS_OP_N, l.cols.size <= 1 ? need : std::max<long long>(need, l.cols.stride[0])};
  }
  const long long need = std::max<long long>(1, l.cols.size);  // row-major: the transpose is column-major
  return {CUBLAS_OP_T, l.rows.size <= 1 ? need : std::max<long long>(need, l.rows.stride[0])};
}
std::string cublas_unsupported(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) {
  for (const MatrixLayout* l : {&a, &b, &c})
    if (!l->is_strided() || !(unit(l->rows) || unit(l->cols)))
      return "cuBLAS takes only row- or column-major operands (not " + l->str() + ")";
  return "";
}

// fast: the compute type of cuBLAS's tensor-core modes on FP32 data
// (CUBLAS_COMPUTE_32F_FAST_TF32, _16BF, _16F), or CUBLAS_COMPUTE_32F for its
// FP32 CUDA-core SGEMM.
// A product as cuBLAS takes it: cuBLAS computes a column-major C, so a
// row-major C is computed as C^T = B^T A^T (swapped: A and B trade places).
template <class T>
struct ColumnMajorProduct {
  MatrixView<const T> a, b;
  MatrixView<T> c;
  bool swapped;
  Blas ba, bb, bc;
  int m, n, k;
};
template <class T>
ColumnMajorProduct<T> column_major(MatrixView<const T> a, MatrixView<const T> b, MatrixView<T> c) {
  const bool swapped = !unit(c.layout.rows);
  if (swapped) {
    std::swap(a, b);
    a = a.t(), b = b.t(), c = c.t();
  }
  return {a,    b,    c,    swapped, as_blas(a.layout), as_blas(b.layout), as_blas(c.layout), int(c.rows()),
          int(c.cols()), int(a.cols())};
}

template <class T>
void cublas_gemm_as(const GemmCall<T>& call, cublasComputeType_t fast) {
  const ColumnMajorProduct<T> p = column_major(call.a, call.b, call.c);
  const auto& [a, b, c, swapped, ba, bb, bc, m, n, k] = p;
  const cublasHandle_t h = cublas_handle_on(call.stream);
  if constexpr (std::is_same_v<T, float>) {
    if (fast != CUBLAS_COMPUTE_32F)
      cublas_check(cuda::cublas().GemmEx(h, ba.op, bb.op, m, n, k, &call.alpha, a.data, CUDA_R_32F, int(ba.ld),
                                b.data, CUDA_R_32F, int(bb.ld), &call.beta, c.data, CUDA_R_32F, int(bc.ld), fast,
                                CUBLAS_GEMM_DEFAULT),
                   "cublasGemmEx (tensor cores)");
    else
      cublas_check(cuda::cublas().Sgemm(h, ba.op, bb.op, m, n, k, &call.alpha, a.data, int(ba.ld), b.data,
                               int(bb.ld), &call.beta, c.data, int(bc.ld)),
                   "cublasSgemm");
  } else {
    cublas_check(cuda::cublas().Dgemm(h, ba.op, bb.op, m, n, k, &call.alpha, a.data, int(ba.ld), b.data,
                             int(bb.ld), &call.beta, c.data, int(bc.ld)),
                 "cublasDgemm");
  }
}

template <class T>
void cublas_gemm(const GemmCall<T>& call) {
  cublas_gemm_as<T>(call, CUBLAS_COMPUTE_32F);
}

// A strided batch in one cuBLAS call (cublasSgemmStridedBatched, or
// cublasGemmStridedBatchedEx in a tensor-core mode): the baselines of
// gemm_batched.
template <class T>
bool cublas_batch_as(const GemmBatchCall<T>& call, cublasComputeType_t fast) {
  const ColumnMajorProduct<T> p = column_major(call.first.a, call.first.b, call.first.c);
  const auto& [a, b, c, swapped, ba, bb, bc, m, n, k] = p;
  const long long sa = swapped ? call.stride_b : call.stride_a, sb = swapped ? call.stride_a : call.stride_b;
  const int count = int(call.batch);
  const T alpha = call.first.alpha, beta = call.first.beta;
  const cublasHandle_t h = cublas_handle_on(call.first.stream);
  if constexpr (std::is_same_v<T, double>) {
    cublas_check(cuda::cublas().DgemmStridedBatched(h, ba.op, bb.op, m, n, k, &alpha, a.data, int(ba.ld), sa, b.data,
                                           int(bb.ld), sb, &beta, c.data, int(bc.ld), call.stride_c, count),
                 "cublasDgemmStridedBatched");
  } else if (fast != CUBLAS_COMPUTE_32F)
    cublas_check(cuda::cublas().GemmStridedBatchedEx(h, ba.op, bb.op, m, n, k, &alpha, a.data, CUDA_R_32F, int(ba.ld), sa,
                                            b.data, CUDA_R_32F, int(bb.ld), sb, &beta, c.data, CUDA_R_32F,
                                            int(bc.ld), call.stride_c, count, fast, CUBLAS_GEMM_DEFAULT),
                 "cublasGemmStridedBatchedEx (tensor cores)");
  else
    cublas_check(cuda::cublas().SgemmStridedBatched(h, ba.op, bb.op, m, n, k, &alpha, a.data, int(ba.ld), sa, b.data,
                                           int(bb.ld), sb, &beta, c.data, int(bc.ld), call.stride_c, count),
                 "cublasSgemmStridedBatched");
  return true;
}

// cuBLAS SGEMM with its inputs rounded to TF32, BF16 or FP16 on the tensor
// cores (CUBLAS_COMPUTE_32F_FAST_*): the baselines of those precisions on
// FP32 data.
void cublas_gemm_tf32(const GemmCall<float>& call) { cublas_gemm_as<float>(call, CUBLAS_COMPUTE_32F_FAST_TF32); }
void cublas_gemm_bf16(const GemmCall<float>& call) { cublas_gemm_as<float>(call, CUBLAS_COMPUTE_32F_FAST_16BF); }
void cublas_gemm_fp16(const GemmCall<float>& call) { cublas_gemm_as<float>(call, CUBLAS_COMPUTE_32F_FAST_16F); }

GemmImpl gpu(std::string name, std::string description, std::string preconditions = "any M, N, K; any layout") {
  return gpu_impl<GemmImpl>(std::move(name), std::move(description), std::move(preconditions));
}

}  // namespace

void register_cuda_backend(Registry& r) {
  using namespace parray::cuda;
  {
    GemmImpl i = gpu("cublas", "cuBLAS SGEMM/DGEMM, FP32 on CUDA cores (no TF32): the baseline",
                     "row- or column-major operands");
    i.baseline = true;
    i.tags = {"baseline"};
    i.run_f32 = cublas_gemm<float>;
    i.run_f64 = cublas_gemm<double>;
    i.run_batch_f32 = [](const GemmBatchCall<float>& b) { return cublas_batch_as(b, CUBLAS_COMPUTE_32F); };
    i.run_batch_f64 = [](const GemmBatchCall<double>& b) { return cublas_batch_as(b, CUBLAS_COMPUTE_64F); };
    i.unsupported = cublas_unsupported;
    r.add(std::move(i));
  }
  for (const auto& [name, run, precision, compute] :
       {std::tuple{"tf32", cublas_gemm_tf32, Precision::tf32, CUBLAS_COMPUTE_32F_FAST_TF32},
        std::tuple{"bf16", cublas_gemm_bf16, Precision::bf16, CUBLAS_COMPUTE_32F_FAST_16BF},
        std::tuple{"fp16", cublas_gemm_fp16, Precision::fp16, CUBLAS_COMPUTE_32F_FAST_16F}}) {
    const std::string p = name;
    const cublasComputeType_t fast = compute;
    GemmImpl i = gpu("cublas-" + p,
                     "cuBLAS SGEMM on the tensor cores, FP32 data, inputs rounded to " + p + ": the " + p + " baseline",
                     "row- or column-major operands; asked for with --precision " + p + " (or lower)");
    i.baseline = true;
    i.tags = {"baseline", "tensor"};
    i.run_f32 = run;
    i.run_batch_f32 = [fast](const GemmBatchCall<float>& b) { return cublas_batch_as(b, fast); };
    i.rounds_inputs = precision;
    i.unsupported = cublas_unsupported;
    r.add(std::move(i));
  }
  {
    GemmImpl i = gpu("parray-cuda-2x2", "Parray fig. 11: CUDA thread array [2][2], a quadrant of C per thread (slow)",
                     "any M, N, K; any layout; only 4 GPU threads: small sizes");
    i.tags = {"paper"};
    i.run_f32 = gemm_paper_2x2<float>;
    i.run_f64 = gemm_paper_2x2<double>;
    r.add(std::move(i));
  }
  {
    GemmImpl i = gpu("parray-cuda-elem", "Parray figs. 12-13/17: thread array [M][N], one thread per element");
    i.tags = {"paper"};
    i.run_f32 = gemm_paper_elem<float>;
    i.run_f64 = gemm_paper_elem<double>;
    r.add(std::move(i));
  }
  for (int bs : {32, 64, 128, 256, 512}) {
    GemmImpl i = gpu("cuda-01-naive-bs" + std::to_string(bs),
                     "ladder 1: the CUDA lab report, one thread per element, 1-D blocks of " + std::to_string(bs),
                     "any M, N, K (N / " + std::to_string(bs) + " <= 65535); any layout");
    i.tags = {"ladder", "gpu-ladder"};
    i.run_f32 = [bs](const GemmCall<float>& c) { gemm_naive_1d(c, bs); };
    i.run_f64 = [bs](const GemmCall<double>& c) { gemm_naive_1d(c, bs); };
    r.add(std::move(i));
  }
  auto both = [&](std::string name, std::string desc, auto f32, auto f64) {
    GemmImpl i = gpu(std::move(name), std::move(desc));
    i.tags = {"ladder", "gpu-ladder"};
    i.run_f32 = f32;
    i.run_f64 = f64;
    r.add(std::move(i));
  };
  both("cuda-02-grid-stride", "ladder 2: the odd-size GEMM note, 16x16 blocks, grid-stride loops", gemm_grid_stride_2d<float>,
       gemm_grid_stride_2d<double>);
  both("cuda-03-coalesced", "ladder 3: warps span 32 contiguous elements of C", gemm_coalesced<float>,
       gemm_coalesced<double>);
  both("cuda-04-smem-tiles", "ladder 4: 16x16 shared-memory tiles, zero-padded edges", gemm_smem_tiles<float>,
       gemm_smem_tiles<double>);
  both("cuda-05-smem-at-conflicts", "ladder 5a: A tile transposed in smem [16][16]: 8-way bank conflicts",
       [](const GemmCall<float>& c) { gemm_smem_transposed_a(c, false); },
       [](const GemmCall<double>& c) { gemm_smem_transposed_a(c, false); });
  both("cuda-05-smem-at", "ladder 5: A tile transposed in smem [16][17]: conflicts removed by padding",
       [](const GemmCall<float>& c) { gemm_smem_transposed_a(c, true); },
       [](const GemmCall<double>& c) { gemm_smem_transposed_a(c, true); });
  auto f32 = [&](std::string name, std::string desc, std::function<void(const GemmCall<float>&)> f,
                 std::vector<std::string> tags = {"ladder", "gpu-ladder"}) {
    GemmImpl i = gpu(std::move(name), std::move(desc));
    i.tags = std::move(tags);
    i.run_f32 = std::move(f);
    r.add(std::move(i));
  };
  f32("cuda-06-blocktile-1d", "ladder 6: 64x64 tiles, 8 results per thread (1-D register blocking)",
      gemm_blocktile_1d);
  f32("cuda-07-blocktile-2d", "ladder 7: 128x128 tiles, 8x8 results per thread (2-D register blocking)",
      gemm_blocktile_2d);
  f32("cuda-08-vectorized", "ladder 8: float4 global/shared loads, A transposed in smem", gemm_vectorized);
  f32("cuda-09-warptile", "ladder 9: warp tiling, 128x128x16, 128 threads", gemm_warptile);
  f32("cuda-10-cp-async", "ladder 10: 3-stage cp.async pipeline over step 9's warp tiling", gemm_cp_async);
  f32("cuda-11-parray-fig21", "ladder 11: Parray fig. 21 (Volkov-Demmel), 16x256 tiles, A in smem [32][17]",
      gemm_parray_fig21);
  f32("cuda-12-best",
      "ladder 12: 128x128x16, 256 threads, 8x8 per thread, 3-stage cp.async, tiles addressed once (any "
      "transpose/layout), grouped order, split-K",
      gemm_best);
  f32("cuda-13-3xtf32",
      "ladder 13: FP32 at FP32 accuracy on tensor cores: A and B split into TF32 big + small parts (read "
      "through any layout), then one cuBLAS TF32 GEMM over 3K (Ab Bb + Ab Bs + As Bb)",
      gemm_3xtf32, {"ladder", "gpu-ladder", "tensor"});
  {
    auto hopper_only = [](const MatrixLayout&, const MatrixLayout&, const MatrixLayout&) {
      return wgmma_unsupported();
    };
    GemmImpl i = gpu("cuda-14-tf32",
                     "ladder 14: parray's own tensor-core kernel, TF32: TMA copies into a 4-slot mbarrier ring, one "
                     "producer warp, two consumer warpgroups issuing wgmma on 128x256 tiles (operands split through "
                     "any layout first)",
                     "Hopper (sm_90a); any M, N, K; any layout");
    i.tags = {"ladder", "gpu-ladder", "tensor"};
    i.run_f32 = gemm_wgmma_tf32;
    i.rounds_inputs = Precision::tf32;
    i.unsupported = hopper_only;
    r.add(i);
    for (const auto& [name, run, precision] : {std::tuple{"cuda-14-bf16", gemm_wgmma_bf16, Precision::bf16},
                                               std::tuple{"cuda-14-fp16", gemm_wgmma_fp16, Precision::fp16}}) {
      GemmImpl h = i;
      h.name = name;
      h.description = std::string("ladder 14 on 16-bit copies: A and B rounded to ") + precision_name(precision) +
                      " through any layout, wgmma k16 on 128x256 tiles, FP32 accumulation and output";
      h.run_f32 = run;
      h.rounds_inputs = precision;
      r.add(std::move(h));
    }
    i.name = "cuda-14-3xtf32";
    i.description =
        "ladder 14 at FP32 accuracy: step 14's kernel on TF32 big and small parts (As Bb + Ab Bs + Ab Bb), "
        "128x128 tiles, partial sums promoted to FP32 every 256 of K";
    i.run_f32 = gemm_wgmma_3xtf32;
    i.rounds_inputs.reset();
    r.add(i);
    // Step 15: the same kernel persistent, K split where the tiles are too few.
    for (const auto& [name, run, batch, precision] :
         {std::tuple{"cuda-15-tf32", gemm_persistent_tf32, gemm_persistent_tf32_batch, std::optional{Precision::tf32}},
          std::tuple{"cuda-15-bf16", gemm_persistent_bf16, gemm_persistent_bf16_batch, std::optional{Precision::bf16}},
          std::tuple{"cuda-15-fp16", gemm_persistent_fp16, gemm_persistent_fp16_batch, std::optional{Precision::fp16}},
          std::tuple{"cuda-15-3xtf32", gemm_persistent_3xtf32, gemm_persistent_3xtf32_batch,
                     std::optional<Precision>{}}}) {
      GemmImpl p = i;
      p.name = name;
      p.description = std::string("ladder 15: step 14's kernel (") +
                      (precision ? precision_name(*precision) : std::string("FP32-accurate 3xTF32")) +
                      ") on a persistent grid, one block per SM walking the tiles (the next tile's copies overlap "
                      "the last one's epilogue), K split into workspace slices summed in a fixed order when the tiles are fewer than the SMs; "
                      "a strided batch in one launch over its products' tiles";
      p.run_f32 = run;
      p.run_batch_f32 = batch;
      p.rounds_inputs = precision;
      r.add(std::move(p));
    }
    i.name = "cuda-21-tf32-bf16";
    i.description =
        "ladder 21: FP32 accuracy from one TF32 product of the big parts (step 15) and two BF16 products of "
        "the cross terms (step 16, one GEMM over 2K): big = tf32(x), small = bf16(x - big), read through any "
        "layout; K < 64: step 15's three TF32 products";
    i.run_f32 = gemm_tf32_bf16;
    i.rounds_inputs.reset();
    i.tags.push_back("bf16-cross");  // its products' error, for the k-NN filter's bound (knn/knn.cu)
    r.add(i);
  }
  {
    GemmImpl i = gpu("cuda-17-short-k",
                     "ladder 17: K <= 32, where C's traffic is the cost: tiles of 64 rows x 512 bytes, A and B "
                     "panels in shared memory once, 16-byte coalesced stores of C; FP32 and FP64",
                     "K <= 32; strided layouts");
    i.tags = {"ladder", "gpu-ladder"};
    i.run_f32 = [](const GemmCall<float>& c) { gemm_short_k_only(c); };
    i.run_f64 = [](const GemmCall<double>& c) { gemm_short_k_only(c); };
    i.unsupported = [](const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) {
      return short_k_unsupported(a.cols.size, a, b, c);
    };
    r.add(std::move(i));
  }
  {
    GemmImpl i = gpu("cuda-18-batched-small",
                     "ladder 18: a strided batch of small products in one launch, a block per 32 x 32 or 64 x 64 "
                     "tile of a matrix, FP32 on the CUDA cores (gemm_batched; one product alone as a batch of one)",
                     "strided layouts");
    i.tags = {"ladder", "gpu-ladder"};
    i.run_f32 = gemm_batched_small_one;
    i.run_batch_f32 = gemm_batched_small;
    i.unsupported = batched_small_unsupported;
    r.add(std::move(i));
  }
  // The FP64 tensor-core steps: any layout, a batch in one launch, Hopper.
  const auto dmma = [&](const char* name, const char* description, void (*run)(const GemmCall<double>&),
                        bool (*run_batch)(const GemmBatchCall<double>&)) {
    GemmImpl i = gpu(name, description, "any M, N, K; any layout (a row-major copy of what is not strided); Hopper");
    i.tags = {"ladder", "gpu-ladder"};
    i.run_f64 = run;
    i.run_batch_f64 = run_batch;
    i.unsupported = [](const MatrixLayout&, const MatrixLayout&, const MatrixLayout&) { return wgmma_unsupported(); };
    r.add(std::move(i));
  };
  dmma("cuda-19-dmma",
       "ladder 19: FP64 on the tensor cores (mma.sync m16n8k8 .f64, operands read 16 bytes at a time), 128x128 tiles "
       "of 8 warps, a 3-slot cp.async ring of 32-double k-tiles, K split where the tiles leave SMs idle; a strided "
       "batch in one launch",
       gemm_dmma, gemm_dmma_batch);
  dmma("cuda-22-dmma-tma",
       "ladder 22: step 19 fed by the tensor copy engine (TMA boxes of 16 doubles, 128-byte swizzled, one thread "
       "issuing a k-tile's copies); operands TMA cannot address go to step 19",
       gemm_dmma_tma, gemm_dmma_tma_batch);
  {
    GemmImpl i = gpu("gemv-07-few-vectors",
                     "GEMV step 7 as a GEMM: C of at most 8 columns (or rows) from one read of A, FP32 and FP64; "
                     "a call it cannot take goes to gpu-auto",
                     "any M, N, K; any layout (step 7 itself: C of <= 8 columns or rows, A along k or m, all "
                     "strided)");
    i.tags = {"gemv"};
    i.run_f32 = [](const GemmCall<float>& c) {
      if (!gemm_few_vectors(c)) gemm_auto(c);
    };
    i.run_f64 = [](const GemmCall<double>& c) {
      if (!gemm_few_vectors(c)) gemm_auto_f64(c);
    };
    r.add(std::move(i));
  }
  {
    GemmImpl i = gpu("gpu-auto",
                     "the default GPU GEMM: per call, the kernel the planner predicts fastest on this GPU among those "
                     "that deliver the precision asked (GEMV for M or N = 1, step 12's 64 x 64 or 128 x 128 tiles "
                     "with a deterministic K split, step 15 in TF32, BF16, FP16 or FP32-accurate 3xTF32; `parray "
                     "plan` shows the choice); FP64: the GEMV for M or N = 1, else step 22 on the tensor cores");
    i.run_f32 = gemm_auto;
    i.run_batch_f32 = gemm_batched_auto;
    i.run_f64 = gemm_auto_f64;
    i.run_batch_f64 = gemm_dmma_tma_batch;
    i.selects_down_to = {Precision::tf32, Precision::bf16, Precision::fp16};
    r.add(std::move(i));
  }
  multilevel::register_multilevel(r);  // the CUDA lab report's task 2 splits
  r.set_default(Device::gpu, "gpu-auto");
}

}  // namespace parray
