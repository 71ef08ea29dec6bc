// SpeedTable (include/parray/dispatch.hpp): reading bench CSVs, and the
// nearest measured shape.
#include "parray/dispatch.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>


namespace parray {

namespace {

// One CSV line split at the commas outside double quotes.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') quoted = !quoted;
    else if (ch == ',' && !quoted) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

// Shapes whose extents are all multiples of 16 and shapes with one that is
// not are different cases: a kernel built on the tensor cores may lose half
// its speed between 4096^3 and 4097 x 4095 x 4099 (docs/perf-notes.md), so
// one never stands for the other.
bool aligned(index_t m, index_t n, index_t k) { return m % 16 == 0 && n % 16 == 0 && k % 16 == 0; }

double log_distance(const SpeedPoint& p, index_t m, index_t n, index_t k) {
  auto d = [](index_t a, index_t b) { return std::abs(std::log2(double(a)) - std::log2(double(b))); };
  return d(p.m, m) + d(p.n, n) + d(p.k, k);
}

}  // namespace

SpeedTable SpeedTable::from_csv(const std::string& text, const std::string& source) {
  SpeedTable t;
  t.source_ = source;
  std::istringstream in(text);
  std::string line;
  std::map<std::string, std::size_t> col;
  if (!std::getline(in, line)) throw Error("speed table " + source + ": empty");
  const std::vector<std::string> head = csv_fields(line);
  for (std::size_t i = 0; i < head.size(); ++i) col[head[i]] = i;
  for (const char* need : {"impl", "dtype", "m", "n", "k", "layout", "gflops", "ok"})
    if (!col.count(need))
      throw Error("speed table " + source + ": no column '" + need + "' (a parray bench gemm CSV?)");
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    const std::vector<std::string> f = csv_fields(line);
    if (f.size() < head.size()) throw Error("speed table " + source + ":" + std::to_string(lineno) + ": short row");
    if (f[col["ok"]] != "1" || f[col["layout"]] != "row") continue;
    try {
      SpeedPoint p{f[col["impl"]], f[col["dtype"]] == "f64" ? Dtype::f64 : Dtype::f32, std::stoll(f[col["m"]]),
                   std::stoll(f[col["n"]]), std::stoll(f[col["k"]]), std::stod(f[col["gflops"]])};
      if (p.m > 0 && p.n > 0 && p.k > 0 && p.gflops > 0) t.points_.push_back(p);
    } catch (const std::logic_error&) {
      throw Error("speed table " + source + ":" + std::to_string(lineno) + ": not a number in m, n, k or gflops");
    }
  }
  return t;
}

SpeedTable SpeedTable::from_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw Error("speed table " + path + ": cannot be read");
  std::ostringstream s;
  s << f.rdbuf();
  return from_csv(s.str(), path);
}

std::string SpeedTable::fastest(Dtype d, index_t m, index_t n, index_t k,
                                const std::vector<std::string>& candidates) const {
  auto is_candidate = [&](const SpeedPoint& p) {
    if (p.dtype != d || aligned(p.m, p.n, p.k) != aligned(m, n, k)) return false;
    for (const std::string& c : candidates)
      if (c == p.impl) return true;
    return false;
  };
  const SpeedPoint* nearest = nullptr;
  double best = std::numeric_limits<double>::infinity();
  for (const SpeedPoint& p : points_) {
    if (!is_candidate(p)) continue;
    const double d = log_distance(p, m, n, k);
    if (d < best) best = d, nearest = &p;
  }
  if (!nearest) return {};
  const SpeedPoint* fastest = nearest;
  for (const SpeedPoint& p : points_)
    if (is_candidate(p) && p.m == nearest->m && p.n == nearest->n && p.k == nearest->k && p.gflops > fastest->gflops)
      fastest = &p;
  return fastest->impl;
}

}  // namespace parray
