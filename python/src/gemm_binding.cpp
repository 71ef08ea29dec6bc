// parray.gemm on host buffers (NumPy) and on DLPack capsules (PyTorch, CuPy):
// the arguments checked with errors that name them, every operand passed
// where it lies through its strides, the GIL released during the product.
#include <pybind11/stl.h>

#include <chrono>
#include <tuple>
#include <utility>
#include <optional>
#include <string>

#include "bindings.hpp"
#include "dlpack.hpp"
#include "parray/array.hpp"
#include "parray/gemm.hpp"
#include "parray/gemm_batched.hpp"
#if PARRAY_PYTHON_CUDA
#include "parray/cuda_runtime.hpp"
#endif
#include "storage_view.hpp"
#include "stream_order.hpp"

namespace parray::python {

namespace {

GemmOptions options_of(const std::optional<std::string>& impl, const std::optional<std::string>& precision, int threads,
                       Memory memory) {
  GemmOptions o;
  o.impl = impl.value_or(memory == Memory::device ? "gpu" : "cpu");
  if (threads < 0) value_error("threads", std::to_string(threads).append(" is negative"));
  o.threads = threads;
  if (precision) {
    try {
      o.precision = parse_precision(*precision);
    } catch (const Error& e) {
      value_error("precision", e.what());
    }
  }
  return o;
}

// An operand as the library takes it: where it lies, or, for one with a
// negative stride (NumPy's a[::-1], which the kernels' address arithmetic
// does not promise to handle), a dense copy in the same memory, written back
// after the product when it is the result.
template <class T>
class Staged {
 public:
  Staged(const Operand& op, bool read, GpuStream stream) : op_(op), stream_(stream) {
    view_ = {static_cast<T*>(op.data), op.layout, op.memory};
    if (!op.has_negative_stride()) return;
    copy_.emplace(Layout::dense({op.rows(), op.cols()}), op.memory == Memory::device ? Memory::device : Memory::paged);
    MatrixView<T> dense = copy_->view();
    if (read) copy(MatrixView<const T>(view_), dense, stream_);
    view_ = dense;
  }
  MatrixView<T> view() const { return view_; }
  void write_back() const {
    if (copy_)
      copy(MatrixView<const T>(view_), MatrixView<T>{static_cast<T*>(op_.data), op_.layout, op_.memory}, stream_);
  }

 private:
  const Operand& op_;
  GpuStream stream_;
  MatrixView<T> view_;
  std::optional<Array<T>> copy_;
};

template <class T>
void gemm_typed(const Operand& a, const Operand& b, const Operand& c, double alpha, double beta,
                const GemmOptions& options) {
  const Staged<T> sa(a, true, options.stream), sb(b, true, options.stream), sc(c, beta != 0, options.stream);
  gemm<T>(T(alpha), MatrixView<const T>(sa.view()), MatrixView<const T>(sb.view()), T(beta), sc.view(), options);
  sc.write_back();
}

void run_gemm(const Operand& a, const Operand& b, const Operand& c, double alpha, double beta,
              const GemmOptions& options) {
  if (a.dtype == Dtype::f32)
    gemm_typed<float>(a, b, c, alpha, beta, options);
  else
    gemm_typed<double>(a, b, c, alpha, beta, options);
}

py::object gemm_host(py::handle a, py::handle b, py::object out, double alpha, double beta,
                     const std::optional<std::string>& precision, const std::optional<std::string>& impl, int threads) {
  const HostArgument ha(a, "a", false), hb(b, "b", false);
  const Operand& oa = ha.operand();
  const GemmOptions options = options_of(impl, precision, threads, Memory::paged);
  if (out.is_none()) {
    if (beta != 0) value_error("beta", "is not 0 but no out was given to scale");
    out = NewArray(oa.rows(), hb.operand().cols(), dtype_text(oa.dtype)).object();
  }
  const HostArgument hc(out, "out", true);
  check_product(oa, hb.operand(), hc.operand(), true);
  {
    py::gil_scoped_release release;
    run_gemm(oa, hb.operand(), hc.operand(), alpha, beta, options);
  }
  return out;
}

void gemm_dlpack(py::handle a, py::handle b, py::handle out, double alpha, double beta,
                 const std::optional<std::string>& precision, const std::optional<std::string>& impl, int threads,
                 std::uintptr_t stream) {
  const Operand oa = DlpackArray(a, "a").matrix(), ob = DlpackArray(b, "b").matrix(),
                oc = DlpackArray(out, "out").matrix();
  GemmOptions options = options_of(impl, precision, threads, oa.memory);
  check_product(oa, ob, oc, true);
  py::gil_scoped_release release;
  if (oa.memory != Memory::device) return run_gemm(oa, ob, oc, alpha, beta, options);
#if PARRAY_PYTHON_CUDA
  options.stream = caller_stream(stream);
  on_device(oa.device_id, [&] { run_gemm(oa, ob, oc, alpha, beta, options); });
#else
  (void)stream;
  throw Error(std::string("a: is in ").append(oa.where()).append(" but parray was built without CUDA"));
#endif
}

// A stack of `batch` matrices, the first one `op`, the next each `stride`
// elements on: the bytes it spans (strides >= 0), as [first, last).
std::pair<std::uintptr_t, std::uintptr_t> stack_bytes(const Operand& op, index_t batch, index_t stride) {
  const auto first = reinterpret_cast<std::uintptr_t>(op.data);
  if (batch == 0 || op.rows() == 0 || op.cols() == 0) return {first, first};
  const index_t span = op.layout.span() + (batch - 1) * stride;
  return {first, first + std::uintptr_t(span) * op.item_size()};
}

// out's stack must not share bytes with a's or b's (a bound, as check_product's).
void check_stacks(const Operand& a, const Operand& b, const Operand& c, index_t batch, const BatchStrides& s) {
  if (batch < 0) value_error("batch", std::to_string(batch) + " is negative");
  for (const auto& [name, stride] : {std::pair{"a", s.a}, std::pair{"b", s.b}, std::pair{"out", s.c}})
    if (stride < 0) value_error(name, "a negative batch stride (" + std::to_string(stride) + ")");
  if (a.has_negative_stride() || b.has_negative_stride() || c.has_negative_stride())
    value_error("a, b, out", "a stack with a negative stride inside its matrices");
  const auto out = stack_bytes(c, batch, s.c);
  for (const auto& [name, op, stride] : {std::tuple{"a", &a, s.a}, std::tuple{"b", &b, s.b}}) {
    const auto in = stack_bytes(*op, batch, stride);
    if (in.first < out.second && out.first < in.second && in.first != in.second && out.first != out.second)
      value_error("out", std::string("overlaps ") + name + " (the result would be written over an input)");
  }
}

template <class T>
void gemm_batched_typed(index_t batch, const Operand& a, const Operand& b, const Operand& c, double alpha, double beta,
                        const BatchStrides& s, const GemmOptions& options) {
  gemm_batched<T>(batch, T(alpha), MatrixView<const T>{static_cast<const T*>(a.data), a.layout, a.memory},
                  MatrixView<const T>{static_cast<const T*>(b.data), b.layout, b.memory}, T(beta),
                  MatrixView<T>{static_cast<T*>(c.data), c.layout, c.memory}, s, options);
}

void run_gemm_batched(index_t batch, const Operand& a, const Operand& b, const Operand& c, double alpha, double beta,
                      const BatchStrides& s, const GemmOptions& options) {
  if (a.dtype == Dtype::f32)
    gemm_batched_typed<float>(batch, a, b, c, alpha, beta, s, options);
  else
    gemm_batched_typed<double>(batch, a, b, c, alpha, beta, s, options);
}

// out_i = alpha a_i b_i + beta out_i for i < batch, a_i = a moved by i *
// stride_a elements (0: the same a for every product), likewise b and out:
// a, b and out are the stacks' first matrices.
void gemm_batched_host(index_t batch, py::handle a, py::handle b, py::handle out, index_t stride_a, index_t stride_b,
                       index_t stride_c, double alpha, double beta, const std::optional<std::string>& precision,
                       const std::optional<std::string>& impl, int threads) {
  const HostArgument ha(a, "a", false), hb(b, "b", false), hc(out, "out", true);
  const GemmOptions options = options_of(impl, precision, threads, Memory::paged);
  check_product(ha.operand(), hb.operand(), hc.operand(), true);
  const BatchStrides s{stride_a, stride_b, stride_c};
  check_stacks(ha.operand(), hb.operand(), hc.operand(), batch, s);
  py::gil_scoped_release release;
  run_gemm_batched(batch, ha.operand(), hb.operand(), hc.operand(), alpha, beta, s, options);
}

void gemm_batched_dlpack(index_t batch, py::handle a, py::handle b, py::handle out, index_t stride_a, index_t stride_b,
                         index_t stride_c, double alpha, double beta, const std::optional<std::string>& precision,
                         const std::optional<std::string>& impl, int threads, std::uintptr_t stream) {
  const Operand oa = DlpackArray(a, "a").matrix(), ob = DlpackArray(b, "b").matrix(),
                oc = DlpackArray(out, "out").matrix();
  GemmOptions options = options_of(impl, precision, threads, oa.memory);
  check_product(oa, ob, oc, true);
  const BatchStrides s{stride_a, stride_b, stride_c};
  check_stacks(oa, ob, oc, batch, s);
  py::gil_scoped_release release;
  if (oa.memory != Memory::device) return run_gemm_batched(batch, oa, ob, oc, alpha, beta, s, options);
#if PARRAY_PYTHON_CUDA
  options.stream = caller_stream(stream);
  on_device(oa.device_id, [&] { run_gemm_batched(batch, oa, ob, oc, alpha, beta, s, options); });
#else
  (void)stream;
  throw Error(std::string("a: is in ").append(oa.where()).append(" but parray was built without CUDA"));
#endif
}

// Seconds per call of `repeats` library calls back to back on the same
// operands, parsed once: the C++ side of the Python call's overhead
// (python/bench/targets.py). GPU calls are waited for once, at the end.
double time_library_calls(py::handle a, py::handle b, py::handle out, const std::optional<std::string>& impl,
                          int repeats, bool capsules) {
  if (repeats < 1) value_error("repeats", std::to_string(repeats).append(" is not positive"));
  std::optional<HostArgument> ha, hb, hc;
  Operand oa, ob, oc;
  if (capsules) {
    oa = DlpackArray(a, "a").matrix();
    ob = DlpackArray(b, "b").matrix();
    oc = DlpackArray(out, "out").matrix();
  } else {
    oa = ha.emplace(a, "a", false).operand();
    ob = hb.emplace(b, "b", false).operand();
    oc = hc.emplace(out, "out", true).operand();
  }
  check_product(oa, ob, oc, true);
  const GemmOptions options = options_of(impl, std::nullopt, 0, oa.memory);
  py::gil_scoped_release release;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) run_gemm(oa, ob, oc, 1.0, 0.0, options);
#if PARRAY_PYTHON_CUDA
  if (oa.memory == Memory::device) cuda::synchronize();
#endif
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

}  // namespace

void bind_gemm(py::module_& m) {
  using namespace pybind11::literals;
  m.def("gemm_host", &gemm_host, "a"_a, "b"_a, "out"_a, "alpha"_a, "beta"_a, "precision"_a, "impl"_a, "threads"_a,
        "out = alpha a b + beta out on host arrays (buffer protocol); returns out, allocated when None.");
  m.def("gemm_dlpack", &gemm_dlpack, "a"_a, "b"_a, "out"_a, "alpha"_a, "beta"_a, "precision"_a, "impl"_a, "threads"_a,
        "stream"_a,
        "out = alpha a b + beta out on DLPack capsules; GPU work ordered on the caller's stream (a DLPack stream "
        "number).");
  m.def("gemm_batched_host", &gemm_batched_host, "batch"_a, "a"_a, "b"_a, "out"_a, "stride_a"_a, "stride_b"_a,
        "stride_c"_a, "alpha"_a, "beta"_a, "precision"_a, "impl"_a, "threads"_a,
        "A strided stack of products on host arrays: a, b, out are the first matrices, each next one stride "
        "elements on (0: the same a or b for every product).");
  m.def("gemm_batched_dlpack", &gemm_batched_dlpack, "batch"_a, "a"_a, "b"_a, "out"_a, "stride_a"_a, "stride_b"_a,
        "stride_c"_a, "alpha"_a, "beta"_a, "precision"_a, "impl"_a, "threads"_a, "stream"_a,
        "The same on DLPack capsules; GPU work on the caller's stream.");
  m.def("time_library_calls", &time_library_calls, "a"_a, "b"_a, "out"_a, "impl"_a, "repeats"_a, "capsules"_a,
        "Seconds per call of back-to-back library GEMMs on these operands (a benchmark of the call overhead).");
  m.attr("built_with_cuda") = bool(PARRAY_PYTHON_CUDA);
}

}  // namespace parray::python
