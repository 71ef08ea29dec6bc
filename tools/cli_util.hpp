// Parsing helpers shared by the CLI's subcommands (tools/*.cpp). Every
// failure throws parray::Error, which main() turns into one line on stderr and
// exit status 2.
#pragma once

#include <cstdint>
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

}  // namespace parray::tools
