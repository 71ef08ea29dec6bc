// Parray's directives (internal.hpp), each turned into C++ on one line:
//
//   #parray {paged float [N][N]} M    const ArrayType<float, paged> M(...); DeviceLayout parray_pa_M
//   #parray {smem float [32][17]} S   using S = SNest<SLeaf<32, 17>, SLeaf<17, 1>>;
//   #parray {pthd [2][2]} T           const CpuThreadArray T(...);  (cuda, mpi likewise)
//   #create M(a)                      pa::Storage<float> parray_pa_s_a(...); float* a = ...
//   #destroy M(a)                     parray_pa_s_a.destroy(...);
//   #copy A(x) to B(y)                pa::copy_arrays (host) or pa::copy_elements (kernel)
//   #detour T(args) {                 T.detour([&](const ThreadCoord& t) {  ...  });
//   #sync, #sync_1                    t.sync(), t.sync(1)
//   #mainhost {                       int main(int argc, char** argv) { try { ... } catch ... }
//   #global {                         its declarations, in the enclosing scope
//   #subprog F(a, type) ... #end      template <class P0> void F(P0 a, const Layout& type) { ... }
#include <algorithm>
#include <cctype>
#include <set>

#include "parray/core.hpp"
#include "parrayc/internal.hpp"

namespace parray::pa {

std::string_view directive_word(std::string_view text, std::size_t& rest) {
  std::size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  if (i < text.size() && text[i] == '#') ++i;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  const std::size_t from = i;
  while (i < text.size() && is_ident_char(text[i])) ++i;
  rest = i;
  return text.substr(from, i - from);
}

namespace {

// A cursor over a directive's arguments.
class Args {
 public:
  Args(const Translator& tr, std::string_view t, Position at) : tr_(tr), t_(t), at_(at) {}

  [[noreturn]] void fail(std::size_t k, const std::string& what) const { tr_.fail(position_in(at_, t_, k), what); }
  Position position(std::size_t k) const { return position_in(at_, t_, k); }
  void blanks() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  std::string word(const char* what) {
    blanks();
    const std::size_t from = i_;
    while (i_ < t_.size() && is_ident_char(t_[i_])) ++i_;
    if (i_ == from || !is_ident_start(t_[from])) fail(from, "expected " + std::string(what));
    return std::string(t_.substr(from, i_ - from));
  }
  bool next_is(char c) {
    blanks();
    return i_ < t_.size() && t_[i_] == c;
  }
  // From '(' to its ')': the text between.
  std::string_view parenthesized(const char* what) {
    if (!next_is('(')) fail(i_, "expected '(' and " + std::string(what));
    const std::size_t from = i_;
    int depth = 0;
    for (; i_ < t_.size(); ++i_) {
      if (t_[i_] == '(') ++depth;
      if (t_[i_] == ')' && --depth == 0) return t_.substr(from + 1, i_++ - from - 1);
    }
    fail(from, "'(' is never closed");
  }
  std::size_t where() const { return i_; }
  std::size_t next() {  // where the next word starts
    blanks();
    return i_;
  }
  // Takes the '{' that opens a directive's block.
  void word_or_brace() {
    if (!next_is('{')) fail(i_, "expected '{' to open the block");
    ++i_;
  }
  void skip(std::size_t n) { i_ += n; }
  void end(const char* usage) {
    blanks();
    if (i_ < t_.size()) fail(i_, "unexpected '" + std::string(t_.substr(i_)) + "' (" + usage + ")");
  }

 private:
  const Translator& tr_;
  std::string_view t_;
  Position at_;
  std::size_t i_ = 0;
};

// "float* a, float* b" -> {"float* a", "float* b"}; commas inside brackets do not split.
std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::string item;
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '<' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '>' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  if (item.find_first_not_of(" \t\r\n") != std::string::npos || !out.empty()) out.push_back(item);
  return out;
}

// The name a kernel parameter declares: its last identifier.
std::string parameter_name(const std::string& p) {
  std::size_t e = p.size();
  while (e > 0 && !is_ident_char(p[e - 1])) --e;
  std::size_t b = e;
  while (b > 0 && is_ident_char(p[b - 1])) --b;
  return p.substr(b, e - b);
}

std::string memory_of_kind(const std::string& kind) {
  return kind == "dmem" ? "device" : kind == "pinned" ? "pinned" : "paged";
}

}  // namespace

Segment without_comments(const Segment& d) {
  Segment s = d;
  for (std::size_t open; (open = s.text.find("/*")) != std::string::npos;) {
    const std::size_t close = s.text.find("*/", open + 2);
    const std::size_t end = close == std::string::npos ? s.text.size() : close + 2;
    const auto lines =
        std::count(s.text.begin() + static_cast<long>(open), s.text.begin() + static_cast<long>(end), '\n');
    s.text.replace(open, end - open, std::string(static_cast<std::size_t>(lines), '\n').append(1, ' '));
  }
  for (std::size_t from = 0, at; (at = s.text.find("//", from)) != std::string::npos; from = at) {
    const std::size_t end = s.text.find('\n', at);
    s.text.erase(at, end == std::string::npos ? std::string::npos : end - at);
  }
  return s;
}

void Translator::directive(const Segment& segment, std::size_t index) {
  const Segment s = without_comments(segment);
  const std::size_t from = out_.size();
  std::size_t rest_at = 0;
  const std::string_view word = directive_word(s.text, rest_at);
  const std::string_view rest = std::string_view(s.text).substr(rest_at);
  const Position at = position_in(s.at, s.text, rest_at);
  const Position hash = position_in(s.at, s.text, s.text.find('#'));
  if (word == "parray") {
    declaration(s);
  } else if (word == "create") {
    create(rest, at);
  } else if (word == "destroy") {
    destroy(rest, at);
  } else if (word == "copy") {
    copy(rest, at);
  } else if (word == "detour") {
    detour_directive(rest, at);
  } else if (word.substr(0, 4) == "sync") {
    sync(word, rest, hash);
  } else if (word == "mainhost" || word == "global") {
    Args a(*this, rest, at);
    if (!a.next_is('{')) a.fail(a.where(), "#" + std::string(word) + " is followed by '{' on its line");
    a.word_or_brace();
    a.end(word == "global" ? "#global {" : "#mainhost {");
    if (word == "global") {
      open_block(BlockKind::global, "", hash);
    } else {
      if (depth_ != 0 || in_subprog_) fail(hash, "#mainhost is the program's main function: it stands at file scope");
      out_ += "int main(int argc, char** argv) { (void)argc; (void)argv; ";
      if (uses_mpi_) out_ += "::parray::mpi::Session parray_pa_session(&argc, &argv); ";
      out_ += "try {";
      open_block(BlockKind::mainhost,
                 "} catch (const std::exception& parray_pa_error) { return ::parray::pa::report(parray_pa_error); } "
                 "return 0; }",
                 hash);
    }
  } else if (word == "subprog") {
    subprog(rest, at, index);
  } else if (word == "end") {
    Args(*this, rest, at).end("#end closes a #subprog");
    end_subprog(hash);
  }
  std::replace(out_.begin() + static_cast<long>(from), out_.end(), '\n', ' ');  // one line, as emit()
  out_.append(static_cast<std::size_t>(std::count(segment.text.begin(), segment.text.end(), '\n')), '\n');
}

// ---- #parray ----

std::string Translator::host_symbols(const std::vector<std::pair<std::string, std::size_t>>& refs,
                                     const FailAt& fail) const {
  std::string out;
  std::set<std::string> seen;
  for (const auto& [base, at] : refs) {
    auto it = symbols_.find(base);
    if (it == symbols_.end())
      fail(at, "unknown type '" + base + "' (declare it before: #parray {...} " + base +
                   "; a type used after '#' is named with letters and digits, '_' starts its sub-type path)");
    if (it->second.form == Form::local)
      fail(at, "'" + base + "' is a smem or rmem type: only a kernel-local type refers to it");
    if (it->second.form == Form::thread) fail(at, "'" + base + "' is a thread array, not a data type");
    if (!seen.insert(base).second) continue;
    out += (out.empty() ? "{" : ", {") + quoted(base) + ", " + layout_of(it->second, {}) + "}";
  }
  return "::parray::Layout::Symbols{" + out + "}";
}

namespace {
std::string constants_of(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "{" : ", {") + quoted(n) + ", static_cast<::parray::index_t>(" + n + ")}";
  return "::parray::Layout::Constants{" + out + "}";
}
}  // namespace

void Translator::declaration(const Segment& s) {
  const Declaration d = parse_declaration(s, file_);
  const std::size_t dims_offset = s.text.find(d.dims, s.text.find('{'));
  const Position dims_at = position_in(s.at, s.text, dims_offset);
  const FailAt fail_dims = [&](std::size_t k, const std::string& what) {
    fail(position_in(dims_at, d.dims, k), what + " in " + d.dims);
  };
  const std::vector<Dim> dims = parse_dims(d.dims, fail_dims);
  if (d.name.rfind("parray_pa_", 0) == 0) fail(d.at, "names starting parray_pa_ are parrayc's own");
  std::vector<std::pair<std::string, std::size_t>> refs;
  std::set<std::string> constants;
  names_in(dims, refs, constants);
  const Detour* in_kernel = detour() && detour()->cuda ? detour() : nullptr;

  Symbol sym;
  sym.decl = d;
  // At file scope a type is made before main(): its error ends the program there.
  const bool file_scope = depth_ == 0 && !in_subprog_;
  const auto made = [file_scope](const std::string& init) {
    return file_scope ? "::parray::pa::or_exit([] { return " + init + "; })" : init;
  };
  const std::string line = where(d.at);
  const std::string text = quoted(d.dims);
  if (d.is_thread_array()) {
    sym.form = Form::thread;
    if (!refs.empty()) fail_dims(refs[0].second, "a thread array's dimensions are extents, not references");
    if (d.kind == "cuda" && (file_.size() < 3 || file_.compare(file_.size() - 3, 3, ".cu") != 0))
      fail(d.at, "a cuda thread array needs device code: name the file .pa.cu");
    if (in_kernel) fail(d.at, "a thread array is declared on the host, not inside a CUDA detour");
    const std::string type = d.kind == "pthd"   ? "::parray::CpuThreadArray"
                             : d.kind == "cuda" ? "::parray::cuda::CudaThreadArray"
                                                : "::parray::mpi::MpiThreadArray";
    out_ += "const " + type + " " + d.name + "(" +
            made("::parray::pa::parse_shape(" + line + ", " + text + ", " + constants_of(constants) + ")") + ");";
  } else if (d.kind == "smem" || d.kind == "rmem") {
    sym.form = Form::local;
    out_ += "using " + d.name + " = " + static_type(dims, fail_dims) + ";";
  } else {
    if (in_kernel)
      fail(d.at, "a " + (d.kind.empty() ? std::string("view") : d.kind) +
                     " type is declared on the host, not inside a CUDA detour (smem and rmem are)");
    const std::string symbols = host_symbols(refs, fail_dims);
    const std::string parsed =
        made("::parray::pa::parse_type(" + line + ", " + text + ", " + symbols + ", " + constants_of(constants) + ")");
    if (d.kind.empty()) {
      sym.form = Form::view;
      if (!refs.empty()) sym.memory = symbols_.at(refs[0].first).memory;
      out_ += "const ::parray::Layout " + d.name + " = " + parsed + "; ";
    } else {
      sym.form = Form::host;
      sym.memory = memory_of_kind(d.kind);
      out_ += "const ::parray::ArrayType<" + d.element + ", ::parray::" + d.kind + "> " + d.name + "(" + parsed + "); ";
    }
    out_ += "[[maybe_unused]] const ::parray::DeviceLayout parray_pa_" + d.name + " = " +
            made("::parray::DeviceLayout::from(" + layout_of(sym, {}) + ")") + ";";
  }
  sym.shape = shape_of(dims);
  symbols_[d.name] = sym;
}

std::string Translator::layout_of(const Symbol& s, const std::vector<int>& path) const {
  std::string l = s.decl.name + (s.form == Form::host ? ".layout()" : "");
  if (path.empty()) return l;
  l += ".dim({";
  for (std::size_t k = 0; k < path.size(); ++k) l += (k ? ", " : "") + std::to_string(path[k]);
  return l + "})";
}

// ---- #create, #destroy, #copy ----

void Translator::create(std::string_view args, Position at) {
  Args a(*this, args, at);
  const std::size_t type_at = a.next();
  const std::string type = a.word("a type name: #create TYPE(x)");
  const std::string_view inner = a.parenthesized("the array's name: #create TYPE(x)");
  a.end("#create TYPE(x)");
  Args n(*this, inner, a.position(a.where() - inner.size() - 1));
  const std::string name = n.word("the array's name: #create TYPE(x)");
  n.end("#create TYPE(x) takes one name");
  std::vector<int> path;
  const Symbol& s = resolve(type, a.position(type_at), path);
  const bool in_kernel = detour() && detour()->cuda;
  if (s.form == Form::thread || s.form == Form::param)
    fail(a.position(type_at), "'" + s.decl.name + "' is not a data type: #create makes an array of a data type");
  if (s.form == Form::local) {
    if (!in_kernel) fail(a.position(type_at), "a " + s.decl.kind + " array is created inside a CUDA detour");
    const Node node = node_of(s, path, type, a.position(type_at));
    if (s.decl.kind == "smem")
      out_ += s.decl.element + "* " + name + " = ::parray::smem::create<" + s.decl.element + ", " + node.text + ", " +
              std::to_string(next_smem_tag_++) + ">().data;";
    else
      out_ += "auto " + name + " = ::parray::rmem::create<" + s.decl.element + ", " + node.text + ">();";
    storages_[name] = false;
    return;
  }
  if (in_kernel)
    fail(a.position(type_at), "a kernel creates smem and rmem arrays; " + s.decl.name + " is host-created");
  (void)node_of(s, path, type, a.position(type_at));  // a sub-type path past the type's dimensions fails here
  const std::string memory = s.decl.kind.empty() ? s.memory : memory_of_kind(s.decl.kind);
  out_ += "::parray::pa::Storage<" + s.decl.element + "> parray_pa_s_" + name + "(" + layout_of(s, path) +
          ", ::parray::Memory::" + memory + "); " + s.decl.element + "* " + name + " = parray_pa_s_" + name +
          ".data();";
  storages_[name] = true;
}

void Translator::destroy(std::string_view args, Position at) {
  Args a(*this, args, at);
  const std::size_t type_at = a.next();
  const std::string type = a.word("a type name: #destroy TYPE(x)");
  std::vector<int> path;
  resolve(type, a.position(type_at), path);
  const std::string_view inner = a.parenthesized("the array's name: #destroy TYPE(x)");
  a.end("#destroy TYPE(x)");
  Args n(*this, inner, a.position(a.where() - inner.size() - 1));
  const std::string name = n.word("the array's name");
  n.end("#destroy TYPE(x) takes one name");
  auto it = storages_.find(name);
  if (it == storages_.end()) fail(at, "#destroy of '" + name + "', which no #create made");
  out_ += it->second ? "parray_pa_s_" + name + ".destroy(" + where(at) + ");" : "(void)0;";
}

void Translator::copy(std::string_view args, Position at) {
  Args a(*this, args, at);
  struct Side {
    std::string type, pointer;
    std::size_t at;
  } side[2];
  for (int k = 0; k < 2; ++k) {
    if (k == 1 && a.word("'to': #copy A(x) to B(y)") != "to") a.fail(a.where(), "expected 'to': #copy A(x) to B(y)");
    side[k].at = a.next();
    side[k].type = a.word("a type name: #copy A(x) to B(y)");
    const std::string_view p = a.parenthesized("a pointer: #copy A(x) to B(y)");
    side[k].pointer = with_expressions(p, a.position(a.where() - p.size() - 1));
  }
  a.end("#copy A(x) to B(y)");
  const bool in_kernel = detour() && detour()->cuda;
  std::string out = in_kernel ? "::parray::pa::copy_elements(" : "::parray::pa::copy_arrays(" + where(at) + ", ";
  for (int k = 0; k < 2; ++k) {
    std::vector<int> path;
    const Position p = a.position(side[k].at);
    const Symbol& s = resolve(side[k].type, p, path);
    out += (k ? ", " : "") + side[k].pointer + ", ";
    if (in_kernel) {
      out += copy_side(node_of(s, path, side[k].type, p));
    } else {
      if (s.form != Form::host && s.form != Form::view)
        fail(p, "'" + s.decl.name + "': #copy on the host is between arrays of host-created types");
      (void)node_of(s, path, side[k].type, p);  // a sub-type path past the type's dimensions fails here
      out += layout_of(s, path) + ", ::parray::Memory::" + s.memory;
    }
  }
  out_ += out + ");";
}

// ---- #detour, #sync ----

void Translator::detour_directive(std::string_view args, Position at) {
  Args a(*this, args, at);
  const std::size_t name_at = a.next();
  const std::string name = a.word("a thread array: #detour T(args) {");
  std::string_view call;
  if (a.next_is('(')) call = a.parenthesized("the arguments");
  const Position call_at = a.position(a.where() - call.size() - 1);
  a.word_or_brace();
  a.end("#detour T(args) {");
  auto it = symbols_.find(name);
  if (it == symbols_.end() || it->second.form != Form::thread)
    fail(a.position(name_at), "'" + name + "' is not a thread array (#parray {pthd [2][2]} " + name + ")");
  const Declaration& t = it->second.decl;
  const std::vector<std::string> params = split_list(t.params);
  const std::vector<std::string> values = split_list(call);
  if (params.size() != values.size())
    fail(call_at, name + " takes " + std::to_string(params.size()) + " argument(s)" +
                      (t.params.empty() ? "" : " (" + t.params + ")") + ", " + std::to_string(values.size()) +
                      " given");
  for (const Detour& outer : detours_)
    if (outer.cuda || t.kind == "cuda")
      fail(a.position(name_at), "a CUDA detour is not nested in another detour, nor another inside it");
  Detour d;
  d.array = name;
  d.cuda = t.kind == "cuda";
  d.coord = "parray_pa_t" + std::to_string(detours_.size());
  if (t.kind == "pthd") {
    out_ += name + ".detour([&](const ::parray::ThreadCoord& " + d.coord + ") {";
    open_block(BlockKind::detour, "});", a.position(name_at));
  } else if (t.kind == "mpi") {
    out_ += name + ".detour([&](const ::parray::mpi::ProcCoord& " + d.coord + ") {";
    open_block(BlockKind::detour, "});", a.position(name_at));
  } else {
    // [[grid]][[block]]: the block's size, when it is a constant, bounds the kernel's registers.
    const std::vector<Dim> dims = parse_dims(t.dims, [&](std::size_t, const std::string& w) { fail(t.at, w); });
    d.explicit_grid = dims.size() == 2 && (!dims[0].children.empty() || !dims[1].children.empty());
    std::string block;
    if (d.explicit_grid) {
      for (const Dim& e : dims[1].children.empty() ? std::vector<Dim>{dims[1]} : dims[1].children)
        block += (block.empty() ? "(" : " * (") + e.size + ")";
      for (const Dim& e : dims[1].children)
        if (!e.is_extent() || !is_number_expression(e.size)) block.clear();
      if (!dims[1].children.empty() && dims[1].children.size() > 3) block.clear();
    }
    out_ += "{ ";
    d.insert_at = out_.size();
    for (std::size_t k = 0; k < values.size(); ++k)
      out_ += "auto parray_pa_a" + std::to_string(k) + " = (" + with_expressions(values[k], call_at) + "); ";
    d.launch_at = out_.size();
    out_ += name + ".detour" + (block.empty() ? "" : "<" + block + ">") +
            "([=] __device__(const ::parray::cuda::CudaThread& " + d.coord + ") {";
    for (std::size_t k = 0; k < params.size(); ++k)
      out_ += " " + params[k] + " = parray_pa_a" + std::to_string(k) + "; (void)" + parameter_name(params[k]) + ";";
    out_ += " constexpr ::parray::pa::Build parray_pa_build = ::parray::pa::Build::";
    d.flag_at = out_.size();
    out_ += "general; (void)parray_pa_build;";
    open_block(BlockKind::detour, "});", a.position(name_at));
  }
  detours_.push_back(d);
}

void Translator::sync(std::string_view word, std::string_view rest, Position at) {
  Args a(*this, rest, at);
  if (a.next_is('{')) {  // the paper's "#sync {}"
    a.word_or_brace();
    if (!a.next_is('}')) a.fail(a.where(), "#sync takes no block: #sync or #sync {}");
    a.skip(1);
  }
  a.end("#sync, #sync_1");
  std::vector<int> path;
  if (!split_path(word, 4, path) || path.size() > 1)
    fail(at, "#" + std::string(word) + ": #sync over the array, #sync_D over its dimension D");
  const Detour* d = detour();
  if (!d) fail(at, "#" + std::string(word) + " outside a #detour: it waits for a thread array's threads");
  // A kernel's blocks cannot wait for one another: in a [[grid]][[block]]
  // array #sync is the block's barrier, as the paper means it (fig 7).
  if (path.empty() && d->explicit_grid) path.push_back(1);
  out_ += d->coord + ".sync(" + (path.empty() ? "" : std::to_string(path[0])) + ");";
}

// ---- #subprog ... #end ----

void Translator::subprog(std::string_view args, Position at, std::size_t index) {
  Args a(*this, args, at);
  const std::string name = a.word("a name: #subprog NAME(params)");
  const std::string_view list = a.parenthesized("its parameters: #subprog NAME(a, b, type)");
  a.end("#subprog NAME(params)");
  if (in_subprog_ || depth_ != 0) fail(at, "#subprog defines a function: it stands at file scope");
  std::vector<std::string> params;
  for (const std::string& p : split_list(list)) {
    Args w(*this, p, at);
    params.push_back(w.word("a parameter name"));
    w.end("parameters are names: #subprog NAME(a, b, type)");
  }
  // A parameter that a declaration of the body refers to (#type_0) is a type.
  std::set<std::string> types;
  std::size_t rest = 0;
  for (std::size_t k = index + 1; k < segments_.size(); ++k) {
    if (segments_[k].kind != SegmentKind::directive) continue;
    const Segment s = without_comments(segments_[k]);
    const std::string_view w = directive_word(s.text, rest);
    if (w == "end") break;
    if (w != "parray") continue;
    const Declaration d = parse_declaration(s, file_);
    std::vector<std::pair<std::string, std::size_t>> refs;
    std::set<std::string> constants;
    names_in(parse_dims(d.dims, [&](std::size_t, const std::string& what) { fail(d.at, what); }), refs, constants);
    for (const auto& r : refs) types.insert(r.first);
  }
  std::string tparams, fparams;
  int type_count = 0;
  outer_symbols_ = symbols_;
  for (const std::string& p : params) {
    if (types.count(p)) {
      Symbol s;
      s.decl.name = p;
      s.form = Form::param;
      symbols_[p] = s;
      fparams += (fparams.empty() ? "" : ", ") + std::string("const ::parray::Layout& ") + p;
      continue;
    }
    const std::string t = "parray_pa_P" + std::to_string(type_count++);
    tparams += (tparams.empty() ? "class " : ", class ") + t;
    fparams += (fparams.empty() ? "" : ", ") + t + " " + p;
  }
  if (!tparams.empty()) out_ += "template <" + tparams + "> ";
  out_ += "void " + name + "(" + fparams + ") {";
  in_subprog_ = true;
  subprog_at_ = at;
  subprog_blocks_ = blocks_.size();
  subprog_depth_ = depth_;
}

void Translator::end_subprog(Position at) {
  if (!in_subprog_) fail(at, "#end without its #subprog");
  if (blocks_.size() != subprog_blocks_ || depth_ != subprog_depth_)
    fail(at, "#end inside a block that is still open (a '}' is missing before it)");
  out_ += "}";
  in_subprog_ = false;
  symbols_ = outer_symbols_;
}

}  // namespace parray::pa
