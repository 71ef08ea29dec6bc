// The alpha-beta-gamma model of distributed GEMM (include/parray/dist_model.hpp):
// its fitted parameters against the bench/results files they come from, its
// predictions against the measured 1-, 2- and 4-GPU points (within 15 %), the
// algebra of its communication volume, and `parray dist-model`'s command line.
#include "parray/dist_model.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.hpp"

namespace dm = parray::dist_model;
using parray::index_t;

namespace {

using Row = std::map<std::string, std::string>;

// A bench/results CSV as rows of column -> text (no field there holds a comma).
std::vector<Row> read_results(const std::string& name) {
  std::ifstream in(std::string(PARRAY_RESULTS_DIR) + "/" + name);
  if (!in) ADD_FAILURE() << "cannot read bench/results/" << name;
  auto fields = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream s(line);
    std::string f;
    while (std::getline(s, f, ',')) out.push_back(f);
    return out;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = fields(line);
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    const std::vector<std::string> f = fields(line);
    Row r;
    for (std::size_t i = 0; i < header.size() && i < f.size(); ++i) r[header[i]] = f[i];
    rows.push_back(r);
  }
  return rows;
}

double num(const Row& r, const std::string& key) { return std::stod(r.at(key)); }
index_t whole(const Row& r, const std::string& key) { return std::stoll(r.at(key)); }
double flops(const Row& r) { return 2.0 * num(r, "m") * num(r, "n") * num(r, "k"); }

void expect_relative(double got, double want, double tolerance, const std::string& what) {
  EXPECT_LE(std::abs(got - want), tolerance * std::abs(want)) << what << ": " << got << " against " << want;
}

// ---- the fitted parameters come from bench/results ---------------------------------

TEST(DistModelFit, LocalGemmRatesAreTheLeastSquaresFitOfTheGemmFiles) {
  const struct {
    const char* file;
    const char* impl;
    dm::Gpu gpu;
    dm::LocalGemm local;
  } cases[] = {{"h100-2026-11-22-gemm-3xtf32.csv", "cuda-12-best", dm::Gpu::h100, dm::LocalGemm::step12},
               {"h100-2026-11-22-gemm-3xtf32.csv", "cuda-13-3xtf32", dm::Gpu::h100, dm::LocalGemm::step13},
               {"h200-2026-11-22-gemm-3xtf32.csv", "cuda-12-best", dm::Gpu::h200, dm::LocalGemm::step12},
               {"h200-2026-11-22-gemm-3xtf32.csv", "cuda-13-3xtf32", dm::Gpu::h200, dm::LocalGemm::step13}};
  for (const auto& c : cases) {
    std::vector<double> x, y;
    for (const Row& r : read_results(c.file))
      if (r.at("impl") == c.impl && r.at("layout") == "row" && r.at("ok") == "1")
        x.push_back(flops(r)), y.push_back(num(r, "ms") * 1e-3);
    ASSERT_GE(x.size(), 3u) << c.file << " " << c.impl;
    const dm::LineFit fit = dm::fit_line(x, y);
    const dm::Machine m = dm::fitted_machine(c.gpu, c.local);
    expect_relative(m.flops_per_s, 1 / fit.slope, 1e-4, std::string(c.file) + " " + c.impl + " rate");
    expect_relative(m.gemm_call_s, fit.intercept, 1e-4, std::string(c.file) + " " + c.impl + " fixed cost");
  }
}

TEST(DistModelFit, NvlinkRateIsTheFitOfOperandsScatteredFromGpu0) {
  // The same variant with operands on GPU 0 minus on the GPUs: GPU 1's halves of A
  // and B go out and its half of C comes back over NVLink, 1.5 N^2 words.
  const std::vector<Row> rows = read_results("2xh200-2026-11-22-multigpu-device.csv");
  std::vector<double> bytes, extra;
  for (const Row& from_gpu0 : rows)
    if (from_gpu0.at("operands") == "gpu0" && from_gpu0.at("impl").rfind("parray", 0) == 0)
      for (const Row& on_gpus : rows)
        if (on_gpus.at("operands") == "device" && on_gpus.at("impl") == from_gpu0.at("impl")) {
          bytes.push_back(1.5 * num(on_gpus, "m") * num(on_gpus, "n") * 4);
          extra.push_back((num(from_gpu0, "ms") - num(on_gpus, "ms")) * 1e-3);
        }
  ASSERT_EQ(bytes.size(), 2u);
  expect_relative(dm::fitted_machine(dm::Gpu::h200, dm::LocalGemm::step12).intra_bytes_per_s,
                  1 / dm::fit_slope(bytes, extra), 1e-4, "NVLink");
}

TEST(DistModelFit, PcieRateIsTheContiguousPinnedCopyRate) {
  std::vector<double> ones, seconds_per_gb;
  for (const Row& r : read_results("2xh200-2026-11-22-pcie.csv"))
    if (r.at("gpus_at_once") == "1" && r.at("row_floats") == "0" && r.at("direction") != "both")
      ones.push_back(1), seconds_per_gb.push_back(1 / num(r, "gb_per_s_per_gpu"));
  ASSERT_EQ(ones.size(), 2u);
  expect_relative(dm::fitted_machine(dm::Gpu::h200, dm::LocalGemm::step12, false).intra_bytes_per_s,
                  1e9 / dm::fit_slope(ones, seconds_per_gb), 1e-4, "PCIe");
}

// ---- predictions against measurements --------------------------------------------

dm::Machine machine_of(const std::string& file, const std::string& impl) {
  const dm::Gpu gpu = file.find("h100") != std::string::npos ? dm::Gpu::h100 : dm::Gpu::h200;
  return dm::fitted_machine(gpu,
                            impl.find("3xtf32") != std::string::npos ? dm::LocalGemm::step13 : dm::LocalGemm::step12);
}

dm::Grid grid_of(const std::string& text) {
  const std::size_t x = text.find('x');
  return {std::stoll(text.substr(0, x)), std::stoll(text.substr(x + 1)), 1};
}

const char* const kMultiGpuFiles[] = {"2xh100-2026-11-26-multigpu-device.csv", "2xh200-2026-11-22-multigpu-device.csv",
                                      "4xh200-2026-11-22-multigpu-3xtf32.csv"};

TEST(DistModelPrediction, OneGpuPointsWithin15Percent) {
  int checked = 0;
  for (const char* file : kMultiGpuFiles)
    for (const Row& r : read_results(file))
      if (r.at("impl").find("-gpu0") != std::string::npos && r.at("operands") == "device") {
        const dm::Problem p{whole(r, "m"), whole(r, "n"), whole(r, "k")};
        expect_relative(dm::one_gpu_seconds(machine_of(file, r.at("impl")), p) * 1e3, num(r, "ms"), 0.15,
                        std::string(file) + " " + r.at("impl"));
        ++checked;
      }
  for (const Row& r : read_results("2xh200-2026-11-21-dist-gemm-gpu.csv")) {
    const dm::Problem p{whole(r, "m"), whole(r, "n"), whole(r, "k")};
    expect_relative(dm::one_gpu_seconds(machine_of("h200", r.at("local")), p) * 1e3, num(r, "one_rank_ms"), 0.15,
                    "dist-gemm one rank");
    ++checked;
  }
  EXPECT_EQ(checked, 9);  // 8 single-GPU baselines of the multi-GPU runs, 1 of dist-gemm
}

TEST(DistModelPrediction, MultiGpuSummaPointsWithin15Percent) {
  int checked = 0;
  for (const char* file : kMultiGpuFiles)
    for (const Row& r : read_results(file))
      if (r.at("variant") == "2d" && r.at("operands") == "device" && r.at("impl").rfind("parray", 0) == 0) {
        const dm::Problem p{whole(r, "m"), whole(r, "n"), whole(r, "k")};
        const dm::Prediction pred = dm::predict(machine_of(file, r.at("impl")), p, grid_of(r.at("grid")));
        expect_relative(pred.seconds * 1e3, num(r, "ms"), 0.15, std::string(file) + " " + r.at("grid"));
        ++checked;
      }
  EXPECT_EQ(checked, 4);  // three on 2 GPUs (2x1), one on 4 (2x2)
}

// parray multigpu's K split is the 2.5-D schedule at its limit: G layers of one GPU
// each (no broadcasts), then a reduce-scatter of C over them.
TEST(DistModelPrediction, KSplitPointsWithin15Percent) {
  int checked = 0;
  for (const char* file : kMultiGpuFiles)
    for (const Row& r : read_results(file))
      if (r.at("variant") == "ksplit" && r.at("operands") == "device" && r.at("impl").rfind("parray", 0) == 0) {
        const dm::Problem p{whole(r, "m"), whole(r, "n"), whole(r, "k")};
        const dm::Prediction pred = dm::predict(machine_of(file, r.at("impl")), p, {1, 1, whole(r, "gpus")});
        expect_relative(pred.seconds * 1e3, num(r, "ms"), 0.15, std::string(file) + " K split on " + r.at("gpus"));
        ++checked;
      }
  EXPECT_EQ(checked, 4);
}

TEST(DistModelPrediction, SummaWordsMatchTheBytesNcclCounted) {
  // parray multigpu counts the bytes its broadcasts delivered, over all GPUs
  // ("NCCL 1.07 GB received" in the detail column).
  int checked = 0;
  for (const char* file : kMultiGpuFiles)
    for (const Row& r : read_results(file))
      if (r.at("variant") == "2d" && r.at("impl").rfind("parray", 0) == 0) {
        const std::string detail = r.at("detail");
        const std::size_t at = detail.find("NCCL ");
        ASSERT_NE(at, std::string::npos) << detail;
        const double counted = std::stod(detail.substr(at + 5)) * 1e9;
        const dm::Grid g = grid_of(r.at("grid"));
        const double words = dm::summa_words_per_rank({whole(r, "m"), whole(r, "n"), whole(r, "k")}, g.rows, g.cols);
        expect_relative(words * double(g.ranks()) * 4, counted, 0.10, std::string(file) + " " + r.at("grid"));
        ++checked;
      }
  EXPECT_EQ(checked, 5);
}

// ---- the algebra -------------------------------------------------------------------

TEST(DistModelAlgebra, SummaWordsEqualAPanelByPanelCount) {
  // Panels are owned cyclically (panel t by process column t % cols and row t % rows);
  // a rank receives every panel it does not own.
  std::mt19937_64 rng(33);
  for (int trial = 0; trial < 50; ++trial) {
    const index_t rows = 1 + index_t(rng() % 8), cols = 1 + index_t(rng() % 8);
    const index_t panels = rows * cols * (1 + index_t(rng() % 4)), width = 16 * (1 + index_t(rng() % 8));
    const dm::Problem p{rows * (1 + index_t(rng() % 100)), cols * (1 + index_t(rng() % 100)), panels * width};
    double received = 0;
    for (index_t t = 0; t < panels; ++t) {
      if (t % cols != 0) received += double(p.m / rows) * double(width);  // rank (0, 0), A panel t
      if (t % rows != 0) received += double(width) * double(p.n / cols);  // its B panel t
    }
    expect_relative(dm::summa_words_per_rank(p, rows, cols), received, 1e-12, "SUMMA words");
  }
}

TEST(DistModelAlgebra, SquareGridWordsAreTwoNSquaredOverRootP) {
  for (index_t s : {2, 4, 8, 32}) {
    const double n = 65536;
    expect_relative(dm::summa_words_per_rank({65536, 65536, 65536}, s, s),
                    2 * n * n / double(s) * double(s - 1) / double(s), 1e-12, "square grid");
  }
}

TEST(DistModelAlgebra, LayersCutBroadcastVolumeByRootC) {
  const index_t n = 1 << 16, side = 256;  // 65536 GPUs: large enough that (q - 1) / q ~ 1
  for (index_t c : {4, 16}) {
    const index_t q = side / index_t(std::sqrt(double(c)));
    const double two_d = dm::summa_words_per_rank({n, n, n}, side, side);
    const double layered = dm::summa_words_per_rank({n, n, n / c}, q, q);
    expect_relative(layered / two_d, double(q - 1) / double(side - 1), 1e-12, "exact ratio");
    expect_relative(layered / two_d, 1 / std::sqrt(double(c)), 0.02, "1 / sqrt(c)");
  }
}

dm::Machine test_machine() {
  dm::Machine m;
  m.alpha_s = 5e-6;
  m.intra_bytes_per_s = 300e9;
  m.net_bytes_per_s = 50e9;
  m.flops_per_s = 50e12;
  m.gemm_call_s = 2e-5;
  m.memory_bytes = 80e9;
  return m;
}

TEST(DistModelAlgebra, LayeredWordsAddTheReduceScatterOfC) {
  const dm::Problem p{32768, 32768, 32768};
  const dm::Prediction r = dm::predict(test_machine(), p, {4, 4, 4});
  const double c_block = 8192.0 * 8192.0;
  expect_relative(r.words_per_rank, dm::summa_words_per_rank({p.m, p.n, p.k / 4}, 4, 4) + 0.75 * c_block, 1e-12,
                  "2.5-D words");
  EXPECT_GT(r.reduce_s, 0);
}

TEST(DistModelAlgebra, OneGpuMovesNothingAndLosesOnlyCallCosts) {
  const dm::Machine m = test_machine();
  const dm::Problem p{4096, 3000, 5000};
  const dm::Prediction r = dm::predict(m, p, {1, 1, 1});
  EXPECT_EQ(r.words_per_rank, 0);
  EXPECT_EQ(r.panel_comm_s, 0);
  expect_relative(r.seconds, dm::one_gpu_seconds(m, p) + double(r.panels - 1) * m.gemm_call_s, 1e-12, "1 GPU");
  EXPECT_LE(r.efficiency, 1.0);
}

TEST(DistModelAlgebra, OnlyGroupsThatCrossNodesUseTheNetwork) {
  dm::Machine slow_net = test_machine();
  slow_net.net_bytes_per_s = 1e6;
  const dm::Problem p{16384, 16384, 16384};
  // 8 GPUs per node: 2x4 stays inside a node; on 4x4 every column group crosses.
  EXPECT_EQ(dm::predict(test_machine(), p, {2, 4, 1}).seconds, dm::predict(slow_net, p, {2, 4, 1}).seconds);
  EXPECT_GT(dm::predict(slow_net, p, {4, 4, 1}).seconds, 10 * dm::predict(test_machine(), p, {4, 4, 1}).seconds);
}

TEST(DistModelAlgebra, BroadcastsHideBehindTheLocalGemmUntilTheyAreSlower) {
  const dm::Problem p{65536, 65536, 65536};
  const dm::Prediction hidden = dm::predict(test_machine(), p, {2, 4, 1});
  EXPECT_LT(hidden.panel_comm_s, hidden.compute_s / double(hidden.panels));
  expect_relative(hidden.seconds, hidden.compute_s + hidden.panel_comm_s, 1e-12, "hidden");
  dm::Machine slow = test_machine();
  slow.intra_bytes_per_s = 1e9;
  const dm::Prediction exposed = dm::predict(slow, p, {2, 4, 1});
  expect_relative(exposed.seconds,
                  double(exposed.panels) * exposed.panel_comm_s + exposed.compute_s / double(exposed.panels), 1e-12,
                  "exposed");
}

TEST(DistModelAlgebra, GridsAndPanels) {
  const auto same = [](dm::Grid g, index_t r, index_t c, index_t l) {
    EXPECT_EQ(g.rows, r);
    EXPECT_EQ(g.cols, c);
    EXPECT_EQ(g.layers, l);
  };
  same(dm::most_square_grid(8), 2, 4, 1);
  same(dm::most_square_grid(1024), 32, 32, 1);
  same(dm::most_square_grid(1024, 4), 16, 16, 4);
  same(dm::most_square_grid(7), 1, 7, 1);
  EXPECT_EQ(dm::default_panel_width(16384), 2048);
  EXPECT_EQ(dm::default_panel_width(262144), 4096);
  EXPECT_EQ(dm::default_panel_width(1000), 256);
  EXPECT_EQ(dm::default_panel_width(100), 100);
}

TEST(DistModelAlgebra, BestLayeredScheduleFitsAndBeatsTheOthers) {
  const dm::Machine m = test_machine();
  const dm::Problem p{16384, 16384, 16384};
  const dm::Prediction best = dm::best_25d(m, p, 512);
  ASSERT_GE(best.grid.layers, 2);
  EXPECT_TRUE(best.fits);
  for (index_t c : {2, 4, 8})
    EXPECT_LE(best.seconds, dm::predict(m, p, dm::most_square_grid(512, c)).seconds) << "c = " << c;
  EXPECT_EQ(dm::best_25d(m, p, 7).grid.layers, 0);  // no c with c^3 <= 7 divides 7
}

TEST(DistModelAlgebra, InvalidInputThrows) {
  const dm::Machine m = test_machine();
  EXPECT_THROW(dm::predict(m, {0, 10, 10}, {1, 1, 1}), parray::Error);
  EXPECT_THROW(dm::predict(m, {10, 10, 10}, {0, 1, 1}), parray::Error);
  EXPECT_THROW(dm::predict(m, {10, 10, 2}, {1, 1, 4}), parray::Error);
  dm::Machine no_rate = m;
  no_rate.flops_per_s = 0;
  EXPECT_THROW(dm::predict(no_rate, {10, 10, 10}, {1, 1, 1}), parray::Error);
  EXPECT_THROW(dm::most_square_grid(12, 5), parray::Error);
  EXPECT_THROW(dm::fit_line({1, 1}, {2, 3}), parray::Error);
  EXPECT_THROW(dm::fit_line({1}, {2}), parray::Error);
  EXPECT_THROW(dm::fit_slope({0}, {2}), parray::Error);
}

TEST(DistModelAlgebra, LeastSquaresRecoverARandomLine) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-3, 3);
  const double a = u(rng), b = u(rng);
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) x.push_back(u(rng)), y.push_back(a + b * x.back());
  const dm::LineFit fit = dm::fit_line(x, y);
  EXPECT_NEAR(fit.intercept, a, 1e-12);
  EXPECT_NEAR(fit.slope, b, 1e-12);
  std::vector<double> through_origin;
  for (double v : x) through_origin.push_back(b * v);
  EXPECT_NEAR(dm::fit_slope(x, through_origin), b, 1e-12);
}

// ---- the command line --------------------------------------------------------------

TEST(DistModelCli, PrintsEveryPointOfTheTable) {
  const parray_test::CliResult r = parray_test::run_cli("dist-model --gpus 8,1024 --sizes 16384,262144 --gpu h100");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("gpus,n,grid_2d,ms_2d,eff_2d"), std::string::npos);
  EXPECT_NE(r.out.find(",8,16384,2x4,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",1024,262144,32x32,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(",8,262144,2x4,-,-,"), std::string::npos) << "256k^3 on 8 H100s does not fit\n" << r.out;
}

TEST(DistModelCli, BadOptionsAreOneLineAndStatus2) {
  parray_test::expect_cli_bad_input("dist-model --gpu a100", "unknown --gpu 'a100'");
  parray_test::expect_cli_bad_input("dist-model --local step9", "unknown --local 'step9'");
  parray_test::expect_cli_bad_input("dist-model --alpha -1", "--alpha must be >= 0");
  parray_test::expect_cli_bad_input("dist-model --beta-net 0", "--beta-net must be positive");
  parray_test::expect_cli_bad_input("dist-model --gamma -5", "--gamma must be positive");
  parray_test::expect_cli_bad_input("dist-model --gpus 0,8", "--gpus 0 is out of range");
  parray_test::expect_cli_bad_input("dist-model --sizes 1k", "is not a whole number");
  parray_test::expect_cli_bad_input("dist-model --intra ib", "unknown --intra 'ib'");
}

}  // namespace
