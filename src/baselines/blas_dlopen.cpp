// OpenBLAS and BLIS as registered baselines, and Intel MKL as a reference.
//
// The libraries export the same cblas_* symbols, so linking them would make
// one shadow the other. Each is instead opened with dlopen(RTLD_LOCAL) from
// the exact file CMake found at configure time (or the file named by
// PARRAY_OPENBLAS_LIB / PARRAY_BLIS_LIB / PARRAY_MKL_LIB), and its functions
// are looked up in that handle.
//
// MKL is registered only where its file is found (it is in Debian's non-free
// section, so no build requires it): it tells how far the vendor's own
// library gets on an Intel host, the ceiling a target is read
// against (docs/cpu-gemm.md). Its single dynamic library (libmkl_rt) loads its
// threading layer at first use; parray asks for the GNU OpenMP one, which
// follows OMP_NUM_THREADS like BLIS, since Intel's libiomp5 is not packaged
// with it.
//
// The dlopen is lazy: registering a baseline only checks that its file is
// there, and the library is opened on the first call. `parray bench gemm`
// times the baselines in a child process of their own (bench_child.cpp), so
// the parent, which times parray's own implementations, never opens them and
// never starts their thread pools.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>
#include <string>
#include <type_traits>

#include "cblas_enums.hpp"
#include "parray/config.hpp"
#include "harness/harness.hpp"

namespace parray {

namespace {

using namespace cblas;

using sgemm_fn = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                          float*, int);
using dgemm_fn = void (*)(int, int, int, int, int, int, double, const double*, int, const double*, int, double,
                          double*, int);

// What differs between the libraries: how the thread count is set, what must
// happen right after loading, how the kernel is named.
enum class Vendor { openblas, blis, mkl };

// MKL_THREADING_GNU in mkl_service.h.
constexpr int kMklThreadingGnu = 3;

struct BlasLibrary {
  Vendor vendor;
  std::string name, path, description;
  // openblas_set_num_threads(int) / bli_thread_set_num_threads(long) /
  // MKL_Set_Num_Threads(int)
  const char* set_threads_symbol;
  // Why no file was configured: where to get the library.
  const char* not_found;
  void* handle = nullptr;
  sgemm_fn sgemm = nullptr;
  dgemm_fn dgemm = nullptr;
  void (*set_threads_int)(int) = nullptr;
  void (*set_threads_long)(long) = nullptr;
  std::once_flag opened;
  std::string open_error;

  BlasLibrary(Vendor v, std::string n, const char* configured_path, std::string desc, const char* env, const char* st,
              const char* why_not_found)
      : vendor(v), name(std::move(n)), description(std::move(desc)), set_threads_symbol(st),
        not_found(why_not_found) {
    const char* e = std::getenv(env);
    path = e && *e ? e : configured_path;
  }

  // Why the library cannot be used, without loading it ("" when its file is there).
  std::string why_missing() const {
    if (path.empty()) return not_found;
    if (access(path.c_str(), R_OK) != 0) return "cannot read " + path;
    return "";
  }

  // Loads the library on first use (thread-safe); throws when it cannot be.
  void ensure_open() {
    std::call_once(opened, [this] { open_error = open(); });
    if (!open_error.empty()) throw Error(name + ": " + open_error);
  }

  std::string open() {
    if (std::string why = why_missing(); !why.empty()) return why;
    // RTLD_DEEPBIND: the library's calls into itself bind to its own symbols.
    // parray links libblas.so.3 (through ScaLAPACK, LAPACK and FAISS), which
    // Debian's alternatives point at OpenBLAS; without it BLIS's cblas_sgemm,
    // which calls its own sgemm_, called OpenBLAS's sgemm_ instead — the
    // "BLIS" baseline ran at OpenBLAS's speed and followed OPENBLAS_CORETYPE.
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!handle) return std::string("dlopen failed: ") + dlerror();
    sgemm = reinterpret_cast<sgemm_fn>(dlsym(handle, "cblas_sgemm"));
    dgemm = reinterpret_cast<dgemm_fn>(dlsym(handle, "cblas_dgemm"));
    if (!sgemm || !dgemm) return "no cblas_sgemm/cblas_dgemm in " + path;
    void* st = dlsym(handle, set_threads_symbol);
    switch (vendor) {
      case Vendor::mkl: {
        // Before any other MKL call, and unless the caller chose a layer: GNU OpenMP.
        auto layer = reinterpret_cast<int (*)(int)>(dlsym(handle, "MKL_Set_Threading_Layer"));
        if (!layer) return "no MKL_Set_Threading_Layer in " + path;
        const char* chosen = std::getenv("MKL_THREADING_LAYER");
        if (!chosen || !*chosen) layer(kMklThreadingGnu);
        set_threads_int = reinterpret_cast<void (*)(int)>(st);
        break;
      }
      case Vendor::openblas:
        set_threads_int = reinterpret_cast<void (*)(int)>(st);
        break;
      case Vendor::blis:
        set_threads_long = reinterpret_cast<void (*)(long)>(st);
        // BLIS initialises itself lazily on its first call and then reads the
        // thread count from the environment, overwriting one set before: so
        // initialise it now, and the count set before each call sticks.
        if (auto init = reinterpret_cast<void (*)()>(dlsym(handle, "bli_init"))) init();
        break;
    }
    return "";
  }
  // The kernel the library picked for this CPU: OpenBLAS's core name
  // (openblas_get_corename; OPENBLAS_CORETYPE overrides its detection), BLIS's
  // configuration (bli_arch_string of bli_arch_query_id; BLIS_ARCH_TYPE
  // overrides it), MKL's version (it does not name its code path; MKL_VERBOSE=1
  // prints it). Empty when the library does not say.
  std::string kernel() {
    ensure_open();
    if (vendor == Vendor::mkl) {
      auto version = reinterpret_cast<void (*)(char*, int)>(dlsym(handle, "MKL_Get_Version_String"));
      if (!version) return "";
      char text[256] = {};
      version(text, sizeof text - 1);
      // "Intel(R) Math Kernel Library Version 2020.0.4 Product Build ...": the number.
      const std::string s = text;
      const auto at = s.find("Version ");
      if (at == std::string::npos) return "";
      const auto end = s.find(' ', at + 8);
      return "MKL-" + s.substr(at + 8, end == std::string::npos ? std::string::npos : end - at - 8);
    }
    if (vendor == Vendor::openblas) {
      auto corename = reinterpret_cast<const char* (*)()>(dlsym(handle, "openblas_get_corename"));
      const char* s = corename ? corename() : nullptr;
      return s ? s : "";
    }
    // arch_t is a C enum: an int in the x86-64 ABI.
    auto query = reinterpret_cast<int (*)()>(dlsym(handle, "bli_arch_query_id"));
    auto text = reinterpret_cast<const char* (*)(int)>(dlsym(handle, "bli_arch_string"));
    const char* s = query && text ? text(query()) : nullptr;
    return s ? s : "";
  }
  void set_threads(int n) const {
    if (set_threads_int) set_threads_int(n);
    if (set_threads_long) set_threads_long(n);
  }
};

// How a strided view maps to CBLAS arguments for a given order.
struct CblasOperand {
  int trans = kNoTrans;
  index_t ld = 0;
};

// `rows x cols` matrix with strides (rs, cs) in `order`: no-trans when its
// contiguous direction matches the order, trans when it is the other one.
bool to_cblas(const MatrixLayout& l, int order, CblasOperand& out) {
  const index_t rs = l.rows.stride[0], cs = l.cols.stride[0];
  const index_t r = l.rows.size, c = l.cols.size;
  // A dimension of extent 1 has no meaningful stride: any unit stride works.
  const bool unit_cols = cs == 1 || c == 1, unit_rows = rs == 1 || r == 1;
  if (order == kRowMajor) {
    if (unit_cols && rs >= std::max<index_t>(1, c)) return out = {kNoTrans, rs}, true;
    if (unit_cols && r == 1) return out = {kNoTrans, std::max<index_t>(1, c)}, true;
    if (unit_rows && cs >= std::max<index_t>(1, r)) return out = {kTrans, cs}, true;
    if (unit_rows && c == 1) return out = {kTrans, std::max<index_t>(1, r)}, true;
  } else {
    if (unit_rows && cs >= std::max<index_t>(1, r)) return out = {kNoTrans, cs}, true;
    if (unit_rows && c == 1) return out = {kNoTrans, std::max<index_t>(1, r)}, true;
    if (unit_cols && rs >= std::max<index_t>(1, c)) return out = {kTrans, rs}, true;
    if (unit_cols && r == 1) return out = {kTrans, std::max<index_t>(1, c)}, true;
  }
  return false;
}

struct CblasPlan {
  int order = kRowMajor;
  CblasOperand a, b, c;
};

std::string plan(const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c, CblasPlan& p) {
  if (!a.is_strided() || !b.is_strided() || !c.is_strided())
    return "BLAS takes only strided (row- or column-major) matrices";
  for (const MatrixLayout* l : {&a, &b, &c})
    if (l->rows.size > INT_MAX || l->cols.size > INT_MAX || l->rows.stride[0] > INT_MAX ||
        l->cols.stride[0] > INT_MAX)
      return "sizes above 2^31 do not fit the 32-bit BLAS interface";
  for (int order : {kRowMajor, kColMajor}) {
    p.order = order;
    if (to_cblas(c, order, p.c) && p.c.trans == kNoTrans && to_cblas(a, order, p.a) && to_cblas(b, order, p.b))
      return "";
  }
  return "a matrix without a unit stride";
}

// The library's cblas_sgemm or cblas_dgemm, opening it first.
template <class T>
auto cblas_gemm_of(BlasLibrary& lib) {
  lib.ensure_open();
  if constexpr (std::is_same_v<T, float>) return lib.sgemm;
  else return lib.dgemm;
}

template <class T>
void call_cblas(BlasLibrary& lib, const GemmCall<T>& call) {
  CblasPlan p;
  if (std::string why = plan(call.a.layout, call.b.layout, call.c.layout, p); !why.empty()) throw Error(why);
  const auto fn = cblas_gemm_of<T>(lib);
  lib.set_threads(call.threads);
  fn(p.order, p.a.trans, p.b.trans, static_cast<int>(call.c.rows()), static_cast<int>(call.c.cols()),
     static_cast<int>(call.a.cols()), call.alpha, call.a.data, static_cast<int>(p.a.ld), call.b.data,
     static_cast<int>(p.b.ld), call.beta, call.c.data, static_cast<int>(p.c.ld));
}

BlasLibrary& library(const std::string& name) {
  static BlasLibrary openblas{Vendor::openblas, "openblas", PARRAY_OPENBLAS_PATH,
                              "OpenBLAS cblas_?gemm (Debian's build, pthreads)", "PARRAY_OPENBLAS_LIB",
                              "openblas_set_num_threads", "not found at configure time"};
  static BlasLibrary blis{Vendor::blis, "blis", PARRAY_BLIS_PATH, "BLIS cblas_?gemm (Debian's build, OpenMP)",
                          "PARRAY_BLIS_LIB", "bli_thread_set_num_threads", "not found at configure time"};
  static BlasLibrary mkl{Vendor::mkl, "mkl", PARRAY_MKL_PATH,
                         "Intel MKL cblas_?gemm, a reference (Debian non-free libmkl-rt, GNU OpenMP threading)",
                         "PARRAY_MKL_LIB", "MKL_Set_Num_Threads",
                         "libmkl_rt not found (Debian non-free libmkl-rt; scripts/mkl-fetch, then PARRAY_MKL_LIB)"};
  if (name == "mkl") return mkl;
  return name == "openblas" ? openblas : blis;
}

}  // namespace

std::string baseline_missing(const std::string& name) { return library(name).why_missing(); }

template <class T>
void baseline_cblas_gemm(const std::string& name, int order, int trans_a, int trans_b, int m, int n, int k, T alpha,
                         const T* a, int lda, const T* b, int ldb, T beta, T* c, int ldc) {
  cblas_gemm_of<T>(library(name))(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
template void baseline_cblas_gemm<float>(const std::string&, int, int, int, int, int, int, float, const float*, int,
                                         const float*, int, float, float*, int);
template void baseline_cblas_gemm<double>(const std::string&, int, int, int, int, int, int, double, const double*,
                                          int, const double*, int, double, double*, int);

void register_baselines(Registry& r) {
  for (const char* name : {"openblas", "blis", "mkl"}) {
    if (r.find_or_null(name)) continue;  // registered already
    BlasLibrary& lib = library(name);
    if (std::string why = lib.why_missing(); !why.empty()) {
      r.add_missing({name, why});
      continue;
    }
    GemmImpl impl;
    impl.name = name;
    impl.description = lib.description + " [" + lib.path + "]";
    impl.device = Device::cpu;
    impl.baseline = true;
    impl.threaded = true;
    impl.own_process = true;  // its thread pool must not share the process with parray's
    impl.preconditions = "strided layouts with a unit stride (row- or column-major, any ld); sizes < 2^31";
    BlasLibrary* l = &lib;
    impl.run_f32 = [l](const GemmCall<float>& c) { call_cblas(*l, c); };
    impl.run_f64 = [l](const GemmCall<double>& c) { call_cblas(*l, c); };
    impl.kernel_info = [l] { return l->kernel(); };
    impl.unsupported = [](const MatrixLayout& a, const MatrixLayout& b, const MatrixLayout& c) {
      CblasPlan p;
      return plan(a, b, c, p);
    };
    impl.tags = {"baseline"};
    r.add(std::move(impl));
  }
}

}  // namespace parray
