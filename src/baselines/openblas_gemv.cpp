// OpenBLAS cblas_sgemv / cblas_dgemv as GEMV baselines, opened with dlopen
// from the file CMake found (PARRAY_OPENBLAS_PATH), like the GEMM baselines
// in src/baselines/blas_dlopen.cpp: nothing links OpenBLAS.
#include <dlfcn.h>

#include <climits>

#include "cblas_enums.hpp"
#include "parray/config.hpp"
#include "harness/knn_bench.hpp"

namespace parray {

namespace {

using namespace cblas;
using sgemv_fn = void (*)(int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using dgemv_fn = void (*)(int, int, int, int, double, const double*, int, const double*, int, double, double*, int);

struct OpenBlasGemv {
  sgemv_fn sgemv = nullptr;
  dgemv_fn dgemv = nullptr;
  void (*set_threads)(int) = nullptr;
  std::string why;
  OpenBlasGemv() {
    const std::string path = PARRAY_OPENBLAS_PATH;
    if (path.empty()) {
      why = "OpenBLAS not found at configure time";
      return;
    }
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      why = std::string("dlopen failed: ") + dlerror();
      return;
    }
    sgemv = reinterpret_cast<sgemv_fn>(dlsym(h, "cblas_sgemv"));
    dgemv = reinterpret_cast<dgemv_fn>(dlsym(h, "cblas_dgemv"));
    set_threads = reinterpret_cast<void (*)(int)>(dlsym(h, "openblas_set_num_threads"));
    if (!sgemv || !dgemv) why = "no cblas_sgemv/cblas_dgemv in " + path;
  }
};

const OpenBlasGemv& lib() {
  static OpenBlasGemv l;
  return l;
}

// Row-major (unit column stride) or column-major (unit row stride) only.
std::string unsupported(const MatrixLayout& a) {
  if (!a.is_strided()) return "BLAS takes only strided matrices";
  if (a.rows.size > INT_MAX || a.cols.size > INT_MAX || a.rows.stride[0] > INT_MAX || a.cols.stride[0] > INT_MAX)
    return "sizes above 2^31 do not fit the 32-bit BLAS interface";
  if (a.cols.stride[0] == 1 || a.cols.size == 1 || a.rows.stride[0] == 1 || a.rows.size == 1) return "";
  return "a matrix without a unit stride";
}

template <class T, class Fn>
void call(Fn fn, const GemvCall<T>& c) {
  if (std::string why = unsupported(c.a.layout); !why.empty()) throw Error(why);
  if (lib().set_threads) lib().set_threads(c.threads);
  const MatrixLayout& l = c.a.layout;
  const int m = int(c.a.rows()), n = int(c.a.cols());
  const bool cols_unit = l.cols.stride[0] == 1 || n == 1;
  if (cols_unit && (m == 1 || l.rows.stride[0] >= std::max(1, n)))
    fn(kRowMajor, kNoTrans, m, n, c.alpha, c.a.data, m == 1 ? std::max(1, n) : int(l.rows.stride[0]), c.x, 1, c.beta,
       c.y, 1);
  else
    fn(kColMajor, kNoTrans, m, n, c.alpha, c.a.data, n == 1 ? std::max(1, m) : int(l.cols.stride[0]), c.x, 1, c.beta,
       c.y, 1);
}

}  // namespace

void register_gemv_baselines(GemvRegistry& r) {
  if (r.find_or_null("gemv-openblas")) return;
  if (!lib().why.empty()) {
    r.add_missing({"gemv-openblas", lib().why});
    return;
  }
  GemvImpl i;
  i.name = "gemv-openblas";
  i.description = "OpenBLAS cblas_?gemv (Debian's build, pthreads) [" + std::string(PARRAY_OPENBLAS_PATH) + "]";
  i.device = Device::cpu;
  i.baseline = true;
  i.threaded = true;
  i.preconditions = "row- or column-major, any ld; sizes < 2^31";
  i.run_f32 = [](const GemvCall<float>& c) { call(lib().sgemv, c); };
  i.run_f64 = [](const GemvCall<double>& c) { call(lib().dgemv, c); };
  i.unsupported = unsupported;
  r.add(std::move(i));
}

}  // namespace parray
