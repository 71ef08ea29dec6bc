// SUMMA over process arrays: C = alpha op(A) op(B) + beta C on distributed matrices.
//
// For each block column k of op(A) (block row k of op(B)), the owning process
// column broadcasts its A panel along the process rows and the owning process
// row broadcasts its B panel along the process columns (MPI_Ibcast); every
// rank then adds A_panel * B_panel to its local C with parray's GEMM, on the
// CPU or on the rank's GPU (SummaOptions::local). The broadcasts of panel k+1
// are in flight while panel k is multiplied.
//
// Operands whose distribution does not line up with C's (a transpose, another
// block size, another source process) are first redistributed into one that
// does (redistribute(), one all-to-all); that traffic is counted apart.
//
// summa_25d.hpp runs this SUMMA on c layers of the grid, each over its own
// range of K, and sums C over the layers (2.5-D).
//
// SummaOptions::transport = nccl moves the panels GPU to GPU with NCCL instead
// (one rank per GPU, gpu.hpp): the host operands are uploaded to the ranks'
// GPUs, multiplied there, and C comes back. gpu.hpp also has the SUMMA whose
// operands already live on the GPUs.
#pragma once

#include "parray/measure.hpp"
#include "parray/gemm.hpp"
#include "parray/mpi/dist_matrix.hpp"
#include "parray/registry.hpp"

namespace parray::mpi {

// Where each rank multiplies its panels.
enum class LocalGemm {
  cpu,        // parray's CPU GEMM with SummaOptions::threads
  gpu,        // parray's GPU GEMM on device (node rank) % (devices on the host); an error without one
  automatic,  // gpu when this build has CUDA and the host a device, else cpu
};
// "cpu", "gpu" or "auto"; anything else throws parray::Error.
LocalGemm parse_local_gemm(const std::string& text);

// How panels travel between ranks.
enum class Transport {
  mpi,   // MPI_Ibcast through host memory (a GPU local GEMM uploads what it receives)
  nccl,  // ncclBroadcast between the ranks' GPUs (needs SummaOptions::gpus; the local GEMM is then
         // gpu_impl on the rank's GPU, whatever `local` says)
};
// "mpi" or "nccl"; anything else throws parray::Error.
Transport parse_transport(const std::string& text);

class GpuProcessContext;  // gpu.hpp: a rank's GPU and its NCCL communicators

struct SummaOptions {
  int threads = 1;       // CPU threads of each rank's local GEMM
  index_t panel = 0;     // panel width in K; 0: C's column block (nb)
  LocalGemm local = LocalGemm::cpu;
  std::string gpu_impl;  // the GPU GEMM; empty: default_gpu_local_impl(dtype)
  // CPU only: pieces the local GEMM is cut into, with an MPI progress call
  // between them, while a broadcast is in flight; 0: chosen by size.
  int progress_pieces = 0;
  Transport transport = Transport::mpi;
  // transport == nccl: the rank's GPU and communicators, made once over C's
  // process array (NCCL set-up costs far more than a panel).
  const GpuProcessContext* gpus = nullptr;
};

// The local GEMM one rank runs, resolved from SummaOptions on that rank.
struct LocalGemmPlan {
  Device device = Device::cpu;
  std::string impl;  // a registered implementation's name
  int gpu = -1;      // CUDA device index when device == gpu
  int threads = 1;   // CPU threads
  std::string str() const;  // "cpu parray-cpu, 1 thread" / "gpu 0 cuda-12-best"
};
template <class T>
LocalGemmPlan plan_local_gemm(const SummaOptions& options, const ProcCoord& me);
// The registry's GPU default when it has this dtype, else parray's fastest
// FP64-capable GPU kernel; throws parray::Error when the build has no GPU GEMM.
std::string default_gpu_local_impl(Dtype dtype);

// What one call moved and where its time went, on this rank.
struct SummaStats {
  double bcast_bytes = 0;        // panels this rank took part in (sent as root or received)
  double recv_bytes = 0;         // of those, received from another rank
  double redistribute_bytes = 0; // sent by redistribute() to line operands up
  index_t steps = 0;             // panels
  index_t local_calls = 0;       // local GEMM calls (steps x pieces)
  double wait_ms = 0;            // blocked in MPI_Waitall for a panel: communication not hidden
  double pack_ms = 0;            // copying panels into send buffers (and, on GPU, waiting for a host buffer)
  double local_ms = 0;           // CPU: in the local GEMM; GPU: set-up, uploads, queuing, final wait and download
                                 // (NCCL: queuing the panels' broadcasts and GEMMs and waiting for the GPU)
  double upload_ms = 0;          // NCCL with host operands: uploading A, B (C) and bringing C back
  LocalGemmPlan plan;
};

template <class T>
SummaStats summa(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                 DistMatrix<T>& c, const SummaOptions& options = {});

extern template SummaStats summa<float>(Trans, Trans, float, const DistMatrix<float>&, const DistMatrix<float>&,
                                        float, DistMatrix<float>&, const SummaOptions&);
extern template SummaStats summa<double>(Trans, Trans, double, const DistMatrix<double>&,
                                         const DistMatrix<double>&, double, DistMatrix<double>&,
                                         const SummaOptions&);

// The one-rank reference of a parallel efficiency: C = A B (column-major, A
// m x k, B k x n, C m x n, tight leading dimensions, host memory) with
// `plan`'s GEMM on this rank alone, verified by `check` (which reads C) and
// then timed `repeats` times (median). On a GPU the operands are uploaded
// first and the time is the GEMM's alone (CUDA events), as a one-GPU program
// holding its data would see it.
template <class T>
Measurement measure_local_gemm(const LocalGemmPlan& plan, index_t m, index_t n, index_t k, const T* a, const T* b,
                               T* c, int repeats, const std::function<Verdict()>& check);

// ScaLAPACK's psgemm / pdgemm on the same grid and data (BLACS "Row" grid
// over MPI_COMM_WORLD). scalapack_available() is false where the build found
// no ScaLAPACK; scalapack_gemm then throws parray::Error.
bool scalapack_available();
template <class T>
void scalapack_gemm(Trans trans_a, Trans trans_b, T alpha, const DistMatrix<T>& a, const DistMatrix<T>& b, T beta,
                    DistMatrix<T>& c);

}  // namespace parray::mpi
