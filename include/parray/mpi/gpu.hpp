// MPI process arrays on GPUs: one rank per GPU, SUMMA's panels GPU to GPU
// over NCCL (docs/distributed.md, "One rank per GPU over NCCL").
//
//   parray::mpi::MpiThreadArray grid({2, 1});
//   parray::mpi::GpuProcessContext gpus(grid);         // this rank's GPU, NCCL row and column communicators
//   parray::mpi::GpuDistMatrix<float> a(gpus, da), b(gpus, db), c(gpus, dc);
//   a.upload(host_a), b.upload(host_b);                // or GpuDistMatrix::from_desc on device data
//   summa<float>(1.f, a, b, 0.f, c, {.gpu_impl = "cuda-14-3xtf32"});
//
// A rank's GPU is its rank among the array's processes on its host
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), modulo the host's GPUs. Each
// process row and each process column of more than one rank gets an NCCL
// communicator, bootstrapped through MPI: the row's (column's) first rank
// makes the ncclUniqueId and MPI_Bcasts it over the row's (column's) MPI
// communicator, then every member calls ncclCommInitRank with its column
// (row) index as its NCCL rank, so NCCL ranks equal MPI ranks there.
#pragma once

#include <memory>

#include "parray/array.hpp"
#include "parray/mpi/summa.hpp"

namespace parray::mpi {

// Whether this build has the NCCL transport (CUDA and NCCL were found).
bool nccl_available();

struct GpuBinding {
  // A host with more ranks of the array than GPUs is an error unless this is
  // set; the ranks then share its GPUs in turn. NCCL still refuses two ranks of
  // one communicator (process row or column) on one GPU.
  bool share_gpus = false;
};

// Whether every host of the array has a GPU for each of its ranks (false in a
// build without CUDA). Collective over grid; the same answer on every rank.
bool every_rank_has_a_gpu(const MpiThreadArray& grid);

// A rank's GPU and its NCCL communicators along the process grid. Collective
// over the array. A binding that cannot work (no GPU on a host, more ranks
// than GPUs, no NCCL in this build) throws the same parray::Error on every
// rank, naming the first rank concerned; a failure after that (CUDA, NCCL)
// aborts every rank with a line naming this one (MpiThreadArray::detour).
class GpuProcessContext {
 public:
  explicit GpuProcessContext(const MpiThreadArray& grid, const GpuBinding& binding = {});
  ~GpuProcessContext();
  GpuProcessContext(const GpuProcessContext&) = delete;
  GpuProcessContext& operator=(const GpuProcessContext&) = delete;

  const MpiThreadArray& grid() const { return *grid_; }
  int device() const { return device_; }        // this rank's CUDA device
  int host_gpus() const { return host_gpus_; }  // CUDA devices on this rank's host
  void bind() const;                            // makes device() current on the calling thread

  struct Comms;  // NCCL communicators and the communication stream (src/mpi/nccl_context.hpp)
  const Comms& comms() const { return *comms_; }

 private:
  const MpiThreadArray* grid_;
  int device_ = -1, host_gpus_ = 0;
  std::unique_ptr<Comms> comms_;
};

// A block-cyclic distributed matrix (dist_matrix.hpp) whose local blocks live
// on the ranks' GPUs: column-major with leading dimension lld, so desc() is
// the ScaLAPACK descriptor of the device data.
template <class T>
class GpuDistMatrix : public LocalBlock<T> {
 public:
  // Owns its local block on the rank's GPU, lld = max(1, local rows).
  GpuDistMatrix(const GpuProcessContext& gpus, const BlockCyclic& dist);
  // Wraps local blocks the caller holds on this rank's GPU (no copy).
  static GpuDistMatrix from_desc(const GpuProcessContext& gpus, const int desc[9], T* device_local);

  const GpuProcessContext& gpus() const { return *gpus_; }

  // host's local block to the device (same distribution), and back; each
  // returns when the copy is done.
  void upload(const DistMatrix<T>& host);
  void download(DistMatrix<T>& host) const;
  // Every local element NaN, so that a check sees any element a GEMM did not write.
  void poison();

 private:
  GpuDistMatrix(const GpuProcessContext& gpus, const BlockCyclic& dist, bool allocate);
  void check_same_shape(const BlockCyclic& host, const char* what) const;

  using LocalBlock<T>::dist_;
  using LocalBlock<T>::mloc_;
  using LocalBlock<T>::nloc_;
  using LocalBlock<T>::lld_;
  using LocalBlock<T>::data_;
  const GpuProcessContext* gpus_;
  std::shared_ptr<Array<T>> own_;  // shared: copies of the matrix see the same device block
};

// SUMMA on operands that live on the GPUs, panels broadcast with NCCL:
// C = alpha A B + beta C with A M x K in C's row blocks (mb, rsrc) and B
// K x N in C's column blocks (nb, csrc), A's column blocks equal to B's row
// blocks (the panel width kb; any source process for K). Other shapes throw
// parray::Error (summa() on host DistMatrix operands with transport nccl
// redistributes first). The local GEMM is options.gpu_impl, or the GPU
// default for T; options.local, threads, transport and gpus are not used.
//
// Per panel k, on every rank: the communication stream (non-blocking, high
// priority) waits until the GEMM that last read slot k % 2 is done, the owner
// packs B's panel where it is strided, ncclBroadcast sends A's panel along the
// process row and B's down the process column into slot k % 2, and an event
// lets the GEMM of panel k, on the stream parray's GPU GEMMs use, start after
// them; so panel k + 1 travels while panel k is multiplied.
template <class T>
SummaStats summa(T alpha, const GpuDistMatrix<T>& a, const GpuDistMatrix<T>& b, T beta, GpuDistMatrix<T>& c,
                 const SummaOptions& options = {});

extern template class GpuDistMatrix<float>;
extern template class GpuDistMatrix<double>;
extern template SummaStats summa<float>(float, const GpuDistMatrix<float>&, const GpuDistMatrix<float>&, float,
                                        GpuDistMatrix<float>&, const SummaOptions&);
extern template SummaStats summa<double>(double, const GpuDistMatrix<double>&, const GpuDistMatrix<double>&, double,
                                         GpuDistMatrix<double>&, const SummaOptions&);

}  // namespace parray::mpi
