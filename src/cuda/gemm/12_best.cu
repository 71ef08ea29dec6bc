// Launcher of ladder step 12 (gemm/12_best.cuh): the tile shape chosen by
// measurement (docs/perf-notes.md), every transpose case and every layout.
// Tuning (parray/tuning.hpp): gpu.best_shape runs one of the candidate
// shapes of gemm/12_best_candidates.cu instead (row- or column-major operands),
// gpu.best_group the tile-order group, gpu.best_splits a fixed K split,
// gpu.best_wide the 128 x 256 tile wherever A runs along k, gpu.best_streamk
// the stream-K tail.
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "parray/cuda/memory.hpp"
#include "gemm/pipelined_common.cuh"
#include "gemm/strided_blocks.hpp"

namespace parray::cuda {

using namespace pipelined;

namespace {
// dst (K x N, row-major, row stride ldd) = B (K x N, column-major: B(k, n)
// at b[k + n * ldb]), through 32 x 32 tiles in shared memory so that both
// the reads (along k) and the writes (along n) are coalesced; a tile row of
// 33 floats keeps the transposed reads free of bank conflicts (the CPU/GPU GEMM report's
// question, step 5). blockIdx.x: 32 rows of k; blockIdx.y (and further
// rounds of it): 32 columns of n.
__global__ __launch_bounds__(256) void col_to_row_major(int K, int N, const float* b, index_t ldb, float* dst,
                                                        index_t ldd) {
  __shared__ float tile[32][33];
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32, k0 = blockIdx.x * 32;
  for (int n0 = blockIdx.y * 32; n0 < N; n0 += gridDim.y * 32) {
    for (int j = ty; j < 32; j += 8)
      if (n0 + j < N && k0 + tx < K) tile[j][tx] = b[(k0 + tx) + index_t(n0 + j) * ldb];
    __syncthreads();
    for (int j = ty; j < 32; j += 8)
      if (k0 + j < K && n0 + tx < N) dst[index_t(k0 + j) * ldd + n0 + tx] = tile[tx][j];
    __syncthreads();
  }
}

}  // namespace

void pipelined::transpose_on_stream(cudaStream_t stream, int rows, int cols, const float* src, index_t lds,
                                    float* dst, index_t ldd) {
  if (rows <= 0 || cols <= 0) return;
  const dim3 grid(unsigned(ceil_div(rows, 32)), unsigned(std::min<index_t>(ceil_div(cols, 32), 65535)));
  col_to_row_major<<<grid, 256, 0, stream>>>(rows, cols, src, lds, dst, ldd);
  PARRAY_CUDA_CHECK_LAUNCH();
}

namespace {
// Row-major A with column-major B (both along k) as row-major A and B: B
// copied into a row-major workspace first, then the wide tile. Why: with
// both operands staged through registers only the 128 x 128 tile fits (the
// wide one spilled), and the copy (8 K N bytes) followed by the wide tile
// runs faster (docs/perf-notes.md). Taken where the
// wide tile fills the SMs (or gpu.best_wide=1, for the tests), one product
// at a time.
template <class OpA, class OpC>
bool run_with_b_row_major(const OpA& a, const StridedOperand<const float>& b, const OpC& c, bool force) {
  if (b.rs != 1 || cur_batch.count != 1 || !(force || best_wide_fits(cur.M, cur.N))) return false;
  const index_t ldd = (index_t(cur.N) + 3) / 4 * 4;
  const size_t floats = size_t(std::max(cur.K, 1)) * size_t(ldd);
  if (!workspace_fits(floats * sizeof(float))) return false;  // a large copy of B only where there is room
  float* packed = device_buffer<float>(Workspace::packed_b, floats, false);
  transpose_on_stream(cur_stream, cur.K, cur.N, b.p, b.cs, packed, ldd);
  launch_best<BestWideShape, true, false>(a, StridedOperand<const float>{packed, ldd, 1}, c);
  workspace_done();
  return true;
}

template <bool AK, bool BKc>
struct Launch {
  template <class OpA, class OpB, class OpC>
  static void run(const OpA& a, const OpB& b, const OpC& c, const LoadPlan&) {
    // The wide tile for A along k and B along n (row-major A and B). With B
    // along k too the wide tile spilled and the 128 x 128 one is slower: large
    // products copy B to row-major first and take the wide tile
    // (run_with_b_row_major).
    // gpu.best_wide=1 takes it whatever the size (tests, sanitizers).
    const bool force_wide = gpu_tuning().best_wide;
    if constexpr (OpA::strided && AK && !BKc) {
      if (force_wide || best_wide_fits(cur.M, cur.N, cur_batch.count)) {
        launch_best<BestWideShape, AK, BKc>(a, b, c);
        return;
      }
    }
    using Strided = StridedOperand<const float>;
    if constexpr (std::is_same_v<OpA, Strided> && std::is_same_v<OpB, Strided> && AK && BKc) {
      if (run_with_b_row_major(a, b, c, force_wide)) return;
    }
    launch_best<BestDefaultShape, AK, BKc>(a, b, c);
  }
};
// Whether two strided products differ only in where their operands start.
bool same_but_offsets(const GemmCall<float>& x, const GemmCall<float>& y) {
  auto same = [](const auto& u, const auto& v) {
    return u.rows() == v.rows() && u.cols() == v.cols() && u.layout.rows.stride[0] == v.layout.rows.stride[0] &&
           u.layout.cols.stride[0] == v.layout.cols.stride[0];
  };
  return same(x.a, y.a) && same(x.b, y.b) && same(x.c, y.c) && x.alpha == y.alpha && x.beta == y.beta;
}

// Resets the batch of the current launch whatever happens.
struct BatchScope {
  ~BatchScope() { cur_batch = Batch{}; }
};

// parts[0 .. n) (same shape and strides) as one launch: blockIdx.y picks the
// product.
void gemm_best_batch(const GemmCall<float>* parts, int n) {
  const GemmCall<float>& first = parts[0];
  bool batchable = false;  // best_sgemm offsets only A-along-k, B-along-n products (12_best.cuh)
  with_operands(first, [&](auto a, auto b, auto c) {
    const LoadPlan p = plan(a, b, c, first);
    batchable = decltype(a)::strided && p.a_k_contig && !p.b_k_contig;
  });
  if (!batchable) {
    for (int i = 0; i < n; ++i) gemm_best(parts[i]);
    return;
  }
  set_problem(first, "cuda-12-best");
  BatchScope scope;
  cur_batch.count = n;
  for (int i = 0; i < n; ++i) {
    cur_batch.off.a[i] = parts[i].a.data - first.a.data;
    cur_batch.off.b[i] = parts[i].b.data - first.b.data;
    cur_batch.off.c[i] = parts[i].c.data - first.c.data;
  }
  with_operands(first, [&](auto a, auto b, auto c) { by_contiguity<Launch>(plan(a, b, c, first), a, b, c); });
}

// The strided products of a blocked layout, in waves: wave w holds the w-th
// product into each block of C (their K blocks in order), so the products of
// a wave write different blocks of C and run as one launch where their shapes
// agree — the four 2048^2 blocks of a figure-18 4096^2 C then fill the GPU
// with 128 x 256 tiles like the row-major product, where one block alone
// could not. Waves run in order on the stream: block C_ij's K blocks stay in
// order.
void run_parts(const std::vector<GemmCall<float>>& parts) {
  std::vector<std::vector<GemmCall<float>>> waves;
  std::vector<std::pair<const float*, std::size_t>> seen;  // (C block, products so far)
  for (const GemmCall<float>& part : parts) {
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& e) { return e.first == part.c.data; });
    if (it == seen.end()) it = seen.insert(seen.end(), {part.c.data, 0});
    if (waves.size() <= it->second) waves.resize(it->second + 1);
    waves[it->second++].push_back(part);
  }
  for (const auto& wave : waves)
    for (std::size_t i = 0; i < wave.size();) {
      std::size_t j = i + 1;
      while (j < wave.size() && j - i < std::size_t(ladder::kMaxBatch) && same_but_offsets(wave[i], wave[j])) ++j;
      if (j - i == 1) gemm_best(wave[i]);
      else gemm_best_batch(&wave[i], int(j - i));
      i = j;
    }
}
}  // namespace

void gemm_best(const GemmCall<float>& call) {
  set_problem(call, "cuda-12-best");
  const int shape = gpu_tuning().best_shape;
  if (shape >= 0 && gemm_best_candidate(call, shape)) return;
  // Blocked layouts (figure 17/18): one strided product per block, through
  // the layout's own offsets (gemm/strided_blocks.hpp), independent blocks
  // batched (run_parts); many small blocks take the per-element layout
  // kernel below. A tuning shape (gpu.best_shape) runs the parts
  // one by one.
  const bool strided = call.a.layout.is_strided() && call.b.layout.is_strided() && call.c.layout.is_strided();
  if (!strided) {
    std::vector<GemmCall<float>> parts;
    if (for_each_strided_part(call, 64, 128, [&](const GemmCall<float>& part) { parts.push_back(part); })) {
      if (shape >= 0)
        for (const auto& part : parts) gemm_best(part);
      else
        run_parts(parts);
      return;
    }
  }
  with_operands(call, [&](auto a, auto b, auto c) { by_contiguity<Launch>(plan(a, b, c, call), a, b, c); });
}

}  // namespace parray::cuda
