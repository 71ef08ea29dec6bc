// The one registry of GEMM implementations. The CLI lists and selects from it,
// the tests iterate over it and the benchmarks read it; nothing else keeps a
// list of implementations.
//
// An implementation receives a GemmCall in which the dispatcher (gemm.cpp) has
// already handled the trivial cases: M, N, K >= 1 and alpha != 0. It must
// still honour beta == 0 (C not read) and work for every layout its
// `unsupported` hook accepts.
#pragma once

#include <algorithm>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parray/matrix.hpp"

namespace parray {

enum class Device { cpu, gpu };
inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "gpu"; }

template <class T>
struct GemmCall {
  T alpha;
  MatrixView<const T> a;  // M x K
  MatrixView<const T> b;  // K x N
  T beta;
  MatrixView<T> c;        // M x N
  int threads;            // >= 1, already resolved
};

struct GemmImpl {
  std::string name;
  std::string description;
  Device device = Device::cpu;
  bool baseline = false;       // a comparator (OpenBLAS, BLIS, cuBLAS), not parray's own
  bool threaded = false;       // honours GemmCall::threads
  // Benchmarks time it in a child process of its own, with the thread count
  // in its environment (OpenBLAS, BLIS: their thread pools would otherwise
  // share the process with parray's, and BLIS's OpenMP build reads the count
  // only from the environment). Tests still call it in the process.
  bool own_process = false;
  std::string preconditions;   // human-readable, shown by `parray list`
  // Groups a user's --impl list can name instead of spelling out names:
  // "ladder" (the CPU and GPU ladders' steps; "cpu-ladder", "gpu-ladder"),
  // "tensor" (tensor-core kernels), "paper" (the Parray paper's figures),
  // "baseline" (comparators).
  std::vector<std::string> tags;
  bool has_tag(const std::string& t) const { return std::find(tags.begin(), tags.end(), t) != tags.end(); }
  // Which of its kernels a library picked on this CPU (OpenBLAS's core, BLIS's
  // configuration), asked after a call; empty where not known. Benchmarks
  // record it, so that a baseline held back by its CPU detection (or by an
  // OPENBLAS_CORETYPE in the environment) is seen as such.
  std::function<std::string()> kernel_info;
  // Memory the operands must be in (device for GPU kernels).
  Memory operand_memory = Memory::paged;
  std::function<void(const GemmCall<float>&)> run_f32;   // empty: no FP32
  std::function<void(const GemmCall<double>&)> run_f64;  // empty: no FP64
  // Returns why this implementation cannot take operands of these layouts,
  // or an empty string when it can. Empty hook: every layout.
  std::function<std::string(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c)>
      unsupported;

  bool supports(Dtype d) const { return d == Dtype::f32 ? bool(run_f32) : bool(run_f64); }
  std::string dtypes() const {
    std::string s;
    if (run_f32) s += "f32";
    if (run_f64) s += s.empty() ? "f64" : ",f64";
    return s;
  }
  std::string why_not(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) const {
    return unsupported ? unsupported(a, b, c) : std::string();
  }
  template <class T>
  void run(const GemmCall<T>& call) const {
    if constexpr (std::is_same_v<T, float>) run_f32(call);
    else run_f64(call);
  }
};

// An optional part that this build or this machine lacks, for `parray list`.
struct MissingPart {
  std::string name;
  std::string reason;
};

class Registry {
 public:
  void add(GemmImpl impl);
  // By name; "cpu" and "gpu" resolve to that device's default. Throws
  // parray::Error naming the known implementations when not found.
  const GemmImpl& find(const std::string& name) const;
  const GemmImpl* find_or_null(const std::string& name) const;
  const std::vector<GemmImpl>& all() const { return impls_; }
  void set_default(Device device, const std::string& name);
  std::string default_name(Device device) const;

  void add_missing(MissingPart part);
  const std::vector<MissingPart>& missing() const { return missing_; }

 private:
  std::vector<GemmImpl> impls_;
  std::vector<MissingPart> missing_;
  std::string default_cpu_, default_gpu_;
};

// The process-wide registry, filled on first use with parray's own
// implementations (CPU ladder, and CUDA kernels when built with CUDA).
// Baselines live outside the library and add themselves through
// register_baselines() (src/baselines), called by the CLI, tests and benchmarks.
Registry& registry();

// Registration hooks, one per backend (each in its own translation unit).
void register_cpu_ladder(Registry& r);
void register_cuda_backend(Registry& r);  // defined only when built with CUDA

}  // namespace parray
