// Subcommands that live in their own files (tools/cmd_*.cpp) register here,
// so that main.cpp needs no edit for each new one:
//
//   std::vector<CliCommand> add_lab_commands(CLI::App& app, CLI::App& bench) { ... }
//   static const RegisterCommands registered_lab(&add_lab_commands);  // a name of its own: the CLI builds as one unity source
//
// main() calls every adder before parsing, then runs the command that was
// parsed; parray::Error thrown from run() becomes one line and exit status 2.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace parray::tools {

struct CliCommand {
  CLI::App* command;
  std::function<int()> run;
};

using CommandAdder = std::vector<CliCommand> (*)(CLI::App& app, CLI::App& bench);

inline std::vector<CommandAdder>& command_adders() {
  static std::vector<CommandAdder> adders;
  return adders;
}

struct RegisterCommands {
  explicit RegisterCommands(CommandAdder adder) { command_adders().push_back(adder); }
};

}  // namespace parray::tools
