// parrayc IN.pa -o OUT.cpp: a Parray source translated to C++ (CUDA for a
// .pa.cu), docs/parray-language.md. An error is one line on stderr,
// FILE:LINE:COLUMN: error: WHAT, and exit status 2; nothing is written then.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "parray/core.hpp"
#include "parrayc/translate.hpp"

namespace {

const char* kUsage = "usage: parrayc IN.pa [-o OUT.cpp]   (without -o: the C++ on stdout)";

int run(int argc, char** argv) {
  std::string in, out;
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    }
    if (a == "-o" && k + 1 < argc) {
      out = argv[++k];
    } else if (in.empty() && !a.empty() && a[0] != '-') {
      in = a;
    } else {
      throw parray::Error("unexpected argument '" + a + "'; " + kUsage);
    }
  }
  if (in.empty()) throw parray::Error(std::string("no input file; ") + kUsage);
  const std::string cpp = parray::pa::translate(parray::pa::read_source(in), in);
  if (out.empty()) {
    std::cout << cpp;
    return 0;
  }
  std::ofstream o(out, std::ios::binary);
  if (!(o << cpp) || !o.flush()) throw parray::Error(out + ": cannot be written");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    if (parray::pa::is_located_error(e.what()))
      std::fprintf(stderr, "%s\n", e.what());  // FILE:LINE:COLUMN: error: WHAT
    else
      std::fprintf(stderr, "parrayc: error: %s\n", e.what());
    return 2;
  }
}
