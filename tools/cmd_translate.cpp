// `parray translate FILE`: the C++ (CUDA for a .pa.cu) that parrayc makes of
// a Parray source, on stdout (docs/parray-language.md). A translation error
// is one line, FILE:LINE:COLUMN: error: WHAT, and exit status 2.
#include <iostream>
#include <memory>
#include <string>

#include "commands.hpp"
#include "parrayc/translate.hpp"

namespace {

std::vector<parray::tools::CliCommand> add_translate_commands(CLI::App& app, CLI::App&) {
  auto file = std::make_shared<std::string>();
  CLI::App* c = app.add_subcommand("translate", "print the C++ that parrayc makes of a Parray source (.pa, .pa.cu)");
  c->add_option("file", *file, "the Parray source")->required();
  return {{c, [file] {
             std::cout << parray::pa::translate(parray::pa::read_source(*file), *file);
             return 0;
           }}};
}

const parray::tools::RegisterCommands registered_translate(&add_translate_commands);

}  // namespace
