// parrayc's first stage: a Parray source (.pa, .pa.cu) split into what
// passes through untouched and what the translator rewrites.
//
//   code        C/C++/CUDA text, preprocessor lines (#include, #define, ...)
//               included; string, character and raw-string literals and
//               comments are code whatever they contain
//   directive   a Parray directive line: #parray {...} NAME (its braces may
//               span lines), #create, #destroy, #copy, #detour, #sync (and
//               #sync_1 ...), #mainhost, #global, #subprog, #end
//   expression  $...$, the paper's type expressions; a term such as
//               $tid_0$ nests inside one ($M[[$tid_0$][i]][0]$): inside an
//               expression, `$` followed by an identifier and `$` is a nested
//               term, any other `$` closes the expression
//
// The segments concatenated give back the source exactly. A scan error is a
// parray::Error whose message reads FILE:LINE:COLUMN: error: WHAT.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace parray::pa {

struct Position {
  int line = 1, column = 1;
};

enum class SegmentKind { code, directive, expression };

struct Segment {
  SegmentKind kind;
  std::string text;  // exactly as in the source ($ signs included for an expression)
  Position at;       // of its first character
};

std::vector<Segment> scan(std::string_view source, const std::string& file);

// The directive words parrayc translates (without the #).
bool is_directive_word(std::string_view word);

}  // namespace parray::pa
