// Running the parray tool from a test: its exit status, stdout and stderr.
// Shared by the test binaries that check the CLI (PARRAY_CLI_PATH is set by
// tests/CMakeLists.txt).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace parray_test {

struct CliResult {
  int status = -1;  // -1: did not start or did not exit normally
  std::string out, err;
};

inline CliResult run_cli(const std::string& args) {
  // One stderr file per process: ctest runs several test binaries at once.
  const std::string err_file = testing::TempDir() + "parray_cli_stderr_" + std::to_string(getpid()) + ".txt";
  const std::string cmd = std::string(PARRAY_CLI_PATH) + " " + args + " 2>" + err_file;
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  const int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (FILE* f = std::fopen(err_file.c_str(), "r")) {
    while (std::fgets(buf.data(), buf.size(), f)) r.err += buf.data();
    std::fclose(f);
  }
  return r;
}

// Sets an environment variable for the CLI runs of one scope, then puts back
// what was there before (or unsets it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_.c_str(), old_.c_str(), 1) : unsetenv(name_.c_str()); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

// Bad input: exit status 2 and one line on stderr that contains `message`.
inline void expect_cli_bad_input(const std::string& args, const std::string& message) {
  const CliResult r = run_cli(args);
  EXPECT_EQ(r.status, 2) << args << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << "\nstderr: " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line, got: " << r.err;
}

}  // namespace parray_test
