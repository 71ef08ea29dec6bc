// Batches of GEMMs (include/parray/gemm_batched.hpp), strided and grouped:
// their checks, then the products through the dispatcher, spread over the
// CPU threads where they are small.
#include "parray/gemm_batched.hpp"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

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

// Runs product(i, threads) for i < count: spread one per thread where every
// product is small and the implementation runs on the CPU, else in turn with
// all the threads. The first error of any product is rethrown.
template <class Product>
void run_batch(index_t count, double largest_macs, const GemmImpl& impl, int threads, Product&& product) {
  const bool spread = impl.device == Device::cpu && threads > 1 && count > 1 && largest_macs < kSmallProduct;
  if (!spread) {
    for (index_t i = 0; i < count; ++i) product(i, threads);
    return;
  }
  std::exception_ptr error;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (index_t i = 0; i < count; ++i) {
    try {
      product(i, 1);
    } catch (...) {
#pragma omp critical(parray_gemm_batch_error)
      if (!error) error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

int threads_of(const GemmOptions& o) {
  if (o.threads < 0) throw Error("gemm: thread count " + std::to_string(o.threads) + " is negative");
  return o.threads > 0 ? o.threads : omp_get_max_threads();
}

std::string size_text(index_t r, index_t c) { return std::to_string(r) + "x" + std::to_string(c); }

// The whole batch through the implementation's batch entry, where it has one
// and takes it: false leaves the products to run in turn. Matrix 0 is checked
// as a call of its own (the others differ only in where they start).
template <class T>
bool run_in_one_go(const GemmImpl& impl, index_t batch, T alpha, const MatrixView<const T>& a,
                   const MatrixView<const T>& b, T beta, const MatrixView<T>& c, const BatchStrides& s,
                   const GemmOptions& options) {
  const auto& entry = [&impl]() -> const auto& {
    if constexpr (std::is_same_v<T, float>) return impl.run_batch_f32;
    else return impl.run_batch_f64;
  }();
  // The corner cases (M, N or K = 0, alpha = 0) run matrix by matrix: the
  // check below would already have scaled matrix 0's C.
  if (!entry || batch < 2 || c.rows() == 0 || c.cols() == 0 || a.cols() == 0 || alpha == T(0)) return false;
  const std::optional<GemmCall<T>> first =
      checked_gemm_call<T>(impl, alpha, a, b, beta, c, options.threads, options.precision, options.stream);
  return first && entry(GemmBatchCall<T>{*first, batch, s.a, s.b, s.c});
}

// View v with the batch folded into its rows (rows) or columns: matrix i + 1
// begins one stride of that axis after matrix i's last row (column), so the
// batch is one matrix of batch times as many; nullopt where it is not.
template <class V>
std::optional<V> stacked(V v, bool rows, index_t batch, index_t stride) {
  Axis& axis = rows ? v.layout.rows : v.layout.cols;
  const index_t count = axis.size;
  if (!axis.is_strided() || stride <= 0 || (count > 1 && stride != count * axis.stride[0])) return std::nullopt;
  if (count * batch >= (index_t(1) << 31)) return std::nullopt;  // kernels take extents below 2^31
  axis = Axis::strided(count * batch, count > 1 ? axis.stride[0] : stride);
  return v;
}

// A batch with one operand broadcast whose other operand and C are stacked
// evenly along the axis the product keeps (B broadcast: A's and C's rows; A
// broadcast: B's and C's columns) is one product batch times as tall (wide):
// one call, which a kernel for large products runs at its speed, where the
// batch would be many small ones (a layer's weights applied to a stack of
// inputs). False where the batch is not such a stack.
template <class T>
bool run_folded(const GemmImpl& impl, index_t batch, T alpha, const MatrixView<const T>& a,
                const MatrixView<const T>& b, T beta, const MatrixView<T>& c, const BatchStrides& s,
                const GemmOptions& options) {
  if (batch < 2 || (s.a == 0) == (s.b == 0)) return false;
  const bool by_rows = s.b == 0;
  const auto one = stacked(by_rows ? a : b, by_rows, batch, by_rows ? s.a : s.b);
  const auto out = stacked(c, by_rows, batch, s.c);
  if (!one || !out) return false;
  gemm<T>(impl, alpha, by_rows ? *one : a, by_rows ? b : *one, beta, *out, threads_of(options), options.precision,
          options.stream);
  return true;
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
    throw Error("gemm_batched: dimensions do not match: A is " + size_text(a.rows(), a.cols()) + ", B is " +
                size_text(b.rows(), b.cols()) + ", C is " + size_text(c.rows(), c.cols()) + " (need A MxK, B KxN, C MxN)");
  if (batch == 0) return;
  const GemmImpl& impl = registry().find(options.impl);
  if (run_folded(impl, batch, alpha, a, b, beta, c, s, options)) return;
  if (run_in_one_go(impl, batch, alpha, a, b, beta, c, s, options)) return;
  const double macs = double(c.rows()) * double(c.cols()) * double(a.cols());
  run_batch(batch, macs, impl, threads_of(options), [&](index_t i, int product_threads) {
    gemm<T>(impl, alpha, moved(a, i * s.a), moved(b, i * s.b), beta, moved(c, i * s.c), product_threads,
            options.precision, options.stream);
  });
}

template <class T>
void gemm_grouped(std::span<const GroupedGemm<T>> problems, const GemmOptions& options) {
  // No two C's may share an element: their address ranges, sorted, must not
  // intersect (a bound: interleaved but disjoint C's are refused too).
  std::vector<std::pair<const T*, const T*>> ranges;
  double largest = 0;
  for (std::size_t i = 0; i < problems.size(); ++i) {
    const GroupedGemm<T>& p = problems[i];
    if (p.a.rows() != p.c.rows() || p.b.rows() != p.a.cols() || p.b.cols() != p.c.cols())
      throw Error("gemm_grouped: product " + std::to_string(i) + ": dimensions do not match: A is " +
                  size_text(p.a.rows(), p.a.cols()) + ", B is " + size_text(p.b.rows(), p.b.cols()) + ", C is " +
                  size_text(p.c.rows(), p.c.cols()));
    if (p.c.rows() > 0 && p.c.cols() > 0) ranges.emplace_back(p.c.data, p.c.data + p.c.layout.span());
    largest = std::max(largest, double(p.c.rows()) * double(p.c.cols()) * double(p.a.cols()));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      throw Error("gemm_grouped: two products' C's overlap: the results would be written over each other");
  if (problems.empty()) return;
  const GemmImpl& impl = registry().find(options.impl);
  run_batch(index_t(problems.size()), largest, impl, threads_of(options), [&](index_t i, int product_threads) {
    const GroupedGemm<T>& p = problems[std::size_t(i)];
    gemm<T>(impl, p.alpha, p.a, p.b, p.beta, p.c, product_threads, options.precision, options.stream);
  });
}

template void gemm_grouped<float>(std::span<const GroupedGemm<float>>, const GemmOptions&);
template void gemm_grouped<double>(std::span<const GroupedGemm<double>>, const GemmOptions&);
template void gemm_batched<float>(index_t, float, MatrixView<const float>, MatrixView<const float>, float,
                                  MatrixView<float>, BatchStrides, const GemmOptions&);
template void gemm_batched<double>(index_t, double, MatrixView<const double>, MatrixView<const double>, double,
                                   MatrixView<double>, BatchStrides, const GemmOptions&);

}  // namespace parray
