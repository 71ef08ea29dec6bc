// The alpha-beta-gamma model of distributed GEMM (include/parray/dist_model.hpp,
// docs/distributed.md "Cost model").
#include "parray/dist_model.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace parray::dist_model {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Least-squares fits of bench/results (tests/dist_model_test.cpp refits them):
// the local GEMM, t = gemm_call_s + 2 M N K / flops_per_s over the row-major rows of
// h100-2026-11-22-gemm-3xtf32.csv and h200-2026-11-22-gemm-3xtf32.csv;
// NVLink, t = bytes / intra_bytes_per_s through the origin over the extra time of
// operands scattered from GPU 0 (1.5 N^2 words over NVLink) in
// 2xh200-2026-11-22-multigpu-device.csv; PCIe, the contiguous one-GPU pinned copies
// of 2xh200-2026-11-22-pcie.csv.
struct LocalFit {
  double call_s, flops_per_s;
};
constexpr LocalFit kH100Step12{1.93044e-05, 47.0607e12}, kH100Step13{3.95774e-04, 83.1645e12};
constexpr LocalFit kH200Step12{7.16604e-05, 47.3809e12}, kH200Step13{1.38682e-04, 87.9752e12};
constexpr double kNvlinkBytesPerS = 363.569e9;
constexpr double kPcieBytesPerS = 55.30e9;

void require(bool ok, const std::string& what) {
  if (!ok) throw Error(what);
}

// Ring broadcast (what NCCL runs): pipelined, so every link carries the panel once
// and the latency is one hop per further rank.
double broadcast_s(double bytes, index_t group, double alpha_s, double bytes_per_s) {
  if (group <= 1) return 0;
  return alpha_s * double(group - 1) + bytes / bytes_per_s;
}

// Ring reduce-scatter of `bytes` over `group` ranks: each receives (group-1)/group of it.
double reduce_scatter_s(double bytes, index_t group, double alpha_s, double bytes_per_s) {
  if (group <= 1) return 0;
  return alpha_s * double(group - 1) + bytes * double(group - 1) / double(group) / bytes_per_s;
}

// Ranks are numbered layer-major, then row-major inside a layer, and fill nodes in
// order: a process row is `cols` consecutive ranks, a process column `rows` ranks
// `cols` apart, a layer group `layers` ranks rows * cols apart.
enum class Along { row, col, layer };

bool group_crosses_nodes(index_t first, index_t stride, index_t size, index_t gpus_per_node) {
  return first / gpus_per_node != (first + stride * (size - 1)) / gpus_per_node;
}

// The groups along one direction use the network if any of them crosses nodes.
double link_rate(const Machine& m, const Grid& g, Along along) {
  const index_t layer = g.rows * g.cols, per_node = m.gpus_per_node;
  bool crosses = false;
  for (index_t l = 0; l < g.layers; ++l)
    for (index_t i = 0; i < g.rows; ++i)
      for (index_t j = 0; j < g.cols; ++j) {
        const index_t rank = l * layer + i * g.cols + j;
        crosses |= along == Along::row && j == 0 && group_crosses_nodes(rank, 1, g.cols, per_node);
        crosses |= along == Along::col && i == 0 && group_crosses_nodes(rank, g.cols, g.rows, per_node);
        crosses |= along == Along::layer && l == 0 && group_crosses_nodes(rank, layer, g.layers, per_node);
      }
  return crosses ? m.net_bytes_per_s : m.intra_bytes_per_s;
}

void check(const Machine& m, const Problem& p, const Grid& g) {
  require(p.m > 0 && p.n > 0 && p.k > 0, "dist-model: M, N and K must be positive");
  require(g.rows > 0 && g.cols > 0 && g.layers > 0,
          "dist-model: the grid " + g.name() + " has a zero or negative side");
  require(g.layers <= p.k, "dist-model: more layers (" + std::to_string(g.layers) + ") than columns of K");
  require(m.alpha_s >= 0 && m.intra_bytes_per_s > 0 && m.net_bytes_per_s > 0 && m.flops_per_s > 0,
          "dist-model: alpha must be >= 0 and the link and GEMM rates > 0");
  require(m.gpus_per_node > 0 && m.word_bytes > 0, "dist-model: GPUs per node and word size must be positive");
}

index_t ceil_div(index_t a, index_t b) { return (a + b - 1) / b; }

}  // namespace

std::string Grid::name() const {
  std::string s = std::to_string(rows);
  s.append("x").append(std::to_string(cols));
  if (layers != 1) s.append("x").append(std::to_string(layers));
  return s;
}

Machine fitted_machine(Gpu gpu, LocalGemm local, bool nvlink) {
  const bool h100 = gpu == Gpu::h100, step12 = local == LocalGemm::step12;
  const LocalFit f = h100 ? (step12 ? kH100Step12 : kH100Step13) : (step12 ? kH200Step12 : kH200Step13);
  Machine m;
  m.flops_per_s = f.flops_per_s;
  m.gemm_call_s = f.call_s;
  m.intra_bytes_per_s = nvlink ? kNvlinkBytesPerS : kPcieBytesPerS;
  m.memory_bytes = (h100 ? 78 : 139) * kGiB;  // what the devices report as total memory
  return m;
}

Grid most_square_grid(index_t ranks, index_t layers) {
  require(ranks > 0 && layers > 0 && ranks % layers == 0,
          "dist-model: " + std::to_string(ranks) + " GPUs do not split into " + std::to_string(layers) + " layers");
  const index_t per_layer = ranks / layers;
  index_t rows = index_t(std::sqrt(double(per_layer)));
  while (per_layer % rows != 0) --rows;
  return {rows, per_layer / rows, layers};
}

index_t default_panel_width(index_t k) {
  const index_t rounded = std::max<index_t>(16, (k / 8) / 16 * 16);
  return std::min<index_t>(std::clamp<index_t>(rounded, 256, 4096), std::max<index_t>(k, 1));
}

double summa_words_per_rank(const Problem& p, index_t rows, index_t cols) {
  const double a = double(cols - 1) / double(cols) * double(p.m) * double(p.k) / double(rows);
  const double b = double(rows - 1) / double(rows) * double(p.k) * double(p.n) / double(cols);
  return a + b;
}

double one_gpu_seconds(const Machine& machine, const Problem& p) {
  return machine.gemm_call_s + 2.0 * double(p.m) * double(p.n) * double(p.k) / machine.flops_per_s;
}

Prediction predict(const Machine& machine, const Problem& p, const Grid& g) {
  check(machine, p, g);
  Prediction r;
  r.grid = g;
  const double wb = double(machine.word_bytes);
  const index_t layer_k = ceil_div(p.k, g.layers);
  const double m_loc = double(ceil_div(p.m, g.rows)), n_loc = double(ceil_div(p.n, g.cols));
  r.panels = ceil_div(layer_k, default_panel_width(layer_k));
  r.panel_width = double(layer_k) / double(r.panels);
  // A's panel goes along the process row (cols ranks, consecutive), B's down the column.
  const double a_s =
      broadcast_s(m_loc * r.panel_width * wb, g.cols, machine.alpha_s, link_rate(machine, g, Along::row));
  const double b_s =
      broadcast_s(r.panel_width * n_loc * wb, g.rows, machine.alpha_s, link_rate(machine, g, Along::col));
  r.panel_comm_s = a_s + b_s;
  const double gemm_s = machine.gemm_call_s + 2.0 * m_loc * n_loc * r.panel_width / machine.flops_per_s;
  r.compute_s = double(r.panels) * gemm_s;
  // Panel t + 1's broadcasts overlap panel t's GEMM: the first broadcast and the last
  // GEMM are exposed, every step between costs the slower of the two.
  const double summa_s = r.panel_comm_s + double(r.panels - 1) * std::max(gemm_s, r.panel_comm_s) + gemm_s;
  const double c_bytes = m_loc * n_loc * wb;
  r.reduce_s = reduce_scatter_s(c_bytes, g.layers, machine.alpha_s, link_rate(machine, g, Along::layer));
  r.seconds = summa_s + r.reduce_s;
  r.words_per_rank = summa_words_per_rank({p.m, p.n, layer_k}, g.rows, g.cols) +
                     double(g.layers - 1) / double(g.layers) * m_loc * n_loc;
  r.messages_per_rank = double(r.panels) * double((g.cols - 1) + (g.rows - 1)) + double(g.layers - 1);
  // Own blocks of A (m_loc x layer_k / cols), B (layer_k / rows x n_loc), C, and two
  // slots of each panel.
  const double own =
      m_loc * double(layer_k) / double(g.cols) + double(layer_k) / double(g.rows) * n_loc + m_loc * n_loc;
  r.memory_bytes_per_rank = wb * (own + 2.0 * r.panel_width * (m_loc + n_loc));
  r.fits = machine.memory_bytes <= 0 || r.memory_bytes_per_rank <= machine.memory_bytes;
  r.efficiency = one_gpu_seconds(machine, p) / (double(g.ranks()) * r.seconds);
  return r;
}

Prediction best_25d(const Machine& machine, const Problem& p, index_t ranks) {
  Prediction best;
  best.grid.layers = 0;
  for (index_t c = 2; c * c * c <= ranks; ++c) {
    if (ranks % c != 0 || c > p.k) continue;
    const Prediction r = predict(machine, p, most_square_grid(ranks, c));
    if (r.fits && (best.grid.layers == 0 || r.seconds < best.seconds)) best = r;
  }
  return best;
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  require(x.size() == y.size() && x.size() >= 2, "fit_line: needs two or more (x, y) pairs of equal count");
  const double n = double(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  require(sxx > 0, "fit_line: all x are equal");
  const double slope = sxy / sxx;
  return {my - slope * mx, slope};
}

double fit_slope(const std::vector<double>& x, const std::vector<double>& y) {
  require(x.size() == y.size() && !x.empty(), "fit_slope: needs one or more (x, y) pairs of equal count");
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxx += x[i] * x[i], sxy += x[i] * y[i];
  require(sxx > 0, "fit_slope: all x are zero");
  return sxy / sxx;
}

}  // namespace parray::dist_model
