// The GEMM dispatcher: argument checks, the BLAS corner cases handled once for
// every implementation, then the registered implementation.
// GCC 12 reports a false -Wrestrict inside std::string's operator+ once it is
// inlined into the error messages below (GCC bug 105329).
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include "parray/gemm.hpp"

#include <omp.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "parray/config.hpp"
#include "parray/registry.hpp"

#if PARRAY_HAVE_CUDA
#include "parray/cuda/memory.hpp"
#endif

namespace parray {

namespace {

std::string dims(index_t r, index_t c) { return std::to_string(r) + "x" + std::to_string(c); }

template <class T>
void check_sizes(const MatrixView<T>& v, const char* name) {
  if (v.rows() < 0 || v.cols() < 0)
    throw Error(std::string("gemm: ") + name + " has a negative size " + dims(v.rows(), v.cols()));
}

// Only operands that will be read or written must be real: with M or N == 0
// nothing is touched, and with K == 0 or alpha == 0 A and B are not read.
template <class T>
void check_not_null(const MatrixView<T>& v, const char* name) {
  if (v.rows() > 0 && v.cols() > 0 && v.data == nullptr)
    throw Error(std::string("gemm: ") + name + " is a null pointer with size " + dims(v.rows(), v.cols()));
}

// C = beta * C without reading C when beta == 0 (host memory).
template <class T>
void scale_c(T beta, const MatrixView<T>& c) {
  for (index_t i = 0; i < c.rows(); ++i) {
    const index_t row = c.layout.rows.offset(i);
    for (index_t j = 0; j < c.cols(); ++j) {
      T& x = c.data[row + c.layout.cols.offset(j)];
      x = beta == T(0) ? T(0) : beta * x;
    }
  }
}

// The implementation a name resolves to, remembered by the calling thread
// while the registry's table and defaults stay as they were (a registration
// moves or grows the table): a look-up compares the name with every entry.
const GemmImpl& find_impl(const std::string& name) {
  thread_local std::string last_name;
  thread_local const GemmImpl* last = nullptr;
  thread_local const GemmImpl* table = nullptr;
  thread_local std::size_t entries = 0;
  const std::vector<GemmImpl>& all = registry().all();
  const bool hit = last && all.data() == table && all.size() == entries && name == last_name &&
                   (name != "gpu" || last->name == registry().default_name(Device::gpu)) &&
                   (name != "cpu" || last->name == registry().default_name(Device::cpu));
  if (hit) return *last;
  last = &registry().find(name);
  last_name = name, table = all.data(), entries = all.size();
  return *last;
}

int resolve_threads(int requested) {
  if (requested < 0) throw Error("gemm: thread count " + std::to_string(requested) + " is negative");
  return requested > 0 ? requested : omp_get_max_threads();
}

}  // namespace

// A user's name is looked up here; the harness, which holds the
// implementation already, calls the overload below directly.
template <class T>
void gemm(T alpha, const MatrixView<const T>& a, const MatrixView<const T>& b, T beta, const MatrixView<T>& c,
          const GemmOptions& options) {
  gemm<T>(find_impl(options.impl), alpha, a, b, beta, c, options.threads, options.precision, options.stream);
}

template <class T>
void gemm(const GemmImpl& impl, T alpha, const MatrixView<const T>& a, const MatrixView<const T>& b, T beta,
          const MatrixView<T>& c, int requested_threads, std::optional<Precision> precision, GpuStream stream) {
  if (const std::optional<GemmCall<T>> call =
          checked_gemm_call<T>(impl, alpha, a, b, beta, c, requested_threads, precision, stream))
    impl.run(*call);
}

template <class T>
std::optional<GemmCall<T>> checked_gemm_call(const GemmImpl& impl, T alpha, const MatrixView<const T>& a,
                                             const MatrixView<const T>& b, T beta, const MatrixView<T>& c,
                                             int requested_threads, std::optional<Precision> precision,
                                             GpuStream stream) {
  check_sizes(a, "A");
  check_sizes(b, "B");
  check_sizes(c, "C");
  const index_t m = c.rows(), n = c.cols(), k = a.cols();
  if (a.rows() != m || b.rows() != k || b.cols() != n)
    throw Error("gemm: dimensions do not match: A is " + dims(a.rows(), a.cols()) + ", B is " +
                dims(b.rows(), b.cols()) + ", C is " + dims(m, n) + " (need A MxK, B KxN, C MxN)");
  if (m > 0 && n > 0 && !c.layout.non_overlapping())
    throw Error("gemm: C's layout " + c.layout.str() + " maps two elements to the same address");
  if (!impl.supports(dtype_of<T>()))
    throw Error("gemm: implementation '" + impl.name + "' does not support " + dtype_name(dtype_of<T>()));
  if (std::string why = precision_shortfall(impl, dtype_of<T>(), precision); !why.empty()) throw Error("gemm: " + why);
  const int threads = resolve_threads(requested_threads);
  if (m == 0 || n == 0) return std::nullopt;
  check_not_null(c, "C");

  if (k == 0 || alpha == T(0)) {  // BLAS: A and B are not read
    if (c.memory == Memory::device) {
#if PARRAY_HAVE_CUDA
      cuda::scale<T>(beta, c, stream);
#else
      throw Error("gemm: C is in device memory but parray was built without CUDA");
#endif
    } else {
      scale_c(beta, c);
    }
    return std::nullopt;
  }
  check_not_null(a, "A");
  check_not_null(b, "B");
  const bool want_device = impl.operand_memory == Memory::device;
  for (const Memory mem : {a.memory, b.memory, c.memory}) {
    if (want_device != (mem == Memory::device))
      throw Error("gemm: implementation '" + impl.name + "' needs its operands in " +
                  (want_device ? "device" : "host") + " memory, got " + memory_name(mem));
  }
  if (std::string why = impl.why_not(a.layout, b.layout, c.layout); !why.empty())
    throw Error("gemm: implementation '" + impl.name + "' cannot take these layouts: " + why);
  return GemmCall<T>{alpha, a, b, beta, c, threads, stream, precision.value_or(precision_of(dtype_of<T>()))};
}

template <class T>
void gemm(Order order, Trans trans_a, Trans trans_b, index_t m, index_t n, index_t k, T alpha,
          const T* a, index_t lda, const T* b, index_t ldb, T beta, T* c, index_t ldc,
          const GemmOptions& options) {
  if (m < 0 || n < 0 || k < 0)
    throw Error("gemm: negative size M=" + std::to_string(m) + " N=" + std::to_string(n) +
                " K=" + std::to_string(k));
  const bool row = order == Order::row_major;
  // Stored shapes (rows x cols) of op(A) = A or A^T etc., as BLAS defines lda.
  const index_t a_rows = trans_a == Trans::no ? m : k, a_cols = trans_a == Trans::no ? k : m;
  const index_t b_rows = trans_b == Trans::no ? k : n, b_cols = trans_b == Trans::no ? n : k;
  auto check_ld = [&](const char* name, index_t ld, index_t rows, index_t cols) {
    const index_t need = std::max<index_t>(1, row ? cols : rows);
    if (ld < need)
      throw Error(std::string("gemm: ld") + name + "=" + std::to_string(ld) + " is smaller than " +
                  (row ? "the row length " : "the column length ") + std::to_string(need) + " of " + name);
  };
  check_ld("a", lda, a_rows, a_cols);
  check_ld("b", ldb, b_rows, b_cols);
  check_ld("c", ldc, m, n);
  auto stored = [&](index_t rows, index_t cols, index_t ld) {
    return row ? MatrixLayout::row_major(rows, cols, ld) : MatrixLayout::col_major(rows, cols, ld);
  };
  MatrixView<const T> va{a, stored(a_rows, a_cols, lda)};
  MatrixView<const T> vb{b, stored(b_rows, b_cols, ldb)};
  if (trans_a == Trans::yes) va = va.t();
  if (trans_b == Trans::yes) vb = vb.t();
  gemm(alpha, va, vb, beta, MatrixView<T>{c, stored(m, n, ldc)}, options);
}

template void gemm<float>(float, const MatrixView<const float>&, const MatrixView<const float>&, float,
                          const MatrixView<float>&, const GemmOptions&);
template void gemm<float>(const GemmImpl&, float, const MatrixView<const float>&, const MatrixView<const float>&,
                          float, const MatrixView<float>&, int, std::optional<Precision>, GpuStream);
template void gemm<double>(const GemmImpl&, double, const MatrixView<const double>&, const MatrixView<const double>&,
                           double, const MatrixView<double>&, int, std::optional<Precision>, GpuStream);
template void gemm<double>(double, const MatrixView<const double>&, const MatrixView<const double>&, double,
                           const MatrixView<double>&, const GemmOptions&);
template void gemm<float>(Order, Trans, Trans, index_t, index_t, index_t, float, const float*, index_t,
                          const float*, index_t, float, float*, index_t, const GemmOptions&);
template void gemm<double>(Order, Trans, Trans, index_t, index_t, index_t, double, const double*,
                           index_t, const double*, index_t, double, double*, index_t, const GemmOptions&);
template std::optional<GemmCall<float>> checked_gemm_call<float>(const GemmImpl&, float, const MatrixView<const float>&,
                                                                 const MatrixView<const float>&, float,
                                                                 const MatrixView<float>&, int, std::optional<Precision>,
                                                                 GpuStream);
template std::optional<GemmCall<double>> checked_gemm_call<double>(const GemmImpl&, double,
                                                                   const MatrixView<const double>&,
                                                                   const MatrixView<const double>&, double,
                                                                   const MatrixView<double>&, int,
                                                                   std::optional<Precision>, GpuStream);

}  // namespace parray
