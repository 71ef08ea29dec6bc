// The one shape of a table of implementations, shared by GEMM (registry.hpp),
// GEMV (gemv.hpp) and k-NN (knn_bench.hpp). An entry is an ImplInfo (what
// `parray list` shows and what the benchmarks group by) plus the operation's
// own way to run; the table finds entries by name, alias or device default,
// and records the optional parts that this build or machine lacks.
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "parray/core.hpp"
#include "parray/matrix.hpp"  // Memory

namespace parray {

enum class Device { cpu, gpu };
inline const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "gpu"; }

// What every implementation of every operation says about itself.
struct ImplInfo {
  std::string name;
  std::string description;
  Device device = Device::cpu;
  bool baseline = false;       // a comparator (OpenBLAS, BLIS, cuBLAS, FAISS), not parray's own
  bool threaded = false;       // honours a CPU thread count
  std::string preconditions;   // human-readable, shown by `parray list`
  // Groups a user's --impl list can name instead of spelling out names:
  // "ladder" (the CPU and GPU ladders' steps; "cpu-ladder", "gpu-ladder"),
  // "tensor" (tensor-core kernels), "paper" (the Parray paper's figures),
  // "baseline" (comparators).
  std::vector<std::string> tags;
  std::vector<std::string> aliases;  // other names a user may type ("faiss" for "faiss-flat")
  // Memory the operands must be in (device for GPU kernels).
  Memory operand_memory = Memory::paged;

  bool has_tag(const std::string& t) const { return std::find(tags.begin(), tags.end(), t) != tags.end(); }
  bool answers_to(const std::string& n) const {
    return n == name || std::find(aliases.begin(), aliases.end(), n) != aliases.end();
  }
};

// An implementation that runs on the GPU: its kernels take operands in
// device memory. Impl is GemmImpl, GemvImpl or another ImplInfo.
template <class Impl>
Impl gpu_impl(std::string name, std::string description, std::string preconditions) {
  Impl i;
  i.name = std::move(name);
  i.description = std::move(description);
  i.device = Device::gpu;
  i.operand_memory = Memory::device;
  i.preconditions = std::move(preconditions);
  return i;
}

// The FP32 and FP64 entry points of an operation whose call type is Call<T>.
template <template <class> class Call>
struct TypedRuns {
  std::function<void(const Call<float>&)> run_f32;   // empty: no FP32
  std::function<void(const Call<double>&)> run_f64;  // empty: no FP64

  bool supports(Dtype d) const { return d == Dtype::f32 ? bool(run_f32) : bool(run_f64); }
  std::string dtypes() const {
    std::string s;
    if (run_f32) s += "f32";
    if (run_f64) s += s.empty() ? "f64" : ",f64";
    return s;
  }
  template <class T>
  void run(const Call<T>& call) const {
    if constexpr (std::is_same_v<T, float>) run_f32(call);
    else run_f64(call);
  }
};

// An optional part that this build or this machine lacks, for `parray list`.
struct MissingPart {
  std::string name;
  std::string reason;
};

// A table of implementations of one operation. "cpu" and "gpu" name the
// device's default; "all" is reserved for the CLI. Pointers and references
// into the table stay valid until the next add().
template <class Impl>
class ImplRegistry {
 public:
  // `what` names the operation in error messages ("GEMV implementation").
  explicit ImplRegistry(std::string what) : what_(std::move(what)) {}

  void add(Impl impl) {
    for (const std::string& n : names_of(impl))
      if (n == "cpu" || n == "gpu" || n == "all") throw Error(what_ + " registry: '" + n + "' is a reserved name");
      else if (find_or_null(n)) throw Error(what_ + " registry: '" + n + "' registered twice");
    impls_.push_back(std::move(impl));
  }
  const Impl* find_or_null(const std::string& name) const {
    const std::string& wanted = name == "cpu" ? default_cpu_ : name == "gpu" ? default_gpu_ : name;
    for (const Impl& i : impls_)
      if (i.answers_to(wanted)) return &i;
    return nullptr;
  }
  // Throws parray::Error naming the known implementations when not found.
  const Impl& find(const std::string& name) const {
    if (const Impl* i = find_or_null(name)) return *i;
    if (name == "gpu" || name == "cpu")
      throw Error("no " + name + " " + what_ + " is available (parray list shows why)");
    throw Error("unknown " + what_ + " '" + name + "' (known: " + names() + ")");
  }
  const std::vector<Impl>& all() const { return impls_; }
  std::string names() const {
    std::string s;
    for (const Impl& i : impls_) s += (s.empty() ? "" : ", ") + i.name;
    return s;
  }

  void set_default(Device device, const std::string& name) { (device == Device::cpu ? default_cpu_ : default_gpu_) = name; }
  std::string default_name(Device device) const { return device == Device::cpu ? default_cpu_ : default_gpu_; }

  void add_missing(MissingPart part) {
    for (const MissingPart& m : missing_)
      if (m.name == part.name) return;
    missing_.push_back(std::move(part));
  }
  const std::vector<MissingPart>& missing() const { return missing_; }

  // An implementation this build or machine lacks, described as it would be
  // registered, and why it is missing.
  struct Absent {
    Impl impl;
    std::string reason;
  };
  // Records impl as missing (missing() lists it) so that a user's name for it
  // (its name, an alias, its device's "cpu"/"gpu") finds why, not "unknown".
  void add_absent(Impl impl, std::string reason) {
    add_missing({impl.name, reason});
    absent_.push_back({std::move(impl), std::move(reason)});
  }
  const Absent* absent_or_null(const std::string& name) const {
    for (const Absent& a : absent_) {
      const bool device_default = (name == "cpu" || name == "gpu") && name == device_name(a.impl.device) &&
                                  default_name(a.impl.device).empty();
      if (a.impl.answers_to(name) || device_default) return &a;
    }
    return nullptr;
  }

 private:
  static std::vector<std::string> names_of(const Impl& impl) {
    std::vector<std::string> n = impl.aliases;
    n.insert(n.begin(), impl.name);
    return n;
  }

  std::string what_;
  std::vector<Impl> impls_;
  std::vector<MissingPart> missing_;
  std::vector<Absent> absent_;
  std::string default_cpu_, default_gpu_;
};

}  // namespace parray
