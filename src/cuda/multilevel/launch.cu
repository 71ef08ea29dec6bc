// Step 12 and the K split's reduction, launched on a given stream (launch.hpp).
#include "gemm/pipelined_common.cuh"
#include "launch.hpp"

namespace parray::cuda::multilevel {

namespace {
using OpIn = StridedOperand<const float>;
using OpOut = StridedOperand<float>;

__global__ __launch_bounds__(256) void sum_parts(int m, int n, int parts, const float* w, index_t ldw, index_t slice,
                                                 float alpha, float beta, float* c, index_t ldc) {
  for (int i = blockIdx.y; i < m; i += gridDim.y)
    for (int j = (blockIdx.x * 256 + threadIdx.x) * 4; j < n; j += gridDim.x * 256 * 4) {
      const float4 s = ladder::sum_slices4(w + i * ldw + j, slice, parts);
      const float v[4] = {s.x, s.y, s.z, s.w};
      float* out = c + i * ldc + j;
      for (int e = 0; e < 4 && j + e < n; ++e) out[e] = beta == 0.f ? alpha * v[e] : alpha * v[e] + beta * out[e];
    }
}

__global__ __launch_bounds__(256) void scale_rows(int m, int n, float beta, float* c, index_t ldc) {
  for (int i = blockIdx.y; i < m; i += gridDim.y)
    for (int j = blockIdx.x * 256 + threadIdx.x; j < n; j += gridDim.x * 256)
      c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
}
}  // namespace

namespace {
// Step 12 on a stream, row-major A and B, one grid of whole tiles (a part in
// flight with others: together they fill the GPU).
template <class Shape, class OpC>
void launch_on_stream(cudaStream_t stream, int m, int n, int k, float alpha, const float* a, long long lda,
                      const float* b, long long ldb, float beta, OpC c) {
  auto kern = ladder::best_sgemm<Shape, true, false, OpIn, OpIn, OpC>;
  allow_smem_on_current_device(kern, Shape::smem_bytes);  // one host thread per GPU may call this
  const long long tiles = static_cast<long long>(ceil_div(m, Shape::BM)) * ceil_div(n, Shape::BN);
  if (tiles > 0x7fffffff) throw Error("multilevel: too many tiles for one grid");
  const int kts = int(ceil_div(k, Shape::BK));
  kern<<<dim3(unsigned(tiles), 1, 1), Shape::NT, Shape::smem_bytes, stream>>>(
      m, n, k, alpha, OpIn{a, lda, 1}, OpIn{b, ldb, 1}, beta, c, 8, kts, 0, ladder::BatchOffsets{});
  PARRAY_CUDA_CHECK_LAUNCH();
}
}  // namespace

// The tile shape cuda-12-best would take (gemm/12_best.cu) for the parts in
// flight together. One part alone runs as cuda-12-best itself would, with its
// stream-K tail or split-K (pipelined::launch_best, on `stream`): a
// one-thread split without the tail lost against the single kernel at
// 8192^3 (docs/perf-notes.md).
void gemm_best_on_stream(cudaStream_t stream, int m, int n, int k, float alpha, const float* a, long long lda,
                         const float* b, long long ldb, float beta, float* c, long long ldc, int parts_in_flight) {
  if (parts_in_flight == 1) {
    pipelined::StreamScope on(stream);
    pipelined::cur = {m, n, k, alpha, beta};
    const OpIn oa{a, lda, 1}, ob{b, ldb, 1};
    const OpOut oc{c, ldc, 1};
    if (pipelined::best_wide_fits(m, n))
      pipelined::launch_best<pipelined::BestWideShape, true, false>(oa, ob, oc);
    else
      pipelined::launch_best<pipelined::BestDefaultShape, true, false>(oa, ob, oc);
    return;
  }
  const OpOut oc{c, ldc, 1};
  if (pipelined::best_wide_fits(m, n, parts_in_flight))
    launch_on_stream<pipelined::BestWideShape>(stream, m, n, k, alpha, a, lda, b, ldb, beta, oc);
  else
    launch_on_stream<pipelined::BestDefaultShape>(stream, m, n, k, alpha, a, lda, b, ldb, beta, oc);
}

namespace {
// Part `part` of `parts` adding into C: its full-wave tiles as one grid, then
// its share of the parts' joint tail (plan_parts_tail) as pieces.
// By default the part launched last runs all of it where it is at most a
// sixth of a part's tiles (plan_parts_tail's last_takes_all; `part` is the
// order of the parts' launches; faster than shared out at 4096^3 t4:
// docs/perf-notes.md); larger tails (4096^3 t2, t8) are shared out.
// multilevel.ksplit_tail=1 shares it out, =0 leaves it out;
// gpu.best_streamk=n > 0 plans it for n slots (tests: small grids get one).
// The pieces are a launch of their own, after the whole tiles': one launch of
// best_sgemm_add_piece whose first blocks are the whole tiles (so that the
// pieces start as SMs free up) was slower (docs/perf-notes.md): the piece
// kernel runs whole tiles slower than best_sgemm.
// AK: A row-major (along k), else column-major (along m; lda its column
// stride).
template <class Shape, bool AK = true>
void add_part_on_stream(cudaStream_t stream, int m, int n, int k, float alpha, const float* a, long long lda,
                        const float* b, long long ldb, AddOperand<float> c, int parts, int part) {
  auto kern = ladder::best_sgemm<Shape, AK, false, OpIn, OpIn, AddOperand<float>>;
  auto kp = ladder::best_sgemm_add_piece<Shape, AK, false, OpIn, OpIn, AddOperand<float>>;
  const OpIn oa = AK ? OpIn{a, lda, 1} : OpIn{a, 1, lda};
  allow_smem_on_current_device(kern, Shape::smem_bytes);
  allow_smem_on_current_device(kp, Shape::smem_bytes);
  const long long tiles = static_cast<long long>(ceil_div(m, Shape::BM)) * ceil_div(n, Shape::BN);
  if (tiles > 0x7fffffff) throw Error("multilevel: too many tiles for one grid");
  const int kts = int(ceil_div(k, Shape::BK)), group = 8;
  const int with_tail = multigpu_tuning().ksplit_tail;
  const int forced_slots = gpu_tuning().best_streamk;
  StreamKPlan plan;
  if (with_tail != 0 && part >= 0 && forced_slots != 0) {
    static const int per_sm = pipelined::blocks_per_sm(kern, Shape::NT, Shape::smem_bytes);
    const long long slots = forced_slots > 0 ? forced_slots : static_cast<long long>(sm_count()) * per_sm;
    plan = plan_parts_tail(tiles, kts, slots, parts, part, forced_slots > 0, with_tail == 2);
  }
  const long long grid = plan.tiles > 0 ? plan.dp_tiles : tiles;
  if (grid > 0) {
    kern<<<dim3(unsigned(grid), 1, 1), Shape::NT, Shape::smem_bytes, stream>>>(
        m, n, k, alpha, oa, OpIn{b, ldb, 1}, 1.f, c, group, kts, 0, ladder::BatchOffsets{});
    PARRAY_CUDA_CHECK_LAUNCH();
  }
  if (plan.tiles == 0) return;
  const pipelined::PieceTable pieces = pipelined::streamk_pieces_on_device(plan, kts);
  kp<<<unsigned(pieces.count), Shape::NT, Shape::smem_bytes, stream>>>(m, n, k, alpha, oa, OpIn{b, ldb, 1}, 1.f, c,
                                                                       group, pieces.pieces);
  PARRAY_CUDA_CHECK_LAUNCH();
  pipelined::piece_table_used(pieces, stream);
}

// Parts of K <= 512 take the 128 x 128 tile even where the wide one fits:
// two blocks per SM, so one block's epilogue of atomic additions overlaps
// the other's k-loop, where the wide tile (one block per SM) waits through
// it — a large share of a 512-long k-loop (docs/perf-notes.md); with
// K = 1024 parts (4096^3 over 4, 8192^3 over 8) the wide tile stayed ahead.
bool part_takes_wide_tile(int m, int n, int k, int parts_in_flight) {
  return k > 512 && pipelined::best_wide_fits(m, n, parts_in_flight);
}
}  // namespace

bool part_wants_col_major_a(int m, int n, int k, int parts_in_flight) {
  const int rule = multigpu_tuning().ksplit_at;
  if (rule == 0 || part_takes_wide_tile(m, n, k, parts_in_flight)) return false;
  return rule == 2 || pipelined::best_wide_fits(m, n, parts_in_flight);
}

void gemm_best_add_on_stream(cudaStream_t stream, int m, int n, int k, float alpha, const float* a, long long lda,
                             const float* b, long long ldb, float* c, long long ldc, int parts_in_flight, int part,
                             bool a_col_major) {
  const AddOperand<float> oc{{c, ldc, 1}};
  if (a_col_major) {  // the 128 x 128 tile, both operands by 16-byte cp.async
    add_part_on_stream<pipelined::BestDefaultShape, false>(stream, m, n, k, alpha, a, lda, b, ldb, oc, parts_in_flight,
                                                           part);
    return;
  }
  if (part_takes_wide_tile(m, n, k, parts_in_flight))
    add_part_on_stream<pipelined::BestWideShape>(stream, m, n, k, alpha, a, lda, b, ldb, oc, parts_in_flight, part);
  else
    add_part_on_stream<pipelined::BestDefaultShape>(stream, m, n, k, alpha, a, lda, b, ldb, oc, parts_in_flight, part);
}

void transpose_on_stream(cudaStream_t stream, int rows, int cols, const float* src, long long lds, float* dst,
                         long long ldd) {
  pipelined::transpose_on_stream(stream, rows, cols, src, lds, dst, ldd);
}

void scale_on_stream(cudaStream_t stream, int m, int n, float beta, float* c, long long ldc) {
  const dim3 grid(ceil_div(n, 256), unsigned(std::min(m, 65535)));
  scale_rows<<<grid, 256, 0, stream>>>(m, n, beta, c, ldc);
  PARRAY_CUDA_CHECK_LAUNCH();
}

void sum_parts_on_stream(cudaStream_t stream, int m, int n, int parts, const float* w, long long ldw,
                         long long slice, float alpha, float beta, float* c, long long ldc) {
  const dim3 grid(ceil_div(n, 1024), unsigned(std::min(m, 65535)));  // 4 columns per thread
  sum_parts<<<grid, 256, 0, stream>>>(m, n, parts, w, ldw, slice, alpha, beta, c, ldc);
  PARRAY_CUDA_CHECK_LAUNCH();
}

}  // namespace parray::cuda::multilevel
