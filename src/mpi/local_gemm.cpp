// Which GEMM a rank runs locally (CPU or GPU), and the one-rank reference time
// that dist-gemm's parallel efficiency divides by.
#include <algorithm>
#include <memory>
#include <vector>

#include "panel_gemm.hpp"
#include "parray/config.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray::mpi {

namespace {
// The GPU default (gpu-auto) is FP32 only. For FP64 the fastest of
// parray's own GPU kernels measured on an H200 is ladder step 5
// (docs/perf-notes.md); step 4 ties it. cuBLAS (`--local-impl cublas`) is the
// baseline, not parray's own.
constexpr const char* kGpuFp64Fallback = "cuda-05-smem-at";
}  // namespace

LocalGemm parse_local_gemm(const std::string& text) {
  if (text == "cpu") return LocalGemm::cpu;
  if (text == "gpu") return LocalGemm::gpu;
  if (text == "auto") return LocalGemm::automatic;
  throw Error("unknown local GEMM '" + text + "' (use cpu, gpu or auto)");
}

Transport parse_transport(const std::string& text) {
  if (text == "mpi") return Transport::mpi;
  if (text == "nccl") return Transport::nccl;
  throw Error("unknown transport '" + text + "' (use nccl or mpi)");
}

std::string LocalGemmPlan::str() const {
  if (device == Device::gpu) return "gpu " + std::to_string(gpu) + " " + impl;
  return "cpu " + impl + ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads");
}

std::string default_gpu_local_impl(Dtype dtype) {
  const Registry& r = registry();
  const GemmImpl* d = r.find_or_null("gpu");
  if (d && d->supports(dtype)) return d->name;
  const GemmImpl* f = r.find_or_null(kGpuFp64Fallback);
  if (f && f->supports(dtype)) return f->name;
  throw Error(std::string("no GPU GEMM for ") + dtype_name(dtype) + " in this build (parray list shows why)");
}

template <class T>
LocalGemmPlan plan_local_gemm(const SummaOptions& o, const ProcCoord& me) {
  LocalGemmPlan plan;
  plan.threads = o.threads;
  const int devices = detail::gpu_count();
  if (o.local == LocalGemm::gpu && devices == 0)
    throw Error(PARRAY_HAVE_CUDA ? "GPU local GEMM: no CUDA device on this host"
                                 : "GPU local GEMM: parray was built without CUDA");
  if (o.local == LocalGemm::cpu || (o.local == LocalGemm::automatic && devices == 0)) {
    plan.device = Device::cpu;
    plan.impl = registry().find("cpu").name;
    return plan;
  }
  plan.device = Device::gpu;
  // Ranks sharing a host take its GPUs in turn (more ranks than GPUs share them).
  plan.gpu = me.node_rank % devices;
  plan.impl = o.gpu_impl.empty() ? default_gpu_local_impl(dtype_of<T>()) : o.gpu_impl;
  const GemmImpl& impl = registry().find(plan.impl);
  if (impl.device != Device::gpu || !impl.supports(dtype_of<T>()))
    throw Error("GPU local GEMM: '" + plan.impl + "' is not a GPU implementation with " +
                dtype_name(dtype_of<T>()) + " (parray list)");
  return plan;
}

namespace {

// The whole product by a CPU plan: C written in place.
template <class T>
Trial cpu_trial(const LocalGemmPlan& plan, index_t m, index_t n, index_t k, const T* a, const T* b, T* c) {
  const index_t lda = std::max<index_t>(1, m), ldb = std::max<index_t>(1, k), ldc = std::max<index_t>(1, m);
  Trial t;
  t.run = [=, opts = GemmOptions{plan.impl, plan.threads}] {
    gemm<T>(Order::col_major, Trans::no, Trans::no, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc, opts);
  };
  return t;
}

#if PARRAY_HAVE_CUDA
// The whole product by a GPU plan: the operands uploaded once (outside the
// time), C brought back for the check, each call timed with CUDA events.
template <class T>
Trial gpu_trial(const LocalGemmPlan& plan, index_t m, index_t n, index_t k, const T* a, const T* b, T* c) {
  detail::use_gpu(plan.gpu);
  auto dev = std::make_shared<std::vector<Array<T>>>();  // column-major m x k, k x n, m x n
  dev->reserve(3);
  dev->emplace_back(Layout::dense({k, m}), Memory::device);
  dev->emplace_back(Layout::dense({n, k}), Memory::device);
  dev->emplace_back(Layout::dense({n, m}), Memory::device);
  copy_bytes((*dev)[0].data(), Memory::device, a, Memory::paged, static_cast<std::size_t>(m * k) * sizeof(T));
  copy_bytes((*dev)[1].data(), Memory::device, b, Memory::paged, static_cast<std::size_t>(k * n) * sizeof(T));
  Trial t;
  t.run = [=, opts = GemmOptions{plan.impl, 1}] {
    const index_t lda = std::max<index_t>(1, m), ldb = std::max<index_t>(1, k), ldc = std::max<index_t>(1, m);
    gemm<T>(T(1), MatrixView<const T>{(*dev)[0].data(), MatrixLayout::col_major(m, k, lda), Memory::device},
            MatrixView<const T>{(*dev)[1].data(), MatrixLayout::col_major(k, n, ldb), Memory::device}, T(0),
            MatrixView<T>{(*dev)[2].data(), MatrixLayout::col_major(m, n, ldc), Memory::device}, opts);
  };
  t.finish = [dev, c, m, n] {
    copy_bytes(c, Memory::paged, (*dev)[2].data(), Memory::device, static_cast<std::size_t>(m * n) * sizeof(T));
  };
  t.time_one = [run = t.run] { return cuda::event_time_ms(run); };
  return t;
}
#endif

}  // namespace

template <class T>
Measurement measure_local_gemm(const LocalGemmPlan& plan, index_t m, index_t n, index_t k, const T* a, const T* b,
                               T* c, int repeats, const std::function<Verdict()>& check) {
  if (repeats < 1) throw Error("measure_local_gemm: repeats must be at least 1");
  Trial t;
  if (plan.device == Device::cpu) {
    t = cpu_trial(plan, m, n, k, a, b, c);
  } else {
#if PARRAY_HAVE_CUDA
    t = gpu_trial(plan, m, n, k, a, b, c);
#else
    throw Error("measure_local_gemm: a GPU plan in a build without CUDA");
#endif
  }
  t.check = check;
  TimingPlan timing;
  timing.warmup = 0, timing.min_reps = timing.max_reps = repeats, timing.target_seconds = 0;
  return verify_then_time(t, timing);
}

template LocalGemmPlan plan_local_gemm<float>(const SummaOptions&, const ProcCoord&);
template LocalGemmPlan plan_local_gemm<double>(const SummaOptions&, const ProcCoord&);
template Measurement measure_local_gemm<float>(const LocalGemmPlan&, index_t, index_t, index_t, const float*,
                                               const float*, float*, int, const std::function<Verdict()>&);
template Measurement measure_local_gemm<double>(const LocalGemmPlan&, index_t, index_t, index_t, const double*,
                                                const double*, double*, int, const std::function<Verdict()>&);

}  // namespace parray::mpi
