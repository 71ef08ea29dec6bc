"""parray inside PyTorch programs: parray's GEMM and exact k-NN as PyTorch operators.

The operators are registered with ``torch.library`` under the namespace ``parray``:

    torch.ops.parray.matmul(a, b, precision=None)       torch.matmul's semantics, stacks included
    torch.ops.parray.gemm(a, b, c=None, alpha=1.0, beta=0.0, precision=None)   alpha a b + beta c
    torch.ops.parray.knn(base, queries, k, metric="l2")  (distances, indices), exact

Each has a fake (meta) kernel, so tracing, shape propagation and ``torch.compile(fullgraph=True)`` see
through it; matmul and gemm have gradients computed by the same GEMM at the forward's precision. Strided
inputs are read where they lie; the work is ordered on the caller's current CUDA stream. float32 and
float64 run on the CPU and the GPU; bfloat16 and float16 on the GPU (parray.matmul16).

A model switches to parray with ``use_parray(model, precision)`` (its ``nn.Linear`` layers become
``Linear``, sharing their parameters), or for a block of code with ``matmul_on_parray(precision)``, which
routes ``torch.matmul``, ``@``, ``torch.mm``, ``torch.bmm`` and ``F.linear`` on float tensors to parray.

matmul and gemm are C++ operators (``_parray_torch``, python/src/torch/operators.cpp) where that library was built
beside the module against this PyTorch; elsewhere the same operators are defined here in Python, slower per call.
``OPERATORS`` says which ("C++" or "Python"), ``OPERATORS_WHY`` why not C++. Needs PyTorch 2.4 or later
(``torch.library.custom_op``). Reference: docs/python.md.
"""
import os
import warnings
from typing import Optional, Tuple

import torch
import torch.nn.functional as F

import parray as _parray

if not hasattr(torch.library, "custom_op") or not hasattr(torch.library, "register_fake"):
    raise ImportError(f"parray.torch needs PyTorch 2.4 or later (torch.library.custom_op); this is {torch.__version__}")

__all__ = ["matmul", "gemm", "knn", "linear", "Linear", "use_parray", "matmul_on_parray", "OPERATORS"]

_FLOATS = (torch.float32, torch.float64)
_HALVES = (torch.bfloat16, torch.float16)
_PRECISIONS = (None, "fp64", "fp32", "tf32", "bf16", "fp16")
_HALF_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}

Tensor = torch.Tensor


# ---- checks, shared by the real and the fake kernels -------------------------------------------


def _check_tensor(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: a {type(x).__name__}, not a torch.Tensor")
    if x.dtype not in _FLOATS + _HALVES:
        raise TypeError(f"{name}: dtype {x.dtype} is not float32, float64, bfloat16 or float16")
    if x.device.type not in ("cpu", "cuda", "meta"):
        raise ValueError(f"{name}: is on {x.device}; parray runs on the CPU and on CUDA GPUs")
    if x.dtype in _HALVES and x.device.type == "cpu":
        raise TypeError(f"{name}: {x.dtype} runs on CUDA tensors only (the tensor cores); this one is on the CPU")


def _check_pair(a, b, precision, names=("a", "b")):
    _check_tensor(names[0], a)
    _check_tensor(names[1], b)
    if b.dtype != a.dtype:
        raise TypeError(f"{names[1]}: dtype {b.dtype} differs from {names[0]}'s {a.dtype}")
    if b.device != a.device:
        raise ValueError(f"{names[1]}: is on {b.device}, {names[0]} on {a.device}")
    if precision not in _PRECISIONS:
        raise ValueError(f"precision: {precision!r} is not one of {', '.join(str(p) for p in _PRECISIONS)}")
    if a.dtype in _HALVES and precision not in (None, _HALF_NAMES[a.dtype]):
        raise ValueError(f"precision: {precision!r} for {a.dtype} inputs; they are {_HALF_NAMES[a.dtype]} already")


def _matmul_shape(a, b):
    """torch.matmul's result shape for a and b, or ValueError naming the operand that does not fit."""
    if a.dim() == 0 or b.dim() == 0:
        raise ValueError(f"{'a' if a.dim() == 0 else 'b'}: a 0-dimensional tensor; matmul needs at least one dimension")
    k_b = b.shape[0] if b.dim() == 1 else b.shape[-2]
    if a.shape[-1] != k_b:
        raise ValueError(f"b: has {k_b} rows, a has {a.shape[-1]} columns")
    try:
        batch = torch.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise ValueError(f"a, b: batch dimensions {tuple(a.shape[:-2])} and {tuple(b.shape[:-2])} do not broadcast") \
            from None
    return tuple(batch) + ((a.shape[-2],) if a.dim() > 1 else ()) + ((b.shape[-1],) if b.dim() > 1 else ())


def _gemm_shape(a, b, c):
    for name, x in (("a", a), ("b", b)):
        if x.dim() != 2:
            raise ValueError(f"{name}: has {x.dim()} dimensions; gemm takes matrices (see matmul for stacks)")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"b: has {b.shape[0]} rows, a has {a.shape[1]} columns")
    shape = (a.shape[0], b.shape[1])
    if c is not None:
        _check_pair(a, c, None, ("a", "c"))
        if tuple(c.shape) != shape:
            raise ValueError(f"c: shape {tuple(c.shape)} is not {shape}")
    return shape


def _plain(x):
    """x as the library reads it: without autograd's flag (DLPack does not export a tensor that requires grad)
    and with no matrix dimension of stride 0 (an expanded row or column is copied out; batch dimensions of
    stride 0 are read in place as broadcasts)."""
    if x.requires_grad:
        x = x.detach()
    if x.dim() >= 2 and any(x.stride(d) == 0 and x.shape[d] > 1 for d in (-1, -2)):
        x = x.contiguous()
    return x


# ---- parray::matmul ------------------------------------------------------------------------------


def _matmul_python(a: Tensor, b: Tensor, precision: Optional[str] = None) -> Tensor:
    _check_pair(a, b, precision)
    out = a.new_empty(_matmul_shape(a, b))
    if out.numel() == 0 or a.shape[-1] == 0:
        return out.zero_()
    a, b = _plain(a), _plain(b)
    a2 = a[None, :] if a.dim() == 1 else a
    b2 = b[:, None] if b.dim() == 1 else b
    out2 = out.reshape(1, 1) if a.dim() == 1 and b.dim() == 1 else \
        out.unsqueeze(-2) if a.dim() == 1 else out.unsqueeze(-1) if b.dim() == 1 else out
    if a.dtype in _HALVES:
        _parray.matmul16(a2, b2, out2)
    else:
        _parray.matmul(a2, b2, out=out2, precision=precision)
    return out


def _matmul_fake(a, b, precision=None):
    _check_pair(a, b, precision)
    return a.new_empty(_matmul_shape(a, b))


def _matmul_setup(ctx, inputs, output):
    a, b, precision = inputs
    ctx.save_for_backward(a, b)
    ctx.precision = precision


def _matmul_backward(ctx, grad):
    """dA = dC B^T and dB = A^T dC through the same operator, summed over the batch dimensions an operand was
    broadcast along; 1-D operands as the row (a) or column (b) matmul made of them."""
    a, b = ctx.saved_tensors
    a2 = a[None, :] if a.dim() == 1 else a
    b2 = b[:, None] if b.dim() == 1 else b
    g2 = grad.reshape(1, 1) if a.dim() == 1 and b.dim() == 1 else \
        grad.unsqueeze(-2) if a.dim() == 1 else grad.unsqueeze(-1) if b.dim() == 1 else grad
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = _matmul_op(g2, b2.transpose(-1, -2), ctx.precision).sum_to_size(a2.shape).reshape(a.shape)
    if ctx.needs_input_grad[1]:
        grad_b = _matmul_op(a2.transpose(-1, -2), g2, ctx.precision).sum_to_size(b2.shape).reshape(b.shape)
    return grad_a, grad_b, None



# ---- parray::gemm --------------------------------------------------------------------------------


def _gemm_python(a: Tensor, b: Tensor, c: Optional[Tensor] = None, alpha: float = 1.0, beta: float = 0.0,
             precision: Optional[str] = None) -> Tensor:
    _check_pair(a, b, precision)
    shape = _gemm_shape(a, b, c)
    scaled = c is not None and beta != 0
    out = c.detach().clone(memory_format=torch.contiguous_format) if scaled else a.new_empty(shape)
    if out.numel() == 0:
        return out
    if a.shape[1] == 0:
        return out.mul_(beta) if scaled else out.zero_()
    a, b = _plain(a), _plain(b)
    if a.dtype in _HALVES:
        _parray.matmul16(a, b, out, alpha=alpha, beta=beta if scaled else 0.0)
    else:
        _parray.gemm(a, b, out, alpha=alpha, beta=beta if scaled else 0.0, precision=precision)
    return out


def _gemm_fake(a, b, c=None, alpha=1.0, beta=0.0, precision=None):
    _check_pair(a, b, precision)
    return a.new_empty(_gemm_shape(a, b, c))


def _gemm_setup(ctx, inputs, output):
    a, b, c, alpha, beta, precision = inputs
    ctx.save_for_backward(a, b)
    ctx.alpha, ctx.beta, ctx.precision, ctx.has_c = alpha, beta, precision, c is not None


def _gemm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = grad_b = grad_c = None
    if ctx.needs_input_grad[0]:
        grad_a = _gemm_op(grad, b.t(), None, ctx.alpha, 0.0, ctx.precision)
    if ctx.needs_input_grad[1]:
        grad_b = _gemm_op(a.t(), grad, None, ctx.alpha, 0.0, ctx.precision)
    if ctx.has_c and ctx.needs_input_grad[2]:
        grad_c = grad * ctx.beta
    return grad_a, grad_b, grad_c, None, None, None


# ---- registration: the C++ operators where built, else the Python definitions above ------------------


def _load_cpp_operators():
    """Loads _parray_torch from beside the module; None, or why it was not loaded."""
    path = os.path.join(os.path.dirname(os.path.abspath(_parray.__file__)), "_parray_torch.so")
    if not os.path.exists(path):
        return "_parray_torch.so was not built (PyTorch's C++ headers were not found when parray was built)"
    try:
        torch.ops.load_library(path)
    except (OSError, RuntimeError) as e:  # built against another PyTorch
        warnings.warn(f"parray.torch: {path} does not load ({e}); using the slower Python-defined operators")
        return f"{path} does not load: {e}"
    return None


OPERATORS_WHY = _load_cpp_operators()
OPERATORS = "Python" if OPERATORS_WHY else "C++"
if OPERATORS == "C++":
    _matmul_op = torch.ops.parray.matmul.default
    _gemm_op = torch.ops.parray.gemm.default
    torch.library.register_fake("parray::matmul")(_matmul_fake)
    torch.library.register_fake("parray::gemm")(_gemm_fake)
else:
    _matmul_op = torch.library.custom_op("parray::matmul", _matmul_python, mutates_args=())
    _matmul_op.register_fake(_matmul_fake)
    _matmul_op.register_autograd(_matmul_backward, setup_context=_matmul_setup)
    _gemm_op = torch.library.custom_op("parray::gemm", _gemm_python, mutates_args=())
    _gemm_op.register_fake(_gemm_fake)
    _gemm_op.register_autograd(_gemm_backward, setup_context=_gemm_setup)


def matmul(a, b, precision=None):
    """torch.matmul(a, b) on parray's GEMM (torch.ops.parray.matmul): differentiable, traceable, compilable.
    precision: the least accuracy of the products (None: the dtype's own; "tf32", "bf16", "fp16" allow less)."""
    return _matmul_op(a, b, precision)


def gemm(a, b, c=None, alpha=1.0, beta=0.0, precision=None):
    """alpha * a @ b + beta * c for matrices (torch.ops.parray.gemm), a new tensor; c is not changed."""
    return _gemm_op(a, b, c, alpha, beta, precision)


# ---- parray::knn ---------------------------------------------------------------------------------


def _knn_check(base, queries, k, metric):
    for name, x in (("base", base), ("queries", queries)):
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}: a {type(x).__name__}, not a torch.Tensor")
        if x.dim() != 2:
            raise ValueError(f"{name}: has {x.dim()} dimensions; vectors come as rows of a matrix")
    if queries.device != base.device:
        raise ValueError(f"queries: is on {queries.device}, base on {base.device}")
    if queries.dtype != base.dtype:
        raise TypeError(f"queries: dtype {queries.dtype} differs from base's {base.dtype}")
    allowed = (torch.float32,) if base.device.type == "cuda" else _FLOATS
    if base.dtype not in allowed:
        raise TypeError(f"base: dtype {base.dtype} on {base.device.type} is not {' or '.join(map(str, allowed))}")
    if queries.shape[1] != base.shape[1]:
        raise ValueError(f"queries: {queries.shape[1]} dimensions, base vectors have {base.shape[1]}")
    if k < 1:
        raise ValueError(f"k: {k} is not a positive integer")
    if metric not in ("l2", "ip"):
        raise ValueError(f"metric: {metric!r} is not 'l2' or 'ip'")


@torch.library.custom_op("parray::knn", mutates_args=())
def _knn_op(base: Tensor, queries: Tensor, k: int, metric: str = "l2") -> Tuple[Tensor, Tensor]:
    _knn_check(base, queries, k, metric)
    base, queries = base.detach(), queries.detach()
    if base.device.type == "cuda":
        return _parray.knn(base, queries, k, metric)
    distances, indices = _parray.knn(base.numpy(), queries.numpy(), k, metric)
    return torch.from_numpy(distances), torch.from_numpy(indices)


@_knn_op.register_fake
def _knn_fake(base, queries, k, metric="l2"):
    _knn_check(base, queries, k, metric)
    rows = queries.shape[0]
    return queries.new_empty((rows, k)), queries.new_empty((rows, k), dtype=torch.int64)


def knn(base, queries, k, metric="l2"):
    """The k nearest rows of base for each row of queries, exactly (torch.ops.parray.knn): (distances, indices)
    as parray.knn returns them, as tensors on the inputs' device. Not differentiable."""
    return _knn_op(base, queries, int(k), metric)


# ---- layers and switches ---------------------------------------------------------------------------


def linear(x, weight, bias=None, precision=None):
    """F.linear(x, weight, bias) on parray: x (..., in) @ weight^T, the leading dimensions folded into one
    product's rows (a view where x allows it), plus bias."""
    rows = x.reshape(-1, x.shape[-1]) if x.dim() != 2 else x
    y = _matmul_op(rows, weight.t(), precision)
    if bias is not None:
        y = y + bias
    return y.reshape(*x.shape[:-1], weight.shape[0]) if x.dim() != 2 else y


class Linear(torch.nn.Linear):
    """nn.Linear whose product runs on parray at `precision` (None: the dtype's own, FP32-accurate for
    float32). Parameters, initialisation and state_dict are nn.Linear's."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, precision=None):
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self.precision = precision

    @classmethod
    def from_linear(cls, layer, precision=None):
        """A parray Linear sharing layer's parameters (no copy)."""
        new = cls(layer.in_features, layer.out_features, bias=layer.bias is not None, device="meta",
                  precision=precision)
        new.weight = layer.weight
        new.bias = layer.bias
        new.train(layer.training)
        return new

    def forward(self, x):
        return linear(x, self.weight, self.bias, self.precision)

    def extra_repr(self):
        return super().extra_repr() + f", precision={self.precision!r}"


def use_parray(module, precision=None):
    """Replaces every nn.Linear inside module (and module itself, if one) with a parray Linear sharing its
    parameters; returns the module. A Linear already on parray takes the new precision."""
    if isinstance(module, Linear):
        module.precision = precision
        return module
    if type(module) is torch.nn.Linear:
        return Linear.from_linear(module, precision)
    for name, child in module.named_children():
        setattr(module, name, use_parray(child, precision))
    return module


_MATMULS = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm, torch.bmm,
            torch.Tensor.bmm}


def _routable(*tensors):
    first = tensors[0]
    return all(isinstance(t, Tensor) for t in tensors) and all(
        t.dtype == first.dtype and t.device == first.device for t in tensors) and (
        first.dtype in _FLOATS or (first.dtype in _HALVES and first.device.type == "cuda")) and \
        first.device.type in ("cpu", "cuda")


class matmul_on_parray(torch.overrides.TorchFunctionMode):
    """Within the block, torch.matmul, @, torch.mm, torch.bmm and F.linear on float tensors run on parray at
    `precision`; any other call, or these on other dtypes, devices or with out=, is PyTorch's own."""

    def __init__(self, precision=None):
        super().__init__()
        if precision not in _PRECISIONS:
            raise ValueError(f"precision: {precision!r} is not one of {', '.join(str(p) for p in _PRECISIONS)}")
        self.precision = precision

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MATMULS and len(args) == 2 and not kwargs and _routable(*args):
            precision = self.precision if args[0].dtype in _FLOATS else None
            return _matmul_op(args[0], args[1], precision)
        if func is F.linear and len(args) >= 2 and _routable(args[0], args[1]):
            bias = args[2] if len(args) > 2 else kwargs.get("bias")
            precision = self.precision if args[0].dtype in _FLOATS else None
            return linear(args[0], args[1], bias, precision)
        return func(*args, **kwargs)
