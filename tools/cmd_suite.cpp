// `parray bench suite NAME|FILE [--out DIR]`: a benchmark suite as data.
//
// A suite file (bench/suites/NAME.suite) holds one parray command per line,
// e.g. "bench gemm --impl gpu-ladder,cublas --sizes 4096 --csv ladder.csv";
// '#' starts a comment, double quotes group a word with spaces. Every line
// runs as a child process of this executable, in DIR, so relative --csv paths
// land there; they run one after another, a failing line is reported and the
// rest still run, and the exit status is 1 when any line failed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "parray/config.hpp"
#include "parray/core.hpp"
#include "commands.hpp"

extern char** environ;

namespace parray::tools {
namespace {

struct SuiteLine {
  int number;
  std::vector<std::string> words;
};

std::vector<std::string> split_words(const std::string& line, const std::string& where) {
  std::vector<std::string> words;
  std::string w;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted, any = true;
    else if (!quoted && c == '#') break;
    else if (!quoted && std::isspace(static_cast<unsigned char>(c))) {
      if (any) words.push_back(w), w.clear(), any = false;
    } else {
      w += c, any = true;
    }
  }
  if (quoted) throw Error(where + ": a quote is not closed");
  if (any) words.push_back(w);
  return words;
}

// NAME is a file, or bench/suites/NAME.suite of the source tree.
std::filesystem::path suite_path(const std::string& name) {
  if (std::filesystem::is_regular_file(name)) return name;
  const std::filesystem::path p = std::filesystem::path(PARRAY_SUITES_DIR) / (name + ".suite");
  if (std::filesystem::is_regular_file(p)) return p;
  throw Error("no suite '" + name + "' (neither a file nor " + p.string() + ")");
}

std::vector<SuiteLine> read_suite(const std::filesystem::path& path) {
  std::ifstream f(path);
  if (!f) throw Error("cannot read " + path.string());
  std::vector<SuiteLine> lines;
  std::string text;
  for (int n = 1; std::getline(f, text); ++n) {
    std::vector<std::string> words = split_words(text, path.string() + ":" + std::to_string(n));
    if (!words.empty()) lines.push_back({n, std::move(words)});
  }
  if (lines.empty()) throw Error(path.string() + " holds no command");
  return lines;
}

// Runs this executable with `words` in directory `dir`; its exit status.
int run_child(const std::vector<std::string>& words, const std::string& dir) {
  std::vector<char*> argv{const_cast<char*>("parray")};
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cwd = std::filesystem::current_path().string();
  std::filesystem::current_path(dir);  // posix_spawn has no portable chdir action; the child inherits this
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ);
  std::filesystem::current_path(cwd);
  if (rc != 0) throw Error(std::string("cannot start ") + exe + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(std::string("waitpid: ") + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int cmd_suite(const std::string& name, const std::string& out) {
  const std::filesystem::path path = suite_path(name);
  const std::vector<SuiteLine> lines = read_suite(path);
  std::filesystem::create_directories(out);
  int failed = 0;
  for (const SuiteLine& l : lines) {
    std::string shown;
    for (const std::string& w : l.words) shown += (shown.empty() ? "" : " ") + w;
    std::cerr << fmt::format("[suite] {}:{}: parray {}\n", path.filename().string(), l.number, shown);
    const int rc = run_child(l.words, out);
    if (rc != 0) {
      ++failed;
      std::cerr << fmt::format("[suite] {}:{} exited with {}\n", path.filename().string(), l.number, rc);
    }
  }
  std::cout << fmt::format("suite {}: {} command(s), {} failed; results in {}\n", path.string(), lines.size(), failed,
                           out);
  return failed == 0 ? 0 : 1;
}

struct SuiteArgs {
  std::string name, out = ".";
};

std::vector<CliCommand> add_suite_command(CLI::App&, CLI::App& bench) {
  static SuiteArgs a;
  CLI::App* c = bench.add_subcommand("suite", "Run a benchmark suite: one parray command per line of a file");
  c->add_option("suite", a.name, "a file, or NAME for bench/suites/NAME.suite")->required();
  c->add_option("--out", a.out, "directory the commands run in (their relative --csv files land there)");
  return {{c, [] { return cmd_suite(a.name, a.out); }}};
}

const RegisterCommands registered_suite(&add_suite_command);

}  // namespace
}  // namespace parray::tools
