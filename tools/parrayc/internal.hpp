// What the parts of parrayc's translator share (translate.hpp is the
// interface): positions and errors, the dimensions of a declaration read
// into a tree, the symbol table and the translator itself, whose methods live
// in translate.cpp (segments, blocks and braces), directives.cpp (each
// directive) and expression.cpp ($...$).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "parrayc/scan.hpp"

namespace parray::pa {

// Where character k of `text` is, `text` starting at `start`.
Position position_in(Position start, std::string_view text, std::size_t k);

bool is_ident_char(char c);
bool is_ident_start(char c);
// "A_1_0" -> "A" and {1, 0}; false when what follows the name is not _N..._N.
bool split_path(std::string_view word, std::size_t name_length, std::vector<int>& path);
// The word after a directive's '#' ("detour"), and where the rest starts.
std::string_view directive_word(std::string_view text, std::size_t& rest);
// A directive without its comments (#parray {smem float [32][17]} S // why).
Segment without_comments(const Segment& directive);
// A C++ string literal holding `text`.
std::string quoted(std::string_view text);

// One bracket of a type's dimensions, as written:
//   [N/16]           size "N/16"
//   [5:17]           size "5", stride "17"
//   [[3][2]]         children (a group)
//   [20 [4][6]]      size "20", children: a group resized
//   [#A_1]           ref "A_1";  [16 #A_1]: size "16" too
//   [[4][4] 16 #S_1] children (the split's extents), size, ref
struct Dim {
  std::string size, stride;
  std::vector<Dim> children;
  std::string ref;
  std::size_t at = 0;  // offset of the '[' in the dimensions' text
  bool is_extent() const { return ref.empty() && children.empty(); }
};

using FailAt = std::function<void(std::size_t offset, const std::string& what)>;
std::vector<Dim> parse_dims(std::string_view text, const FailAt& fail);
// The names the dimensions use: references' type names (before the first
// '_', with the offset of the '#') and constants in extents.
void names_in(const std::vector<Dim>& dims, std::vector<std::pair<std::string, std::size_t>>& refs,
              std::set<std::string>& constants);

// What the translator knows of a type's tree: the number of dimensions at
// each node where the declarations say it (unknown below a #subprog's type
// parameter), and the node's size where the declaration fixes it with
// numbers ([32], [[4][4]], [16 #S_1]): a C constant, so that a loop over
// $size(A_1_1)$ has a constant bound.
struct Shape {
  bool known = false;
  std::vector<Shape> kids;
  std::string size;  // empty where a name or a reference decides it
  bool leaf() const { return known && kids.empty(); }
};

// An extent written with numbers only ("32", "(4)*4"), no names.
bool is_number_expression(const std::string& e);

enum class Form {
  host,    // paged, pinned or dmem: an ArrayType and its DeviceLayout
  view,    // no memory kind: a Layout over another type's storage, and its DeviceLayout
  local,   // smem or rmem: a static layout type (kernels)
  thread,  // pthd, cuda or mpi
  param,   // a #subprog's type parameter: a Layout
};

struct Symbol {
  Declaration decl;
  Form form = Form::host;
  std::string memory = "paged";  // host and view: where the storage is
  Shape shape;
};

class Translator {
 public:
  Translator(std::string_view source, std::string file);
  std::string run();

  // ---- shared by the parts ----
  [[noreturn]] void fail(Position at, const std::string& what) const;
  // "$...$" as C++ (expression.cpp).
  std::string expression(std::string_view text, Position at);
  // Text with $...$ inside it (a directive's arguments) as C++.
  std::string with_expressions(std::string_view text, Position at);
  // A type name with a sub-type path: the symbol and the path.
  const Symbol& resolve(std::string_view word, Position at, std::vector<int>& path) const;
  // A type node for offsets and sizes: on the host a DeviceLayout::Sub, in a
  // CUDA kernel a DeviceSub made before the launch (`type`'s node at `path`),
  // for smem and rmem a static type.
  struct Node {
    std::string text;
    bool is_static = false;
    Shape shape;
    std::string type;  // in a kernel: the host-created type and the path of its DeviceSub
    std::vector<int> path;
    bool in_kernel() const { return !type.empty(); }
  };
  Node node_of(const Symbol& s, const std::vector<int>& path, const std::string& shown, Position at);
  Node child_of(const Node& n, int d);
  std::string offset_of(const Node& n, const std::string& index);  // $T[i]$
  std::string size_of(const Node& n);                               // $size(T)$, $dim(T)$
  std::string contiguous_of(const Node& n);                         // $cnt(T)$
  std::string copy_side(const Node& n);                             // a type in #copy inside a kernel
  const std::string& kernel_sub(const Node& n, bool table);

  struct Detour {
    std::string array, coord;
    bool cuda = false, explicit_grid = false;
    std::size_t insert_at = 0;   // where the kernel's copies of the types go
    std::set<std::string> used;  // host types whose tables the kernel reads
    std::map<std::string, std::pair<std::string, std::vector<int>>> subs;  // DeviceSub name -> type, path
    // The kernel's builds (version_kernel, pa::Build): where the launch
    // starts, where its `parray_pa_build` constant's value is, and the
    // DeviceSubs that choose the build: read by $...$ offsets, by #copy, by $cnt$.
    std::size_t launch_at = 0, flag_at = 0;
    std::set<std::string> offsets, copies, counts;
    bool versioned() const { return !offsets.empty() || !copies.empty() || !counts.empty(); }
  };
  const Detour* detour() const { return detours_.empty() ? nullptr : &detours_.back(); }
  // The thread coordinate term $tid$, $tid_0$, $dim_1$, $size$ (false: not one).
  bool thread_term(std::string_view word, Position at, std::string& out) const;

 private:
  enum class BlockKind { mainhost, detour, global };
  // translate.cpp
  void code(const Segment& s);
  void version_kernel(const Detour& d);
  std::string launch_choice(const Detour& d) const;
  void emit(const std::string& text, std::string_view source_text);  // keeps the source's line count
  void open_block(BlockKind kind, const std::string& closer, Position at);
  void close_block();
  std::string where(Position at) const;  // "FILE:LINE" as a C++ string literal
  // directives.cpp
  void directive(const Segment& s, std::size_t index);
  void declaration(const Segment& s);
  void create(std::string_view args, Position at);
  void destroy(std::string_view args, Position at);
  void copy(std::string_view args, Position at);
  void detour_directive(std::string_view args, Position at);
  void sync(std::string_view word, std::string_view rest, Position at);
  void subprog(std::string_view args, Position at, std::size_t segment);
  void end_subprog(Position at);
  std::string layout_of(const Symbol& s, const std::vector<int>& path) const;
  std::string host_symbols(const std::vector<std::pair<std::string, std::size_t>>& refs, const FailAt& fail) const;
  // types.cpp
  std::string static_type(const std::vector<Dim>& dims, const FailAt& fail) const;
  Shape shape_of(const std::vector<Dim>& dims) const;
  Shape shape_of(const Dim& d) const;
  Shape referenced_shape(const Dim& d) const;

  std::string source_;
  std::string file_;
  std::vector<Segment> segments_;
  std::map<std::string, Symbol, std::less<>> symbols_;
  std::string out_;
  std::size_t source_start_ = 0;  // where out_'s line 1 of the source starts
  long extra_lines_ = 0;          // output lines that no source line has (version_kernel)

  // Blocks opened by a directive's '{' and closed by a '}' in the code.
  struct Block {
    BlockKind kind;
    int depth;  // brace depth inside the block
    std::string closer;
    Position at;
  };
  std::vector<Block> blocks_;
  std::vector<Detour> detours_;
  int depth_ = 0;
  std::map<std::string, bool> storages_;  // #create'd names: true for host storage, false for smem/rmem
  int next_smem_tag_ = 0;
  bool uses_mpi_ = false;
  bool in_subprog_ = false;
  Position subprog_at_;
  std::size_t subprog_blocks_ = 0;
  int subprog_depth_ = 0;
  std::map<std::string, Symbol, std::less<>> outer_symbols_;  // restored at #end
};

}  // namespace parray::pa
