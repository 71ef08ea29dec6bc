// parray's GEMM as PyTorch operators written in C++: torch.ops.parray.matmul
// and torch.ops.parray.gemm, with CPU and CUDA kernels and an Autograd kernel,
// so that a call goes from PyTorch's dispatcher to parray::gemm without
// entering Python: a Python-defined operator pays the interpreter's dispatch
// before its body runs, this one costs what any PyTorch operator does
// (docs/python.md has both figures).
//
// python/parray/torch.py loads this library and registers the operators'
// fake kernels (shape propagation for tracing and torch.compile) and
// parray::knn in Python; where the library was not built it defines the same
// operators in Python. The checks here give the Python definitions' errors:
// TypeError or ValueError, the argument's name first.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <c10/util/accumulate.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#if PARRAY_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "parray/gemm16.hpp"
#endif
#include "parray/gemm.hpp"
#include "parray/gemm_batched.hpp"

namespace parray::torch_ops {

namespace {

using at::Tensor;
using PrecisionArg = std::optional<c10::string_view>;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// ---- checks, with the Python definitions' wording ------------------------------------------------

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "torch.float32";
    case at::kDouble: return "torch.float64";
    case at::kBFloat16: return "torch.bfloat16";
    case at::kHalf: return "torch.float16";
    case at::kLong: return "torch.int64";
    case at::kInt: return "torch.int32";
    case at::kShort: return "torch.int16";
    case at::kChar: return "torch.int8";
    case at::kByte: return "torch.uint8";
    case at::kBool: return "torch.bool";
    case at::kComplexFloat: return "torch.complex64";
    case at::kComplexDouble: return "torch.complex128";
    default: return std::string("torch.") + c10::toString(t);
  }
}

std::string text_of(c10::string_view s) { return std::string(s.data(), s.size()); }

bool is_float(at::ScalarType t) { return t == at::kFloat || t == at::kDouble; }
bool is_half(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }
const char* half_precision(at::ScalarType t) { return t == at::kBFloat16 ? "bf16" : "fp16"; }

void check_tensor(const char* name, const Tensor& x) {
  const at::ScalarType t = x.scalar_type();
  TORCH_CHECK_TYPE(is_float(t) || is_half(t), name, ": dtype ", dtype_name(t),
                   " is not float32, float64, bfloat16 or float16");
  TORCH_CHECK_VALUE(x.is_cpu() || x.is_cuda() || x.is_meta(), name, ": is on ", x.device(),
                    "; parray runs on the CPU and on CUDA GPUs");
  TORCH_CHECK_TYPE(!(is_half(t) && x.is_cpu()), name, ": ", dtype_name(t),
                   " runs on CUDA tensors only (the tensor cores); this one is on the CPU");
}

void check_pair(const Tensor& a, const Tensor& b, PrecisionArg precision, const char* name_a = "a",
                const char* name_b = "b") {
  check_tensor(name_a, a);
  check_tensor(name_b, b);
  TORCH_CHECK_TYPE(b.scalar_type() == a.scalar_type(), name_b, ": dtype ", dtype_name(b.scalar_type()),
                   " differs from ", name_a, "'s ", dtype_name(a.scalar_type()));
  TORCH_CHECK_VALUE(b.device() == a.device(), name_b, ": is on ", b.device(), ", ", name_a, " on ", a.device());
  if (!precision) return;
  const std::string p = text_of(*precision);
  static const std::string known[] = {"fp64", "fp32", "tf32", "bf16", "fp16"};
  TORCH_CHECK_VALUE(std::find(std::begin(known), std::end(known), p) != std::end(known), "precision: '", p,
                    "' is not one of None, fp64, fp32, tf32, bf16, fp16");
  TORCH_CHECK_VALUE(!is_half(a.scalar_type()) || p == half_precision(a.scalar_type()), "precision: '", p, "' for ",
                    dtype_name(a.scalar_type()), " inputs; they are ", half_precision(a.scalar_type()), " already");
}

// torch.matmul's result shape, or ValueError naming the operand that does not fit.
std::vector<int64_t> matmul_shape(const Tensor& a, const Tensor& b) {
  TORCH_CHECK_VALUE(a.dim() > 0 && b.dim() > 0, a.dim() == 0 ? "a" : "b",
                    ": a 0-dimensional tensor; matmul needs at least one dimension");
  const int64_t k_b = b.dim() == 1 ? b.size(0) : b.size(-2);
  TORCH_CHECK_VALUE(a.size(-1) == k_b, "b: has ", k_b, " rows, a has ", a.size(-1), " columns");
  // The batch dimensions, aligned at the right, broadcast as NumPy's.
  const int64_t batch_a = std::max<int64_t>(a.dim() - 2, 0), batch_b = std::max<int64_t>(b.dim() - 2, 0);
  const int64_t batch = std::max(batch_a, batch_b);
  std::vector<int64_t> shape(std::size_t(batch), 1);
  for (int64_t d = 0; d < batch; ++d) {
    const int64_t i = d - (batch - batch_a), j = d - (batch - batch_b);
    const int64_t sa = i >= 0 ? a.size(i) : 1, sb = j >= 0 ? b.size(j) : 1;
    TORCH_CHECK_VALUE(sa == sb || sa == 1 || sb == 1, "a, b: batch dimensions ",
                      a.sizes().slice(0, std::size_t(batch_a)), " and ", b.sizes().slice(0, std::size_t(batch_b)),
                      " do not broadcast");
    shape[std::size_t(d)] = sa == 1 ? sb : sa;
  }
  if (a.dim() > 1) shape.push_back(a.size(-2));
  if (b.dim() > 1) shape.push_back(b.size(-1));
  return shape;
}

std::vector<int64_t> gemm_shape(const Tensor& a, const Tensor& b, const std::optional<Tensor>& c) {
  TORCH_CHECK_VALUE(a.dim() == 2, "a: has ", a.dim(), " dimensions; gemm takes matrices (see matmul for stacks)");
  TORCH_CHECK_VALUE(b.dim() == 2, "b: has ", b.dim(), " dimensions; gemm takes matrices (see matmul for stacks)");
  TORCH_CHECK_VALUE(a.size(1) == b.size(0), "b: has ", b.size(0), " rows, a has ", a.size(1), " columns");
  std::vector<int64_t> shape{a.size(0), b.size(1)};
  if (c) {
    check_pair(a, *c, std::nullopt, "a", "c");
    TORCH_CHECK_VALUE(c->sizes() == at::IntArrayRef(shape), "c: shape ", c->sizes(), " is not ",
                      at::IntArrayRef(shape));
  }
  return shape;
}

// ---- the products --------------------------------------------------------------------------------

// A stack of `count` matrices of rows x cols: x broadcast to batch + (rows,
// cols) and its batch dimensions folded into one (a view where the strides
// allow, a copy where not), with a matrix dimension of stride 0 (an expanded
// row or column) copied out. stride: elements between matrices, 0 for one
// matrix shared by the whole stack.
struct Stack {
  Tensor matrices;  // (count, rows, cols)
  int64_t stride = 0;
};

Stack stack_of(const Tensor& x, at::IntArrayRef batch, int64_t count) {
  std::vector<int64_t> shape(batch.begin(), batch.end());
  shape.push_back(x.size(-2));
  shape.push_back(x.size(-1));
  Tensor s = x.expand(shape).reshape({count, x.size(-2), x.size(-1)});
  if ((s.stride(1) == 0 && s.size(1) > 1) || (s.stride(2) == 0 && s.size(2) > 1)) s = s.contiguous();
  return {s, count > 1 ? s.stride(0) : 0};
}

// The layout of x's last two dimensions. A dimension of one index has no
// stride that matters; it gets the one a dense matrix would have, so that the
// kernels see a plain row- or column-major matrix.
MatrixLayout layout_of(const Tensor& x) {
  const int64_t rows = x.size(-2), cols = x.size(-1);
  int64_t rs = x.stride(-2), cs = x.stride(-1);
  if (rows == 1) rs = cs == 1 ? std::max<int64_t>(cols, 1) : 1;
  if (cols == 1) cs = rs == 1 ? std::max<int64_t>(rows, 1) : 1;
  return {Axis::strided(rows, rs), Axis::strided(cols, cs)};
}

template <class T>
MatrixView<T> view_of(const Tensor& x) {
  return {static_cast<T*>(x.data_ptr()), layout_of(x), x.is_cuda() ? Memory::device : Memory::paged};
}

GemmOptions options_of(const Tensor& a, PrecisionArg precision) {
  GemmOptions o;
  o.impl = a.is_cuda() ? "gpu" : "cpu";
  if (precision) o.precision = parse_precision(text_of(*precision));
#if PARRAY_TORCH_CUDA
  if (a.is_cuda()) o.stream = c10::cuda::getCurrentCUDAStream(a.get_device()).stream();
#endif
  return o;
}

// c (count, m, n) = alpha a b + beta c over the stacks, in float or double.
template <class T>
void run_float(const Stack& a, const Stack& b, const Stack& c, double alpha, double beta, const GemmOptions& o) {
  const auto first = [](const Tensor& s) { return s.select(0, 0); };
  const int64_t count = c.matrices.size(0);
  if (count == 1) {
    gemm<T>(T(alpha), view_of<const T>(first(a.matrices)), view_of<const T>(first(b.matrices)), T(beta),
            view_of<T>(first(c.matrices)), o);
    return;
  }
  gemm_batched<T>(count, T(alpha), view_of<const T>(first(a.matrices)), view_of<const T>(first(b.matrices)), T(beta),
                  view_of<T>(first(c.matrices)), BatchStrides{a.stride, b.stride, c.stride}, o);
}

#if PARRAY_TORCH_CUDA
// How a 16-bit operand is stored: transposed (column-major) or not, and its
// leading dimension; ValueError for one whose rows and columns are both strided.
struct Storage16 {
  bool transposed = false;
  int64_t ld = 0;
};

Storage16 storage16_of(const char* name, const Tensor& m) {
  const int64_t rows = m.size(-2), cols = m.size(-1), rs = m.stride(-2), cs = m.stride(-1);
  if (cols <= 1 || cs == 1) {
    const int64_t ld = rows <= 1 ? std::max<int64_t>(cols, 1) : rs;
    TORCH_CHECK_VALUE(ld >= cols, name, ": rows overlap in memory (row stride ", rs, ")");
    return {false, ld};
  }
  if (rows <= 1 || rs == 1) {
    const int64_t ld = cols <= 1 ? std::max<int64_t>(rows, 1) : cs;
    TORCH_CHECK_VALUE(ld >= rows, name, ": columns overlap in memory (column stride ", cs, ")");
    return {true, ld};
  }
  TORCH_CHECK_VALUE(false, name, ": neither its rows nor its columns are contiguous (strides ", rs, ", ", cs,
                    "); pass a contiguous tensor or its transpose");
  return {};
}

void run_half(const Stack& a, const Stack& b, const Stack& c, double alpha, double beta, GpuStream stream) {
  const Storage16 sa = storage16_of("a", a.matrices), sb = storage16_of("b", b.matrices);
  Gemm16Args g;
  g.type = a.matrices.scalar_type() == at::kBFloat16 ? Type16::bf16 : Type16::fp16;
  g.trans_a = sa.transposed ? Trans::yes : Trans::no;
  g.trans_b = sb.transposed ? Trans::yes : Trans::no;
  g.m = c.matrices.size(1), g.n = c.matrices.size(2), g.k = a.matrices.size(2);
  g.alpha = float(alpha), g.beta = float(beta);
  g.a = a.matrices.data_ptr(), g.lda = sa.ld, g.b = b.matrices.data_ptr(), g.ldb = sb.ld;
  g.c = c.matrices.data_ptr(), g.ldc = c.matrices.stride(1);
  g.batch = c.matrices.size(0), g.stride_a = a.stride, g.stride_b = b.stride, g.stride_c = c.stride;
  g.stream = stream;
  gemm16(g, "gpu");
}
#endif

// out (batch..., m, n), contiguous = alpha a b + beta out, a and b broadcast
// over batch; the work on the caller's current stream of a's device.
void product(const Tensor& a, const Tensor& b, const Tensor& out, at::IntArrayRef batch, double alpha, double beta,
             PrecisionArg precision) {
  const int64_t count = c10::multiply_integers(batch);
  const Stack sa = stack_of(a, batch, count), sb = stack_of(b, batch, count);
  const Stack sc{out.view({count, out.size(-2), out.size(-1)}), count > 1 ? out.size(-2) * out.size(-1) : 0};
#if PARRAY_TORCH_CUDA
  std::optional<c10::cuda::CUDAGuard> guard;
  if (a.is_cuda()) guard.emplace(a.device());
#endif
  const GemmOptions options = options_of(a, precision);
  switch (a.scalar_type()) {
    case at::kFloat: return run_float<float>(sa, sb, sc, alpha, beta, options);
    case at::kDouble: return run_float<double>(sa, sb, sc, alpha, beta, options);
#if PARRAY_TORCH_CUDA
    case at::kBFloat16:
    case at::kHalf: return run_half(sa, sb, sc, alpha, beta, options.stream);
#endif
    default: TORCH_CHECK_TYPE(false, "a: dtype ", dtype_name(a.scalar_type()), " has no kernel in this build");
  }
}

// ---- kernels: CPU and CUDA alike -------------------------------------------------------------------

Tensor matmul_kernel(const Tensor& a, const Tensor& b, PrecisionArg precision) {
  check_pair(a, b, precision);
  Tensor out = at::empty(matmul_shape(a, b), a.options());
  if (out.numel() == 0 || a.size(-1) == 0) return out.zero_();
  // A vector is the row (a) or the column (b) matrix made of it.
  const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  const Tensor out2 = a.dim() == 1 && b.dim() == 1 ? out.view({1, 1})
                      : a.dim() == 1               ? out.unsqueeze(-2)
                      : b.dim() == 1               ? out.unsqueeze(-1)
                                                   : out;
  product(a2, b2, out2, out2.sizes().slice(0, out2.dim() - 2), 1.0, 0.0, precision);
  return out;
}

Tensor gemm_kernel(const Tensor& a, const Tensor& b, const std::optional<Tensor>& c, double alpha, double beta,
                   PrecisionArg precision) {
  check_pair(a, b, precision);
  const std::vector<int64_t> shape = gemm_shape(a, b, c);
  const bool scaled = c && beta != 0;
  Tensor out = scaled ? c->clone(at::MemoryFormat::Contiguous) : at::empty(shape, a.options());
  if (out.numel() == 0) return out;
  if (a.size(1) == 0) return scaled ? out.mul_(beta) : out.zero_();
  product(a, b, out, {}, alpha, scaled ? beta : 0.0, precision);
  return out;
}

// ---- autograd ------------------------------------------------------------------------------------

using MatmulSignature = Tensor(const Tensor&, const Tensor&, PrecisionArg);
using GemmSignature = Tensor(const Tensor&, const Tensor&, const std::optional<Tensor>&, double, double, PrecisionArg);

const c10::TypedOperatorHandle<MatmulSignature>& matmul_op() {
  static const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("parray::matmul", "").typed<MatmulSignature>();
  return op;
}

const c10::TypedOperatorHandle<GemmSignature>& gemm_op() {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("parray::gemm", "").typed<GemmSignature>();
  return op;
}

c10::IValue saved_precision(PrecisionArg precision) {
  return precision ? c10::IValue(text_of(*precision)) : c10::IValue();
}

PrecisionArg precision_of(AutogradContext* ctx) {
  const c10::IValue& p = ctx->saved_data["precision"];
  return p.isNone() ? PrecisionArg() : PrecisionArg(p.toStringRef());
}

// dA = dC B^T and dB = A^T dC through the same operator (so at the forward's
// precision), summed over the batch dimensions an operand was broadcast
// along; a vector operand as the row (a) or column (b) matrix made of it.
// Sizes are symbolic where torch.compile traces with dynamic shapes.
class MatmulFunction : public torch::autograd::Function<MatmulFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, PrecisionArg precision) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["precision"] = saved_precision(precision);
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return matmul_op().call(a, b, precision);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor &a = saved[0], &b = saved[1], &grad = grads[0];
    const PrecisionArg precision = precision_of(ctx);
    const Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a, b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    const Tensor g2 = a.dim() == 1 && b.dim() == 1 ? grad.reshape({1, 1})
                      : a.dim() == 1               ? grad.unsqueeze(-2)
                      : b.dim() == 1               ? grad.unsqueeze(-1)
                                                   : grad;
    Tensor grad_a, grad_b;
    if (ctx->needs_input_grad(0))
      grad_a = matmul_op()
                   .call(g2, b2.transpose(-1, -2), precision)
                   .sum_to_size_symint(a2.sym_sizes())
                   .reshape_symint(a.sym_sizes());
    if (ctx->needs_input_grad(1))
      grad_b = matmul_op()
                   .call(a2.transpose(-1, -2), g2, precision)
                   .sum_to_size_symint(b2.sym_sizes())
                   .reshape_symint(b.sym_sizes());
    return {grad_a, grad_b, Tensor()};
  }
};

class GemmFunction : public torch::autograd::Function<GemmFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b, const std::optional<Tensor>& c,
                        double alpha, double beta, PrecisionArg precision) {
    ctx->save_for_backward({a, b});
    ctx->saved_data["precision"] = saved_precision(precision);
    ctx->saved_data["alpha"] = alpha;
    ctx->saved_data["beta"] = beta;
    ctx->saved_data["has_c"] = c.has_value() && c->defined();
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    return gemm_op().call(a, b, c, alpha, beta, precision);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor &a = saved[0], &b = saved[1], &grad = grads[0];
    const PrecisionArg precision = precision_of(ctx);
    const double alpha = ctx->saved_data["alpha"].toDouble(), beta = ctx->saved_data["beta"].toDouble();
    Tensor grad_a, grad_b, grad_c;
    if (ctx->needs_input_grad(0)) grad_a = gemm_op().call(grad, b.t(), std::nullopt, alpha, 0.0, precision);
    if (ctx->needs_input_grad(1)) grad_b = gemm_op().call(a.t(), grad, std::nullopt, alpha, 0.0, precision);
    // needs_input_grad counts tensor inputs only: c, where given, is the third.
    if (ctx->saved_data["has_c"].toBool() && ctx->needs_input_grad(2)) grad_c = grad * beta;
    return {grad_a, grad_b, grad_c, Tensor(), Tensor(), Tensor()};
  }
};

bool wants_grad(std::initializer_list<const Tensor*> inputs) {
  if (!at::GradMode::is_enabled()) return false;
  return std::any_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return t->defined() && t->requires_grad(); });
}

// A call that needs no gradient goes straight to the kernel below autograd,
// without a graph node.
Tensor matmul_autograd(const Tensor& a, const Tensor& b, PrecisionArg precision) {
  if (wants_grad({&a, &b})) return MatmulFunction::apply(a, b, precision);
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return matmul_op().call(a, b, precision);
}

Tensor gemm_autograd(const Tensor& a, const Tensor& b, const std::optional<Tensor>& c, double alpha, double beta,
                     PrecisionArg precision) {
  const Tensor none;
  if (wants_grad({&a, &b, c ? &*c : &none})) return GemmFunction::apply(a, b, c, alpha, beta, precision);
  at::AutoDispatchBelowADInplaceOrView below_autograd;
  return gemm_op().call(a, b, c, alpha, beta, precision);
}

}  // namespace

}  // namespace parray::torch_ops

namespace ops = parray::torch_ops;

TORCH_LIBRARY(parray, m) {
  m.def("matmul(Tensor a, Tensor b, str? precision=None) -> Tensor");
  m.def("gemm(Tensor a, Tensor b, Tensor? c=None, float alpha=1.0, float beta=0.0, str? precision=None) -> Tensor");
}

TORCH_LIBRARY_IMPL(parray, CPU, m) {
  m.impl("matmul", &ops::matmul_kernel);
  m.impl("gemm", &ops::gemm_kernel);
}

#if PARRAY_TORCH_CUDA
TORCH_LIBRARY_IMPL(parray, CUDA, m) {
  m.impl("matmul", &ops::matmul_kernel);
  m.impl("gemm", &ops::gemm_kernel);
}
#endif

TORCH_LIBRARY_IMPL(parray, Autograd, m) {
  m.impl("matmul", &ops::matmul_autograd);
  m.impl("gemm", &ops::gemm_autograd);
}
