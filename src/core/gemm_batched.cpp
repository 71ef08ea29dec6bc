// The strided batch of GEMMs (include/parray/gemm_batched.hpp): its checks,
// then the products through the dispatcher, spread over the CPU threads
// where they are small.
#include "parray/gemm_batched.hpp"

#include <omp.h>

#include <exception>
#include <string>

#include "parray/registry.hpp"

namespace parray {

namespace {

// Below this many multiply-adds a product gains little from a second
// thread: the batch is spread over the threads instead, one product each.
constexpr double kSmallProduct = 64.0 * 64.0 * 64.0 * 8.0;

template <class V>
V moved(V v, index_t offset) {
  v.data = v.data ? v.data + offset : v.data;
  return v;
}

}  // namespace

template <class T>
void gemm_batched(index_t batch, T alpha, MatrixView<const T> a, MatrixView<const T> b, T beta, MatrixView<T> c,
                  BatchStrides s, const GemmOptions& options) {
  if (batch < 0) throw Error("gemm_batched: batch " + std::to_string(batch) + " is negative");
  if (s.a < 0 || s.b < 0 || s.c < 0)
    throw Error("gemm_batched: batch strides must be >= 0 (got A " + std::to_string(s.a) + ", B " +
                std::to_string(s.b) + ", C " + std::to_string(s.c) + ")");
  if (batch > 1 && c.rows() > 0 && c.cols() > 0 && s.c < c.layout.span())
    throw Error("gemm_batched: C's batch stride " + std::to_string(s.c) + " is less than one C's extent " +
                std::to_string(c.layout.span()) + ": the products' results would overlap");
  if (a.rows() != c.rows() || b.rows() != a.cols() || b.cols() != c.cols())  // also for an empty batch
    throw Error("gemm_batched: dimensions do not match: A is " + std::to_string(a.rows()) + "x" +
                std::to_string(a.cols()) + ", B is " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()) +
                ", C is " + std::to_string(c.rows()) + "x" + std::to_string(c.cols()) + " (need A MxK, B KxN, C MxN)");
  if (batch == 0) return;
  const GemmImpl& impl = registry().find(options.impl);
  const int threads = options.threads > 0 ? options.threads : omp_get_max_threads();
  const double macs = double(c.rows()) * double(c.cols()) * double(a.cols());
  const bool spread = impl.device == Device::cpu && threads > 1 && batch > 1 && macs < kSmallProduct;
  auto product = [&](index_t i, int product_threads) {
    gemm<T>(impl, alpha, moved(a, i * s.a), moved(b, i * s.b), beta, moved(c, i * s.c), product_threads,
            options.precision, options.stream);
  };
  if (!spread) {
    for (index_t i = 0; i < batch; ++i) product(i, threads);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (index_t i = 0; i < batch; ++i) {
    try {
      product(i, 1);
    } catch (...) {
#pragma omp critical(parray_gemm_batched_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

template void gemm_batched<float>(index_t, float, MatrixView<const float>, MatrixView<const float>, float,
                                  MatrixView<float>, BatchStrides, const GemmOptions&);
template void gemm_batched<double>(index_t, double, MatrixView<const double>, MatrixView<const double>, double,
                                   MatrixView<double>, BatchStrides, const GemmOptions&);

}  // namespace parray
