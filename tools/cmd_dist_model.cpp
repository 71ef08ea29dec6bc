// parray dist-model: the alpha-beta-gamma model's predictions of distributed GEMM
// (include/parray/dist_model.hpp, docs/distributed.md "Cost model").
//
//   parray dist-model [--gpus 8,16,...,1024] [--sizes 16384,...,262144] [--gpu h100|h200]
//                     [--local step12|step13] [--alpha US] [--beta-nvlink GBPS] [--beta-net GBPS]
//                     [--gamma TFLOPS] [--gpus-per-node G] [--intra nvlink|pcie] [--csv FILE]
//
// For every GPU count and square size: 2-D SUMMA on the most square grid, the
// fastest 2.5-D schedule (c layers), their predicted time and efficiency against
// one GPU, and whether 2.5-D pays (at least 5 % faster). A schedule that does not
// fit in the GPUs' memory is shown as "-".
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/dist_model.hpp"

namespace parray {
namespace {

namespace dm = dist_model;

// 2.5-D pays when it is at least this much faster: below, the model's error and a
// run's noise decide, and the 2-D schedule needs c times less memory for C.
constexpr double kPaysAtLeast = 1.05;

struct ModelArgs {
  std::string gpus = "8,16,32,64,128,256,512,1024", sizes = "16384,32768,65536,131072,262144";
  std::string gpu = "h200", local = "step13", intra = "nvlink", csv;
  std::optional<double> alpha_us, nvlink_gbps, net_gbps, gamma_tflops;  // unset: fitted or assumed
  index_t gpus_per_node = 8;
};

double positive(double v, const std::string& what) {
  if (!(v > 0)) throw Error(fmt::format("dist-model: {} must be positive, not {}", what, v));
  return v;
}

dm::Machine machine_from(const ModelArgs& a) {
  if (a.gpu != "h100" && a.gpu != "h200") throw Error("dist-model: unknown --gpu '" + a.gpu + "' (use h100 or h200)");
  if (a.local != "step12" && a.local != "step13")
    throw Error("dist-model: unknown --local '" + a.local + "' (use step12 or step13)");
  if (a.intra != "nvlink" && a.intra != "pcie")
    throw Error("dist-model: unknown --intra '" + a.intra + "' (use nvlink or pcie)");
  dm::Machine m =
      dm::fitted_machine(a.gpu == "h100" ? dm::Gpu::h100 : dm::Gpu::h200,
                         a.local == "step12" ? dm::LocalGemm::step12 : dm::LocalGemm::step13, a.intra == "nvlink");
  if (a.alpha_us) {
    if (!(*a.alpha_us >= 0)) throw Error(fmt::format("dist-model: --alpha must be >= 0, not {}", *a.alpha_us));
    m.alpha_s = *a.alpha_us * 1e-6;
  }
  if (a.nvlink_gbps) m.intra_bytes_per_s = positive(*a.nvlink_gbps, "--beta-nvlink") * 1e9;
  if (a.net_gbps) m.net_bytes_per_s = positive(*a.net_gbps, "--beta-net") * 1e9;
  if (a.gamma_tflops) m.flops_per_s = positive(*a.gamma_tflops, "--gamma") * 1e12;
  m.gpus_per_node = a.gpus_per_node;
  return m;
}

std::string shown_ms(const dm::Prediction& p) { return p.fits ? fmt::format("{:.2f}", p.seconds * 1e3) : "-"; }
std::string shown_eff(const dm::Prediction& p) { return p.fits ? fmt::format("{:.3f}", p.efficiency) : "-"; }

// One CSV row: the 2-D and the best 2.5-D prediction of one (GPUs, size) point.
std::string csv_row(index_t gpus, index_t n, const dm::Prediction& d2, const dm::Prediction& d25) {
  const bool have25 = d25.grid.layers > 0;
  const double speedup = d2.fits && have25 ? d2.seconds / d25.seconds : 0;
  const bool pays = have25 && (!d2.fits || speedup >= kPaysAtLeast);
  std::string row = fmt::format("{},{},{},{},{},{:.0f},{}", gpus, n, d2.grid.name(), shown_ms(d2), shown_eff(d2),
                                d2.words_per_rank, d2.fits ? 1 : 0);
  if (!have25) return row + ",,-,-,-,-,-,no\n";
  return row + fmt::format(",{},{},{},{},{:.0f},{},{}\n", d25.grid.layers, d25.grid.name(), shown_ms(d25),
                           shown_eff(d25), d25.words_per_rank, speedup > 0 ? fmt::format("{:.2f}", speedup) : "-",
                           pays ? "yes" : "no");
}

// The machine's parameters, repeated on every row so that the CSV says what it assumed.
std::string machine_columns(const ModelArgs& a, const dm::Machine& m) {
  return fmt::format("{},{},{:.2f},{},{:.1f},{:.1f},{:.2f},{}", a.gpu, a.local, m.alpha_s * 1e6, a.intra,
                     m.intra_bytes_per_s / 1e9, m.net_bytes_per_s / 1e9, m.flops_per_s / 1e12, m.gpus_per_node);
}

int run_dist_model(const ModelArgs& a) {
  const dm::Machine machine = machine_from(a);
  const std::vector<index_t> gpus = tools::whole_list(a.gpus, "dist-model: --gpus", 1, 65536);
  const std::vector<index_t> sizes = tools::whole_list(a.sizes, "dist-model: --sizes", 1, index_t(1) << 24);
  const std::string machine_text = machine_columns(a, machine);
  std::string csv =
      "gpu,local,alpha_us,intra,intra_gbps,net_gbps,local_tflops,gpus_per_node,"
      "gpus,n,grid_2d,ms_2d,eff_2d,words_2d,fits_2d,c,grid_25d,ms_25d,eff_25d,words_25d,speedup_25d,pays_25d\n";
  for (index_t n : sizes)
    for (index_t p : gpus) {
      const dm::Problem problem{n, n, n};
      const dm::Prediction d2 = dm::predict(machine, problem, dm::most_square_grid(p));
      csv += machine_text + "," + csv_row(p, n, d2, dm::best_25d(machine, problem, p));
    }
  tools::write_output(a.csv, csv);
  std::cout << csv;
  return 0;
}

std::vector<tools::CliCommand> add_dist_model_commands(CLI::App& app, CLI::App&) {
  auto a = std::make_shared<ModelArgs>();
  CLI::App* c = app.add_subcommand("dist-model", "predicted time of 2-D SUMMA and 2.5-D GEMM on 8 to 1024 GPUs");
  c->add_option("--gpus", a->gpus, "GPU counts")->capture_default_str();
  c->add_option("--sizes", a->sizes, "square sizes N (N x N x N, FP32)")->capture_default_str();
  c->add_option("--gpu", a->gpu, "h100 or h200: the fitted local GEMM rate and memory")->capture_default_str();
  c->add_option("--local", a->local, "the local GEMM: step12 (cuda-12-best) or step13 (3xTF32)")->capture_default_str();
  c->add_option("--alpha", a->alpha_us, "latency per message in microseconds (assumed: 5)");
  c->add_option("--beta-nvlink", a->nvlink_gbps, "intra-node link in GB/s (fitted NVLink: 363.6)");
  c->add_option("--beta-net", a->net_gbps, "network link per GPU in GB/s (assumed 400 Gb/s: 50)");
  c->add_option("--gamma", a->gamma_tflops, "local GEMM rate in TFLOP/s (default: fitted for --gpu, --local)");
  c->add_option("--gpus-per-node", a->gpus_per_node, "GPUs per node")
      ->capture_default_str()
      ->check(CLI::Range(index_t(1), index_t(1024)));
  c->add_option("--intra", a->intra, "intra-node link: nvlink or pcie (fitted pinned copies)")->capture_default_str();
  tools::add_csv_option(*c, a->csv);
  return {{c, [a] { return run_dist_model(*a); }}};
}

const tools::RegisterCommands registered_dist_model(&add_dist_model_commands);

}  // namespace
}  // namespace parray
