#include "common/cublas_library.hpp"

#include <dlfcn.h>

#include <string>

#include "parray/core.hpp"

// Expands a name that cublas_v2.h defines as a macro (cublasSgemm is
// cublasSgemm_v2) before making it the symbol's string.
#define PARRAY_SYMBOL_NAME(name) PARRAY_SYMBOL_TEXT(name)
#define PARRAY_SYMBOL_TEXT(name) #name

namespace parray::cuda {

namespace {

// The toolkit's own major version: the library the headers describe.
std::string library_file(const char* stem) { return std::string(stem) + ".so." + std::to_string(CUBLAS_VER_MAJOR); }

void* open_library(const std::string& file) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error("cannot open " + file + ": " + dlerror());
  return handle;
}

template <class Fn>
void bind(void* library, const std::string& file, Fn& slot, const char* symbol) {
  slot = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (!slot) throw Error(file + " has no " + symbol);
}

// Throws "WHO: CALL: TEXT" (see CublasLibrary::check).
[[noreturn]] void fail(std::string_view who, std::string_view call, const char* text) {
  std::string message(who);
  if (!call.empty()) message.append(": ").append(call);
  throw Error(message.append(": ").append(text));
}

CublasLibrary load() {
  const std::string file = library_file("libcublas");
  void* lib = open_library(file);  // kept open for the process's life
  CublasLibrary c{};
#define PARRAY_BIND(member, name) bind(lib, file, c.member, PARRAY_SYMBOL_NAME(name))
  PARRAY_BIND(Create, cublasCreate);
  PARRAY_BIND(Destroy, cublasDestroy);
  PARRAY_BIND(SetStream, cublasSetStream);
  PARRAY_BIND(SetMathMode, cublasSetMathMode);
  PARRAY_BIND(GetStatusString, cublasGetStatusString);
  PARRAY_BIND(Sgemm, cublasSgemm);
  PARRAY_BIND(Dgemm, cublasDgemm);
  PARRAY_BIND(GemmEx, cublasGemmEx);
  PARRAY_BIND(SgemmStridedBatched, cublasSgemmStridedBatched);
  PARRAY_BIND(DgemmStridedBatched, cublasDgemmStridedBatched);
  PARRAY_BIND(GemmStridedBatchedEx, cublasGemmStridedBatchedEx);
  PARRAY_BIND(Sgemv, cublasSgemv);
  PARRAY_BIND(Dgemv, cublasDgemv);
  PARRAY_BIND(XtCreate, cublasXtCreate);
  PARRAY_BIND(XtDeviceSelect, cublasXtDeviceSelect);
  PARRAY_BIND(XtSetBlockDim, cublasXtSetBlockDim);
  PARRAY_BIND(XtGetBlockDim, cublasXtGetBlockDim);
  PARRAY_BIND(XtSgemm, cublasXtSgemm);
#undef PARRAY_BIND
  return c;
}

CublasLtLibrary load_lt() {
  const std::string file = library_file("libcublasLt");
  void* lib = open_library(file);
  CublasLtLibrary c{};
#define PARRAY_BIND(member) bind(lib, file, c.member, "cublasLt" #member)
  PARRAY_BIND(Create);
  PARRAY_BIND(GetStatusString);
  PARRAY_BIND(MatmulDescCreate);
  PARRAY_BIND(MatmulDescDestroy);
  PARRAY_BIND(MatmulDescSetAttribute);
  PARRAY_BIND(MatrixLayoutCreate);
  PARRAY_BIND(MatrixLayoutDestroy);
  PARRAY_BIND(MatmulPreferenceCreate);
  PARRAY_BIND(MatmulPreferenceDestroy);
  PARRAY_BIND(MatmulPreferenceSetAttribute);
  PARRAY_BIND(MatmulAlgoGetHeuristic);
  PARRAY_BIND(Matmul);
#undef PARRAY_BIND
  return c;
}

}  // namespace

void CublasLibrary::check(cublasStatus_t status, std::string_view who, std::string_view call) const {
  if (status != CUBLAS_STATUS_SUCCESS) fail(who, call, GetStatusString(status));
}

void CublasLtLibrary::check(cublasStatus_t status, std::string_view who, std::string_view call) const {
  if (status != CUBLAS_STATUS_SUCCESS) fail(who, call, GetStatusString(status));
}

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

const CublasLtLibrary& cublaslt() {
  static const CublasLtLibrary library = load_lt();
  return library;
}

}  // namespace parray::cuda
