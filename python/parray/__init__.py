"""parray from Python: GEMM and exact k-NN on NumPy, PyTorch and CuPy arrays, without copies.

Host arrays (NumPy, anything with the buffer protocol or ``__array_interface__``)
run on the CPU; arrays that live on a GPU (PyTorch and CuPy CUDA tensors) arrive
through DLPack and run on that GPU, ordered on the caller's current stream.
Strided and transposed arrays are passed to the library as layouts, never
copied. Reference: docs/python.md.
"""

import numbers
import sys

import numpy as np

from . import _parray
from ._parray import (Layout, View, impls, missing, read_bvecs, read_fvecs, read_ivecs, view, write_bvecs,
                      write_fvecs, write_ivecs)

__version__ = "0.1.0"
__all__ = ["gemm", "matmul", "matmul16", "matmul8", "knn", "FlatIndex", "Layout", "View", "view", "impls", "missing", "read_fvecs",
           "read_ivecs", "read_bvecs", "write_fvecs", "write_ivecs", "write_bvecs", "built_with_cuda"]

built_with_cuda = _parray.built_with_cuda

from .fp8 import matmul8  # noqa: E402  (float8 PyTorch tensors)

_DLPACK_CPU, _DLPACK_CUDA = 1, 2
_DLPACK_LEGACY_DEFAULT_STREAM = 1


def gemm(a, b, out=None, alpha=1.0, beta=0.0, precision=None, impl=None, threads=0):
    """out = alpha * a @ b + beta * out, returned.

    a (M x K), b (K x N) and out (M x N) are float32 or float64 matrices of one
    dtype, all in host memory or all on one GPU, with any strides. out=None
    allocates the result in a's library (NumPy, PyTorch, CuPy); beta must then
    be 0. precision: the least accuracy of the products ("fp64", "fp32",
    "tf32", "fp16", "bf16"; None: the dtype's own). impl: a name from impls()
    (None: the device's default). threads: CPU threads (0: all).
    """
    if _is_host(a) and _is_host(b) and (out is None or _is_host(out)):
        return _parray.gemm_host(a, b, out, alpha, beta, precision, impl, threads)
    return _gemm_dlpack(a, b, out, alpha, beta, precision, impl, threads)


def matmul(a, b, out=None, precision=None, impl=None):
    """a @ b as numpy.matmul computes it: 1-D operands promoted to a row (a) or a column (b)
    and the added dimension dropped from the result; beyond 2 dimensions, stacks of matrices
    whose leading (batch) dimensions broadcast as NumPy's do, one batched call of the library
    on views of the operands (no copies): small matrices are spread over the CPU threads."""
    a_ndim, b_ndim = _matmul_ndim(a, "a"), _matmul_ndim(b, "b")
    if a_ndim > 2 or b_ndim > 2:
        return _matmul_stack(a, b, out, precision, impl)
    a2 = a[None, :] if a_ndim == 1 else a
    b2 = b[:, None] if b_ndim == 1 else b
    out2 = out
    if out is not None:
        out2 = out[None, :] if a_ndim == 1 and b_ndim == 2 else out[:, None] if b_ndim == 1 and a_ndim == 2 else out
        if a_ndim == 1 and b_ndim == 1:
            raise ValueError("out: the product of two vectors is a scalar; call without out")
    result = gemm(a2, b2, out2, precision=precision, impl=impl)
    if out is not None:
        return out
    if a_ndim == 1 and b_ndim == 1:
        return result[0, 0]
    return result[0] if a_ndim == 1 else result[:, 0] if b_ndim == 1 else result


def matmul16(a, b, out=None, alpha=1.0, beta=0.0, out_dtype=None, impl="gpu"):
    """out = alpha * a @ b + beta * out for bfloat16 or float16 CUDA matrices (PyTorch; CuPy for float16), returned.

    a (M x K) and b (K x N) are of one 16-bit dtype on one GPU, each row-major or column-major (a transposed
    tensor is used where it lies); out (M x N) is row-major, of their dtype or float32, and is allocated in a's
    library when None (out_dtype: "float32" for an FP32 result; beta must then be 0). The products accumulate in
    FP32 on the tensor cores (parray::gemm16, ladder step 16; impl="cublas" runs cublasGemmEx instead).
    Beyond 2 dimensions, stacks of matrices whose batch dimensions broadcast as NumPy's do, one strided
    batch of the library's per run of batch dimensions that collapse into one stride.
    """
    for name, x in (("a", a), ("b", b), ("out", out)):
        if x is not None and (_is_host(x) or _placement(x)[0] != _DLPACK_CUDA):
            raise TypeError(f"{name}: a {type(x).__name__} in {_placement_text(x)}; matmul16 takes CUDA tensors")
    if len(getattr(a, "shape", ())) > 2 or len(getattr(b, "shape", ())) > 2:
        return _matmul16_stack(a, b, out, alpha, beta, out_dtype, impl)
    if _ndim(a, "a") != 2 or _ndim(b, "b") != 2:
        raise ValueError(f"{'a' if len(a.shape) != 2 else 'b'}: a matrix has 2 dimensions")
    _check_same_placement("a", a, [("b", b), ("out", out)])
    if out is None:
        if beta != 0:
            raise ValueError("beta: is not 0 but no out was given to scale")
        out = _empty(a, (int(a.shape[0]), int(b.shape[1])), out_dtype)
    (ca, cb, cout), stream = _capsules([("a", a), ("b", b), ("out", out)], _DLPACK_CUDA)
    _parray.gemm16_dlpack(ca, cb, cout, alpha, beta, impl, stream)
    return out


def _matmul16_stack(a, b, out, alpha, beta, out_dtype, impl):
    for name, x in (("a", a), ("b", b)):
        if len(x.shape) < 2:
            raise ValueError(f"{name}: has {len(x.shape)} dimension; a stack of matrices has at least 2")
    _check_same_placement("a", a, [("b", b), ("out", out)])
    a_batch, b_batch, batch, m, n = _stack_dims(a, b)
    shape = batch + (m, n)
    if out is None:
        if beta != 0:
            raise ValueError("beta: is not 0 but no out was given to scale")
        out = _empty(a, shape, out_dtype)
    elif tuple(int(x) for x in out.shape) != shape:
        raise ValueError(f"out: shape {tuple(out.shape)} is not {shape}")
    if 0 in batch or m == 0 or n == 0:
        return out
    strides = [_batch_strides(x, x_batch, batch) for x, x_batch in ((a, a_batch), (b, b_batch), (out, batch))]
    for name, s in zip(("a", "b", "out"), strides):
        if s is None or min(s, default=0) < 0:
            raise ValueError(f"{name}: batch strides {s} are not whole non-negative element counts")
    for count, first_a, first_b, first_out, steps in _strided_runs(batch, a, a_batch, b, b_batch, out, strides):
        (ca, cb, cout), stream = _capsules([("a", first_a), ("b", first_b), ("out", first_out)], _DLPACK_CUDA)
        _parray.gemm16_dlpack(ca, cb, cout, alpha, beta, impl, stream, count, *steps)
    return out


def _matmul_ndim(x, name):
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError(f"{name}: a {type(x).__name__} is not an array")
    if len(shape) == 0:
        raise ValueError(f"{name}: a 0-dimensional array; matmul needs at least one dimension")
    return len(shape)


def _stack_dims(a, b):
    """Stacks a and b (matrices in their last two dimensions): their batch dimensions, those broadcast as
    NumPy's do, M and N; ValueError naming what does not fit."""
    a_batch, b_batch = tuple(int(n) for n in a.shape[:-2]), tuple(int(n) for n in b.shape[:-2])
    try:
        batch = np.broadcast_shapes(a_batch, b_batch)
    except ValueError:
        raise ValueError(f"a, b: batch dimensions {a_batch} and {b_batch} do not broadcast") from None
    (m, k), (kb, n) = (int(x) for x in a.shape[-2:]), (int(x) for x in b.shape[-2:])
    if kb != k:
        raise ValueError(f"b: has {kb} rows, a has {k} columns")
    return a_batch, b_batch, batch, m, n


def _matmul_stack(a, b, out, precision, impl):
    """matmul of stacks of matrices: the batch dimensions broadcast as NumPy's do; the stack is one strided
    batch of the library's (parray::gemm_batched) wherever its batch dimensions collapse into one stride per
    operand, a batch call per index of the rest otherwise."""
    if _is_host(a) and _is_host(b):
        a, b = np.asarray(a), np.asarray(b)  # buffer-protocol objects as NumPy views, not copies
    a_vec, b_vec = len(a.shape) == 1, len(b.shape) == 1
    a2 = a[None, :] if a_vec else a
    b2 = b[:, None] if b_vec else b
    a_batch, b_batch, batch, m, n = _stack_dims(a2, b2)
    shape = batch + ((m,) if not a_vec else ()) + ((n,) if not b_vec else ())
    if out is None:
        out = np.empty(shape, dtype=a.dtype) if type(a) is np.ndarray else _empty(a, shape)
    elif tuple(int(x) for x in out.shape) != shape:
        raise ValueError(f"out: shape {tuple(out.shape)} is not {shape}")
    out2 = out[..., None, :] if a_vec else out
    out2 = out2[..., None] if b_vec else out2
    if 0 in batch:
        return out
    strides = [_batch_strides(x, x_batch, batch) for x, x_batch in ((a2, a_batch), (b2, b_batch), (out2, batch))]
    if any(s is None or min(s, default=0) < 0 for s in strides) or _negative_inside(a2, b2, out2):
        for index in np.ndindex(*batch):  # strides the batched call does not take: one product at a time
            gemm(a2[_broadcast_index(index, a_batch)], b2[_broadcast_index(index, b_batch)], out2[index],
                 precision=precision, impl=impl)
        return out
    for count, first_a, first_b, first_out, steps in _strided_runs(batch, a2, a_batch, b2, b_batch, out2, strides):
        _gemm_batched(count, first_a, first_b, first_out, steps, precision, impl)
    return out


def _element_strides(x):
    """x's strides in elements, or None where one is not a whole number of elements."""
    if _library(x) == "torch":
        return tuple(int(s) for s in x.stride())
    itemsize = int(x.dtype.itemsize)
    if any(int(s) % itemsize for s in x.strides):
        return None
    return tuple(int(s) // itemsize for s in x.strides)


def _batch_strides(x, x_batch, batch):
    """The strides (elements) of x's batch dimensions as broadcast to `batch`: 0 where x repeats."""
    own = _element_strides(x)
    if own is None:
        return None
    own = own[:len(x_batch)]
    lead = len(batch) - len(x_batch)
    return [0 if d < lead or x_batch[d - lead] == 1 else own[d - lead] for d in range(len(batch))]


def _negative_inside(*matrices):
    return any(s is None or min(s[-2:]) < 0 for s in (_element_strides(x) for x in matrices))


def _strided_runs(batch, a, a_batch, b, b_batch, out, strides):
    """The stack as strided batches of the library's: (count, first matrix of a, of b, of out, each operand's
    stride in elements) for each index of the batch dimensions that do not collapse into one stride."""
    inner, count = _collapsed_batch(batch, strides)
    outer = tuple(size if d < inner else 1 for d, size in enumerate(batch))
    steps = [s[-1] if s else 0 for s in strides]
    for index in np.ndindex(*outer):
        first = index[:inner] + (0,) * (len(batch) - inner)
        yield count, a[_broadcast_index(first, a_batch)], b[_broadcast_index(first, b_batch)], out[first], steps


def _collapsed_batch(batch, strides):
    """(d, count): the batch dimensions from d on walk one stride per operand (each dimension's stride its
    inner neighbour's times the neighbour's size), count matrices in all."""
    d, count = len(batch) - 1, batch[-1]
    inner = [s[-1] for s in strides]
    while d > 0 and all(s[d - 1] == i * count for s, i in zip(strides, inner)):
        d -= 1
        count *= batch[d]
    return d, count


def _gemm_batched(count, a, b, out, strides, precision, impl):
    """count products a_i b_i into out_i, each operand's next matrix strides[j] elements on."""
    if _is_host(a) and _is_host(b) and _is_host(out):
        _parray.gemm_batched_host(count, a, b, out, *strides, 1.0, 0.0, precision, impl, 0)
        return
    device_type, _ = _check_same_placement("a", a, [("b", b), ("out", out)])
    (ca, cb, cout), stream = _capsules([("a", a), ("b", b), ("out", out)], device_type)
    _parray.gemm_batched_dlpack(count, ca, cb, cout, *strides, 1.0, 0.0, precision, impl, 0,
                                stream or _DLPACK_LEGACY_DEFAULT_STREAM)


def _broadcast_index(index, batch):
    """The index into an operand of batch shape `batch` that broadcasts to `index` of the full batch."""
    index = index[len(index) - len(batch):]
    return tuple(0 if size == 1 else i for i, size in zip(index, batch))


def knn(base, queries, k, metric="l2", threads=0):
    """The k nearest base vectors of each query, exactly: (distances, indices) as FAISS's search returns them.

    base (n x d) and queries (q x d) of one dtype, both in host memory
    (float32 or float64) or both on one GPU (float32). Distances are squared
    L2 distances ascending (metric="l2") or inner products descending
    ("ip"), q x k in the inputs' dtype; indices are int64, ties by index.
    The result equals an FP64 brute force (docs/knn.md).
    """
    if not isinstance(k, numbers.Integral) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k: {k!r} is not a positive integer")
    if _is_host(base) and _is_host(queries):
        base = np.ascontiguousarray(base) if isinstance(base, np.ndarray) else base
        queries = np.ascontiguousarray(queries) if isinstance(queries, np.ndarray) else queries
        return _parray.knn_host(base, queries, int(k), metric, threads)
    return _knn_dlpack(base, queries, int(k), metric)


class FlatIndex:
    """An exact index over a growing base, shaped like FAISS's IndexFlatL2/IP.

    add() copies vectors into the index, in the memory they come from (a GPU
    tensor's base stays on its GPU); search() finds the k nearest of
    queries in the same memory. Indices count vectors in the order added.
    """

    def __init__(self, d, metric="l2"):
        if not isinstance(d, numbers.Integral) or isinstance(d, bool) or d < 1:
            raise ValueError(f"d: {d!r} is not a positive integer")
        if metric not in ("l2", "ip"):
            raise ValueError(f"metric: {metric!r} is not 'l2' or 'ip'")
        self.d, self.metric = int(d), metric
        self._parts, self._base = [], None

    @property
    def ntotal(self):
        return sum(int(p.shape[0]) for p in self._parts)

    def add(self, x):
        if _ndim(x, "x") != 2 or int(x.shape[1]) != self.d:
            raise ValueError(f"x: shape {tuple(x.shape)} is not (n, {self.d})")
        if self._parts and _placement(x) != _placement(self._parts[0]):
            raise ValueError(f"x: is in {_placement_text(x)}, the index in {_placement_text(self._parts[0])}")
        if self._parts and x.dtype != self._parts[0].dtype:
            raise TypeError(f"x: dtype {x.dtype} differs from the index's {self._parts[0].dtype}")
        self._parts.append(_concatenate([x]))
        self._base = None

    def reset(self):
        self._parts, self._base = [], None

    def search(self, queries, k):
        if not self._parts:
            raise ValueError("queries: the index is empty (add vectors first)")
        if self._base is None:
            self._base = self._parts[0] if len(self._parts) == 1 else _concatenate(self._parts)
            self._parts = [self._base]
        return knn(self._base, queries, k, self.metric)

    def __repr__(self):
        return f"parray.FlatIndex(d={self.d}, metric={self.metric!r}, ntotal={self.ntotal})"


# ---- arrays of other libraries, through DLPack -------------------------------------------------


def _is_host(x):
    """Whether x goes the host path: NumPy, views, and anything without __dlpack__."""
    return type(x) is np.ndarray or isinstance(x, View) or not hasattr(x, "__dlpack__")


def _ndim(x, name):
    shape = getattr(x, "shape", None)
    if shape is None:
        raise TypeError(f"{name}: a {type(x).__name__} is not an array")
    if len(shape) not in (1, 2):
        raise ValueError(f"{name}: has {len(shape)} dimensions; 1 or 2 are supported (no batches)")
    return len(shape)


def _placement(x):
    """(DLPack device type, device id) of an array; host arrays without DLPack are (1, 0)."""
    if type(x) is np.ndarray or not hasattr(x, "__dlpack_device__"):
        return (_DLPACK_CPU, 0)
    if _library(x) == "torch" and x.is_cuda:  # the same answer as __dlpack_device__, without its Python code
        return (_DLPACK_CUDA, x.get_device())
    device_type, device_id = x.__dlpack_device__()
    return (int(device_type), int(device_id))


def _placement_text(x):
    device_type, device_id = _placement(x)
    return "host memory" if device_type == _DLPACK_CPU else f"cuda:{device_id}" if device_type == _DLPACK_CUDA \
        else f"DLPack device type {device_type}"


def _check_same_placement(first_name, first, others):
    where = _placement(first)
    for name, x in others:
        if x is not None and _placement(x) != where:
            raise ValueError(f"{name}: is in {_placement_text(x)}, {first_name} in {_placement_text(first)}")
    return where


def _library(x):
    return type(x).__module__.split(".")[0]


def _empty(like, shape, dtype=None):
    """An uninitialised array of like's library, on like's device (dtype name, or like's dtype)."""
    library = _library(like)
    if library == "torch":
        torch = sys.modules["torch"]
        return like.new_empty(shape, dtype=getattr(torch, dtype) if dtype else like.dtype)
    if library == "cupy":
        cupy = sys.modules["cupy"]
        with like.device:
            return cupy.empty(shape, dtype=np.dtype(dtype) if dtype else like.dtype)
    raise TypeError(f"out: cannot allocate a {type(like).__name__}; pass out=")


def _concatenate(parts):
    library = _library(parts[0])
    if library == "torch":
        return sys.modules["torch"].cat(parts).contiguous()
    if library == "cupy":
        return sys.modules["cupy"].ascontiguousarray(sys.modules["cupy"].concatenate(parts))
    return np.ascontiguousarray(np.concatenate([np.asarray(p) for p in parts]))


def _contiguous(x):
    if _library(x) == "torch":
        return x.contiguous()
    if _library(x) == "cupy":
        return sys.modules["cupy"].ascontiguousarray(x)
    return x


def _all_finite(x):
    return bool(sys.modules[_library(x)].isfinite(x).all())


def _caller_stream(x):
    """The DLPack number of the current CUDA stream of x's library on x's device."""
    library = _library(x)
    if library == "torch":
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # an int, without building a Stream object
        handle = raw(x.get_device()) if raw else torch.cuda.current_stream(x.device).cuda_stream
    elif library == "cupy":
        with x.device:
            handle = sys.modules["cupy"].cuda.get_current_stream().ptr
    else:
        handle = 0
    return handle if handle != 0 else _DLPACK_LEGACY_DEFAULT_STREAM


def _capsules(named_arrays, device_type):
    """DLPack capsules of arrays that are all in one place, and the stream number their work is ordered on
    (None in host memory). Capsules are asked for with that stream, the caller's current one, so the producer
    orders its pending work before ours. For PyTorch tensors that is what torch.utils.dlpack.to_dlpack gives
    directly: __dlpack__(stream=the current stream) adds only Python-level checks (several microseconds a
    tensor), of which the one that matters for reading the data, the negative bit, is made here."""
    first = named_arrays[0][1]
    stream = _caller_stream(first) if device_type == _DLPACK_CUDA else None
    if all(_library(x) == "torch" for _, x in named_arrays):
        for name, x in named_arrays:
            if x.is_neg():
                raise ValueError(f"{name}: a tensor with its negative bit set (call .resolve_neg() first)")
        to_dlpack = sys.modules["torch"].utils.dlpack.to_dlpack
        return [to_dlpack(x) for _, x in named_arrays], stream
    return [x.__dlpack__() if stream is None else x.__dlpack__(stream=stream) for _, x in named_arrays], stream


def _gemm_dlpack(a, b, out, alpha, beta, precision, impl, threads):
    if _ndim(a, "a") != 2 or _ndim(b, "b") != 2:
        raise ValueError(f"{'a' if len(a.shape) != 2 else 'b'}: has 1 dimension, a matrix has 2 (see matmul)")
    device_type, _ = _check_same_placement("a", a, [("b", b), ("out", out)])
    if out is None:
        if beta != 0:
            raise ValueError("beta: is not 0 but no out was given to scale")
        out = _empty(a, (int(a.shape[0]), int(b.shape[1])))
    (ca, cb, cout), stream = _capsules([("a", a), ("b", b), ("out", out)], device_type)
    _parray.gemm_dlpack(ca, cb, cout, alpha, beta, precision, impl, threads, stream or _DLPACK_LEGACY_DEFAULT_STREAM)
    return out


def _knn_dlpack(base, queries, k, metric):
    device_type, _ = _check_same_placement("base", base, [("queries", queries)])
    if device_type != _DLPACK_CUDA:
        raise TypeError(f"base: a {type(base).__name__} in host memory; pass NumPy arrays for the CPU k-NN")
    if _ndim(base, "base") != 2 or _ndim(queries, "queries") != 2:
        raise ValueError("base, queries: matrices (n x d, q x d) expected")
    base, queries = _contiguous(base), _contiguous(queries)
    for name, x in (("base", base), ("queries", queries)):
        if not _all_finite(x):
            raise ValueError(f"{name}: holds NaN or infinity (exact k-NN needs finite data)")
    q = int(queries.shape[0])
    distances, indices = _empty(queries, (q, k), "float32"), _empty(queries, (q, k), "int64")
    capsules, stream = _capsules([("base", base), ("queries", queries), ("distances", distances),
                                  ("indices", indices)], device_type)
    _parray.knn_dlpack(*capsules, k, metric, stream)
    return distances, indices
