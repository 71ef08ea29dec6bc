// The distributed GEMM command of the parray tool (issues 7 and 33):
//
//   mpirun -np P parray dist-gemm -m M -n N -k K --grid PxQ|PxQxC [--block B] [--dtype f32|f64]
//          [--trans-a] [--trans-b] [--local cpu|gpu|auto] [--local-impl NAME] [--threads T]
//          [--comm auto|nccl|mpi] [--operands device|host] [--share-gpus]
//          [--repeats R] [--baseline scalapack] [--no-efficiency] [--csv FILE]
//
// Runs parray's SUMMA on a P x Q process array over block-cyclic matrices,
// verifies it (a gathered FP64 reference for small sizes; for large ones, where
// the blocks lie, the checksum C w = op(A) (op(B) w) and sampled elements
// against FP64, parray/mpi/check.hpp), then times it and prints time, GFLOP/s,
// where the time went and the bytes each rank moved beside SUMMA's theory.
// --grid PxQxC runs 2.5-D SUMMA (summa_25d.hpp) on C layers of P x Q over MPI
// and prints its traffic along the layers beside the cost model's words.
// --comm nccl (the default where NCCL is built, the local GEMM is on the GPU
// and every host has a GPU per rank): one rank per GPU, panels broadcast GPU
// to GPU with NCCL; --operands device uploads the local blocks once, timed
// apart ("upload"), host uploads them and brings C back in every call. Unless --no-efficiency, rank 0 then times the whole problem with the
// same local GEMM alone (T1) and prints the efficiency T1 / (P TP). Bad input:
// one line on stderr (from rank 0) and exit status 2; a failed check: exit 1.
#include <CLI/CLI.hpp>
#include <memory>

#include "parray/config.hpp"
#include "parray/core.hpp"
#include "cli_util.hpp"
#include "commands.hpp"

#if PARRAY_HAVE_MPI
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <thread>

#include <fmt/format.h>

#include "parray/dist_model.hpp"
#include "harness/harness.hpp"
#include "parray/mpi/check.hpp"
#include "parray/mpi/gpu.hpp"
#include "parray/mpi/summa.hpp"
#include "parray/mpi/summa_25d.hpp"
#endif

namespace {

struct DistGemmOptions {
  long long m = 1024, n = 1024, k = 1024;
  std::string grid;
  long long block = 256;
  std::string dtype = "f64";
  bool trans_a = false, trans_b = false;
  int threads = 1;
  std::string local = "auto";
  std::string local_impl;
  int progress_pieces = 0;
  std::string comm = "auto";
  std::string operands = "device";
  bool share_gpus = false;
  int repeats = 3;
  std::string baseline;
  bool efficiency = true;
  std::string csv;
  int fail_rank = -1;  // test hook: this rank throws inside the process array's detour
};

#if PARRAY_HAVE_MPI
using namespace parray;
using namespace parray::mpi;

// Operand values in [-1, 1) from a hash of (matrix, row, column): every rank
// fills its own blocks, and the reference rebuilds any element.
double element(int which, index_t i, index_t j) {
  std::uint64_t z = (static_cast<std::uint64_t>(which) << 56) ^ (static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ULL) ^
                    (static_cast<std::uint64_t>(j) * 0xC2B2AE3D27D4EB4FULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

// What a check of C found, the same on every rank.
struct Checked {
  bool ok = false;
  double error = 0;    // relative: Frobenius (gathered) or of the checksum
  std::string method;  // "gathered FP64" or "checksum + N samples"
  std::string reason;  // why it failed
};

// C against op(A) op(B): a gathered FP64 product for small sizes, else
// check_distributed_gemm where the blocks lie. NaN never passes.
template <class T>
Checked verify(const DistGemmOptions& o, const DistMatrix<T>& a, const DistMatrix<T>& b, const DistMatrix<T>& c) {
  const index_t m = o.m, n = o.n, k = o.k;
  if (static_cast<double>(m) * n * k > 512.0 * 512 * 512) {
    const DistCheck d = check_distributed_gemm<T>(o.trans_a ? Trans::yes : Trans::no, o.trans_b ? Trans::yes : Trans::no,
                                                  T(1), a, b, T(0), nullptr, c);
    return {d.ok, d.rel_err, fmt::format("checksum + {} samples", d.samples), d.reason};
  }
  const int root = 0;
  double err = 0;
  std::vector<T> cg(static_cast<std::size_t>(std::max<index_t>(1, m * n)));
  c.gather_to({cg.data(), MatrixLayout::col_major(m, n, std::max<index_t>(1, m))}, root);
  if (c.grid().coord().tid() == root) {
    std::vector<double> ref(static_cast<std::size_t>(m * n), 0.0), bt(static_cast<std::size_t>(k * n));
    for (index_t j = 0; j < n; ++j)
      for (index_t p = 0; p < k; ++p)
        bt[static_cast<std::size_t>(p + j * k)] = o.trans_b ? element(1, j, p) : element(1, p, j);
    for (index_t p = 0; p < k; ++p)
      for (index_t i = 0; i < m; ++i) {
        const double av = o.trans_a ? element(0, p, i) : element(0, i, p);
        for (index_t j = 0; j < n; ++j) ref[static_cast<std::size_t>(i + j * m)] += av * bt[static_cast<std::size_t>(p + j * k)];
      }
    double num = 0, den = 0;
    for (index_t x = 0; x < m * n; ++x) {
      const double d = static_cast<double>(cg[static_cast<std::size_t>(x)]) - ref[static_cast<std::size_t>(x)];
      num += d * d;
      den += ref[static_cast<std::size_t>(x)] * ref[static_cast<std::size_t>(x)];
    }
    err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  }
  MPI_Bcast(&err, 1, MPI_DOUBLE, root, c.grid().comm());
  const bool ok = std::isfinite(err) && err <= gemm_tolerance(dtype_of<T>(), std::max<index_t>(k, 1));
  return {ok, err, "gathered FP64", ok ? "" : "relative error over the tolerance"};
}

// Timing of SUMMA: every rank starts together, the slowest rank's time counts.
double time_once(const MpiThreadArray& grid, const std::function<void()>& run) {
  MPI_Barrier(grid.comm());
  const double t0 = MPI_Wtime();
  run();
  double dt = MPI_Wtime() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, grid.comm());
  return dt * 1e3;
}

void set_blas_threads(int threads) {
  // ScaLAPACK's local BLAS (often OpenBLAS) would start a thread per core in every rank.
  using SetThreads = void (*)(int);
  if (auto f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) f(threads);
  if (auto f = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "bli_thread_set_num_threads"))) f(threads);
}

// Waits for every rank of the grid without spinning: the ranks that are not
// timing the one-rank run must leave the cores to it (a spinning MPI_Barrier
// would take one of them on a machine with one core per rank).
void quiet_barrier(const MpiThreadArray& grid) {
  MPI_Request r;
  MPI_Ibarrier(grid.comm(), &r);
  int done = 0;
  while (MPI_Test(&r, &done, MPI_STATUS_IGNORE), !done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

// One dist-gemm run of element type T: SUMMA measured, then the one-rank time
// (efficiency) and the ScaLAPACK baseline where asked for, then the CSV.
template <class T>
class DistGemmRun {
 public:
  // layered: the 2.5-D array of --grid PxQxC (grid is then its layer), else null.
  DistGemmRun(const DistGemmOptions& o, const MpiThreadArray& grid, const LayeredGrid* layered, Transport transport)
      : o_(o),
        grid_(grid),
        layered_(layered),
        all_(layered ? layered->whole() : grid),
        root_(all_.coord().tid() == 0),
        on_c_layer_(!layered || layered->layer_index() == 0),
        P_(grid.rows()),
        Q_(grid.cols()),
        layers_(layered ? layered->layers() : 1),
        m_(o.m),
        n_(o.n),
        k_(o.k),
        layer_k_((o.k + layers_ - 1) / layers_),
        nb_(o.block),
        ta_(o.trans_a ? Trans::yes : Trans::no),
        tb_(o.trans_b ? Trans::yes : Trans::no),
        so_(summa_options(o, transport)),
        plan_(plan_local_gemm<T>(so_, grid.coord())),  // throws on every rank alike for a bad --local
        a_(operand(BlockCyclic::cyclic(o.trans_a ? k_ : m_, o.trans_a ? m_ : k_, nb_, nb_, P_, Q_))),
        b_(operand(BlockCyclic::cyclic(o.trans_b ? n_ : k_, o.trans_b ? k_ : n_, nb_, nb_, P_, Q_))),
        c_(grid, BlockCyclic::cyclic(m_, n_, nb_, nb_, P_, Q_)),
        flops_(2.0 * static_cast<double>(m_) * n_ * k_) {
    if (on_c_layer_) {
      a_.fill([](index_t i, index_t j) { return element(0, i, j); });
      b_.fill([](index_t i, index_t j) { return element(1, i, j); });
    }
    if (transport == Transport::nccl) {
      // Binding errors (no GPU, more ranks than GPUs) throw here on every rank alike.
      gpus_ = std::make_unique<GpuProcessContext>(grid, GpuBinding{o.share_gpus});
      so_.gpus = gpus_.get();
      if (o.operands == "device") grid.detour([&](const ProcCoord&) { upload_operands(); });
    }
    if (root_)
      fmt::print("local GEMM of rank 0: {}; panels over {}{}\n", plan_.str(), transport_name(),
                 gpus_ ? fmt::format(", operands {}", on_device() ? "on the GPUs" : "uploaded in every call")
                       : std::string());
  }

  int run() {
    all_.detour([&](const ProcCoord& p) {
      if (p.tid() == o_.fail_rank) throw Error("injected failure (--fail-rank)");
      if (layered_)
        measure(
            "summa25d", [&] { return stats_25d_ = summa_25d<T>(ta_, tb_, T(1), a_, b_, T(0), c_, *layered_, so_); },
            false);
      else if (on_device())
        measure("summa", [&] { return summa<T>(T(1), *da_, *db_, T(0), *dc_, so_); }, true);
      else
        measure("summa", [&] { return summa<T>(ta_, tb_, T(1), a_, b_, T(0), c_, so_); }, false);
    });
    if (o_.efficiency) time_one_rank();
    if (o_.baseline == "scalapack") compare_scalapack();
    if (root_ && !o_.csv.empty()) write_csv();
    return all_ok_ ? 0 : 1;
  }

 private:
  struct Row {
    std::string impl;
    double ms, gflops, bytes;
    bool ok;
    double wait_ms = 0, pack_ms = 0, local_ms = 0, recv_bytes = 0;
  };
  // A 2.5-D call's traffic and time along the layers, max over ranks.
  struct LayerTraffic {
    double replicate_bytes = 0, reduce_bytes = 0, gather_bytes = 0, recv_and_reduce_bytes = 0;
    double replicate_ms = 0, layer_ms = 0, reduce_ms = 0, gather_ms = 0;
  };

  static SummaOptions summa_options(const DistGemmOptions& o, Transport transport) {
    SummaOptions so;
    so.threads = o.threads;
    so.local = transport == Transport::nccl ? LocalGemm::gpu : parse_local_gemm(o.local);
    so.gpu_impl = o.local_impl;
    so.progress_pieces = o.progress_pieces;
    so.transport = transport;
    return so;
  }

  bool on_device() const { return da_ != nullptr; }
  std::string grid_name() const {
    return fmt::format("{}x{}", P_, Q_) + (layered_ ? fmt::format("x{}", layers_) : std::string());
  }

  // Where the operands are read: every rank's own blocks, except on the layers
  // of a 2.5-D array other than 0, where only their distribution is (no storage).
  DistMatrix<T> operand(const BlockCyclic& d) const {
    if (on_c_layer_) return DistMatrix<T>(grid_, d);
    return DistMatrix<T>::from_desc(
        grid_, descriptor(d, std::max<index_t>(1, d.local_rows(grid_.coord().row))).array().data(), nullptr);
  }
  std::string transport_name() const {
    return so_.transport == Transport::nccl ? "NCCL (GPU to GPU)" : "MPI (host memory)";
  }

  // A and B as SUMMA multiplies them (op(A) M x K in C's row blocks, op(B)
  // K x N in C's column blocks: a transposed operand redistributed first) to
  // the GPUs, once; the slowest rank's time is reported as the upload.
  void upload_operands() {
    MPI_Barrier(grid_.comm());
    const double t0 = MPI_Wtime();
    const DistMatrix<T>& a = ta_ == Trans::yes ? transposed(a_, m_, k_) : a_;
    const DistMatrix<T>& b = tb_ == Trans::yes ? transposed(b_, k_, n_) : b_;
    da_ = std::make_unique<GpuDistMatrix<T>>(*gpus_, a.dist());
    db_ = std::make_unique<GpuDistMatrix<T>>(*gpus_, b.dist());
    dc_ = std::make_unique<GpuDistMatrix<T>>(*gpus_, c_.dist());
    da_->upload(a);
    db_->upload(b);
    upload_ms_ = max_over_ranks(1e3 * (MPI_Wtime() - t0));
    moved_.clear();
  }
  // x transposed into a rows x cols matrix in C's blocking, kept until the upload is done.
  const DistMatrix<T>& transposed(const DistMatrix<T>& x, index_t rows, index_t cols) {
    moved_.push_back(std::make_unique<DistMatrix<T>>(grid_, BlockCyclic::cyclic(rows, cols, nb_, nb_, P_, Q_)));
    redistribute(x, *moved_.back(), true);
    return *moved_.back();
  }

  double max_over_ranks(double v) const {
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, all_.comm());
    return v;
  }
  int ranks() const { return P_ * Q_ * layers_; }
  double efficiency(const Row& r) const { return one_ms_ > 0 && r.ms > 0 ? one_ms_ / (ranks() * r.ms) : 0.0; }

  // C lives on layer 0 of a 2.5-D array: checked there, the verdict sent along the layers.
  Checked check_c() const {
    Checked checked;
    if (on_c_layer_) checked = verify(o_, a_, b_, c_);
    if (!layered_) return checked;
    int ok = checked.ok ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, layered_->across());
    MPI_Bcast(&checked.error, 1, MPI_DOUBLE, 0, layered_->across());
    checked.ok = ok == 1;
    return checked;
  }

  // One verified run, then the timed ones; a row, printed by rank 0. `device`:
  // C is dc_ on the GPUs, poisoned there and brought back for the check.
  void measure(const std::string& impl, const std::function<SummaStats()>& run, bool device) {
    SummaStats stats;
    Checked checked;
    Trial t;
    t.reset = [&] {
      c_.fill([](index_t, index_t) { return std::numeric_limits<T>::quiet_NaN(); });
      if (device) dc_->poison();
    };
    t.run = [&] { stats = run(); };
    t.check = [&] {
      if (device) dc_->download(c_);
      checked = check_c();
      return Verdict{checked.ok ? Outcome::passed : Outcome::failed, checked.error, checked.reason};
    };
    t.time_one = [&] { return time_once(all_, [&] { stats = run(); }); };
    t.catch_errors = false;  // one rank's error aborts all (the detour), never a hang in a collective
    TimingPlan plan;
    plan.warmup = 0, plan.min_reps = plan.max_reps = o_.repeats, plan.target_seconds = 0;
    const Measurement m = verify_then_time(t, plan);
    const bool ok = m.verdict.passed();
    all_ok_ = all_ok_ && ok;
    const double ms = m.timing.median_ms;
    double bytes = stats.bcast_bytes + stats.redistribute_bytes, max_bytes = bytes, sum_bytes = bytes;
    MPI_Allreduce(MPI_IN_PLACE, &max_bytes, 1, MPI_DOUBLE, MPI_MAX, all_.comm());
    MPI_Allreduce(MPI_IN_PLACE, &sum_bytes, 1, MPI_DOUBLE, MPI_SUM, all_.comm());
    const double gflops = ms > 0 ? flops_ / (ms * 1e6) : 0;
    Row row{impl, ms, gflops, max_bytes, ok};
    if (impl != "scalapack") {
      row.wait_ms = max_over_ranks(stats.wait_ms);
      row.pack_ms = max_over_ranks(stats.pack_ms);
      row.local_ms = max_over_ranks(stats.local_ms);
      row.recv_bytes = max_over_ranks(stats.recv_bytes);
      upload_ms_ = std::max(upload_ms_, max_over_ranks(stats.upload_ms));
      if (layered_) traffic_ = max_traffic(stats_25d_);
    }
    rows_.push_back(row);
    if (!root_) return;
    fmt::print("{:<9} {}x{}x{} {} grid {} block {}: {:.2f} ms, {:.2f} GFLOP/s, check {} ({} error {:.2e}{}{})\n", impl,
               m_, n_, k_, dtype_name(dtype_of<T>()), grid_name(), nb_, ms, gflops, ok ? "ok" : "FAILED",
               checked.method, checked.error, ok ? "" : ": ", ok ? "" : checked.reason);
    if (impl != "scalapack") print_summa_details(row, stats, max_bytes, sum_bytes);
  }

  LayerTraffic max_traffic(const Summa25dStats& s) const {
    return {max_over_ranks(s.replicate_bytes), max_over_ranks(s.reduce_bytes),
            max_over_ranks(s.gather_bytes),    max_over_ranks(s.recv_bytes + s.reduce_bytes),
            max_over_ranks(s.replicate_ms),    max_over_ranks(s.layer_ms),
            max_over_ranks(s.reduce_ms),       max_over_ranks(s.gather_ms)};
  }

  // SUMMA's theory per rank, K being a layer's ceil(K / c) columns: it takes
  // part in M K / P words of A panels (along its row, when Q > 1) and K N / Q
  // of B panels (down its column, when P > 1), and receives (Q - 1) / Q and
  // (P - 1) / P of them (dist_model::summa_words_per_rank).
  double theory_bytes() const {
    return sizeof(T) * ((Q_ > 1 ? double(m_) * layer_k_ / P_ : 0) + (P_ > 1 ? double(layer_k_) * n_ / Q_ : 0));
  }
  double theory_recv_bytes() const { return sizeof(T) * dist_model::summa_words_per_rank({m_, n_, layer_k_}, P_, Q_); }
  // 2.5-D: the cost model's words received per rank (src/core/dist_model.cpp:
  // the layer's panels plus the reduce-scatter of C); 0 where the model has no
  // answer (a zero size, more layers than columns of K).
  double model_bytes() const {
    if (m_ <= 0 || n_ <= 0 || k_ < layers_) return 0;
    const auto machine = dist_model::fitted_machine(dist_model::Gpu::h100, dist_model::LocalGemm::step12);
    return sizeof(T) * dist_model::predict(machine, {m_, n_, k_}, {P_, Q_, layers_}).words_per_rank;
  }
  // Along the layers, in the model's 2-D block shapes: a rank of layer 0 sends
  // the other layers' shares of its A and B, (c - 1) / c K (ceil(M/P) / Q +
  // ceil(N/Q) / P) words; the reduce-scatter and the gather of C each move
  // (c - 1) / c ceil(M/P) ceil(N/Q).
  double layers_fraction() const { return double(layers_ - 1) / layers_; }
  double replicate_theory_bytes() const {
    const double m_loc = double((m_ + P_ - 1) / P_), n_loc = double((n_ + Q_ - 1) / Q_);
    return sizeof(T) * layers_fraction() * double(k_) * (m_loc / Q_ + n_loc / P_);
  }
  double reduce_theory_bytes() const {
    return sizeof(T) * layers_fraction() * double((m_ + P_ - 1) / P_) * double((n_ + Q_ - 1) / Q_);
  }
  static double ratio(double counted, double theory) { return theory > 0 ? counted / theory : 0.0; }

  void print_summa_details(const Row& row, const SummaStats& stats, double max_bytes, double sum_bytes) const {
    if (so_.transport == Transport::nccl)
      fmt::print("          time of the last run, max over ranks: queuing the panels and waiting for the GPU {:.1f} "
                 "ms; {} panels, {} local GEMM calls on rank 0{}\n",
                 row.local_ms, stats.steps, stats.local_calls,
                 upload_ms_ > 0 ? fmt::format("; upload {:.1f} ms ({})", upload_ms_,
                                              on_device() ? "once, before the timed runs" : "in every call")
                                : std::string());
    else
      fmt::print("          time of the last run, max over ranks: {} {:.1f} ms, waiting for panels {:.1f} ms, "
                 "packing panels {:.1f} ms; {} panels, {} local GEMM calls on rank 0\n",
                 plan_.device == Device::gpu ? "GPU set-up, copies and wait" : "local GEMM", row.local_ms,
                 row.wait_ms, row.pack_ms, stats.steps, stats.local_calls);
    const double theory = theory_bytes(), elem = sizeof(T);
    fmt::print("          bytes moved per rank: {:.2f} MB max, {:.2f} MB total; SUMMA theory "
               "(MK/P + KN/Q) {:.2f} MB per rank, ratio {:.3f}",
               max_bytes / 1e6, sum_bytes / 1e6, theory / 1e6, ratio(max_bytes, theory));
    if (m_ == n_ && n_ == k_ && P_ == Q_ && P_ > 1 && !layered_)
      fmt::print(" (= 2n^2/sqrt(p) = {:.2f} MB)", elem * 2.0 * double(n_) * n_ / P_ / 1e6);
    if (stats.redistribute_bytes > 0) fmt::print("; {:.2f} MB of it redistribution", stats.redistribute_bytes / 1e6);
    fmt::print("\n          received per rank: {:.2f} MB max; theory ((Q-1)/Q MK/P + (P-1)/P KN/Q) {:.2f} MB, ratio "
               "{:.3f}\n",
               row.recv_bytes / 1e6, theory_recv_bytes() / 1e6, ratio(row.recv_bytes, theory_recv_bytes()));
    if (layered_) print_layer_details();
  }

  void print_layer_details() const {
    const LayerTraffic& t = traffic_;
    fmt::print(
        "          2.5-D: mpi [{}][{}][{}], {} layers of {}x{}; layer 0 multiplies columns [{}, {}) of K; the "
        "reduce-scatter of C: {:.2f} MB received per rank max, theory ((c-1)/c ceil(M/P) ceil(N/Q)) {:.2f} MB, "
        "ratio {:.3f}\n",
        layers_, P_, Q_, layers_, P_, Q_, stats_25d_.k_begin, stats_25d_.k_end, t.reduce_bytes / 1e6,
        reduce_theory_bytes() / 1e6, ratio(t.reduce_bytes, reduce_theory_bytes()));
    fmt::print(
        "          received per rank, panels and reduce-scatter: {:.2f} MB max; the cost model's 2.5-D words "
        "(parray dist-model) {:.2f} MB, ratio {:.3f}\n",
        t.recv_and_reduce_bytes / 1e6, model_bytes() / 1e6, ratio(t.recv_and_reduce_bytes, model_bytes()));
    fmt::print(
        "          apart from the model: shares of A and B sent from layer 0 {:.2f} MB max, theory ((c-1)/c K "
        "(ceil(M/P)/Q + ceil(N/Q)/P)) {:.2f} MB, ratio {:.3f}; C gathered to layer 0 {:.2f} MB max, theory "
        "{:.2f} MB, ratio {:.3f}\n",
        t.replicate_bytes / 1e6, replicate_theory_bytes() / 1e6, ratio(t.replicate_bytes, replicate_theory_bytes()),
        t.gather_bytes / 1e6, reduce_theory_bytes() / 1e6, ratio(t.gather_bytes, reduce_theory_bytes()));
    fmt::print(
        "          time of the last run, max over ranks: lining up and replicating A and B {:.1f} ms, layer "
        "SUMMA {:.1f} ms, "
        "reduce-scatter {:.1f} ms, gather {:.1f} ms\n",
        t.replicate_ms, t.layer_ms, t.reduce_ms, t.gather_ms);
  }

  // Parallel efficiency against one rank: the whole problem with the same local
  // GEMM (same dtype, same threads or the same GPU kernel) on rank 0 alone.
  void time_one_rank() {
    all_.detour([&](const ProcCoord&) {
      int ok = 1;
      if (root_) ok = time_on_root() ? 1 : 0;
      quiet_barrier(all_);
      MPI_Bcast(&ok, 1, MPI_INT, 0, all_.comm());
      MPI_Bcast(&one_ms_, 1, MPI_DOUBLE, 0, all_.comm());
      all_ok_ = all_ok_ && ok == 1;
    });
  }
  bool time_on_root() {
    const index_t m = m_, n = n_, k = k_;
    // op(A) and op(B) as column-major M x K and K x N: the transposes are SUMMA's business, not T1's.
    std::vector<T> ag(static_cast<std::size_t>(m * k)), bg(static_cast<std::size_t>(k * n)),
        cg(static_cast<std::size_t>(m * n), std::numeric_limits<T>::quiet_NaN());
    for (index_t j = 0; j < k; ++j)
      for (index_t i = 0; i < m; ++i)
        ag[static_cast<std::size_t>(i + j * m)] = static_cast<T>(o_.trans_a ? element(0, j, i) : element(0, i, j));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < k; ++i)
        bg[static_cast<std::size_t>(i + j * k)] = static_cast<T>(o_.trans_b ? element(1, j, i) : element(1, i, j));
    GemmCheck check;
    const Measurement r = measure_local_gemm<T>(plan_, m, n, k, ag.data(), bg.data(), cg.data(), o_.repeats, [&] {
      const auto view = [](const T* p, index_t rows, index_t cols) {
        return MatrixView<const T>{p, MatrixLayout::col_major(rows, cols, std::max<index_t>(1, rows)), Memory::paged};
      };
      check = check_gemm<T>(T(1), view(ag.data(), m, k), view(bg.data(), k, n), T(0), nullptr, view(cg.data(), m, n));
      return Verdict{check.ok ? Outcome::passed : Outcome::failed, check.rel_err, check.reason};
    });
    one_ms_ = r.timing.median_ms;
    const bool ok = r.verdict.passed();
    fmt::print("one rank  {}x{}x{} {} ({}): {:.2f} ms, {:.2f} GFLOP/s, check {} ({} error {:.2e}{}{})\n", m, n, k,
               dtype_name(dtype_of<T>()), plan_.str(), one_ms_, one_ms_ > 0 ? flops_ / (one_ms_ * 1e6) : 0.0,
               ok ? "ok" : "FAILED", check.method, check.rel_err, ok ? "" : ": ", r.verdict.note);
    fmt::print("efficiency versus one rank, T1 / (P TP) with P = {}: {} {:.1f} %\n", ranks(), rows_[0].impl,
               100.0 * efficiency(rows_[0]));
    return ok;
  }

  void compare_scalapack() {
    set_blas_threads(o_.threads);
    grid_.detour([&](const ProcCoord&) {
      measure(
          "scalapack",
          [&] {
            scalapack_gemm<T>(ta_, tb_, T(1), a_, b_, T(0), c_);
            return SummaStats{};
          },
          false);
    });
    if (!root_) return;
    fmt::print("parray SUMMA / ScaLAPACK: {:.2f}x the speed ({:.2f} ms vs {:.2f} ms)",
               rows_[1].ms > 0 ? rows_[1].ms / rows_[0].ms : 0.0, rows_[0].ms, rows_[1].ms);
    if (o_.efficiency)
      fmt::print("; ScaLAPACK's T1 / (P TP) against the same T1: {:.1f} %", 100.0 * efficiency(rows_[1]));
    fmt::print("\n");
  }

  void write_csv() const {
    std::ofstream f(o_.csv);
    if (!f) throw Error("cannot write " + o_.csv);
    // eff_vs_1 = one_rank_ms / (ranks ms), empty with --no-efficiency; one_rank_ms is
    // parray's local GEMM on the whole problem (for the ScaLAPACK row too). recv_bytes:
    // the most any rank received; recv_theory_bytes: SUMMA's (print_summa_details), over
    // a layer's K in 2.5-D; the columns from `layers` on: print_layer_details (empty in 2-D).
    f << "impl,ranks,grid,dtype,m,n,k,block,threads,local,ms,gflops,bytes_moved,ok,one_rank_ms,eff_vs_1,wait_ms,"
         "pack_ms,local_ms,comm,operands,upload_ms,recv_bytes,recv_theory_bytes,recv_ratio,layers,replicate_bytes,"
         "replicate_theory_bytes,reduce_bytes,reduce_theory_bytes,gather_bytes,recv_and_reduce_bytes,model_bytes,"
         "model_ratio,replicate_ms,layer_ms,reduce_ms,gather_ms\n";
    for (const Row& r : rows_) {
      const bool summa_row = r.impl != "scalapack";
      const bool nccl = summa_row && so_.transport == Transport::nccl;
      f << fmt::format(
          "{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.0f},{},{},{},{},{},{}", r.impl, ranks(), grid_name(),
          dtype_name(dtype_of<T>()), m_, n_, k_, nb_, o_.threads,
          summa_row ? (plan_.device == Device::gpu ? "gpu:" + plan_.impl : "cpu:" + plan_.impl)
                    : std::string("scalapack"),
          r.ms, r.gflops, r.bytes, r.ok ? 1 : 0, o_.efficiency ? fmt::format("{:.3f}", one_ms_) : "",
          o_.efficiency ? fmt::format("{:.4f}", efficiency(r)) : "", summa_row ? fmt::format("{:.1f}", r.wait_ms) : "",
          summa_row ? fmt::format("{:.1f}", r.pack_ms) : "", summa_row ? fmt::format("{:.1f}", r.local_ms) : "");
      f << fmt::format(",{},{},{},{},{},{},{}", summa_row ? (nccl ? "nccl" : "mpi") : "",
                       nccl ? (on_device() ? "device" : "host") : "", nccl ? fmt::format("{:.1f}", upload_ms_) : "",
                       summa_row ? fmt::format("{:.0f}", r.recv_bytes) : "",
                       summa_row ? fmt::format("{:.0f}", theory_recv_bytes()) : "",
                       summa_row ? fmt::format("{:.4f}", ratio(r.recv_bytes, theory_recv_bytes())) : "", layers_);
      f << (layered_ && summa_row ? layer_csv() : std::string(",,,,,,,,,,,,")) << "\n";
    }
  }
  std::string layer_csv() const {
    const LayerTraffic& t = traffic_;
    return fmt::format(",{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.0f},{:.4f},{:.1f},{:.1f},{:.1f},{:.1f}",
                       t.replicate_bytes, replicate_theory_bytes(), t.reduce_bytes, reduce_theory_bytes(),
                       t.gather_bytes, t.recv_and_reduce_bytes, model_bytes(),
                       ratio(t.recv_and_reduce_bytes, model_bytes()), t.replicate_ms, t.layer_ms, t.reduce_ms,
                       t.gather_ms);
  }

  const DistGemmOptions& o_;
  const MpiThreadArray& grid_;  // C's P x Q grid (a layer of a 2.5-D array)
  const LayeredGrid* layered_;  // --grid PxQxC, else null
  const MpiThreadArray& all_;   // every rank: grid_, or the whole 2.5-D array
  const bool root_;
  const bool on_c_layer_;  // this rank holds A, B and the result C (layer 0)
  const int P_, Q_, layers_;
  const index_t m_, n_, k_, layer_k_, nb_;
  const Trans ta_, tb_;
  SummaOptions so_;
  const LocalGemmPlan plan_;
  DistMatrix<T> a_, b_, c_;
  const double flops_;
  std::unique_ptr<GpuProcessContext> gpus_;                      // --comm nccl
  std::unique_ptr<GpuDistMatrix<T>> da_, db_, dc_;               // --operands device
  std::vector<std::unique_ptr<DistMatrix<T>>> moved_;            // transposed operands on their way up
  double upload_ms_ = 0;
  std::vector<Row> rows_;
  Summa25dStats stats_25d_;
  LayerTraffic traffic_;
  bool all_ok_ = true;
  double one_ms_ = 0;
};

template <class T>
int run_typed(const DistGemmOptions& o, const MpiThreadArray& grid, const LayeredGrid* layered, Transport transport) {
  return DistGemmRun<T>(o, grid, layered, transport).run();
}

// --comm: nccl where asked, or (auto) where NCCL is built, the local GEMM is on
// the GPU and every host has a GPU for each of its ranks; else mpi.
Transport choose_transport(const DistGemmOptions& o, const MpiThreadArray& grid, bool layered) {
  if (o.comm == "mpi") return Transport::mpi;
  if (layered && o.comm == "nccl") throw Error("--comm nccl: the 2.5-D schedule (--grid PxQxC) runs over MPI only");
  if (layered) return Transport::mpi;
  const LocalGemm local = parse_local_gemm(o.local);
  if (o.comm == "nccl") {
    if (local == LocalGemm::cpu) throw Error("--comm nccl multiplies on the GPUs: use --local gpu or auto, not cpu");
    if (!nccl_available()) throw Error("--comm nccl: parray was built without NCCL");
    return Transport::nccl;  // GpuProcessContext checks that every rank has its GPU
  }
  const bool nccl = nccl_available() && local != LocalGemm::cpu && every_rank_has_a_gpu(grid);
  return nccl ? Transport::nccl : Transport::mpi;
}

int run_dist_gemm(const DistGemmOptions& o) {
  Session session;
  try {
    if (o.m < 0 || o.n < 0 || o.k < 0)
      throw Error(fmt::format("sizes must not be negative (-m {} -n {} -k {})", o.m, o.n, o.k));
    if (o.m > std::numeric_limits<int>::max() || o.n > std::numeric_limits<int>::max() || o.k > std::numeric_limits<int>::max())
      throw Error("sizes must fit in a 32-bit int (ScaLAPACK descriptors)");
    if (o.block < 1) throw Error(fmt::format("--block {} must be at least 1", o.block));
    if (o.dtype != "f32" && o.dtype != "f64") throw Error("unknown dtype '" + o.dtype + "' (use f32 or f64)");
    if (o.threads < 1) throw Error(fmt::format("--threads {} must be at least 1", o.threads));
    if (o.repeats < 1) throw Error(fmt::format("--repeats {} must be at least 1", o.repeats));
    if (o.progress_pieces < 0) throw Error(fmt::format("--progress-pieces {} must not be negative", o.progress_pieces));
    parse_local_gemm(o.local);
    if (o.comm != "auto" && o.comm != "nccl" && o.comm != "mpi")
      throw Error("unknown --comm '" + o.comm + "' (use auto, nccl or mpi)");
    if (o.operands != "device" && o.operands != "host")
      throw Error("unknown --operands '" + o.operands + "' (use device or host)");
    if (!o.baseline.empty() && o.baseline != "scalapack")
      throw Error("unknown baseline '" + o.baseline + "' (use scalapack)");
    if (o.baseline == "scalapack" && !scalapack_available())
      throw Error("--baseline scalapack: this build found no ScaLAPACK (Debian: libscalapack-openmpi-dev)");
    const std::vector<int> dims = o.grid.empty() ? squarest_grid(world_size()) : parse_grid(o.grid);
    if (dims.size() == 3 && !o.baseline.empty()) throw Error("--baseline scalapack runs on a PxQ grid, not PxQxC");
    std::unique_ptr<LayeredGrid> layered;
    std::unique_ptr<MpiThreadArray> flat;
    if (dims.size() == 3)
      layered = std::make_unique<LayeredGrid>(dims[0], dims[1], dims[2]);
    else
      flat = std::make_unique<MpiThreadArray>(std::initializer_list<int>{dims[0], dims[1]});
    const MpiThreadArray& grid = layered ? layered->layer() : *flat;
    const Transport transport = choose_transport(o, grid, layered != nullptr);
    const int rc = o.dtype == "f32" ? run_typed<float>(o, grid, layered.get(), transport)
                                    : run_typed<double>(o, grid, layered.get(), transport);
    int worst = rc;
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return worst;
  } catch (const Error&) {
    // Checks of the arguments come out alike on every rank: rank 0 reports
    // (main prints the one line and exits with 2, which mpirun passes on),
    // the others leave quietly with 0. Were they to exit with 2, mpirun could
    // end the job and kill rank 0 before it printed its line (seen once in
    // ctest -j 2 on this 2-core machine).
    if (world_rank() != 0) {
      MPI_Finalize();
      std::exit(0);
    }
    MPI_Finalize();
    throw;
  }
}
#endif

std::vector<parray::tools::CliCommand> add_dist_gemm_commands(CLI::App& app, CLI::App&) {
  auto o = std::make_shared<DistGemmOptions>();
  CLI::App* cmd = app.add_subcommand("dist-gemm", "distributed GEMM over MPI: parray's SUMMA on a process grid");
  parray::tools::add_gemm_extents(*cmd, o->m, o->n, o->k);
  cmd->add_option("--grid", o->grid,
                  "process grid PxQ (default: the squarest for the rank count), or PxQxC: 2.5-D SUMMA on C layers of "
                  "PxQ (CPU or GPU local GEMM, panels over MPI)");
  cmd->add_option("--block", o->block, "block-cyclic block size (and SUMMA panel width)");
  parray::tools::add_dtype(*cmd, o->dtype);
  parray::tools::add_transpose_flags(*cmd, o->trans_a, o->trans_b);
  cmd->add_option("--local", o->local,
                  "where each rank multiplies its panels: cpu, gpu (device node-rank % GPUs) or auto (gpu when "
                  "built with CUDA and a device is present)");
  cmd->add_option("--local-impl", o->local_impl,
                  "GPU GEMM of --local gpu (parray list; default: the GPU default, or parray's FP64 kernel)");
  cmd->add_option("--threads", o->threads, "CPU threads per rank for the local GEMM");
  cmd->add_option("--comm", o->comm,
                  "how panels travel: nccl (one rank per GPU, GPU to GPU), mpi (host memory) or auto (nccl where "
                  "NCCL is built, the local GEMM is on the GPU and every host has a GPU per rank)");
  cmd->add_option("--operands", o->operands,
                  "with nccl: device (A and B uploaded to the GPUs once, timed apart) or host (uploaded, and C "
                  "brought back, in every call)");
  cmd->add_flag("--share-gpus", o->share_gpus, "with nccl: let more ranks than GPUs share a host's GPUs");
  cmd->add_option("--progress-pieces", o->progress_pieces,
                  "CPU local GEMM pieces with an MPI progress call between them (0: by size)");
  cmd->add_option("--repeats", o->repeats, "timed runs (the median is reported)");
  cmd->add_option("--baseline", o->baseline, "scalapack: also run psgemm/pdgemm on the same grid and data");
  cmd->add_flag("--efficiency,!--no-efficiency", o->efficiency,
                "time the whole problem with the same local GEMM on rank 0 alone and print T1 / (P TP) (the "
                "default; --no-efficiency skips it for sizes one rank cannot hold)");
  parray::tools::add_csv_option(
      *cmd, o->csv,
      "write impl,ranks,grid,dtype,m,n,k,block,threads,local,ms,gflops,bytes_moved,ok,one_rank_ms,eff_vs_1,"
      "wait_ms,pack_ms,local_ms,comm,operands,upload_ms,recv_bytes,recv_theory_bytes,recv_ratio,layers,"
      "replicate_bytes,replicate_theory_bytes,reduce_bytes,reduce_theory_bytes,gather_bytes,"
      "recv_and_reduce_bytes,model_bytes,model_ratio,replicate_ms,layer_ms,reduce_ms,gather_ms");
  cmd->add_option("--fail-rank", o->fail_rank, "test hook: make this rank fail")->group("");
  return {{cmd, [o]() -> int {
#if PARRAY_HAVE_MPI
             return run_dist_gemm(*o);
#else
             throw parray::Error("dist-gemm: this build has no MPI (Debian: libopenmpi-dev)");
#endif
           }}};
}

static const parray::tools::RegisterCommands registered_dist_gemm(&add_dist_gemm_commands);

}  // namespace
