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
const std::string kLibraryFile = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);

void* open_library() {
  void* handle = dlopen(kLibraryFile.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) throw Error("cannot open cuBLAS (" + kLibraryFile + "): " + dlerror());
  return handle;
}

template <class Fn>
void bind(void* library, Fn& slot, const char* symbol) {
  slot = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (!slot) throw Error(kLibraryFile + " has no " + symbol);
}

CublasLibrary load() {
  void* lib = open_library();  // kept open for the process's life
  CublasLibrary c{};
#define PARRAY_BIND(member, name) bind(lib, c.member, PARRAY_SYMBOL_NAME(name))
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

}  // namespace

void CublasLibrary::check(cublasStatus_t status, std::string_view who, std::string_view call) const {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::string message(who);
  if (!call.empty()) message.append(": ").append(call);
  throw Error(message.append(": ").append(GetStatusString(status)));
}

const CublasLibrary& cublas() {
  static const CublasLibrary library = load();
  return library;
}

}  // namespace parray::cuda
