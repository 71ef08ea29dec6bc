#include "parray/registry.hpp"

#include <algorithm>
#include <mutex>
#include <string_view>

#include "parray/config.hpp"
#include "../cpu/gemm/gemm.hpp"

namespace parray {

void Registry::add(GemmImpl impl) {
  if (find_or_null(impl.name)) throw Error("registry: implementation '" + impl.name + "' registered twice");
  if (impl.name == "cpu" || impl.name == "gpu" || impl.name == "all")
    throw Error("registry: '" + impl.name + "' is a reserved name");
  impls_.push_back(std::move(impl));
}

const GemmImpl* Registry::find_or_null(const std::string& name) const {
  std::string wanted = name;
  if (name == "cpu") wanted = default_cpu_;
  if (name == "gpu") wanted = default_gpu_;
  for (const GemmImpl& i : impls_)
    if (i.name == wanted) return &i;
  return nullptr;
}

const GemmImpl& Registry::find(const std::string& name) const {
  if (const GemmImpl* i = find_or_null(name)) return *i;
  if (name == "gpu") throw Error("no GPU implementation is available (parray list shows why)");
  std::string known;
  for (const GemmImpl& i : impls_) known += (known.empty() ? "" : ", ") + i.name;
  throw Error("unknown implementation '" + name + "' (known: " + known + ")");
}

void Registry::set_default(Device device, const std::string& name) {
  (device == Device::cpu ? default_cpu_ : default_gpu_) = name;
}

std::string Registry::default_name(Device device) const {
  return device == Device::cpu ? default_cpu_ : default_gpu_;
}

void Registry::add_missing(MissingPart part) {
  for (const MissingPart& m : missing_)
    if (m.name == part.name) return;
  missing_.push_back(std::move(part));
}

Registry& registry() {
  static Registry r;
  static std::once_flag once;
  std::call_once(once, [] {
    register_cpu_ladder(r);
    cpu::register_cpu_gemm(r);  // after the ladder: it becomes the CPU default
#if PARRAY_HAVE_CUDA
    register_cuda_backend(r);
#endif
    // What configure found missing, one "name: reason" per line.
    std::string_view text = PARRAY_CONFIGURE_MISSING;
    while (!text.empty()) {
      const std::size_t end = std::min(text.find('\n'), text.size());
      const std::string_view line = text.substr(0, end);
      if (const std::size_t colon = line.find(": "); colon != std::string_view::npos)
        r.add_missing({std::string(line.substr(0, colon)), "configure: " + std::string(line.substr(colon + 2))});
      text.remove_prefix(std::min(end + 1, text.size()));
    }
  });
  return r;
}

}  // namespace parray
