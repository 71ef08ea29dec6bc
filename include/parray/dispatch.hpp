// A table of measured speeds that can refine the default GPU GEMM's plan
// (include/parray/plan.hpp, docs/dispatch.md): `parray tune` measures the
// candidates on this GPU and the tuning key gpu.speed_table points at its CSV.
//
// A SpeedTable holds the rows of a `parray bench gemm` CSV (impl, dtype, m, n,
// k, layout, GFLOP/s, ok). For a call of shape (m, n, k) it finds the measured
// shape nearest in log2 of each extent, among the shapes of the same
// alignment (every extent a multiple of 16, or not), and, among the
// candidates measured there, names the fastest.
#pragma once

#include <string>
#include <vector>

#include "parray/core.hpp"

namespace parray {

struct SpeedPoint {
  std::string impl;
  Dtype dtype = Dtype::f32;
  index_t m = 0, n = 0, k = 0;
  double gflops = 0;
};

class SpeedTable {
 public:
  SpeedTable() = default;
  // The verified row-major rows of a bench CSV; `source` names it in errors.
  static SpeedTable from_csv(const std::string& text, const std::string& source);
  static SpeedTable from_file(const std::string& path);

  bool empty() const { return points_.empty(); }
  const std::string& source() const { return source_; }
  const std::vector<SpeedPoint>& points() const { return points_; }

  // Among `candidates`, the one measured fastest at the measured shape of
  // dtype d nearest (m, n, k) where any candidate was measured; "" when none was.
  std::string fastest(Dtype d, index_t m, index_t n, index_t k, const std::vector<std::string>& candidates) const;

 private:
  std::vector<SpeedPoint> points_;
  std::string source_;
};


}  // namespace parray
