#include "parray/registry.hpp"

#include <algorithm>
#include <mutex>
#include <string_view>

#include "parray/config.hpp"

namespace parray {

Registry& registry() {
  static Registry r;
  static std::once_flag once;
  std::call_once(once, [] {
    register_backends(r);  // the backends built in, in their order (CMakeLists.txt's PARRAY_BACKENDS)
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
