// parray bench copy: Parray's #copy between matrix types across memory kinds,
// against cudaMemcpy of the same bytes in the same run.
//
//   parray bench copy [--size N] [--layouts col,fig17,fig17x4,fig18] [--csv FILE]
//
// Rows: the same dense layout on both sides for every pair of kinds (paged,
// pinned, device: what a contiguous #copy costs against cudaMemcpy), then
// device-to-device copies that change the layout, row-major to each layout
// and back (against the device-to-device cudaMemcpy of the same matrix).
// Every copy is checked element by element before it is timed (CUDA events,
// median); GB/s count the bytes read plus written.
#include <iostream>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli_util.hpp"
#include "commands.hpp"
#include "parray/array.hpp"
#include "parray/config.hpp"
#include "parray/measure.hpp"
#include "parray/named_layouts.hpp"
#if PARRAY_HAVE_CUDA
#include "parray/cuda_runtime.hpp"
#endif

namespace parray {
namespace {

struct CopyArgs {
  index_t size = 8192;
  std::string layouts = "col,fig17,fig17x4,fig18", csv;
};

// A matrix of one named layout in one memory kind, filled with its element numbers.
struct Operand {
  MatrixType type;
  Array<float> storage;
  Operand(const std::string& layout, index_t n, Memory kind)
      : type(make_matrix_type(layout, n, n)), storage(type.storage, kind) {}
  MatrixView<float> view() { return storage.view(type.view); }
};

// The value element (i, j) holds: distinct enough that a misplaced element shows.
float value_at(index_t i, index_t j) { return float((i * 7919 + j) % 1048573); }

void fill(Operand& x) {
  Array<float> h(x.type.storage, Memory::paged);
  MatrixView<float> v = h.view(x.type.view);
  for (index_t i = 0; i < v.rows(); ++i)
    for (index_t j = 0; j < v.cols(); ++j) v(i, j) = value_at(i, j);
  copy_bytes(x.storage.data(), x.storage.memory(), h.data(), Memory::paged, std::size_t(h.storage_elements()) * 4);
}

void poison(Operand& x) {
  Array<float> h(x.type.storage, Memory::paged);
  for (index_t i = 0; i < h.storage_elements(); ++i) h[i] = -1.f;
  copy_bytes(x.storage.data(), x.storage.memory(), h.data(), Memory::paged, std::size_t(h.storage_elements()) * 4);
}

Verdict check(Operand& x) {
  Array<float> h(x.type.storage, Memory::paged);
  copy_bytes(h.data(), Memory::paged, x.storage.data(), x.storage.memory(), std::size_t(h.storage_elements()) * 4);
  const MatrixView<float> v = h.view(x.type.view);
  for (index_t i = 0; i < v.rows(); ++i)
    for (index_t j = 0; j < v.cols(); ++j)
      if (v(i, j) != value_at(i, j))
        return {Outcome::failed, 1, fmt::format("element ({}, {}) is {}", i, j, v(i, j))};
  return {Outcome::passed, 0, ""};
}

struct CopyRow {
  std::string from, to;
  double ms = 0, gbps = 0, memcpy_gbps = 0;
  Verdict verdict;
};

// One #copy from `src` to `dst`: verified, then timed with CUDA events.
CopyRow measure(const std::string& from, const std::string& to, Operand& src, Operand& dst) {
  CopyRow r;
  r.from = from, r.to = to;
  Trial t;
  t.reset = [&] { poison(dst); };
  t.run = [&] { copy<float>(MatrixView<const float>(src.view()), dst.view()); };
  t.check = [&] { return check(dst); };
#if PARRAY_HAVE_CUDA
  t.time_one = [run = t.run] { return cuda::event_time_ms(run); };
#endif
  TimingPlan plan;
  plan.warmup = 2, plan.min_reps = 11, plan.max_reps = 11, plan.target_seconds = 0;
  const Measurement m = verify_then_time(t, plan);
  r.verdict = m.verdict;
  r.ms = m.timing.median_ms;
  const double bytes = 2.0 * double(src.type.view.size()) * 4;
  r.gbps = r.ms > 0 ? bytes / (r.ms * 1e6) : 0;
  return r;
}

// cudaMemcpy of a matrix's bytes between two kinds, GB/s (read + written).
double memcpy_gbps(index_t n, Memory from, Memory to) {
  Array<float> a(Layout::dense({n, n}), from), b(Layout::dense({n, n}), to);
  const std::size_t bytes = std::size_t(n * n) * 4;
  // Written first, as #copy's operands are: untouched pageable pages would
  // be read from the kernel's zero page, faster than any real source.
  const std::vector<float> ones(std::size_t(n * n), 1.f);
  copy_bytes(a.data(), from, ones.data(), Memory::paged, bytes);
  copy_bytes(b.data(), to, ones.data(), Memory::paged, bytes);
  TimingPlan plan;
  plan.warmup = 2, plan.min_reps = 11, plan.max_reps = 11, plan.target_seconds = 0;
  double ms = 0;
#if PARRAY_HAVE_CUDA
  ms = time_calls([&] { return cuda::event_time_ms([&] { copy_bytes(b.data(), to, a.data(), from, bytes); }); }, plan)
           .median_ms;
#endif
  return 2.0 * double(bytes) / (ms * 1e6);
}

int run_copy_bench(const CopyArgs& a) {
  if (!cuda_available()) throw Error("bench copy: no CUDA device");
  std::vector<CopyRow> rows;
  const Memory kinds[] = {Memory::paged, Memory::pinned, Memory::device};
  for (Memory from : kinds)
    for (Memory to : kinds) {
      if (from != Memory::device && to != Memory::device) continue;
      Operand src("row", a.size, from), dst("row", a.size, to);
      fill(src);
      CopyRow r = measure(fmt::format("row/{}", memory_name(from)), fmt::format("row/{}", memory_name(to)), src, dst);
      r.memcpy_gbps = memcpy_gbps(a.size, from, to);
      rows.push_back(r);
    }
  const double d2d = memcpy_gbps(a.size, Memory::device, Memory::device);
  for (const std::string& layout : tools::split_list(a.layouts))
    for (bool forward : {true, false}) {
      Operand src(forward ? "row" : layout, a.size, Memory::device), dst(forward ? layout : "row", a.size, Memory::device);
      fill(src);
      CopyRow r = measure(forward ? "row" : layout, forward ? layout : "row", src, dst);
      r.memcpy_gbps = d2d;
      rows.push_back(r);
    }
  std::string csv = "from,to,n,ms,gbps,memcpy_gbps,pct_memcpy,ok,note\n";
  for (const CopyRow& r : rows) {
    const double pct = r.memcpy_gbps > 0 ? 100.0 * r.gbps / r.memcpy_gbps : 0;
    csv += fmt::format("{},{},{},{:.4f},{:.1f},{:.1f},{:.1f},{},\"{}\"\n", r.from, r.to, a.size, r.ms, r.gbps,
                       r.memcpy_gbps, pct, r.verdict.passed() ? 1 : 0, r.verdict.note);
  }
  std::cout << csv;
  tools::write_output(a.csv, csv);
  for (const CopyRow& r : rows)
    if (!r.verdict.passed()) return 1;
  return 0;
}

std::vector<tools::CliCommand> add_copy_commands(CLI::App&, CLI::App& bench) {
  auto args = std::make_shared<CopyArgs>();
  CLI::App* c = bench.add_subcommand("copy", "#copy between matrix types across memory kinds, against cudaMemcpy");
  c->add_option("--size", args->size, "matrix size N (N x N FP32)")->capture_default_str()->check(CLI::Range(1, 65536));
  c->add_option("--layouts", args->layouts, "layouts copied to and from row-major on the device")->capture_default_str();
  tools::add_csv_option(*c, args->csv);
  return {{c, [args] { return run_copy_bench(*args); }}};
}

const tools::RegisterCommands registered_copy(&add_copy_commands);

}  // namespace
}  // namespace parray
