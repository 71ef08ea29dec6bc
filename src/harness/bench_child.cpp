// Baselines timed in a child process of their own.
//
// OpenBLAS (pthreads) and BLIS (OpenMP) bring thread pools that must not share
// the process with parray's threads while parray is timed, and Debian's
// OpenMP BLIS takes its thread count only from the environment. So `parray
// bench gemm` starts, for each baseline row, `EXE __bench-child key=value...`
// with OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / BLIS_NUM_THREADS (and MKL's)
// set to that row's thread count. The child builds the same operands (same seed, same
// layouts) without the FP64 reference, runs the baseline once, writes C's
// storage into a memfd the parent handed down, times the baseline and prints
// one result line. The parent verifies that C against its own reference, so
// a baseline is checked exactly as parray's implementations are.
#include <algorithm>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "harness/harness.hpp"

extern char** environ;

namespace parray {

namespace {

constexpr const char* kResultTag = "parray-bench-child";

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return s;
}

std::string text(const std::map<std::string, std::string>& kv, const std::string& key) {
  auto it = kv.find(key);
  if (it == kv.end()) throw Error("__bench-child: missing " + key + "=");
  return it->second;
}

double number(const std::map<std::string, std::string>& kv, const std::string& key) {
  const std::string t = text(kv, key);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str() || *end) throw Error("__bench-child: " + key + "=" + t + " is not a number");
  return v;
}

// Waits for `pid` until `deadline`; kills it then. Returns the wait status, or -1 when killed.
int wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return status;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "ended";
}

// Runs the child; fills `out` with its stdout. Returns "" or why it failed.
std::string spawn_and_read(const std::string& exe, const std::vector<std::string>& args,
                           const std::vector<std::string>& env, double timeout_s, std::string& out) {
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return std::string("pipe: ") + std::strerror(errno);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], STDOUT_FILENO);
  std::vector<char*> argv, envp;
  argv.push_back(const_cast<char*>(exe.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(pipe_fds[1]);
  if (rc != 0) {
    close(pipe_fds[0]);
    return "cannot start " + exe + ": " + std::strerror(rc);
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1e3));
  char buf[4096];
  bool past_deadline = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      past_deadline = true;
      break;
    }
    pollfd p{pipe_fds[0], POLLIN, 0};
    const int n = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    const ssize_t got = read(pipe_fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child closed its stdout (it is ending)
    out.append(buf, static_cast<std::size_t>(got));
  }
  // Kill a late child before closing the pipe: closed first, a child that
  // writes its result line in between would die of SIGPIPE instead, and the
  // row would say "broken pipe" rather than that it ran out of time.
  if (past_deadline) kill(pid, SIGKILL);
  close(pipe_fds[0]);
  const int status = wait_until(pid, deadline);  // reaps the killed child; -1 when it had to kill
  if (past_deadline || status == -1) return fmt::format("timed out after {:g} s (child killed)", timeout_s);
  if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    ChildResult r;
    if (parse_child_result(out, r) && !r.error.empty()) return r.error;
    return "child " + describe_status(status) + " without a result";
  }
  return "";
}

}  // namespace

std::string child_result_line(const ChildResult& r) {
  if (!r.error.empty()) return fmt::format("{} error={}\n", kResultTag, one_line(r.error));
  std::string kernel = one_line(r.kernel);
  std::replace(kernel.begin(), kernel.end(), ' ', '_');
  return fmt::format("{} median_ms={:.17g} min_ms={:.17g} max_ms={:.17g} reps={}{}\n", kResultTag, r.timing.median_ms,
                     r.timing.min_ms, r.timing.max_ms, r.timing.reps, kernel.empty() ? "" : " kernel=" + kernel);
}

bool parse_child_result(const std::string& out, ChildResult& r) {
  r = ChildResult{};
  // The last line that starts with the tag (a library may print before it).
  const std::string tag = std::string(kResultTag) + " ";
  std::size_t at = std::string::npos;
  for (std::size_t pos = 0; pos < out.size();) {
    const std::size_t end = std::min(out.find('\n', pos), out.size());
    if (out.compare(pos, tag.size(), tag) == 0) at = pos;
    pos = end + 1;
  }
  if (at == std::string::npos) {
    r.error = "no result line from the child";
    return false;
  }
  std::string line = out.substr(at + tag.size(), std::min(out.find('\n', at), out.size()) - at - tag.size());
  if (line.rfind("error=", 0) == 0) {
    r.error = line.substr(6);
    if (r.error.empty()) r.error = "the child failed without saying why";
    return true;
  }
  std::map<std::string, std::string> kv;
  for (std::size_t pos = 0; pos < line.size();) {
    const std::size_t end = std::min(line.find(' ', pos), line.size());
    const std::string item = line.substr(pos, end - pos);
    if (const std::size_t eq = item.find('='); eq != std::string::npos) kv[item.substr(0, eq)] = item.substr(eq + 1);
    pos = end + 1;
  }
  try {
    r.timing.median_ms = number(kv, "median_ms");
    r.timing.min_ms = number(kv, "min_ms");
    r.timing.max_ms = number(kv, "max_ms");
    r.timing.reps = static_cast<int>(number(kv, "reps"));
    if (const auto it = kv.find("kernel"); it != kv.end()) r.kernel = it->second;
  } catch (const Error& e) {
    r = ChildResult{};
    r.error = std::string("malformed result line from the child (") + e.what() + ")";
    return false;
  }
  return true;
}

std::vector<std::string> child_args(const std::string& impl, const GemmProblem& p, int threads,
                                    const BenchOptions& o, int c_fd) {
  return {"__bench-child",
          "impl=" + impl,
          std::string("dtype=") + dtype_name(p.dtype),
          fmt::format("m={}", p.m),
          fmt::format("n={}", p.n),
          fmt::format("k={}", p.k),
          "layout_a=" + p.layout_a,
          "layout_b=" + p.layout_b,
          "layout_c=" + p.layout_c,
          fmt::format("alpha={:.17g}", p.alpha),
          fmt::format("beta={:.17g}", p.beta),
          fmt::format("seed={}", p.seed),
          fmt::format("int_inputs={}", p.int_inputs ? 1 : 0),
          fmt::format("threads={}", threads),
          fmt::format("warmup={}", o.warmup),
          fmt::format("min_reps={}", o.min_reps),
          fmt::format("max_reps={}", o.max_reps),
          fmt::format("target_seconds={:.17g}", o.target_seconds),
          fmt::format("min_warmup_seconds={:.17g}", o.min_warmup_seconds),
          fmt::format("c_fd={}", c_fd)};
}

std::vector<std::string> child_environment(int threads) {
  static const char* const kThreadVars[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "BLIS_NUM_THREADS",
                                            "GOTO_NUM_THREADS", "MKL_NUM_THREADS"};
  std::vector<std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const std::string var = *e;
    bool replaced = false;
    for (const char* name : kThreadVars)
      replaced = replaced || var.rfind(std::string(name) + "=", 0) == 0;
    if (!replaced) env.push_back(var);
  }
  for (const char* name : kThreadVars) env.push_back(fmt::format("{}={}", name, threads));
  return env;
}

void time_in_child(GemmCase& gcase, const GemmImpl& impl, int threads, const BenchOptions& o, BenchRow& row) {
  const int c_fd = memfd_create("parray-bench-c", 0);  // inherited by the child
  if (c_fd < 0) {
    row.note = std::string("FAILED: memfd_create: ") + std::strerror(errno);
    return;
  }
  std::string out;
  std::string why = spawn_and_read(o.child_exe, child_args(impl.name, gcase.problem(), threads, o, c_fd),
                                   child_environment(threads), o.child_timeout_seconds, out);
  ChildResult result;
  if (why.empty() && !parse_child_result(out, result)) why = result.error;
  if (why.empty() && !result.error.empty()) why = result.error;
  struct stat st {};
  const std::size_t bytes = gcase.c_storage_bytes();
  if (why.empty() && (fstat(c_fd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes))
    why = fmt::format("the child wrote {} bytes of C, expected {}", static_cast<long long>(st.st_size), bytes);
  if (!why.empty()) {
    close(c_fd);
    row.note = "FAILED: " + impl.name + " in a child process: " + why;
    return;
  }
  CheckResult check;
  if (bytes > 0) {
    void* c = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, c_fd, 0);
    if (c == MAP_FAILED) {
      close(c_fd);
      row.note = std::string("FAILED: mmap of the child's C: ") + std::strerror(errno);
      return;
    }
    check = gcase.check_c(c);
    munmap(c, bytes);
  }
  close(c_fd);
  row.outcome = check.ok ? Outcome::passed : Outcome::failed;
  row.rel_err = std::max(row.rel_err, check.rel_err);  // the worst of the rounds
  row.max_abs_err = std::max(row.max_abs_err, check.max_abs_err);
  if (!check.ok) {
    row.note = "FAILED: " + check.reason;
    return;
  }
  row.ms = reported_ms(result.timing, o);
  if (!result.kernel.empty()) row.note = "kernel " + result.kernel;
}

int bench_child_main(int argc, char** argv) {
  ChildResult result;
  try {
    std::map<std::string, std::string> kv;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      const std::size_t eq = a.find('=');
      if (eq == std::string::npos) throw Error("__bench-child: argument '" + a + "' is not key=value");
      kv[a.substr(0, eq)] = a.substr(eq + 1);
    }
    GemmProblem p;
    const std::string dtype = text(kv, "dtype");
    if (dtype != "f32" && dtype != "f64") throw Error("__bench-child: dtype=" + dtype);
    p.dtype = dtype == "f32" ? Dtype::f32 : Dtype::f64;
    p.m = static_cast<index_t>(number(kv, "m"));
    p.n = static_cast<index_t>(number(kv, "n"));
    p.k = static_cast<index_t>(number(kv, "k"));
    p.layout_a = text(kv, "layout_a");
    p.layout_b = text(kv, "layout_b");
    p.layout_c = text(kv, "layout_c");
    p.alpha = number(kv, "alpha");
    p.beta = number(kv, "beta");
    p.seed = std::strtoull(text(kv, "seed").c_str(), nullptr, 10);
    p.int_inputs = number(kv, "int_inputs") != 0;
    p.skip_reference = true;  // the parent checks C against its reference
    const int threads = static_cast<int>(number(kv, "threads"));
    const int c_fd = static_cast<int>(number(kv, "c_fd"));
    register_baselines(registry());
    const GemmImpl& impl = registry().find(text(kv, "impl"));
    GemmCase gcase(p);
    if (std::string why = gcase.why_not(impl); !why.empty()) throw Error("cannot run this problem: " + why);
    gcase.run_fresh(impl, threads);  // the verified run; also the first warm-up
    const std::size_t bytes = gcase.c_storage_bytes();
    if (ftruncate(c_fd, static_cast<off_t>(bytes)) != 0)
      throw Error(std::string("__bench-child: cannot write C: ") + std::strerror(errno));
    const char* c = static_cast<const char*>(gcase.c_storage());
    for (std::size_t done = 0; done < bytes;) {
      const ssize_t n = pwrite(c_fd, c + done, bytes - done, static_cast<off_t>(done));
      if (n <= 0) throw Error(std::string("__bench-child: cannot write C: ") + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
    // Warmed up again after writing C back, as the parent does after its pause.
    result.timing = time_repeated([&] { gcase.run(impl, threads); }, static_cast<int>(number(kv, "warmup")),
                                  static_cast<int>(number(kv, "min_reps")), static_cast<int>(number(kv, "max_reps")),
                                  number(kv, "target_seconds"), {}, number(kv, "min_warmup_seconds"));
    if (impl.kernel_info) result.kernel = impl.kernel_info();
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  const std::string line = child_result_line(result);
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  return result.error.empty() ? 0 : 1;
}

}  // namespace parray
