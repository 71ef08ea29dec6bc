// An alpha-beta-gamma cost model of distributed GEMM on GPUs (docs/distributed.md,
// "Cost model"): 2-D SUMMA as parray's NCCL SUMMA runs it (panel broadcasts along
// process rows and columns, overlapped with the local GEMM of the previous panel) and
// a 2.5-D schedule (c layers, each a SUMMA over K / c, then a reduce-scatter of C over
// the layers). time = alpha * messages + beta * bytes + gamma * flops, per process grid
// and replication factor c; `parray dist-model` prints its predictions.
#pragma once

#include <string>
#include <vector>

#include "parray/core.hpp"

namespace parray::dist_model {

// Machine parameters. Rates rather than inverse rates: beta = 1 / bytes_per_s and
// gamma = 1 / flops_per_s.
struct Machine {
  double alpha_s = 5e-6;          // latency of one message (one hop of a ring)
  double intra_bytes_per_s = 0;   // GPU to GPU inside a node (NVLink or PCIe)
  double net_bytes_per_s = 50e9;  // GPU to GPU across nodes: one 400 Gb/s NIC per GPU
  double flops_per_s = 0;         // the local GEMM's rate
  double gemm_call_s = 0;         // the local GEMM's fixed cost per call
  double memory_bytes = 0;        // usable device memory per GPU
  index_t gpus_per_node = 8;
  index_t word_bytes = 4;  // FP32
};

enum class Gpu { h100, h200 };
enum class LocalGemm { step12, step13 };  // cuda-12-best, cuda-13-3xtf32

// The parameters fitted to bench/results (see the definitions in src/core/dist_model.cpp
// for the files); tests/dist_model_test.cpp refits them from those files.
Machine fitted_machine(Gpu gpu, LocalGemm local, bool nvlink = true);

struct Problem {
  index_t m = 0, n = 0, k = 0;
};

// rows x cols GPUs per layer, `layers` layers (c); layers = 1 is 2-D SUMMA.
struct Grid {
  index_t rows = 1, cols = 1, layers = 1;
  index_t ranks() const { return rows * cols * layers; }
  std::string name() const;
};

struct Prediction {
  Grid grid;
  index_t panels = 0;            // per layer
  double panel_width = 0;        // columns of K per panel
  double seconds = 0;            // whole call
  double compute_s = 0;          // local GEMMs alone
  double panel_comm_s = 0;       // one panel's broadcasts
  double reduce_s = 0;           // reduce-scatter of C over the layers (2.5-D)
  double words_per_rank = 0;     // words received by a rank (broadcasts + reduce-scatter)
  double messages_per_rank = 0;  // messages on a rank's critical path
  double memory_bytes_per_rank = 0;
  bool fits = false;      // memory_bytes_per_rank <= machine.memory_bytes
  double efficiency = 0;  // one GPU's time / (ranks * seconds)
};

// The most square rows x cols with rows * cols * layers = ranks, rows <= cols.
Grid most_square_grid(index_t ranks, index_t layers = 1);

// The panel width parray's NCCL SUMMA takes: K / 8 rounded to 16, within 256..4096.
index_t default_panel_width(index_t k);

// Words a rank receives in SUMMA on rows x cols over the whole of K:
// (cols - 1) / cols * M K / rows of A panels plus (rows - 1) / rows * K N / cols of B.
double summa_words_per_rank(const Problem& p, index_t rows, index_t cols);

// One GPU doing the whole product (the efficiency's reference).
double one_gpu_seconds(const Machine& machine, const Problem& p);

// The predicted time of `grid` (layers = 1: SUMMA; > 1: 2.5-D). Throws parray::Error
// on a size or grid that is not positive or a machine without rates.
Prediction predict(const Machine& machine, const Problem& p, const Grid& grid);

// The fastest 2.5-D schedule over c = 2 .. ranks^(1/3) dividing ranks, among those
// that fit in memory; Prediction::grid.layers == 0 when none does.
Prediction best_25d(const Machine& machine, const Problem& p, index_t ranks);

// Least squares, by the normal equations: y = intercept + slope x.
struct LineFit {
  double intercept = 0, slope = 0;
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);
// y = slope x through the origin.
double fit_slope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace parray::dist_model
