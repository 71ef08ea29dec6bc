// Launcher of ladder steps 19 and 22 (gemm/19_dmma.cuh, gemm/22_dmma_tma.cuh):
// FP64 GEMM on the tensor cores, one product or a strided batch. Strided
// operands are read where they lie: by the copy engine where it can address
// them (step 22), else by 16-byte cp.async where k of A, n of B is contiguous
// and rows are aligned and by 8-byte cp.async otherwise (step 19); any other
// layout goes through a row-major copy on the device first.
#include <algorithm>
#include <cstdint>
#include <optional>

#include "common/smem_opt_in.hpp"
#include "gemm/19_dmma.cuh"
#include "gemm/22_dmma_tma.cuh"
#include "gemm/split_pass.cuh"
#include "gemm/tensor_map.hpp"
#include "parray/cuda/check.hpp"
#include "parray/cuda/gemm_launchers.hpp"
#include "parray/cuda/memory.hpp"
#include "parray/tuning.hpp"

namespace parray::cuda {

namespace {

using ladder::DmmaTiles;
using ladder::DmmaTmaNarrow;
using ladder::DmmaTmaWide;
using ladder::DmmaTmaWideRelease;

// The kernel a call runs: step 19, or step 22 with one of its tiles.
enum class Fp64Tile { cp_async, tma_wide, tma_narrow, tma_wide_release };

// Its tile of C, k-tile and resident blocks an SM.
struct TileShape {
  int bm, bn, bk, blocks;
};
template <class T>
constexpr TileShape shape_of() {
  return {T::BM, T::BN, T::BK, T::kBlocks};
}
TileShape tile_shape(Fp64Tile t) {
  switch (t) {
    case Fp64Tile::tma_wide: return shape_of<DmmaTmaWide>();
    case Fp64Tile::tma_narrow: return shape_of<DmmaTmaNarrow>();
    case Fp64Tile::tma_wide_release: return shape_of<DmmaTmaWideRelease>();
    default: return shape_of<DmmaTiles>();
  }
}

// A kernel of tiles T over `grid`, its shared memory allowed first (once per
// kernel and device).
template <class T, class Kernel, class Params>
void start(Kernel kernel, dim3 grid, cudaStream_t s, const Params& params) {
  allow_smem_on_current_device(kernel, T::kSmemBytes);
  kernel<<<grid, T::kThreads, T::kSmemBytes, s>>>(params);
  PARRAY_CUDA_CHECK_LAUNCH();
}

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
int k_parts(const GemmCall<double>& f, index_t batch, long long tiles, int kts, const TileShape& t) {
  if (batch != 1) return 1;
  const GpuModel& gpu = current_gpu_model();
  // A k-tile of a block: 2 BM BN BK flops at 256 FP64 flops a clock a SM
  // (Hopper's DMMA), shared by the SM's blocks, and ~75 % of that sustained.
  const double tile_flops = 2.0 * t.bm * t.bn * t.bk;
  const double step_us = tile_flops * t.blocks / (256.0 * 0.75 * gpu.clock_ghz * 1e3);
  // plan_k_splits counts 4-byte elements: doubles move twice the bytes, as at half the bandwidth. Up to a
  // part a block slot: a k-tile of FP64 products is long enough that a small C with a long K (a few
  // tiles) fills the GPU with parts of 4 k-tiles before the parts' sum costs more than they save.
  const long long slots = (long long)gpu.sms * t.blocks;
  return plan_k_splits(tiles, kts, slots, f.c.rows(), f.c.cols(), step_us, gpu.dram_gbs * 1e3 / 2, gpu.launch_us,
                       int(std::min<long long>(slots, 256)));
}

// Whether the copy engine can read the operand (step 22): step 19's fast
// rows, and strides the tensor map takes (rows apart, a batch's forward).
bool tma_reads(const StridedOperand<const double>& v, long long batch_stride) {
  return fast_rows(v.p, v.rs, v.cs, batch_stride) && v.rs >= 2 && batch_stride >= 0;
}

// Step 19's parameters, and step 22's maps where it runs; C, alpha, beta and
// the K split are step 19's fields in both.
struct Fp64Kernel {
  Fp64Tile tile = Fp64Tile::cp_async;
  ladder::DmmaParams p{};
  ladder::DmmaTmaParams tma{};

  void operator()(dim3 grid, cudaStream_t s) const {
    switch (tile) {
      case Fp64Tile::cp_async: return start<DmmaTiles>(ladder::gemm_dmma<DmmaTiles>, grid, s, p);
      case Fp64Tile::tma_wide: return start<DmmaTmaWide>(ladder::gemm_dmma_tma<DmmaTmaWide>, grid, s, tma_params());
      case Fp64Tile::tma_narrow:
        return start<DmmaTmaNarrow>(ladder::gemm_dmma_tma<DmmaTmaNarrow>, grid, s, tma_params());
      case Fp64Tile::tma_wide_release:
        return start<DmmaTmaWideRelease>(ladder::gemm_dmma_tma<DmmaTmaWideRelease>, grid, s, tma_params());
    }
  }
  ladder::DmmaTmaParams tma_params() const {
    ladder::DmmaTmaParams q = tma;
    q.c = p.c, q.alpha = p.alpha, q.beta = p.beta, q.batch_c = p.batch.c;
    q.kt_per_part = p.kt_per_part, q.part_stride = p.part_stride;
    return q;
  }
};

// Step 22's maps of A (M x K, boxes of 16 k x BM rows) and B (K x N, boxes of
// 16 columns x BK k), a batch's products as block rows.
template <class T>
ladder::DmmaTmaParams tma_maps(const ladder::DmmaParams& p, index_t batch) {
  ladder::DmmaTmaParams q{};
  const auto map = [&](const StridedOperand<const double>& v, index_t rows, index_t cols, long long stride, int box) {
    return tensor_map_batch(CU_TENSOR_MAP_DATA_TYPE_FLOAT64, v.p, rows, cols, v.rs, batch, stride, 8, T::kBox, box,
                            true);
  };
  q.a = map(p.a, p.M, p.K, p.batch.a, T::BM);
  q.b = map(p.b, p.K, p.N, p.batch.b, T::BK);
  q.M = p.M, q.N = p.N, q.K = p.K, q.group = p.group;
  q.a_batched = batch > 1 && p.batch.a != 0, q.b_batched = batch > 1 && p.batch.b != 0;
  return q;
}

// One product with K split into `asked` parts (fewer where the last would be
// empty): the parts' partial products into a workspace (row-major M x N
// each), then C = alpha * (their sum, in part order) + beta * C.
void launch_parts(Fp64Kernel k, long long tiles, int kts, int asked, cudaStream_t s) {
  ladder::DmmaParams& p = k.p;
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
  k(dim3(unsigned(tiles), unsigned(parts), 1), s);
  const unsigned blocks = unsigned(std::min<long long>(ceil_div(part, 256), 4096));
  ladder::dmma_sum_parts<<<blocks, 256, 0, s>>>(p.M, p.N, parts, w, part, c, alpha, beta);
  PARRAY_CUDA_CHECK_LAUNCH();
}

// allow_tma: step 22 where the copy engine reads both operands (and the
// batch fits one launch), else step 19.
void launch(const GemmCall<double>& f, index_t batch, const ladder::DmmaBatch& strides, bool allow_tma) {
  Fp64Kernel k;
  ladder::DmmaParams& p = k.p;
  p.a = strided(f.a), p.b = strided(f.b);
  p.c = {f.c.data, f.c.layout.rows.stride[0], f.c.layout.cols.stride[0]};
  p.M = int(f.c.rows()), p.N = int(f.c.cols()), p.K = int(f.a.cols());
  p.alpha = f.alpha, p.beta = f.beta;
  p.a_fast = fast_rows(p.a.p, p.a.rs, p.a.cs, strides.a);
  p.b_fast = fast_rows(p.b.p, p.b.rs, p.b.cs, strides.b);
  p.group = 8;
  p.batch = strides;
  if (allow_tma && p.M > 0 && p.N > 0 && p.K > 0 && batch <= 65535 && tma_reads(p.a, strides.a) &&
      tma_reads(p.b, strides.b)) {
    const int tile = gpu_tuning().dmma_tile;
    k.tile = tile == 2 ? Fp64Tile::tma_narrow : tile == 3 ? Fp64Tile::tma_wide_release : Fp64Tile::tma_wide;
    k.tma = k.tile == Fp64Tile::tma_narrow ? tma_maps<DmmaTmaNarrow>(p, batch) : tma_maps<DmmaTmaWide>(p, batch);
  }
  const TileShape t = tile_shape(k.tile);
  const long long tiles = (long long)ceil_div(f.c.rows(), t.bm) * ceil_div(f.c.cols(), t.bn);
  if (tiles > 0x7fffffff) throw Error("cuda-19-dmma: more than 2^31 tiles of C");
  const cudaStream_t s = on_stream(f.stream);
  const int kts = int(ceil_div(f.a.cols(), t.bk));
  p.kt_per_part = std::max(kts, 1);
  if (const int asked = k_parts(f, batch, tiles, kts, t); asked > 1) return launch_parts(k, tiles, kts, asked, s);
  for (index_t z0 = 0; z0 < batch; z0 += 65535) {  // gridDim.z's limit (step 22: one launch)
    Fp64Kernel part = k;
    part.p.a.p += z0 * strides.a, part.p.b.p += z0 * strides.b, part.p.c.p += z0 * strides.c;
    part(dim3(unsigned(tiles), 1, unsigned(std::min<index_t>(batch - z0, 65535))), s);
  }
}

// A row-major device copy of an operand in a layout step 19 does not read,
// or (padded) one step 22's copy engine does: rows an even number of doubles
// apart, so 16-byte aligned.
struct DoubleRows {
  PoolBuffer buf;  // counted in floats: two per double
  MatrixView<double> view;
  DoubleRows(index_t rows, index_t cols, cudaStream_t s, bool padded = false)
      : DoubleRows(rows, cols, padded ? std::max<index_t>(cols + cols % 2, 2) : std::max<index_t>(cols, 1), s) {}
  DoubleRows(index_t rows, index_t cols, index_t ld, cudaStream_t s)
      : buf(std::size_t(rows) * ld * 2, s),
        view{reinterpret_cast<double*>(buf.p), MatrixLayout::row_major(rows, cols, ld), Memory::device} {}
};

// Whether TMA (step 22) can read the operand where it lies.
bool tma_reads_view(const MatrixView<const double>& v) {
  return v.layout.is_strided() && tma_reads(strided(v), 0);
}

// Whether step 22 on padded row-major copies of the operands TMA cannot read
// beats step 19 on them as they lie: step 22 saves about a third of the
// product's time at the FP64 peak (the two steps' rates on large products,
// docs/perf-notes.md); each strided operand copied costs a read and a write
// at the bandwidth (one that is not strided is copied either way).
bool padding_pays(const GemmCall<double>& f) {
  const GpuModel& gpu = current_gpu_model();
  const double flops = 2.0 * double(f.c.rows()) * double(f.c.cols()) * double(f.a.cols());
  const double saved_us = flops / (gpu.sms * 256.0 * gpu.clock_ghz * 1e3) / 3;
  double copy_us = 0;
  for (const MatrixView<const double>& v : {f.a, f.b})
    if (!tma_reads_view(v) && v.layout.is_strided())
      copy_us += 16.0 * double(v.rows()) * double(v.cols()) / (gpu.dram_gbs * 1e3) + gpu.launch_us;
  return copy_us > 0 && saved_us > copy_us;
}

// A call in any layout: what is not strided through row-major copies (and,
// where step 22 may run, what TMA cannot read through padded ones where that
// pays).
void run(const GemmCall<double>& call, const char* impl, bool allow_tma) {
  if (std::string why = wgmma_unsupported(); !why.empty()) throw Error(std::string(impl) + ": " + why);
  if (call.c.rows() > 0x7fffffff || call.c.cols() > 0x7fffffff || call.a.cols() > 0x7fffffff)
    throw Error(std::string(impl) + ": a dimension of 2^31 or more");
  const cudaStream_t s = on_stream(call.stream);
  GemmCall<double> f = call;
  std::optional<DoubleRows> a_rows, b_rows, c_rows;
  const bool empty = call.c.rows() == 0 || call.c.cols() == 0 || call.a.cols() == 0;
  // Copies for step 22 are padded (rows 16-byte aligned) whenever it may run:
  // of an operand that is not strided (copied either way), and of one TMA
  // cannot read where padding pays.
  const bool pad = allow_tma && !empty, pad_strided = pad && padding_pays(call);
  const auto rows_of = [&](const MatrixView<const double>& v, std::optional<DoubleRows>& copy) {
    if (v.layout.is_strided() && (!pad_strided || tma_reads_view(v))) return v;
    cuda::copy<double>(v, copy.emplace(v.rows(), v.cols(), s, pad).view, s);
    return MatrixView<const double>(copy->view);
  };
  f.a = rows_of(call.a, a_rows);
  f.b = rows_of(call.b, b_rows);
  if (!f.c.layout.is_strided()) {
    f.c = c_rows.emplace(call.c.rows(), call.c.cols(), s).view;
    if (call.beta != 0.0) cuda::copy<double>(call.c, f.c, s);  // beta = 0: C is not read
  }
  launch(f, 1, {}, allow_tma);
  if (c_rows) cuda::copy<double>(MatrixView<const double>(c_rows->view), call.c, s);
}

bool run_batch(const GemmBatchCall<double>& call, bool allow_tma) {
  const GemmCall<double>& f = call.first;
  if (!wgmma_unsupported().empty()) return false;
  if (!f.a.layout.is_strided() || !f.b.layout.is_strided() || !f.c.layout.is_strided()) return false;
  if (f.c.rows() > 0x7fffffff || f.c.cols() > 0x7fffffff || f.a.cols() > 0x7fffffff) return false;
  launch(f, call.batch, {call.stride_a, call.stride_b, call.stride_c}, allow_tma);
  return true;
}

}  // namespace

void gemm_dmma(const GemmCall<double>& call) { run(call, "cuda-19-dmma", false); }
bool gemm_dmma_batch(const GemmBatchCall<double>& call) { return run_batch(call, false); }
void gemm_dmma_tma(const GemmCall<double>& call) { run(call, "cuda-22-dmma-tma", true); }
bool gemm_dmma_tma_batch(const GemmBatchCall<double>& call) { return run_batch(call, true); }

}  // namespace parray::cuda
