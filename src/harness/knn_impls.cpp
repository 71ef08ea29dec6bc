// The k-NN implementation registry (knn_bench.hpp) and the data its searches
// share: parray's CPU and GPU k-NN here, FAISS in src/baselines/faiss_knn.cpp.
// `parray knn` and `parray bench knn` both search through it.
#include <algorithm>
#include <cmath>
#include <mutex>

#include <fmt/format.h>

#include "parray/array.hpp"
#include "parray/config.hpp"
#include "harness/knn_bench.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {

// ---- KnnData ------------------------------------------------------------------

struct KnnData::DeviceCopies {
#if PARRAY_HAVE_CUDA
  std::unique_ptr<Array<float>> base, queries;
  std::unique_ptr<Array<std::uint16_t>> base16;
#endif
};

KnnData::KnnData(std::vector<float> base, index_t n, std::vector<float> queries, index_t q, index_t d,
                 Storage storage)
    : n_(n), q_(q), d_(d), storage_(storage), base_(std::move(base)), queries_(std::move(queries)),
      device_(std::make_unique<DeviceCopies>()) {
  if (n < 0 || q < 0 || d < 0 || base_.size() != std::size_t(n * d) || queries_.size() != std::size_t(q * d))
    throw Error(fmt::format("k-NN data: {} base and {} query values are not {} x {} and {} x {}", base_.size(),
                            queries_.size(), n, d, q, d));
}

KnnData::~KnnData() = default;

const std::uint16_t* KnnData::base_16bit() {
  if (storage_ == Storage::f32) throw Error("k-NN data: the base is stored as f32, not 16-bit");
  if (base16_.empty() && !base_.empty()) {
    if (storage_ == Storage::f16)
      for (float v : base_)
        if (std::abs(v) > 65504.0f)
          throw Error("--storage f16: the base holds " + std::to_string(v) + ", beyond FP16's 65504");
    base16_ = to_16bit(base_.data(), n_ * d_, storage_);
  }
  return base16_.data();
}

#if PARRAY_HAVE_CUDA

namespace {

// A device copy of host data, at least one element (a Q = 0 search still
// passes valid pointers).
template <class T>
std::unique_ptr<Array<T>> to_device(const T* host, index_t rows, index_t cols) {
  if (!cuda_available()) throw Error("k-NN data: no GPU is present");
  auto a = std::make_unique<Array<T>>(Layout::dense({std::max<index_t>(rows, 1), cols}), Memory::device);
  copy_bytes(a->data(), Memory::device, host, Memory::paged, std::size_t(rows * cols) * sizeof(T));
  return a;
}

}  // namespace

const float* KnnData::device_base() {
  if (!device_->base) device_->base = to_device(base_.data(), n_, d_);
  return device_->base->data();
}

const std::uint16_t* KnnData::device_base_16bit() {
  if (!device_->base16) device_->base16 = to_device(base_16bit(), n_, d_);
  return device_->base16->data();
}

const float* KnnData::device_queries() {
  if (!device_->queries) device_->queries = to_device(queries_.data(), q_, d_);
  return device_->queries->data();
}

#else

const float* KnnData::device_base() { throw Error("k-NN data: parray was built without CUDA"); }
const std::uint16_t* KnnData::device_base_16bit() { throw Error("k-NN data: parray was built without CUDA"); }
const float* KnnData::device_queries() { throw Error("k-NN data: parray was built without CUDA"); }

#endif

const FaissFlatIndex& KnnData::faiss_index(Metric metric) {
  std::unique_ptr<FaissFlatIndex>& index = faiss_[metric == Metric::l2 ? 0 : 1];
  if (!index) index = std::make_unique<FaissFlatIndex>(base_.data(), n_, d_, metric);
  return *index;
}

// ---- the registry -------------------------------------------------------------

std::string knn_search_name(const KnnImpl& impl, Storage storage, const KnnOptions& options) {
  std::string s = impl.name;
  if (!options.gemm.empty()) s += ":" + options.gemm;
  if (impl.stores_16bit && storage != Storage::f32) s += std::string("-") + storage_name(storage);
  return s;
}

namespace {

// Results of a search on the host: q x k, poisoned until the first run.
struct HostResults {
  std::vector<float> dist;
  std::vector<index_t> idx;
  explicit HostResults(std::size_t size) : dist(size, std::nanf("")), idx(size, -1) {}
};

KnnSearch cpu_search(const KnnImpl& impl, KnnData& x, const KnnOptions& o) {
  check_knn_problem(x.n(), x.q(), x.d(), o);
  KnnSearch s;
  s.name = knn_search_name(impl, x.storage(), o);
  auto r = std::make_shared<HostResults>(std::size_t(x.q() * o.k));
  if (x.storage() == Storage::f32) {
    s.run = [&x, o, r] { knn_cpu<float>(x.base(), x.n(), x.queries(), x.q(), x.d(), o, r->dist.data(), r->idx.data()); };
  } else {
    const std::uint16_t* base16 = x.base_16bit();
    s.run = [&x, o, r, base16] {
      knn_cpu_16bit(base16, x.storage(), x.n(), x.queries(), x.q(), x.d(), o, r->dist.data(), r->idx.data());
    };
  }
  s.results = [r](float* distances, index_t* indices) {
    std::copy(r->dist.begin(), r->dist.end(), distances);
    std::copy(r->idx.begin(), r->idx.end(), indices);
  };
  return s;
}

#if PARRAY_HAVE_CUDA

// Results of a search on the device: q x k (at least one element), poisoned
// until the first run.
struct DeviceResults {
  std::size_t size;
  Array<float> dist;
  Array<index_t> idx;
  explicit DeviceResults(std::size_t n)
      : size(n), dist(Layout::dense({std::max<index_t>(index_t(n), 1)}), Memory::device),
        idx(Layout::dense({std::max<index_t>(index_t(n), 1)}), Memory::device) {
    const HostResults poison(n);
    copy_bytes(dist.data(), Memory::device, poison.dist.data(), Memory::paged, n * sizeof(float));
    copy_bytes(idx.data(), Memory::device, poison.idx.data(), Memory::paged, n * sizeof(index_t));
  }
};

KnnSearch gpu_search(const KnnImpl& impl, KnnData& x, const KnnOptions& o) {
  if (!cuda_available()) throw Error(impl.name + ": no GPU is present");
  check_knn_problem(x.n(), x.q(), x.d(), o);
  KnnSearch s;
  s.name = knn_search_name(impl, x.storage(), o);
  auto r = std::make_shared<DeviceResults>(std::size_t(x.q() * o.k));
  const float* queries = x.device_queries();
  if (x.storage() == Storage::f32) {
    const float* base = x.device_base();
    s.run = [&x, o, r, base, queries] {
      cuda::knn_device(base, x.n(), queries, x.q(), x.d(), o, r->dist.data(), r->idx.data());
    };
  } else {  // only the 16-bit copy of the base goes to the device
    const std::uint16_t* base16 = x.device_base_16bit();
    s.run = [&x, o, r, base16, queries] {
      cuda::knn_device_16bit(base16, x.storage(), x.n(), queries, x.q(), x.d(), o, r->dist.data(), r->idx.data());
    };
  }
  s.finish = [] { cuda::synchronize(); };
  s.results = [r](float* distances, index_t* indices) {
    copy_bytes(distances, Memory::paged, r->dist.data(), Memory::device, r->size * sizeof(float));
    copy_bytes(indices, Memory::paged, r->idx.data(), Memory::device, r->size * sizeof(index_t));
  };
  return s;
}

#endif

KnnImpl cpu_impl() {
  KnnImpl i;
  i.name = "knn-cpu";
  i.description = "parray's exact CPU k-NN: GEMM tiles (parray SGEMM) + bounded candidates decided in FP64";
  i.threaded = true;
  i.stores_16bit = true;
  i.preconditions = "host data; base FP32, or f16/bf16 widened per tile";
  i.prepare = [info = KnnImpl(i)](KnnData& x, const KnnOptions& o) { return cpu_search(info, x, o); };
  return i;
}

KnnImpl gpu_impl() {
  KnnImpl i;
  i.name = "knn-gpu";
  i.description = "parray's exact GPU k-NN: GEMM tiles (a GPU GEMM, KnnOptions::gemm) + fused selection";
  i.device = Device::gpu;
  i.stores_16bit = true;
  i.operand_memory = Memory::device;
  i.preconditions = "a GPU; N < 2^31; base FP32, or f16/bf16 on the device";
#if PARRAY_HAVE_CUDA
  i.prepare = [info = KnnImpl(i)](KnnData& x, const KnnOptions& o) { return gpu_search(info, x, o); };
#endif
  return i;
}

}  // namespace

KnnRegistry& knn_registry() {
  static KnnRegistry r;
  static std::once_flag once;
  std::call_once(once, [] {
    r.add(cpu_impl());
    r.set_default(Device::cpu, "knn-cpu");
#if PARRAY_HAVE_CUDA
    r.add(gpu_impl());
    r.set_default(Device::gpu, "knn-gpu");
#else
    r.add_absent(gpu_impl(), "built without CUDA");
#endif
    register_knn_baselines(r);
  });
  return r;
}

}  // namespace parray
