"""parray.matmul8: GEMM on float8 PyTorch CUDA tensors with per-tensor or block scales (parray::gemm8,
ladder step 20 on Hopper; impl="cublaslt" runs cuBLASLt's FP8 matmul for per-tensor scales)."""
import sys

from . import _parray

SCALE_BLOCK = 128  # values of K per scale of a; side of b's square scale blocks
_FP8 = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
_OUT = ("bfloat16", "float16", "float32")


def matmul8(a, b, scale_a, scale_b, out=None, out_dtype=None, alpha=1.0, beta=0.0, impl="gpu"):
    """out = alpha * (scale_a * a) @ (scale_b * b) + beta * out on float8 CUDA tensors, returned.

    a: (M, K), float8_e4m3fn or float8_e5m2, row-major. b: (K, N), either type, column-major (b.t() is
    contiguous, as torch._scaled_mm takes it): FP8 tensor cores read both operands along K. Their rows along K
    must start 16 bytes apart. Scales are float32 CUDA tensors, either one value each (per-tensor), or blocks:
    scale_a (M, ceil(K/128)) column-major, one per row of a and 128 values of K; scale_b
    (ceil(K/128), ceil(N/128)) row-major, one per 128 x 128 block of b. out: (M, N) row-major, bfloat16,
    float16 or float32; allocated (out_dtype, default torch.bfloat16) when None, beta then 0. The products
    are summed in FP32, 128 values of K at a time.
    """
    torch = sys.modules.get("torch")
    for name, x in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("out", out)):
        if x is None and name == "out":
            continue
        if torch is None or not isinstance(x, torch.Tensor):
            raise TypeError(f"{name}: a {type(x).__name__} is not a PyTorch tensor; matmul8 takes float8 CUDA tensors")
        if x.device.type != "cuda" or x.device != a.device:
            raise ValueError(f"{name}: is on {x.device}, a on {a.device}; matmul8 takes tensors on one CUDA device")
    for name, x in (("a", a), ("b", b)):
        if str(x.dtype).removeprefix("torch.") not in _FP8:
            raise TypeError(f"{name}: dtype {x.dtype} is not torch.float8_e4m3fn or torch.float8_e5m2")
        if x.dim() != 2:
            raise ValueError(f"{name}: has {x.dim()} dimensions; matmul8 takes matrices")
    (m, k), (kb, n) = a.shape, b.shape
    if kb != k:
        raise ValueError(f"b: has {kb} rows, a has {k} columns")
    if out is None:
        if beta != 0:
            raise ValueError("beta: is not 0 but no out was given to scale")
        out = torch.empty((m, n), dtype=out_dtype or torch.bfloat16, device=a.device)
    out_name = str(out.dtype).removeprefix("torch.")
    if out_name not in _OUT:
        raise TypeError(f"out: dtype {out.dtype} is not bfloat16, float16 or float32")
    if tuple(out.shape) != (m, n):
        raise ValueError(f"out: shape {tuple(out.shape)} is not {(m, n)}")
    lda = _leading(a, "a", along_rows=True)
    ldb = _leading(b, "b", along_rows=False)
    ldc = _leading(out, "out", along_rows=True)
    blockwise = _check_scales(scale_a, scale_b, m, n, k)
    call = _parray.Gemm8Call(_FP8[str(a.dtype).removeprefix("torch.")], _FP8[str(b.dtype).removeprefix("torch.")],
                             out_name, blockwise, m, n, k, float(alpha), float(beta), a.data_ptr(), b.data_ptr(),
                             out.data_ptr(), scale_a.data_ptr(), scale_b.data_ptr(), lda, ldb, ldc)
    stream = torch.cuda.current_stream(a.device).cuda_stream
    _parray.gemm8_pointers(call, impl, stream if stream != 0 else 1, a.device.index or 0)
    return out


def _leading(x, name, along_rows):
    """The leading dimension of a matrix stored row-major (along_rows) or column-major, in elements."""
    rows, cols = x.shape if along_rows else (x.shape[1], x.shape[0])
    inner, outer = (x.stride(1), x.stride(0)) if along_rows else (x.stride(0), x.stride(1))
    if cols > 1 and inner != 1:
        order = "row-major" if along_rows else "column-major (its transpose contiguous)"
        raise ValueError(f"{name}: must be {order}; its strides are {tuple(x.stride())}")
    if rows <= 1:
        return (cols + 15) // 16 * 16 if x.element_size() == 1 else max(cols, 1)
    return outer


def _check_scales(scale_a, scale_b, m, n, k):
    """Whether the scales are blockwise (else one value each), after checking their dtype, shape and strides."""
    for name, s in (("scale_a", scale_a), ("scale_b", scale_b)):
        if s.dtype != sys.modules["torch"].float32:
            raise TypeError(f"{name}: dtype {s.dtype} is not torch.float32")
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        return False
    kb, nb = -(-k // SCALE_BLOCK), -(-n // SCALE_BLOCK)
    # Element (i, kb) of scale_a at kb * M + i; (kb, j) of scale_b at kb * ceil(N/128) + j.
    if tuple(scale_a.shape) != (m, kb) or (m > 1 and scale_a.stride(0) != 1) or (kb > 1 and scale_a.stride(1) != m):
        raise ValueError(f"scale_a: blockwise scales are ({m}, {kb}) column-major (strides (1, {m})); "
                         f"got shape {tuple(scale_a.shape)}, strides {tuple(scale_a.stride())}")
    if tuple(scale_b.shape) != (kb, nb) or (nb > 1 and scale_b.stride(1) != 1) or (kb > 1 and scale_b.stride(0) != nb):
        raise ValueError(f"scale_b: blockwise scales are ({kb}, {nb}) row-major; "
                         f"got shape {tuple(scale_b.shape)}, strides {tuple(scale_b.stride())}")
    return True
