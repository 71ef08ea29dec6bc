// parrayc's front end: a Parray source (.pa, .pa.cu) split into what passes
// through untouched and what the translator rewrites, and the #parray
// declarations read into their parts.
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
  std::string text;                 // exactly as in the source ($ signs included for an expression)
  Position at;                      // of its first character
  std::vector<std::size_t> braces;  // code: where its '{' and '}' tokens are (not in literals, comments, # lines)
};

std::vector<Segment> scan(std::string_view source, const std::string& file);

// The directive words parrayc translates (without the #).
bool is_directive_word(std::string_view word);

// A `#parray {kind element dims} NAME` declaration, its parts as written:
//   #parray {dmem float [[2][512]][[2][512]]} M            kind dmem, element float
//   #parray {float [#A_1][[#A_0][#A_2]]} M                  no kind: a view
//   #parray {cuda(float a, float b) [[8][8]][[16][16]]} T   kind cuda, params "float a, float b"
//   #parray {pthd [2][2]} T                                 a thread array: no element
struct Declaration {
  std::string kind;     // paged pinned dmem smem rmem (data), pthd cuda mpi (threads), or ""
  std::string element;  // the element type of a data array ("" for a thread array)
  std::string params;   // a cuda array's kernel parameters, without the parentheses
  std::string dims;     // the dimensions, e.g. [[N/16][[4][4]] #type_0][[N/32][32] #type_1]
  std::string name;
  Position at;
  bool is_thread_array() const { return kind == "pthd" || kind == "cuda" || kind == "mpi"; }
};

// The declaration of a #parray directive segment; errors name the file,
// line and column of the offending text.
Declaration parse_declaration(const Segment& directive, const std::string& file);

}  // namespace parray::pa
