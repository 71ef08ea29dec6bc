// Multi-level GEMM (task 2 of the CUDA lab report): CPU threads each driving the
// GPU on a part of the product, split by rows of A or by K.
//
//   seed-split-{rows,k}-t{1,2,4,8}     the lab report's way: every OpenMP thread
//       allocates its own device buffers, copies its part of A and all of B,
//       runs the task-1 kernel (cuda-01-naive-bs256) and copies back; the K
//       split sums the partial products on the host in a critical section.
//   ml-split-{rows,k}-t{1,2,4,8}       done right, host-resident operands: one
//       CUDA stream per thread, pinned staging kept between calls, B copied
//       once (each thread a slice) and shared, copies of one chunk overlapped
//       with the kernel of the previous one, step 12 per part, the K split
//       reduced on the device.
//   ml-dev-split-{rows,k}-t{1,2,4,8}   the same split body on device-resident
//       operands (compare with cuda-12-best, the single kernel), its parts
//       enqueued in turn by the calling thread on their streams.
//
// The split is written once (src/cuda/multilevel/splits.cpp) as the body of a
// thread array (thread_array.hpp): thread i owns part i and stream i of the
// GPU. Host operands run it over CPU threads (CpuThreadArray: each thread
// packs and stages its own part); device operands over the streams of the GPU
// driven by one host thread (StreamThreadArray), or over CPU threads with
// PARRAY_ML_DRIVER=threads. Where operands live only changes how a part is
// staged.
#pragma once

#include <string>

namespace parray::multilevel {

}  // namespace parray::multilevel

namespace parray {
class Registry;
}

namespace parray::multilevel {

// Adds the implementations above to a registry; called by
// register_cuda_backend (src/cuda/register.cu), so they are always listed.
void register_multilevel(Registry& r);

// "seed-split-rows-t4", "ml-split-k-t2", "ml-dev-split-rows-t8".
// family: "seed", "ml" or "ml-dev"; split: "rows" or "k".
inline std::string impl_name(const std::string& family, const std::string& split, int threads) {
  return family + "-split-" + split + "-t" + std::to_string(threads);
}

}  // namespace parray::multilevel
