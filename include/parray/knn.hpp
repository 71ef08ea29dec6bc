// Exact k-nearest-neighbour search and the GEMV lab report's sorted distances.
//
// Exact: the result equals an FP64 brute force on any finite data, ties by
// base index (knn_exact.hpp defines the FP64 key and how the search proves it
// found the k best). Candidates come from parray's own GEMM (the FP32
// expansion ||q||^2 + ||x||^2 - 2 q.x, or q.x for IP) with a rigorous bound on
// its rounding error; every candidate that the bound cannot rule out is
// decided on its exact key. Distances returned are the exact keys rounded
// once: L2 squared distances, ascending; IP inner products, descending.
// The k best per query are kept while the distance tiles are produced (never
// the full Q x N matrix): memory stays bounded whatever Q and N.
// Inputs must be finite (the .fvecs reader and the CLI check it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parray/core.hpp"

namespace parray {

enum class Metric { l2, ip };
inline const char* metric_name(Metric m) { return m == Metric::l2 ? "l2" : "ip"; }
Metric parse_metric(const std::string& s);  // "l2" or "ip", else parray::Error

struct KnnOptions {
  index_t k = 10;
  Metric metric = Metric::l2;
  int threads = 0;          // CPU threads, 0: OMP_NUM_THREADS or all cores
  index_t query_tile = 0;   // queries per GEMM tile, 0: automatic
  index_t base_tile = 0;    // base vectors per GEMM tile, 0: automatic
  std::string gemm = "";    // GPU: GEMM implementation for the inner products ("" = gpu.knn_gemm, else the
                            // default GPU GEMM asked for TF32; docs/knn.md)
  // GPU: the CUDA stream of the search's work (nullptr: the calling thread's
  // default stream). The search waits for the stream's earlier work and
  // returns with its results on the host side done: it synchronises this
  // stream (never the device, never the legacy default stream).
  GpuStream stream = nullptr;
};

// Checks k, n, q, d and throws parray::Error with a message that says what is wrong.
void check_knn_problem(index_t n, index_t q, index_t d, const KnnOptions& options);

// CPU k-NN. base: n x d, queries: q x d, both row-major and contiguous, host
// memory. distances and indices: q x k row-major (L2: squared distances,
// ascending; IP: inner products, descending). T = float uses parray's CPU
// SGEMM; T = double (the ground truth) its DGEMM.
template <class T>
void knn_cpu(const T* base, index_t n, const T* queries, index_t q, index_t d, const KnnOptions& options,
             T* distances, index_t* indices);

// Optional 16-bit storage of the base (half the memory and bandwidth): IEEE
// binary16 or bfloat16 bit patterns. Each base tile is widened to FP32 just
// before its GEMM and every exact key reads the widened values: the search is
// exact for the stored (rounded) base.
enum class Storage { f32, f16, bf16 };
Storage parse_storage(const std::string& s);  // "f32", "f16" or "bf16"
inline const char* storage_name(Storage s) { return s == Storage::f32 ? "f32" : s == Storage::f16 ? "f16" : "bf16"; }
// Round to nearest even; f16 overflows to infinity (the CLI checks |x| <= 65504).
std::vector<std::uint16_t> to_16bit(const float* x, index_t count, Storage storage);
void from_16bit(const std::uint16_t* x, index_t count, Storage storage, float* out);
void knn_cpu_16bit(const std::uint16_t* base, Storage storage, index_t n, const float* queries, index_t q, index_t d,
                   const KnnOptions& options, float* distances, index_t* indices);

// The GEMV lab report: the distances from one query to all n base vectors, sorted with
// their indices (ties by index). The products come from parray's CPU GEMV.
template <class T>
void distances_sorted_cpu(const T* base, index_t n, index_t d, const T* query, Metric metric, int threads,
                          T* distances, index_t* indices);

// recall@k of `found` (q x k_found, the first k used) against exact ground
// truth `truth` (q x k_truth, k_truth >= k), as ann-benchmarks counts it: a
// returned neighbour counts when its exact FP64 key (exact_key) is no worse
// than that of the k-th true neighbour, so ties at the k-th distance count.
double knn_recall(const float* base, index_t n, const float* queries, index_t q, index_t d, Metric metric,
                  const index_t* found, index_t k_found, const std::int32_t* truth, index_t k_truth, index_t k);

// Uniform [offset - 1, offset + 1) synthetic vectors (n x d), seeded. A large
// offset puts the data far from the origin relative to its spread, where the
// FP32 expansion alone cannot rank it.
std::vector<float> synthetic_vectors(index_t n, index_t d, std::uint64_t seed, double offset = 0);

namespace cuda {

// GPU versions (src/cuda/knn/), defined only when built with CUDA. All
// pointers are device memory; the work goes on KnnOptions::stream (nullptr:
// the calling thread's default stream), and the k-NN calls return once it
// has run there.
// Any k from 1 to N: k <= 2048 in one pass of GEMM tile + fused selection per
// base tile; larger k by merged passes (each tile's rows sorted, then merged
// with the k best so far). N < 2^31. Indices are int64.
void knn_device(const float* base, index_t n, const float* queries, index_t q, index_t d, const KnnOptions& options,
                float* distances, index_t* indices);
// The base stored on the device as 16-bit patterns (Storage::f16 / bf16, as
// to_16bit writes them): each base tile is widened to FP32 before its GEMM and
// the norms come from the widened values, so the result is exactly that of
// knn_device on the widened (rounded) base.
void knn_device_16bit(const std::uint16_t* base, Storage storage, index_t n, const float* queries, index_t q, index_t d,
                      const KnnOptions& options, float* distances, index_t* indices);
// The GEMV lab report on the GPU: one fused kernel (distances + a bitonic sort in
// registers, warp shuffles and shared memory) for n <= 4096, else a distance
// kernel + CUB radix sort.
// Queued on `stream` (nullptr: the calling thread's default stream);
// asynchronous like a kernel launch.
void distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                             float* distances, index_t* indices, GpuStream stream = nullptr);
// Per-call times of distances_sorted_device on the same data, microseconds:
// back_to_back_us = CUDA events around `calls` calls issued back to back,
// divided by calls (launch included, as PyTorch's per-call figure is);
// single_sync_us = median host time of one call + cudaStreamSynchronize
// (min(calls, 2000) samples); single_event_us = one call between events.
struct DistCallTiming {
  double back_to_back_us = 0, single_sync_us = 0, single_event_us = 0;
  int calls = 0;
};
DistCallTiming time_distances_sorted_device(const float* base, index_t n, index_t d, const float* query, Metric metric,
                                            float* distances, index_t* indices, int calls);

}  // namespace cuda

}  // namespace parray
