// parrayc's translator: a Parray source (.pa, or .pa.cu with device code)
// turned into C++/CUDA that calls the parray library.
//
//   #parray {paged float [[2][N/2]][[2][N/2]]} M   an ArrayType and its DeviceLayout
//   #create M(a) ... #destroy M(a)                  storage (pa::Storage) and a float* a
//   x[$M[[$tid_0$][i]][0]$]                         offsets through the DeviceLayout
//   #detour T(args) { ... }                         T.detour(lambda), the closing brace included
//
// docs/parray-language.md is the reference of the language and of what each
// construct becomes. The output starts with #line 1 "FILE" and keeps every
// source line on its own line number, so a C++/CUDA compiler's errors name
// the .pa file and line. A translation error is a parray::Error whose message
// reads FILE:LINE:COLUMN: error: WHAT.
#pragma once

#include <string>
#include <string_view>

namespace parray::pa {

std::string translate(std::string_view source, const std::string& file);

// The text of a source file (parray::Error when it cannot be read).
std::string read_source(const std::string& path);

// Whether an error message already reads FILE:LINE:COLUMN: error: WHAT (a
// translation error), so that it is printed as it is, the location first, as
// an editor reads a compiler's messages.
bool is_located_error(std::string_view message);

}  // namespace parray::pa
