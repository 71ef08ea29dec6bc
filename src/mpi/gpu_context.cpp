// Process arrays on GPUs (gpu.hpp): each rank's GPU, its NCCL row and column
// communicators bootstrapped through MPI, and distributed matrices whose
// local blocks live on the GPUs.
#include <climits>

#include "nccl_context.hpp"
#include "panel_gemm.hpp"
#include "parray/config.hpp"
#include "parray/mpi/gpu.hpp"

#if PARRAY_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "parray/cuda/check.hpp"
#endif

namespace parray::mpi {

bool nccl_available() { return PARRAY_HAVE_NCCL != 0; }

namespace {

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  return std::string(name, static_cast<std::size_t>(len));
}

// What keeps this rank from having a GPU of its own; empty when nothing does.
std::string binding_problem(const ProcCoord& me, int host_gpus, const GpuBinding& binding) {
  if (!nccl_available()) return "parray was built without NCCL (the nccl transport needs CUDA and NCCL)";
  if (host_gpus == 0) return "rank " + std::to_string(me.tid()) + " on host " + host_name() + " has no CUDA device";
  if (me.node_size > host_gpus && !binding.share_gpus)
    return "host " + host_name() + " runs " + std::to_string(me.node_size) + " ranks of the process array and has " +
           std::to_string(host_gpus) + (host_gpus == 1 ? " GPU" : " GPUs") +
           ": one rank per GPU (GpuBinding::share_gpus, dist-gemm --share-gpus, lets ranks share them)";
  return {};
}

// The first failing rank's message (in rank order), the same on every rank
// of comm; empty when no rank failed.
std::string first_error(MPI_Comm comm, const std::string& mine) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int first = mine.empty() ? INT_MAX : rank;
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == INT_MAX) return {};
  int len = rank == first ? static_cast<int>(mine.size()) : 0;
  MPI_Bcast(&len, 1, MPI_INT, first, comm);
  std::string message = rank == first ? mine : std::string(static_cast<std::size_t>(len), ' ');
  MPI_Bcast(message.data(), len, MPI_CHAR, first, comm);
  return message;
}

#if PARRAY_HAVE_NCCL
// An NCCL communicator over the MPI communicator `over` (size ranks, this one
// `rank`): its rank 0 makes the id, MPI carries it to the others. None for one rank.
ncclComm_t nccl_comm(MPI_Comm over, int size, int rank) {
  if (size < 2) return nullptr;
  ncclUniqueId id{};
  if (rank == 0) PARRAY_NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, over);
  ncclComm_t comm = nullptr;
  PARRAY_NCCL_CHECK(ncclCommInitRank(&comm, size, id, rank));
  return comm;
}
#endif

}  // namespace

bool every_rank_has_a_gpu(const MpiThreadArray& grid) {
  int ok = grid.coord().node_size <= detail::gpu_count() ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, grid.comm());
  return ok == 1;
}

#if PARRAY_HAVE_NCCL
GpuProcessContext::Comms::~Comms() {
  // Not checked: a destructor must not throw.
  if (row) ncclCommDestroy(row);
  if (col) ncclCommDestroy(col);
}
#else
struct GpuProcessContext::Comms {};
#endif

GpuProcessContext::GpuProcessContext(const MpiThreadArray& grid, const GpuBinding& binding)
    : grid_(&grid), host_gpus_(detail::gpu_count()) {
  const ProcCoord& me = grid.coord();
  // Checked together, so that every rank throws the same error instead of
  // some waiting for the others in ncclCommInitRank.
  const std::string problem = first_error(grid.comm(), binding_problem(me, host_gpus_, binding));
  if (!problem.empty()) throw Error(problem);
  device_ = me.node_rank % host_gpus_;
  grid.detour([&](const ProcCoord& p) {
#if PARRAY_HAVE_NCCL
    bind();
    multigpu::detail::nccl_safe_environment();
    comms_ = std::make_unique<Comms>();
    comms_->stream = std::make_unique<multigpu::detail::Stream>(true);
    // Every rank makes its row's communicator, then its column's: each init
    // waits only for ranks that are making the same one.
    comms_->row = nccl_comm(p.row_comm, p.cols, p.col);
    comms_->col = nccl_comm(p.col_comm, p.rows, p.row);
#else
    (void)p;
#endif
  });
}

GpuProcessContext::~GpuProcessContext() = default;

void GpuProcessContext::bind() const { detail::use_gpu(device_); }

// ---- distributed matrices on the GPUs -------------------------------------

template <class T>
GpuDistMatrix<T>::GpuDistMatrix(const GpuProcessContext& gpus, const BlockCyclic& dist, bool allocate)
    : LocalBlock<T>(fitted(dist, gpus.grid()), gpus.grid().coord(), Memory::device), gpus_(&gpus) {
  if (!allocate) return;
  gpus.bind();
  own_ = std::make_shared<Array<T>>(Layout::dense({std::max<index_t>(1, lld_ * nloc_)}), Memory::device);
  data_ = own_->data();
}

template <class T>
GpuDistMatrix<T>::GpuDistMatrix(const GpuProcessContext& gpus, const BlockCyclic& dist)
    : GpuDistMatrix(gpus, dist, true) {}

template <class T>
GpuDistMatrix<T> GpuDistMatrix<T>::from_desc(const GpuProcessContext& gpus, const int desc[9], T* device_local) {
  const Desc d = Desc::from(desc);
  GpuDistMatrix x(gpus, BlockCyclic{d.m, d.n, d.mb, d.nb, gpus.grid().rows(), gpus.grid().cols(), d.rsrc, d.csrc},
                  false);
  x.wrap(device_local, d.lld);
  return x;
}

template <class T>
void GpuDistMatrix<T>::check_same_shape(const BlockCyclic& host, const char* what) const {
  if (!host.same_as(dist_))
    throw Error(std::string("GPU distributed matrix: ") + what + " a matrix distributed as " + host.str() +
                ", this one is " + dist_.str());
}

#if PARRAY_HAVE_CUDA
namespace {
// rows x cols column-major between host and device, synchronous.
template <class T>
void copy_block(T* dst, index_t ld_dst, const T* src, index_t ld_src, index_t rows, index_t cols, cudaMemcpyKind kind) {
  if (rows == 0 || cols == 0) return;
  PARRAY_CUDA_CHECK(cudaMemcpy2D(dst, static_cast<std::size_t>(ld_dst) * sizeof(T), src,
                                 static_cast<std::size_t>(ld_src) * sizeof(T),
                                 static_cast<std::size_t>(rows) * sizeof(T), static_cast<std::size_t>(cols), kind));
}
}  // namespace

template <class T>
void GpuDistMatrix<T>::upload(const DistMatrix<T>& host) {
  check_same_shape(host.dist(), "upload from");
  gpus_->bind();
  copy_block(data_, lld_, host.data(), host.lld(), mloc_, nloc_, cudaMemcpyHostToDevice);
}

template <class T>
void GpuDistMatrix<T>::download(DistMatrix<T>& host) const {
  check_same_shape(host.dist(), "download into");
  gpus_->bind();
  copy_block(host.data(), host.lld(), data_, lld_, mloc_, nloc_, cudaMemcpyDeviceToHost);
}

template <class T>
void GpuDistMatrix<T>::poison() {
  if (mloc_ == 0 || nloc_ == 0) return;
  gpus_->bind();
  // All bits set is a NaN in FP32 and FP64. On the default stream, before any
  // GEMM queued after it.
  PARRAY_CUDA_CHECK(cudaMemset2D(data_, static_cast<std::size_t>(lld_) * sizeof(T), 0xff,
                                 static_cast<std::size_t>(mloc_) * sizeof(T), static_cast<std::size_t>(nloc_)));
}
#else
template <class T>
void GpuDistMatrix<T>::upload(const DistMatrix<T>&) {
  throw Error("GPU distributed matrix: parray was built without CUDA");
}
template <class T>
void GpuDistMatrix<T>::download(DistMatrix<T>&) const {
  throw Error("GPU distributed matrix: parray was built without CUDA");
}
template <class T>
void GpuDistMatrix<T>::poison() {
  throw Error("GPU distributed matrix: parray was built without CUDA");
}
#endif

template class GpuDistMatrix<float>;
template class GpuDistMatrix<double>;

}  // namespace parray::mpi
