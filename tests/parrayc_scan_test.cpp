// parrayc's scanner: what it passes through and what it hands the
// translator, exact round trips, errors with file:line:column, and no crash
// or hang on random and mutated input.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "parray/core.hpp"
#include "parrayc/scan.hpp"

using namespace parray;
using namespace parray::pa;

namespace {

// Fig 10 of the paper, as printed (with the loops' body on one line).
const char* kScannedFig10 = R"pa(#include <stdio.h>
#parray {paged float [[2][512]][[2][512]]} M
#parray {pthd [2][2]} MY_TA
int main() {
  #create M(a)
  #detour MY_TA(a, b, c) {
    for (int i = 0; i < $dim_0_1(M)$; i++)
      c[$M[[$tid_0$][i]][[$tid_1$][j]]$] = Cvalue;
  }
  #destroy M(a)
}
)pa";

std::string joined(const std::vector<Segment>& segments) {
  std::string s;
  for (const Segment& g : segments) s += g.text;
  return s;
}

std::vector<Segment> of_kind(const std::vector<Segment>& segments, SegmentKind kind) {
  std::vector<Segment> out;
  for (const Segment& g : segments)
    if (g.kind == kind) out.push_back(g);
  return out;
}

std::string error_of(const std::string& source) {
  try {
    scan(source, "t.pa");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ParraycScan, DirectivesAndExpressionsOfFigure10) {
  const std::vector<Segment> s = scan(kScannedFig10, "fig10.pa");
  EXPECT_EQ(joined(s), kScannedFig10);
  const auto d = of_kind(s, SegmentKind::directive);
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0].text, "#parray {paged float [[2][512]][[2][512]]} M");
  EXPECT_EQ(d[0].at.line, 2);
  EXPECT_EQ(d[2].text, "  #create M(a)");
  EXPECT_EQ(d[3].text, "  #detour MY_TA(a, b, c) {");
  EXPECT_EQ(d[4].text, "  #destroy M(a)");
  const auto e = of_kind(s, SegmentKind::expression);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].text, "$dim_0_1(M)$");
  EXPECT_EQ(e[1].text, "$M[[$tid_0$][i]][[$tid_1$][j]]$");  // nested terms stay inside
  EXPECT_EQ(e[1].at.line, 8);
  EXPECT_EQ(e[1].at.column, 9);
}

TEST(ParraycScan, LiteralsCommentsAndPreprocessorLinesAreCode) {
  const std::string src =
      "#define CAT(a, b) a##b \\\n  $not_an_expression$\n"
      "const char* s = \"$x$ #parray {y} z\"; char c = '$'; char d = '\\'';\n"
      "// $comment$\n/* #parray {a} b\n $c$ */\n"
      "auto r = R\"x(a \"$\" )\" #parray)x\"; auto u = u8R\"(raw $)\";\n"
      "int n = 1'000'000 + 0x1p+3; #sync\n";
  const std::vector<Segment> s = scan(src, "t.pa");
  EXPECT_EQ(joined(s), src);
  EXPECT_EQ(of_kind(s, SegmentKind::expression).size(), 0u);
  EXPECT_EQ(of_kind(s, SegmentKind::directive).size(), 0u);  // a # mid-line is not a directive
}

TEST(ParraycScan, MultiLineParrayAndSyncOverASubArray) {
  const std::string src =
      "#parray {cuda(float a, float b, float c)\n  [[N/16][N/256]][[4][32]]} CUDA\n#sync_1\n#sync\n#syncx\n";
  const std::vector<Segment> s = scan(src, "t.pa");
  EXPECT_EQ(joined(s), src);
  const auto d = of_kind(s, SegmentKind::directive);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].text, "#parray {cuda(float a, float b, float c)\n  [[N/16][N/256]][[4][32]]} CUDA");
  EXPECT_EQ(d[1].text, "#sync_1");
  EXPECT_EQ(d[2].text, "#sync");  // #syncx is a preprocessor line, code
}

TEST(ParraycScan, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(error_of("int x;\n  y = $M[i];\n"), "t.pa:2:7: error: '$' expression is never closed by a '$'");
  EXPECT_EQ(error_of("a = \"open\n\";"), "t.pa:1:5: error: string literal is never closed");
  EXPECT_EQ(error_of("/* open"), "t.pa:1:1: error: comment is never closed");
  EXPECT_EQ(error_of("auto r = R\"x(never"), "t.pa:1:10: error: raw string literal is never closed");
  EXPECT_EQ(error_of("#parray {paged float [4]\n"), "t.pa:1:1: error: #parray's '{' is never closed");
  EXPECT_EQ(error_of("#parray paged float [4] A\n"),
            "t.pa:1:1: error: #parray needs a type in braces: #parray {kind type [dims]} NAME");
  EXPECT_EQ(error_of("x = $A[\"s\"]$;"), "t.pa:1:8: error: a literal inside a '$' expression");
}

// Random bytes and mutations of a real source: every input either scans to
// segments that give it back exactly or is refused with a located error, and
// so is every #parray declaration among them.
TEST(ParraycScan, FuzzedInputNeverCrashesOrHangs) {
  std::mt19937 gen(7);
  const std::string alphabet = "#$\"'/*\\\n {}[]()R u8abc_0123+-e.";
  const std::string base = kScannedFig10;
  int scanned = 0, refused = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string src;
    if (round % 2 == 0) {
      const std::size_t n = gen() % 200;
      for (std::size_t k = 0; k < n; ++k) src += alphabet[gen() % alphabet.size()];
    } else {
      src = base;
      for (int m = 0; m < 1 + int(gen() % 6); ++m) {
        const std::size_t at = gen() % (src.size() + 1);
        if (gen() % 2)
          src.insert(at, 1, alphabet[gen() % alphabet.size()]);
        else if (at < src.size())
          src.erase(at, 1 + gen() % 8);
      }
    }
    try {
      const std::vector<Segment> segments = scan(src, "f.pa");
      EXPECT_EQ(joined(segments), src);
      ++scanned;
      for (const Segment& g : of_kind(segments, SegmentKind::directive)) {
        if (g.text.find("parray") == std::string::npos) continue;
        try {
          parse_declaration(g, "f.pa");
        } catch (const Error& e) {
          EXPECT_EQ(std::string(e.what()).rfind("f.pa:", 0), 0u) << e.what();
        }
      }
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("f.pa:", 0), 0u) << e.what();
      EXPECT_NE(std::string(e.what()).find(": error: "), std::string::npos) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(scanned, 100);
  EXPECT_GT(refused, 100);
}

// #parray declarations: the paper's, split into kind, parameters, element,
// dimensions and name; malformed ones refused at the offending character.
TEST(ParraycDeclaration, ThePapersDeclarations) {
  const std::string src =
      "#parray {paged float [[2][512]][[2][512]]} M\n"
      "#parray {pthd [2][2]} MY_TA\n"
      "#parray {cuda(float a, float b, float c)\n  [[N/16][N/256]][[4][32]]} CUDA\n"
      "#parray {float [#A_1][[#A_0][#A_2]]} V\n"
      "  #parray { smem float [32 #S_0][[4][4] #S_1] }  S0\n"
      "#parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA\n"
      "#parray {mpi [2]} P\n";
  std::vector<Declaration> d;
  for (const Segment& g : of_kind(scan(src, "t.pa"), SegmentKind::directive)) d.push_back(parse_declaration(g, "t.pa"));
  ASSERT_EQ(d.size(), 7u);
  auto is = [](const Declaration& x, const char* kind, const char* element, const char* params, const char* dims,
               const char* name) {
    return x.kind == kind && x.element == element && x.params == params && x.dims == dims && x.name == name;
  };
  EXPECT_TRUE(is(d[0], "paged", "float", "", "[[2][512]][[2][512]]", "M"));
  EXPECT_TRUE(is(d[1], "pthd", "", "", "[2][2]", "MY_TA"));
  EXPECT_TRUE(is(d[2], "cuda", "", "float a, float b, float c", "[[N/16][N/256]][[4][32]]", "CUDA"));
  EXPECT_TRUE(d[2].is_thread_array());
  EXPECT_TRUE(is(d[3], "", "float", "", "[#A_1][[#A_0][#A_2]]", "V"));
  EXPECT_TRUE(is(d[4], "smem", "float", "", "[32 #S_0][[4][4] #S_1]", "S0"));
  EXPECT_TRUE(is(d[5], "dmem", "float2", "", "[[128/16][16]][[128/16][16]]", "DATA"));
  EXPECT_TRUE(is(d[6], "mpi", "", "", "[2]", "P"));
  EXPECT_EQ(d[4].at.line, 6);
}

TEST(ParraycDeclaration, MalformedOnesAreLocatedErrors) {
  auto error = [](const std::string& line) {
    try {
      parse_declaration(scan(line, "t.pa").front(), "t.pa");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("#parray {paged float [4][4]}"), "t.pa:1:29: error: #parray needs a name after its type");
  EXPECT_EQ(error("#parray {paged float [4][4]} M N"), "t.pa:1:32: error: unexpected text after the name 'M'");
  EXPECT_EQ(error("#parray {pthd float [2][2]} T"),
            "t.pa:1:15: error: a pthd thread array has no element type ('float')");
  EXPECT_EQ(error("#parray {dmem [4]} A"),
            "t.pa:1:15: error: an element type (float, double, ...) before the dimensions");
  EXPECT_EQ(error("#parray {paged float} A"), "t.pa:1:21: error: the dimensions, e.g. [1024][1024], after the type");
  EXPECT_EQ(error("#parray {paged float [4]]} A"), "t.pa:1:25: error: ']' without its '['");
  EXPECT_EQ(error("#parray {paged float [4] x [2]} A"), "t.pa:1:26: error: unexpected text between the dimensions");
  EXPECT_EQ(error("#parray {cuda(float a [2][2]} T"), "t.pa:1:14: error: '(' is never closed");
}
