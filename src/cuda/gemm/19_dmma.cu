// Launcher of ladder step 19 (gemm/19_dmma.cuh): FP64 GEMM on the tensor
// cores, one product or a strided batch. Strided operands are read where
// they lie (16-byte copies where k of A, n of B is contiguous and rows are
// aligned, 8-byte copies otherwise); any other layout goes through a
// row-major copy on the device first.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "gemm/19_dmma.cuh"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/tuning.hpp"
#include "common/smem_opt_in.hpp"
#include "gemm/split_pass.cuh"

namespace parray::cuda {

namespace {

using ladder::DmmaTiles;

StridedOperand<const double> strided(const MatrixView<const double>& v) {
  return {v.data, v.layout.rows.stride[0], v.layout.cols.stride[0]};
}

// 16-byte copies along the operand's rows: `along` (k of A, n of B) is its
// contiguous direction, rows and the batch's matrices 16 bytes apart.
bool fast_rows(const double* p, index_t row_stride, index_t along_stride, long long batch_stride) {
  return along_stride == 1 && row_stride % 2 == 0 && batch_stride % 2 == 0 &&
         reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
}

// The parts K is split into for a single product whose tiles leave block
// slots idle (plan_k_splits' model: waves of tiles x parts, each part's
// kts k-tiles at the mma's rate, plus the workspace's traffic). Batches: 1.
int k_parts(const GemmCall<double>& f, index_t batch, long long tiles, int kts) {
  if (batch != 1) return 1;
  const GpuModel& gpu = current_gpu_model();
  // A k-tile of a block: 2 BM BN BK flops at 256 FP64 flops a clock a SM
  // (Hopper's DMMA) and ~75 % of that sustained.
  const double tile_flops = 2.0 * DmmaTiles::BM * DmmaTiles::BN * DmmaTiles::BK;
  const double step_us = tile_flops / (256.0 * 0.75 * gpu.clock_ghz * 1e3);
  // plan_k_splits counts 4-byte elements: doubles move twice the bytes, as at half the bandwidth.
  return plan_k_splits(tiles, kts, gpu.sms, f.c.rows(), f.c.cols(), step_us, gpu.dram_gbs * 1e3 / 2, gpu.launch_us);
}

// One product with K split into `asked` parts (fewer where the last would be
// empty): the parts' partial products into a workspace (row-major M x N
// each), then C = alpha * (their sum, in part order) + beta * C.
void launch_parts(ladder::DmmaParams p, long long tiles, int kts, int asked, cudaStream_t s) {
  const StridedOperand<double> c = p.c;
  const double alpha = p.alpha, beta = p.beta;
  p.kt_per_part = int(ceil_div(kts, asked));
  const int parts = int(ceil_div(kts, p.kt_per_part));
  const long long part = (long long)p.M * p.N;
  PoolBuffer ws(std::size_t(parts) * std::size_t(part) * 2, s);  // counted in floats
  double* w = reinterpret_cast<double*>(ws.p);
  p.c = {w, p.N, 1};
  p.alpha = 1.0, p.beta = 0.0;
  p.part_stride = part;
  ladder::gemm_dmma<DmmaTiles><<<dim3(unsigned(tiles), unsigned(parts), 1), DmmaTiles::kThreads, DmmaTiles::kSmemBytes,
                                 s>>>(p);
  PARRAY_CUDA_CHECK_LAUNCH();
  const unsigned blocks = unsigned(std::min<long long>(ceil_div(part, 256), 4096));
  ladder::dmma_sum_parts<<<blocks, 256, 0, s>>>(p.M, p.N, parts, w, part, c, alpha, beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

void launch(const GemmCall<double>& f, index_t batch, const ladder::DmmaBatch& strides) {
  ladder::DmmaParams p{};
  p.a = strided(f.a), p.b = strided(f.b);
  p.c = {f.c.data, f.c.layout.rows.stride[0], f.c.layout.cols.stride[0]};
  p.M = int(f.c.rows()), p.N = int(f.c.cols()), p.K = int(f.a.cols());
  p.alpha = f.alpha, p.beta = f.beta;
  p.a_fast = fast_rows(p.a.p, p.a.rs, p.a.cs, strides.a);
  p.b_fast = fast_rows(p.b.p, p.b.rs, p.b.cs, strides.b);
  p.group = 8;
  p.batch = strides;
  const auto kernel = ladder::gemm_dmma<DmmaTiles>;
  allow_smem_on_current_device(kernel, DmmaTiles::kSmemBytes);
  const long long tiles = (long long)ceil_div(f.c.rows(), DmmaTiles::BM) * ceil_div(f.c.cols(), DmmaTiles::BN);
  if (tiles > 0x7fffffff) throw Error("cuda-19-dmma: more than 2^31 tiles of C");
  const cudaStream_t s = on_stream(f.stream);
  const int kts = int(ceil_div(f.a.cols(), DmmaTiles::BK));
  p.kt_per_part = std::max(kts, 1);
  if (const int asked = k_parts(f, batch, tiles, kts); asked > 1) return launch_parts(p, tiles, kts, asked, s);
  for (index_t z0 = 0; z0 < batch; z0 += 65535) {  // gridDim.z's limit
    ladder::DmmaParams part = p;
    part.a.p += z0 * strides.a, part.b.p += z0 * strides.b, part.c.p += z0 * strides.c;
    const dim3 grid(unsigned(tiles), 1, unsigned(std::min<index_t>(batch - z0, 65535)));
    kernel<<<grid, DmmaTiles::kThreads, DmmaTiles::kSmemBytes, s>>>(part);
    PARRAY_CUDA_CHECK_LAUNCH();
  }
}

// A row-major device copy of an operand in a layout step 19 does not read.
struct DoubleRows {
  PoolBuffer buf;  // counted in floats: two per double
  MatrixView<double> view;
  DoubleRows(index_t rows, index_t cols, cudaStream_t s)
      : buf(std::size_t(rows) * cols * 2, s),
        view{reinterpret_cast<double*>(buf.p), MatrixLayout::row_major(rows, cols, std::max<index_t>(cols, 1)),
             Memory::device} {}
};

}  // namespace

void gemm_dmma(const GemmCall<double>& call) {
  if (std::string why = wgmma_unsupported(); !why.empty()) throw Error("cuda-19-dmma: " + why);
  if (call.c.rows() > 0x7fffffff || call.c.cols() > 0x7fffffff || call.a.cols() > 0x7fffffff)
    throw Error("cuda-19-dmma: a dimension of 2^31 or more");
  const cudaStream_t s = on_stream(call.stream);
  GemmCall<double> f = call;
  std::optional<DoubleRows> a_rows, b_rows, c_rows;
  if (!f.a.layout.is_strided()) {
    cuda::copy<double>(call.a, a_rows.emplace(call.a.rows(), call.a.cols(), s).view, s);
    f.a = a_rows->view;
  }
  if (!f.b.layout.is_strided()) {
    cuda::copy<double>(call.b, b_rows.emplace(call.b.rows(), call.b.cols(), s).view, s);
    f.b = b_rows->view;
  }
  if (!f.c.layout.is_strided()) {
    f.c = c_rows.emplace(call.c.rows(), call.c.cols(), s).view;
    if (call.beta != 0.0) cuda::copy<double>(call.c, f.c, s);  // beta = 0: C is not read
  }
  launch(f, 1, {});
  if (c_rows) cuda::copy<double>(MatrixView<const double>(c_rows->view), call.c, s);
}

bool gemm_dmma_batch(const GemmBatchCall<double>& call) {
  const GemmCall<double>& f = call.first;
  if (!wgmma_unsupported().empty()) return false;
  if (!f.a.layout.is_strided() || !f.b.layout.is_strided() || !f.c.layout.is_strided()) return false;
  if (f.c.rows() > 0x7fffffff || f.c.cols() > 0x7fffffff || f.a.cols() > 0x7fffffff) return false;
  launch(f, call.batch, {call.stride_a, call.stride_b, call.stride_c});
  return true;
}

}  // namespace parray::cuda
