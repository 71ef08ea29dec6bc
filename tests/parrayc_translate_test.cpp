// parrayc's translator: what each construct becomes, that every source line
// keeps its line number, errors located at FILE:LINE:COLUMN with the
// offending text, and thousands of random and mutated sources through the
// whole translator with no crash, no hang and no error other than a located
// parray::Error. The translated programs themselves run as ctest Parrayc.*
// (examples/paper/*.pa).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "parray/core.hpp"
#include "parrayc/translate.hpp"

using parray::Error;
using parray::pa::translate;

namespace {

// Fig 10 of the paper, as printed, inside a main of its own.
const char* kFig10 = R"pa(#include <stdio.h>
int main() {
  int N = 8;
#parray {paged float [[2][N/2]][[2][N/2]]} M
#parray {pthd [2][2]} MY_TA
#create M(a)
#create M(b)
#create M(c)
#detour MY_TA {
  for (int i = 0; i < $dim_0_1(M)$; i++)
    for (int j = 0; j < $dim_1_1(M)$; j++) {
      float* pa = a + $M[[$tid_0$][i]][0]$;
      float* pb = b + $M[0][[$tid_1$][j]]$;
      float Cvalue = 0;
      for (int k = 0; k < $dim_1(M)$; k++) Cvalue += pa[$M[0][k]$]
        * pb[$M[k][0]$];
      c[$M[[$tid_0$][i]][[$tid_1$][j]]$] = Cvalue;
    }
}
#destroy M(a)
}
)pa";

// A Parray source of examples/paper (fig21_sgemm.pa.cu ...).
std::string paper_source(const std::string& name) { return parray::pa::read_source(PARRAY_PAPER_DIR "/" + name); }

long lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

// The translation after its header: from the #line 1 directive on.
std::string body(const std::string& out) { return out.substr(out.find("#line 1 ")); }

// The source line of each output line of `body` (0 for a #line directive),
// as a compiler numbers them: what parrayc's #line and line breaks keep.
std::vector<long> source_lines(const std::string& body) {
  std::vector<long> of;
  long next = 1;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#line ", 0) == 0) {
      next = std::stol(line.substr(6));
      of.push_back(0);
    } else {
      of.push_back(next++);
    }
  }
  return of;
}
// The source line that the output's last full line maps to.
long last_source_line(const std::string& body) {
  const std::vector<long> of = source_lines(body.substr(0, body.rfind('\n') + 1));
  return of.empty() ? 0 : of.back();
}

std::string translate_error_of(const std::string& source, const std::string& file = "t.pa") {
  try {
    translate(source, file);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(ParraycTranslate, Figure10KeepsEveryLineAndCallsTheLibrary) {
  const std::string out = body(translate(kFig10, "fig10.pa"));
  EXPECT_EQ(lines(out), lines(kFig10) + 1) << out;  // + the #line line: one output line a source line
  EXPECT_TRUE(has(out, "#line 1 \"fig10.pa\"\n#include <stdio.h>\nint main() {\n"));
  EXPECT_TRUE(has(out,
                  "const ::parray::ArrayType<float, ::parray::paged> M(::parray::pa::parse_type(\"fig10.pa:4\", "
                  "\"[[2][N/2]][[2][N/2]]\", ::parray::Layout::Symbols{}, ::parray::Layout::Constants{{\"N\", "
                  "static_cast<::parray::index_t>(N)}}));"));
  EXPECT_TRUE(has(out, "const ::parray::CpuThreadArray MY_TA("));
  EXPECT_TRUE(has(out, "::parray::pa::Storage<float> parray_pa_s_a(M.layout(), ::parray::Memory::paged); float* a ="));
  EXPECT_TRUE(has(out, "MY_TA.detour([&](const ::parray::ThreadCoord& parray_pa_t0) {"));
  // $M[[$tid_0$][i]][0]$: a group over M_0's two dimensions, then M_1.
  EXPECT_TRUE(has(out,
                  "a + (((parray_pa_M.type().sub(0).sub(0).offset((parray_pa_t0.tid(0))) + "
                  "parray_pa_M.type().sub(0).sub(1).offset(i)) + parray_pa_M.type().sub(1).offset(0)))"));
  EXPECT_TRUE(has(out, "i < (::parray::pa::count(parray_pa_M.type().sub(0).sub(1).size()))"));
  EXPECT_TRUE(has(out, "\n});\nparray_pa_s_a.destroy(\"fig10.pa:20\");\n}\n")) << out;
}

TEST(ParraycTranslate, Figure21KernelTypesCopiesAndSyncs) {
  const std::string fig21 = paper_source("fig21_sgemm.pa.cu");
  const std::string out = body(translate(fig21, "fig21.pa.cu"));
  EXPECT_EQ(last_source_line(out), lines(fig21)) << out;
  // The kernel is there once per build, each #sync_1 of the source at its
  // own line in every one.
  const std::vector<long> of = source_lines(out);
  std::vector<std::string> source_line{""}, out_line;
  for (std::istringstream in(fig21); std::getline(in, source_line.emplace_back());) {
  }
  for (std::istringstream in(out); std::getline(in, out_line.emplace_back());) {
  }
  int syncs = 0;
  for (std::size_t k = 0; k < of.size(); ++k)
    if (has(out_line[k], "parray_pa_t0.sync(1);")) {
      ++syncs;
      EXPECT_TRUE(has(source_line.at(std::size_t(of[k])), "#sync_1")) << out_line[k];
    }
  EXPECT_EQ(syncs, 6);  // two in each of the three builds
  // Both builds, the DeviceSubs, the declarations' constant sizes, the kernel-local types.
  for (const char* part : {
           "if (parray_pa_launch == ::parray::pa::Build::strided) {\n#line 29 \"fig21.pa.cu\"\nCUDA.detour<",
           "constexpr ::parray::pa::Build parray_pa_build = ::parray::pa::Build::strided;",
           "} else if (parray_pa_launch == ::parray::pa::Build::two_digits) {\n#line 29 \"fig21.pa.cu\"\nCUDA.detour<",
           "constexpr ::parray::pa::Build parray_pa_build = ::parray::pa::Build::two_digits;",
           "}); } else {\n#line 29 \"fig21.pa.cu\"\nCUDA.detour<",
           "constexpr ::parray::pa::Build parray_pa_build = ::parray::pa::Build::general;",
           "const ::parray::pa::Build parray_pa_launch = !(true && parray_pa_n_A_0_1_0.two_digits() && ",
           "const ::parray::pa::DeviceSub parray_pa_n_A_1_0 = "
               "::parray::pa::DeviceSub::of(parray_pa_A.type().sub(1).sub(0));",
           "&& parray_pa_n_B_0_1.strided() &&",
           "&& parray_pa_n_B_0_1.fast_two_digits() &&",
           "&& parray_pa_n_B_1_1_1.contiguous()) ? ::parray::pa::Build::general : (true && ",
           "template <class parray_pa_P0, class parray_pa_P1, class parray_pa_P2> void SGEMM(parray_pa_P0 da, "
               "parray_pa_P1 db, parray_pa_P2 dc, const ::parray::Layout& type) {",
           "::parray::Layout::Symbols{{\"type\", type}}",
           "using S = ::parray::SNest<::parray::SLeaf<(32), (17) * 1>, ::parray::SLeaf<(17), 1>>;",
           "using S0 = ::parray::SNest<::parray::SResize<(32), S::dim<0>>, "
               "::parray::pa::SSplit<::parray::SResize<(16), S::dim<1>>, (4), (4)>>;",
           "CUDA.detour<(4) * (32)>([=] __device__(const ::parray::cuda::CudaThread& parray_pa_t0) { float* a = "
               "parray_pa_a0;",
           "const ::parray::DeviceLayout parray_pa_k_A = parray_pa_A; ",
           "float* s = ::parray::smem::create<float, S, 0>().data;",
           "auto r = ::parray::rmem::create<float, R>();",
           "::parray::pa::copy_elements(a + (parray_pa_n_A_1_0.offset<parray_pa_build>(parray_pa_k_A, i)), "
               "::parray::pa::SubOf<parray_pa_build>{parray_pa_n_A_0_1_0, parray_pa_k_A}, s + ",
           "::parray::pa::Static<S0::dim<1>::dim<0>>{});",
           "parray_pa_t0.sync(1);",
           "if (((parray_pa_build != ::parray::pa::Build::general || parray_pa_n_B_1_1_1.contiguous())))",
           "b + ((parray_pa_n_B_0_0.offset<parray_pa_build>(parray_pa_k_B, i) + "
               "parray_pa_n_B_0_1.offset<parray_pa_build>(parray_pa_k_B, m)))",
           "r[((R::dim<0>::offset(j) + R::dim<1>::offset(0)))] += b2.x * s[((S::dim<0>::offset(m) + "
               "S::dim<1>::offset(j)))];",
           "for (int i = 0; i < (32); i++) r[i] = 0;",  // $size(R)$, [16][2]
           "for (int m = 0; m < (32); m++) {",  // $size(A_1_1)$, the split's [32]
           "i < (::parray::pa::count(parray_pa_n_A_1_0.size()))",  // [N/32]: known at run time
           "}); }\n#line 56 \"fig21.pa.cu\"\n }\n}\n",  // the detour's end, then #end's
       })
    EXPECT_TRUE(has(out, part)) << part << "\n" << out;
}

TEST(ParraycTranslate, ExpressionsOfThePaper) {
  struct Case {
    const char* expression;
    const char* translation;
  } cases[] = {
      {"$A[i]$", "(parray_pa_A.type().offset(i))"},
      {"$A[5][2]$", "((parray_pa_A.type().sub(0).offset(5) + parray_pa_A.type().sub(1).offset(2)))"},
      {"$A[[i][j]][k]$",
       "(((parray_pa_A.type().sub(0).sub(0).offset(i) + parray_pa_A.type().sub(0).sub(1).offset(j)) + "
       "parray_pa_A.type().sub(1).offset(k)))"},
      {"$A_1[i]$", "(parray_pa_A.type().sub(1).offset(i))"},
      {"$dim(A)$", "(24)"},  // sizes that the declarations fix are constants
      {"$dim(A_0)$", "(6)"},
      {"$dim_0_1(A)$", "(2)"},
      {"$size(A_1)$", "(4)"},
      {"$dim(B_0)$", "(4)"},
      {"$dim(C)$", "(::parray::pa::count(parray_pa_C.type().size()))"},  // N: known at run time
      {"$dim(C_1)$", "(8)"},
      {"$dim(D_1)$", "(::parray::pa::count(parray_pa_D.type().sub(1).size()))"},
      {"$cnt(A_1)$", "(::parray::pa::contiguous(parray_pa_A.type().sub(1)))"},
      {"$B[2][3]$", "((parray_pa_B.type().sub(0).offset(2) + parray_pa_B.type().sub(1).offset(3)))"},
  };
  for (const Case& c : cases) {
    const std::string src =
        std::string("#parray {paged float [[3][2]][4]} A\n#parray {float [#A_1][#A_0]} B\n"
                    "#parray {paged float [N][2 * (3 + 1)]} C\n#parray {paged float [4][N / 2]} D\nx = ") +
        c.expression + ";\n";
    EXPECT_TRUE(has(translate(src, "t.pa"), std::string("x = ") + c.translation + ";\n")) << c.expression;
  }
  const std::string threads = translate(
      "#parray {pthd [[2][2]][3]} T\n#detour T {\nf($tid$, $tid_0$, $tid_0_1$, $dim_1$, $dim_0_1$, $size$); }\n",
      "t.pa");
  EXPECT_TRUE(has(threads,
                  "f((parray_pa_t0.tid()), (parray_pa_t0.tid(0)), (parray_pa_t0.tid(0, 1)), "
                  "(parray_pa_t0.dim(1)), (parray_pa_t0.dim(0, 1)), (parray_pa_t0.size())); });"));
}

TEST(ParraycTranslate, DirectivesOnTheHost) {
  const std::string out = translate(
      "#parray {mpi [2]} P\n#mainhost {\n#parray {pinned float [4][3]} A\n#parray {float [#A_1][#A_0]} B\n"
      "#create A(x)\n#create B(y)\n#copy A(x) to B(y)\n#detour P {\n#sync\n}\n#destroy A(x)\n}\n",
      "t.pa");
  EXPECT_TRUE(has(out, "#include \"parray/mpi/process_array.hpp\"\n"));
  EXPECT_TRUE(has(out, "const ::parray::mpi::MpiThreadArray P(::parray::pa::or_exit([] { return "));
  EXPECT_TRUE(has(out,
                  "int main(int argc, char** argv) { (void)argc; (void)argv; ::parray::mpi::Session "
                  "parray_pa_session(&argc, &argv); try {"));
  EXPECT_TRUE(has(out, "::parray::pa::Storage<float> parray_pa_s_y(B, ::parray::Memory::pinned);"));
  EXPECT_TRUE(has(out,
                  "::parray::pa::copy_arrays(\"t.pa:7\", x, A.layout(), ::parray::Memory::pinned, y, B, "
                  "::parray::Memory::pinned);"));
  EXPECT_TRUE(has(out, "P.detour([&](const ::parray::mpi::ProcCoord& parray_pa_t0) {\nparray_pa_t0.sync();\n});"));
  EXPECT_TRUE(has(out,
                  "} catch (const std::exception& parray_pa_error) { return ::parray::pa::report(parray_pa_error); "
                  "} return 0; }\n"));
}

// A #copy over two lines, as the paper prints fig 21's (broken after its
// first array or after 'to', or inside parentheses), is the one-line #copy,
// and the lines after it keep their numbers.
TEST(ParraycTranslate, CopyContinuedOnTheNextLine) {
  const std::string head = "#parray {paged float [4][4]} A\n#create A(x)\n#create A(y)\n";
  const std::string one = translate(head + "#copy A(x) to A(y)\nint z;\n", "t.pa");
  const std::string copy_line = one.substr(one.find("::parray::pa::copy_arrays"));
  const std::string expected = copy_line.substr(0, copy_line.find('\n'));
  for (const char* split : {"#copy A(x)\n  to A(y)\n", "#copy A(x) to\n  A(y)\n", "#copy A(x) to A(\n  y)\n"}) {
    const std::string out = translate(head + split + "int z;\n", "t.pa");
    auto spaceless = [](std::string t) { return std::erase(t, ' '), t; };  // a pointer split inside (...) keeps blanks
    EXPECT_TRUE(has(spaceless(out), spaceless(expected))) << split << "\n  got: " << out;
    // int z; stays on line 6 of the source: five newlines before it after the #line.
    const std::string body_text = out.substr(out.find("#line 1"));
    EXPECT_EQ(std::count(body_text.begin(), body_text.begin() + static_cast<long>(body_text.find("int z;")), '\n'), 6)
        << split;
  }
}

TEST(ParraycTranslate, ErrorsNameFileLineColumnAndTheText) {
  struct Case {
    const char* source;
    const char* error;
  } cases[] = {
      {"x = $A[1]$;\n", "t.pa:1:6: error: 'A' is not a declared type (#parray {...} NAME)"},
      {"#parray {paged float [4][3]} A\nx = $A[1][2][3]$;\n", "t.pa:2:7: error: A has 2 dimensions, 3 indices given"},
      {"#parray {paged float [4][3]} A\nx = $A_2[0]$;\n", "t.pa:2:6: error: A has 2 dimensions, so no A_2"},
      {"#parray {paged float [4][3]} A\nx = $A_1[0][1]$;\n", "A_1 is one-dimensional: it takes one index"},
      {"#parray {paged float [4][3]} A\nx = $A[]$;\n", "t.pa:2:7: error: an empty index '[]' in $A[]$"},
      {"#parray {paged float [4][3]} A\nx = $A[1$;\n", "'[' is never closed in $A[1$"},
      {"x = $tid_0$;\n", "t.pa:1:6: error: $tid_0$ outside a #detour"},
      {"#parray {pthd [2]} T\n#detour T {\n x = $tid_0_1_2$; }\n", "t.pa:3:7: error: $tid_0_1_2$: thread coordinates"},
      {"#parray {paged float [4][#B_1]} A\n", "t.pa:1:25: error: unknown type 'B'"},
      {"#parray {paged float [4][3]} A\n#parray {smem float [#A_0]} S\n", "'A' is not a smem or rmem type"},
      {"#parray {cuda [2]} T\n", "t.pa:1:1: error: a cuda thread array needs device code: name the file .pa.cu"},
      {"#parray {pthd [2][2]} T\n#detour T(a) {\n}\n", "t.pa:2:11: error: T takes 0 argument(s), 1 given"},
      {"#parray {pthd [2][2]} T\n#detour T {\n", "t.pa:2:9: error: the '{' of this directive is never closed"},
      {"#parray {paged float [4]} A\n#destroy A(x)\n", "t.pa:2:9: error: #destroy of 'x', which no #create made"},
      {"#parray {paged float [4]} A\n#copy A(x) B(y)\n", "t.pa:2:13: error: expected 'to': #copy A(x) to B(y)"},
      {"#sync\n", "t.pa:1:1: error: #sync outside a #detour"},
      {"#end\n", "t.pa:1:1: error: #end without its #subprog"},
      {"#subprog F(a)\n", "t.pa:1:9: error: #subprog without its #end"},
      {"#mainhost\n", "t.pa:1:10: error: #mainhost is followed by '{' on its line"},
      {"#parray {paged float [4]} A\nx = $dim(A) + 1$;\n", "t.pa:2:13: error: unexpected text '+ 1' in $dim(A) + 1$"},
      {"#parray {paged float [4]} A\nx = $A$;\n", "t.pa:2:6: error: 'A' alone is neither a thread coordinate"},
      {"#parray {pthd [2]} T\n#create T(x)\n", "'T' is not a data type"},
      {"#parray {paged float [4]} A\n#detour A {\n}\n", "t.pa:2:9: error: 'A' is not a thread array"},
      {"#parray {paged float [4][4]} A\n#create A_2(x)\n", "t.pa:2:9: error: A has 2 dimensions, so no A_2"},
      {"#parray {paged float [4][4]} A\n#create A(x)\n#create A(y)\n#copy A_1_1(x) to A_1(y)\n",
       "t.pa:4:7: error: A_1 is one-dimensional"},
      {"#parray {pagd float [4]} A\n", "t.pa:1:10: error: 'pagd' is not a memory kind (paged, pinned, dmem, smem, rmem)"},
  };
  for (const Case& c : cases) {
    const std::string e = translate_error_of(c.source);
    EXPECT_TRUE(has(e, c.error)) << c.source << "\n  got: " << e;
  }
}

// Random and mutated sources through the whole translator: each either
// translates, keeping every line on its line number, or is refused with a
// located error; nothing else (a crash, another exception, a hang: ctest's
// timeout) may happen.
TEST(ParraycTranslate, FuzzedSourcesNeverCrashOrHang) {
  std::vector<std::string> corpus = {kFig10,
                                     "#parray {pinned float [[3][2]][4]} A\n#mainhost {\n#create A(x)\n"
                                     "x[$A[[1][0]][2]$] = $dim(A_0)$; /* $ */ \"$A[\" '$';\n#destroy A(x)\n}\n"};
  for (const char* name : {"fig01_natural_array.pa", "fig05_pthd_detour.pa", "fig07_cuda_transpose.pa.cu",
                           "fig11_gemm_cuda_2x2.pa.cu", "fig18_gemm_blocked.pa.cu", "fig21_sgemm.pa.cu", "mpi_gemm.pa"})
    corpus.push_back(paper_source(name));
  const std::string pieces[] = {"$",
                                "$A[",
                                "]",
                                "[",
                                "#parray {",
                                "}",
                                "{",
                                "\n",
                                "#detour",
                                "$tid_0$",
                                "#sync_1",
                                "#create",
                                "#copy",
                                " to ",
                                "(",
                                ")",
                                "#end",
                                "#subprog F(x)",
                                "#global {",
                                "[#A_1]",
                                "16 #S_1",
                                "_0",
                                "\"",
                                "'",
                                "//",
                                "/*",
                                "*/",
                                "#mainhost {",
                                "dmem",
                                "smem float",
                                "cuda(float* a)",
                                "#"};
  std::mt19937 rng(31);
  int translated = 0, refused = 0;
  for (int n = 0; n < 4000; ++n) {
    std::string s = corpus[std::size_t(n) % corpus.size()];
    const int edits = 1 + int(rng() % 6);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const std::size_t at = rng() % (s.size() + 1);
      switch (rng() % 4) {
        case 0:
          s.erase(at, 1 + rng() % 8);
          break;  // delete
        case 1:
          s.insert(at, pieces[rng() % std::size(pieces)]);
          break;  // insert Parray text
        case 2:
          s.insert(at, 1, char(rng() % 128));
          break;  // insert any byte
        default:
          s.resize(at);
          break;  // truncate
      }
    }
    try {
      const std::string out = translate(s, "f.pa.cu");
      ASSERT_EQ(last_source_line(body(out)), lines(s)) << s;
      ++translated;
    } catch (const Error& e) {
      ASSERT_EQ(std::string(e.what()).rfind("f.pa.cu:", 0), 0u) << e.what();
      ASSERT_TRUE(has(e.what(), ": error: ")) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(translated, 100);
  EXPECT_GT(refused, 100);
}
