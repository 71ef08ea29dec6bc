// Parsing helpers shared by the CLI's subcommands (tools/*.cpp). Every
// failure throws parray::Error, which main() turns into one line on stderr and
// exit status 2.
#pragma once

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <fstream>
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

// Every size of a --sizes list of cube_or_mkn's, as {M, K, N}.
inline std::vector<std::vector<index_t>> cube_or_mkn_list(const std::string& text) {
  std::vector<std::vector<index_t>> shapes;
  for (const std::string& s : split_list(text)) shapes.push_back(cube_or_mkn(s));
  if (shapes.empty()) throw Error("--sizes is empty");
  return shapes;
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

// Writes a finished table to the file an output option (--csv, --time-csv)
// named; nothing when none was named. The file was found writable before the
// run (check_output_files in main.cpp), so a failure here is rare, and still an
// error rather than a table silently lost. With `who`, says "[who] wrote PATH"
// on stderr.
inline void write_output(const std::string& path, const std::string& text, const std::string& who = "") {
  if (path.empty()) return;
  std::ofstream f(path);
  if (!(f << text)) throw Error("cannot write " + path);
  if (!who.empty()) std::fprintf(stderr, "[%s] wrote %s\n", who.c_str(), path.c_str());
}

// The options that one of the add_* helpers below adds together, so that a
// command marks them alike: add_gemm_extents(*c, a.m, a.n, a.k).required().
struct AddedOptions {
  std::vector<CLI::Option*> options;

  AddedOptions& required() {
    for (CLI::Option* o : options) o->required();
    return *this;
  }
  AddedOptions& show_defaults() {
    for (CLI::Option* o : options) o->capture_default_str();
    return *this;
  }
};

// The options that several commands share, defined once so that they read
// alike in every command's --help.

// -m, -n, -k: C (m x n) = A (m x k) B (k x n).
template <class Int>
AddedOptions add_gemm_extents(CLI::App& c, Int& m, Int& n, Int& k) {
  return {{c.add_option("-m", m, "rows of A and C"), c.add_option("-n", n, "columns of B and C"),
           c.add_option("-k", k, "columns of A, rows of B")}};
}

// --alpha, --beta: C = alpha A B + beta C.
template <class Real>
AddedOptions add_alpha_beta(CLI::App& c, Real& alpha, Real& beta) {
  return {{c.add_option("--alpha", alpha), c.add_option("--beta", beta)}};
}

// --dtype of one GEMM (parse_dtype reads it).
inline CLI::Option* add_dtype(CLI::App& c, std::string& dtype) { return c.add_option("--dtype", dtype, "f32 or f64"); }

// --dtype of a benchmark table: its rows in one dtype or in both.
inline CLI::Option* add_dtype_list(CLI::App& c, std::string& dtypes) {
  return c.add_option("--dtype", dtypes, "f32, f64 or f32,f64");
}

// --threads of one CPU run; 0 (omp_get_max_threads) is the default.
inline CLI::Option* add_cpu_threads(CLI::App& c, int& threads) {
  return c.add_option("--threads", threads, "CPU threads (default: OMP_NUM_THREADS or all cores)");
}

// --precision of a GPU GEMM on FP32 data: the least accuracy the call asks
// for (parse_precision reads it).
inline CLI::Option* add_gpu_precision(CLI::App& c, std::string& precision) {
  return c.add_option("--precision", precision, "the least accuracy asked: fp32, tf32, bf16 or fp16")
      ->capture_default_str();
}

// --trans-a, --trans-b: op(A) = A^T, op(B) = B^T.
inline void add_transpose_flags(CLI::App& c, bool& trans_a, bool& trans_b) {
  c.add_flag("--trans-a", trans_a, "A is stored K x M and used transposed");
  c.add_flag("--trans-b", trans_b, "B is stored N x K and used transposed");
}

// --csv FILE: the command's table, written with write_output. main() checks
// that the file can be written before the command runs.
inline CLI::Option* add_csv_option(CLI::App& c, std::string& path, const std::string& help = "write the table as CSV") {
  return c.add_option("--csv", path, help);
}

// --sizes of the device-memory benchmarks (bench gemm16, gemm8), read by
// cube_or_mkn_list.
inline CLI::Option* add_cube_or_mkn_sizes(CLI::App& c, std::string& sizes) {
  return c.add_option("--sizes", sizes, "comma-separated N (N^3) or MxKxN")->capture_default_str();
}

// --reps of the benchmarks timed with CUDA events: the median of this many
// runs after a warm-up.
inline CLI::Option* add_median_reps(CLI::App& c, int& reps) {
  return c.add_option("--reps", reps, "timed repeats (median)")->capture_default_str()->check(CLI::Range(1, 1000));
}

}  // namespace parray::tools
