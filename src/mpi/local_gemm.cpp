// Which GEMM a rank runs locally (CPU or GPU), and the one-rank reference time
// that dist-gemm's parallel efficiency divides by.
#include <algorithm>
#include <chrono>
#include <vector>

#include "panel_gemm.hpp"
#include "parray/config.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray::mpi {

namespace {
// The GPU default (cuda-12-best) is FP32 only. For FP64 the fastest of
// parray's own GPU kernels measured on an H200 is ladder step 5 (4.2 TFLOP/s at
// 1037x1055x1031, bench/results/nvidia-h200-2026-11-21-gpu-check.csv); step 4
// ties it. cuBLAS (`--local-impl cublas`) is the baseline, not parray's own.
constexpr const char* kGpuFp64Fallback = "cuda-05-smem-at";
}  // namespace

LocalGemm parse_local_gemm(const std::string& text) {
  if (text == "cpu") return LocalGemm::cpu;
  if (text == "gpu") return LocalGemm::gpu;
  if (text == "auto") return LocalGemm::automatic;
  throw Error("unknown local GEMM '" + text + "' (use cpu, gpu or auto)");
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

template <class T>
double time_local_gemm(const LocalGemmPlan& plan, index_t m, index_t n, index_t k, const T* a, const T* b, T* c,
                       int repeats) {
  if (repeats < 1) throw Error("time_local_gemm: repeats must be at least 1");
  const index_t lda = std::max<index_t>(1, m), ldb = std::max<index_t>(1, k), ldc = std::max<index_t>(1, m);
  std::vector<double> times;
  if (plan.device == Device::cpu) {
    const GemmOptions opts{plan.impl, plan.threads};
    auto run = [&] { gemm<T>(Order::col_major, Trans::no, Trans::no, m, n, k, T(1), a, lda, b, ldb, T(0), c, ldc, opts); };
    run();
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      run();
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  } else {
#if PARRAY_HAVE_CUDA
    detail::use_gpu(plan.gpu);
    Array<T> da(Layout::dense({k, m}), Memory::device), db(Layout::dense({n, k}), Memory::device),
        dc(Layout::dense({n, m}), Memory::device);  // column-major m x k, k x n, m x n
    copy_bytes(da.data(), Memory::device, a, Memory::paged, static_cast<std::size_t>(m * k) * sizeof(T));
    copy_bytes(db.data(), Memory::device, b, Memory::paged, static_cast<std::size_t>(k * n) * sizeof(T));
    const GemmOptions opts{plan.impl, 1};
    auto run = [&] {
      gemm<T>(T(1), MatrixView<const T>{da.data(), MatrixLayout::col_major(m, k, lda), Memory::device},
              MatrixView<const T>{db.data(), MatrixLayout::col_major(k, n, ldb), Memory::device}, T(0),
              MatrixView<T>{dc.data(), MatrixLayout::col_major(m, n, ldc), Memory::device}, opts);
    };
    run();
    cuda::synchronize();
    copy_bytes(c, Memory::paged, dc.data(), Memory::device, static_cast<std::size_t>(m * n) * sizeof(T));
    for (int r = 0; r < repeats; ++r) times.push_back(cuda::event_time_ms(run));
#else
    throw Error("time_local_gemm: a GPU plan in a build without CUDA");
#endif
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

template LocalGemmPlan plan_local_gemm<float>(const SummaOptions&, const ProcCoord&);
template LocalGemmPlan plan_local_gemm<double>(const SummaOptions&, const ProcCoord&);
template double time_local_gemm<float>(const LocalGemmPlan&, index_t, index_t, index_t, const float*, const float*,
                                       float*, int);
template double time_local_gemm<double>(const LocalGemmPlan&, index_t, index_t, index_t, const double*,
                                        const double*, double*, int);

}  // namespace parray::mpi
