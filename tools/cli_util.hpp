// Parsing helpers shared by the CLI's subcommands (tools/*.cpp). Every
// failure throws parray::Error, which main() turns into one line on stderr and
// exit status 2.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "parray/core.hpp"

namespace parray::tools {

// "a,b,,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_list(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// A whole number in [lo, hi]; `what` names the option in the message.
inline index_t whole(const std::string& text, const std::string& what, index_t lo = 0, index_t hi = INT64_MAX) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size()) throw Error(what + " '" + text + "' is not a whole number");
  if (v < 0 && lo >= 0) throw Error(what + " " + text + " is negative");
  if (v < lo || v > hi)
    throw Error(what + " " + text + " is out of range " + std::to_string(lo) + ".." + std::to_string(hi));
  return v;
}

// "4096" -> 4096^3; "MxKxN" -> M, K, N (bench gemm16 and gemm8's --sizes).
inline std::vector<index_t> cube_or_mkn(const std::string& text) {
  const std::vector<std::string> parts = split_list(text, 'x');
  if (parts.size() != 1 && parts.size() != 3) throw Error("size '" + text + "' is neither N nor MxKxN");
  std::vector<index_t> d;
  for (const std::string& p : parts) d.push_back(whole(p, "size", 1, 1 << 20));
  if (d.size() == 1) d = {d[0], d[0], d[0]};
  return d;
}

inline std::vector<index_t> whole_list(const std::string& s, const std::string& what, index_t lo = 0,
                                       index_t hi = INT64_MAX) {
  std::vector<index_t> out;
  for (const std::string& t : split_list(s)) out.push_back(whole(t, what, lo, hi));
  if (out.empty()) throw Error(what + " is empty");
  return out;
}

inline Dtype parse_dtype(const std::string& s) {
  if (s == "f32") return Dtype::f32;
  if (s == "f64") return Dtype::f64;
  throw Error("unknown dtype '" + s + "' (use f32 or f64)");
}

// Refuses before any work a run whose host memory would not fit: "WHAT needs
// about X GiB, this machine has Y GiB" (rather than an "out of memory" with
// no size once the allocation fails).
inline void check_host_memory(double bytes, const std::string& what) {
  const double have = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (have > 0 && bytes > 0.9 * have) {
    char text[160];
    std::snprintf(text, sizeof text, " needs about %.1f GiB, this machine has %.1f GiB", bytes / (1 << 30),
                  have / (1 << 30));
    throw Error(what + text);
  }
}

// Refuses before the run an output file that cannot be written (a run's
// results are not lost at its end). The file is opened to append, so an
// existing one is left as it is until the run rewrites it.
inline void check_writable(const std::string& path, const std::string& option) {
  if (path.empty()) return;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw Error(option + " " + path + ": cannot be written");
  std::fclose(f);
}

}  // namespace parray::tools
