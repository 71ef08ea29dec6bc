// GEMM over several GPUs of one host (the level above the CPU-thread
// splits of multilevel.hpp), docs/multilevel.md "Several GPUs":
//
//   summa_2d     C in 2-D blocks over a P x Q array of GPUs; for each K panel
//                the owner broadcasts its A panel along its GPU row and its B
//                panel along its GPU column (ncclBroadcast), double-buffered
//                so the next panel's broadcast overlaps the current local GEMM.
//   ksplit       GPU g computes A[:, K_g] B[K_g, :] for the whole of C (in row
//                chunks) and ncclReduceScatter leaves GPU g its row block of C,
//                the reduction of chunk j overlapping the GEMM of chunk j + 1.
//   out_of_core  host-resident (pinned) operands of any size streamed through
//                each GPU tile by tile: a C block stays on the GPU while K
//                chunks of A's row panel and B's column panel flow in on a
//                ring of buffers (copies overlapped with compute); device
//                memory per GPU is bounded by a budget, whatever the sizes.
//
// The GPUs are a thread array (GpuThreadArray below, a CpuThreadArray whose
// thread i is bound to GPU i): each variant is one per-GPU body run over it.
// The local GEMM is parray's ladder step 12 (cuda-12-best's kernel) on the
// GPU's own stream. Operands are row-major FP32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/matrix.hpp"
#include "parray/gemm_check.hpp"
#include "parray/thread_array.hpp"

namespace parray::multigpu {

// ---- the GPU thread array ------------------------------------------------------

// Makes `device` current for the calling host thread (checked).
void bind_device(int device);
// GPUs present (0 without CUDA or without a GPU).
int device_count();

// One host thread per GPU, arranged as a rows x cols array (Parray's
// `pthd [P][Q]` whose threads each own a GPU): thread (p, q) runs on
// devices[p * cols + q] with that device current.
class GpuThreadArray {
 public:
  GpuThreadArray(std::vector<int> devices, int rows, int cols) : devices_(std::move(devices)), rows_(rows), cols_(cols) {
    if (rows < 1 || cols < 1 || std::size_t(rows) * std::size_t(cols) != devices_.size())
      throw Error("gpu thread array: " + std::to_string(rows) + "x" + std::to_string(cols) + " for " +
                  std::to_string(devices_.size()) + " GPUs");
  }
  int size() const { return rows_ * cols_; }
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  int device(int tid) const { return devices_[std::size_t(tid)]; }

  // body(const ThreadCoord& t): t[0], t[1] the GPU's row and column, t.tid() its
  // index, t.sync() a barrier over the GPUs' host threads.
  template <class F>
  void detour(F&& body) const {
    CpuThreadArray({rows_, cols_}).detour([&](const ThreadCoord& t) {
      bind_device(devices_[std::size_t(t.tid())]);
      body(t);
    });
  }

 private:
  std::vector<int> devices_;
  int rows_, cols_;
};

// ---- plans, results -----------------------------------------------------------

enum class Variant { summa_2d, ksplit, out_of_core };
inline const char* variant_name(Variant v) {
  return v == Variant::summa_2d ? "2d" : v == Variant::ksplit ? "ksplit" : "ooc";
}
inline Variant parse_variant(const std::string& s) {
  if (s == "2d") return Variant::summa_2d;
  if (s == "ksplit") return Variant::ksplit;
  if (s == "ooc") return Variant::out_of_core;
  throw Error("unknown multi-GPU variant '" + s + "' (use 2d, ksplit or ooc)");
}
// The GEMM each GPU runs on its blocks: ladder step 12 (parray's own kernel,
// the default), cuBLAS — to compare a schedule (panels, K split, out-of-core
// streaming) with cublasXt's on the same local kernel — or 3xTF32 (FP32
// accuracy on the tensor cores): parray's own kernel, ladder step 14, on a
// Hopper GPU, else step 13 (cuBLAS's TF32 kernel on split operands).
enum class LocalGemm { step12, cublas, tf32x3 };
inline const char* local_gemm_name(LocalGemm l) {
  return l == LocalGemm::step12 ? "step12" : l == LocalGemm::cublas ? "cublas" : "3xtf32";
}
inline LocalGemm parse_local_gemm(const std::string& s) {
  if (s == "step12") return LocalGemm::step12;
  if (s == "cublas") return LocalGemm::cublas;
  if (s == "3xtf32") return LocalGemm::tf32x3;
  throw Error("unknown local GEMM '" + s + "' (use step12, cublas or 3xtf32)");
}

// Whether this build has the variant (2d and ksplit need NCCL).
bool variant_built(Variant v);

struct Plan {
  Variant variant = Variant::summa_2d;
  std::vector<int> devices = {0};  // the GPUs, in thread-array order
  int grid_rows = 1, grid_cols = 1;  // summa_2d: P x Q == devices.size(); others: G x 1
  index_t panel = 0;                 // summa_2d: K panel width (0: about 1/8 of K, 256..4096)
  int chunks = 0;                    // ksplit: row chunks of C (0: 4 when C has the rows for it)
  std::size_t budget_bytes = 0;      // out_of_core: device buffers per GPU (0: 8 GiB, at most 3/4 of free)
  index_t tile_m = 0, tile_n = 0, tile_k = 0;  // out_of_core: forced tile sizes (0: from the budget)
  LocalGemm local = LocalGemm::step12;         // every variant: the per-GPU GEMM

  int gpus() const { return int(devices.size()); }
  std::string grid() const { return std::to_string(grid_rows) + "x" + std::to_string(grid_cols); }
};

// Checks a plan against the GPUs present and the sizes; throws parray::Error
// with a message that names the bad option.
void validate(const Plan& plan, index_t m, index_t n, index_t k);

struct Stats {
  double ms = 0;                   // the whole call, host clock after synchronising every GPU
  double comm_bytes = 0;           // NCCL: bytes received by the GPUs, summed
  double h2d_bytes = 0, d2h_bytes = 0;
  std::size_t device_bytes = 0;    // buffers allocated on each GPU (the largest GPU)
  long long blocks = 0;            // out_of_core: C blocks streamed; summa_2d: K panels; ksplit: row chunks
  long long k_chunks = 0;          // out_of_core: K chunks per C block
  std::string detail;              // tile sizes, panel width, chunks
  // out_of_core with PARRAY_MULTIGPU_TRACE=1: per GPU, from CUDA events, the
  // time before its first GEMM starts, the gaps between its GEMMs, and the
  // time from its last GEMM to its last copy back (where the schedule loses).
  std::string trace;
};

// The out-of-core blocking: C in rb x cb blocks of tm x tn, K streamed in
// chunks of tk (ooc_chunk_widths: on a GPU's first block a ramp from
// first_chunk, each chunk at most `growth` times the one before), the last
// chunk's GEMM in row strips (a first one of lead_rows, then strip_rows
// each: their GEMMs hide the copies back), c_buffers C blocks on each GPU
// (2 when a GPU takes several blocks: the next starts while the last
// drains), device_bytes of buffers per GPU.
struct OocTiling {
  index_t tm = 0, tn = 0, tk = 0, rb = 0, cb = 0;
  index_t first_chunk = 0, strip_rows = 0, lead_rows = 0;
  double growth = 2.0;
  int c_buffers = 2;
  std::size_t device_bytes = 0;
};
// The K chunk widths of one C block, in order (they sum to k): tk wide, but
// on a GPU's first block (`ramp`) first a ramp from first_chunk growing by at
// most `growth` per chunk — only the first upload waits with nothing to
// overlap, and each next upload fits behind the GEMM of the chunk before —
// then whole chunks; what is left over below tk goes among the narrower ones
// in sorted order. The last chunk is always min(tk, k) wide: its strips hide
// the block's copy back.
std::vector<index_t> ooc_chunk_widths(const OocTiling& t, index_t k, bool ramp);
// The blocking the out-of-core variant takes for an M x N x K product over
// `gpus` GPUs within budget_bytes of device memory per GPU: the least
// estimated time (src/cuda/multigpu/out_of_core.cpp says how it is
// estimated). Throws parray::Error when not even 1 x 1 blocks fit.
OocTiling plan_out_of_core(index_t m, index_t n, index_t k, int gpus, std::size_t budget_bytes, bool beta_nonzero,
                           LocalGemm local = LocalGemm::step12);

// C = alpha A B + beta C, every operand in host memory (row-major; pinned for
// full PCIe speed, pageable works). summa_2d and ksplit scatter the operands
// to the GPUs, run, and gather C; out_of_core streams tiles.
Stats gemm_host(const Plan& plan, float alpha, MatrixView<const float> a, MatrixView<const float> b, float beta,
                MatrixView<float> c);

// Operands kept distributed over the GPUs in the layout the variant needs
// (summa_2d: 2-D blocks, A split along K by grid columns, B by grid rows;
// ksplit: A by K columns, B by K rows, C by row blocks): the device-resident
// case. Buffers and NCCL communicators live as long as the object.
class Distributed {
 public:
  Distributed(const Plan& plan, index_t m, index_t n, index_t k);
  ~Distributed();
  Distributed(const Distributed&) = delete;
  Distributed& operator=(const Distributed&) = delete;

  // Row-major operands to the GPUs (C only when beta will be != 0), from
  // host memory or from one GPU (e.g. all three on GPU 0: `parray multigpu
  // --operands gpu0`; GPU to GPU over NVLink where peer access is on).
  void scatter(MatrixView<const float> a, MatrixView<const float> b, const MatrixView<const float>* c0 = nullptr);
  // C = alpha A B + beta C on the GPUs; returns when every GPU has finished.
  Stats run(float alpha, float beta);
  // C back into row-major host memory or one GPU's memory.
  void gather(MatrixView<float> c) const;
  // Every element of C set to NaN on the GPUs (so unwritten elements show).
  void poison_c();

  struct State;

 private:
  State* s_;
};

// ---- verification (host, FP64) ---------------------------------------------------

// C against alpha A B + beta C0 (c0 null when beta == 0), host views: the
// harness's checker (gemm_check.hpp: the full FP64 product up to 2^31
// multiply-adds, a random-sign checksum plus sampled elements above).
using Check = GemmCheck;
inline Check verify(float alpha, MatrixView<const float> a, MatrixView<const float> b, float beta,
                    const MatrixView<const float>* c0, MatrixView<const float> c, std::uint64_t seed = 1) {
  return check_gemm<float>(alpha, a, b, beta, c0, c, seed);
}

// cublasXt (the baseline of the host-resident case): cublasXtSgemm on host
// pointers over the same GPUs, block dimension `block_dim` (0: cublasXt's default).
// Returns milliseconds; `used_block_dim` gets the block dimension in force.
double cublasxt_sgemm(const std::vector<int>& devices, int block_dim, float alpha, MatrixView<const float> a,
                      MatrixView<const float> b, float beta, MatrixView<float> c, int* used_block_dim = nullptr);

}  // namespace parray::multigpu
