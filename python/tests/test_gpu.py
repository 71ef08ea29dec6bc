"""GPU arrays: PyTorch and CuPy CUDA tensors through DLPack, results in the caller's library, work ordered on
the caller's current stream. Skips where parray was built without CUDA, or the library or a GPU is absent."""
import numpy as np
import pytest

import parray
from conftest import assert_gemm_close

needs_cuda_build = pytest.mark.skipif(not parray.built_with_cuda, reason="parray was built without CUDA")


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def _cupy():
    try:
        import cupy
        return cupy if cupy.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # ImportError, or CUDA errors where no GPU is present
        return None


torch = _torch()
cupy = _cupy()
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch with a CUDA GPU is not available")
needs_cupy = pytest.mark.skipif(cupy is None, reason="CuPy with a CUDA GPU is not available")
# 3xTF32 (the default GPU GEMM may choose it) keeps FP32 accuracy within a small factor of the FP32 bound.
GPU_SLACK = 8


def host(x):
    return x.cpu().numpy() if torch is not None and isinstance(x, torch.Tensor) else cupy.asnumpy(x)


def torch_views(rng, rows, cols):
    base = torch.from_numpy(rng.random((2 * rows + 3, 3 * cols + 2)).astype(np.float32) * 2 - 1).cuda()
    return {
        "contiguous": base[:rows, :cols].contiguous(),
        "transposed": base[:cols, :rows].t(),
        "every-2nd-row": base[: 2 * rows : 2, :cols],
        "every-3rd-col": base[:rows, : 3 * cols : 3],
        "padded-block": base[1 : rows + 1, 2 : cols + 2],
    }


@needs_cuda_build
@needs_torch
@pytest.mark.parametrize("pa", ["contiguous", "transposed", "every-2nd-row", "every-3rd-col", "padded-block"])
@pytest.mark.parametrize("pb", ["contiguous", "transposed", "every-3rd-col"])
def test_torch_gemm_every_stride_pattern(rng, pa, pb):
    a, b = torch_views(rng, 70, 45)[pa], torch_views(rng, 45, 33)[pb]
    c = parray.gemm(a, b)
    assert isinstance(c, torch.Tensor) and c.is_cuda and c.dtype == torch.float32 and tuple(c.shape) == (70, 33)
    assert_gemm_close(host(c), host(a), host(b), slack=GPU_SLACK)


@needs_cuda_build
@needs_torch
def test_torch_out_alpha_beta_and_matmul(rng):
    a, b = torch_views(rng, 64, 96)["transposed"], torch_views(rng, 96, 80)["padded-block"]
    out = torch_views(rng, 64, 80)["every-2nd-row"]
    c0 = host(out).copy()
    assert parray.gemm(a, b, out=out, alpha=1.5, beta=-0.5) is out
    assert_gemm_close(host(out), host(a), host(b), alpha=1.5, beta=-0.5, c0=c0, slack=GPU_SLACK)
    v = a[0]
    assert_gemm_close(host(parray.matmul(v, b))[None, :], host(v)[None, :], host(b), slack=GPU_SLACK)


@needs_cuda_build
@needs_torch
def test_every_gpu_implementation_of_the_registry(rng):
    a, b = torch_views(rng, 130, 70)["contiguous"], torch_views(rng, 70, 90)["transposed"]
    ran = 0
    for impl in parray.impls():
        if impl["device"] != "gpu":
            continue
        for dtype in (torch.float32, torch.float64):
            if ("f32" if dtype == torch.float32 else "f64") not in impl["dtypes"]:
                continue
            x, y = a.to(dtype), b.to(dtype)
            try:
                c = parray.gemm(x, y, impl=impl["name"], precision="tf32" if dtype == torch.float32 else None)
            except ValueError as e:  # an implementation may refuse these layouts, device operands or this precision
                refusals = ("cannot take these layouts", "needs its operands in host memory", "delivers")
                assert any(r in str(e) for r in refusals), str(e)
                continue
            # TF32 inputs keep 10 of FP32's 23 mantissa bits, cut off (the tensor cores read the top bits) or
            # rounded: each input off by less than 2^-10 of itself, each product by 2 * 2^-10 + 2^-20 of |a||b|.
            rounding = 2 * 2.0 ** -10 + 2.0 ** -20 if impl["precision_f32"] == "tf32" else 0.0
            assert_gemm_close(host(c), host(x), host(y), slack=GPU_SLACK, input_rounding=rounding)
            ran += 1
    assert ran > 0


@needs_cuda_build
@needs_torch
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("out_dtype", [None, "float32"])
def test_torch_matmul16_both_orders_of_each_operand(rng, dtype, out_dtype):
    def matrix(rows, cols, transposed):  # a transposed one: the transpose of a contiguous cols x rows tensor
        x = torch.from_numpy(rng.random((cols, rows) if transposed else (rows, cols)).astype(np.float32) * 2 - 1)
        x = x.cuda().to(getattr(torch, dtype))
        return x.t() if transposed else x

    m, k, n = 300, 200, 260
    for ta in (False, True):
        for tb in (False, True):
            a, b = matrix(m, k, ta), matrix(k, n, tb)
            for impl in ("gpu", "cuda-16", "cuda-18", "cublas"):
                try:
                    c = parray.matmul16(a, b, out_dtype=out_dtype, impl=impl)
                except ValueError as e:  # step 16 needs a Hopper GPU
                    assert impl in ("gpu", "cuda-16") and "Hopper" in str(e), str(e)
                    continue
                assert c.dtype == getattr(torch, out_dtype or dtype) and tuple(c.shape) == (m, n)
                x, y = host(a.double()), host(b.double())
                bound = np.abs(x) @ np.abs(y)
                # C rounded to its type (2^-8 for bfloat16, 2^-11 for float16, 2^-24 for float32), FP32 sums of K.
                unit = 2.0 ** -24 if out_dtype else 2.0 ** -8 if dtype == "bfloat16" else 2.0 ** -11
                err = np.abs(host(c.double()) - x @ y)
                assert np.all(err <= (2 * unit + 2 * (k + 4) * 2.0 ** -24) * bound), (impl, ta, tb, err.max())


@needs_cuda_build
@needs_torch
def test_torch_matmul16_argument_errors(rng):
    a = torch.ones((4, 3), device="cuda", dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="^b: dtype float16 differs from a's bfloat16"):
        parray.matmul16(a, torch.ones((3, 2), device="cuda", dtype=torch.float16))
    with pytest.raises(ValueError, match="^b: has 4 rows, a has 3 columns"):
        parray.matmul16(a, torch.ones((4, 2), device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="^a: neither its rows nor its columns are contiguous"):
        parray.matmul16(torch.ones((8, 6), device="cuda", dtype=torch.bfloat16)[::2, ::2], a[:3, :2])


@needs_cuda_build
@needs_torch
def test_torch_work_is_ordered_on_the_callers_stream(rng):
    n = 512
    source = torch.from_numpy(rng.random((n, n)).astype(np.float32) + 0.5).cuda()
    b = torch.from_numpy(rng.random((n, n)).astype(np.float32) + 0.5).cuda()
    a = torch.zeros((n, n), device="cuda")
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(100_000_000)  # keeps the stream busy while the host queues the rest
        a.copy_(source)  # a holds its values only once the stream gets here
        c = parray.gemm(a, b)
        seen_after = c.clone()  # queued on the stream after the product
    stream.synchronize()
    assert_gemm_close(host(seen_after), host(source), host(b), slack=GPU_SLACK)


@needs_cuda_build
@needs_torch
def test_torch_knn_and_flat_index_on_the_gpu(rng):
    base_np = (rng.random((3000, 32)) * 2 - 1).astype(np.float32)
    queries_np = (rng.random((40, 32)) * 2 - 1).astype(np.float32)
    base, queries = torch.from_numpy(base_np).cuda(), torch.from_numpy(queries_np).cuda()
    want_distances, want_indices = parray.knn(base_np, queries_np, 16)
    distances, indices = parray.knn(base, queries, 16)
    assert distances.is_cuda and indices.dtype == torch.int64
    np.testing.assert_array_equal(host(indices), want_indices)
    np.testing.assert_allclose(host(distances), want_distances, rtol=1e-6, atol=1e-6)
    index = parray.FlatIndex(32)
    index.add(base[:1000])
    index.add(base[1000:])
    distances, indices = index.search(queries, 16)
    assert index._base.is_cuda
    np.testing.assert_array_equal(host(indices), want_indices)


@needs_cuda_build
@needs_torch
def test_torch_errors(rng):
    a = torch_views(rng, 8, 8)["contiguous"]
    with pytest.raises(ValueError, match="^b: is in host memory, a in cuda:0"):
        parray.gemm(a, np.ones((8, 8), np.float32))
    with pytest.raises(ValueError, match="^b: is in host memory, a in cuda:0"):
        parray.gemm(a, a.cpu())
    with pytest.raises(ValueError, match="^out: overlaps a"):
        parray.gemm(a, a.t().contiguous(), out=a)
    with pytest.raises(TypeError, match="^b: dtype"):
        parray.gemm(a, a.double())
    with pytest.raises(ValueError, match="^queries: is in host memory, base in cuda:0"):
        parray.knn(a, a.cpu(), 2)
    with pytest.raises(ValueError, match="^base: holds NaN"):
        parray.knn(torch.full((8, 8), float("nan"), device="cuda"), a, 2)


@needs_cuda_build
@needs_cupy
@pytest.mark.parametrize("view", ["contiguous", "fortran", "reversed-rows", "every-2nd-col"])
def test_cupy_gemm_and_stream(rng, view):
    make = {
        "contiguous": lambda x: cupy.asarray(x),
        "fortran": lambda x: cupy.asfortranarray(cupy.asarray(x)),
        "reversed-rows": lambda x: cupy.ascontiguousarray(cupy.asarray(x)[::-1])[::-1],
        "every-2nd-col": lambda x: cupy.repeat(cupy.asarray(x), 2, axis=1)[:, ::2],
    }[view]
    a_np, b_np = (rng.random((50, 40)) * 2 - 1).astype(np.float32), (rng.random((40, 30)) * 2 - 1).astype(np.float32)
    with cupy.cuda.Stream(non_blocking=True) as stream:
        a, b = make(a_np), make(b_np)
        c = parray.gemm(a, b)
        seen_after = c.copy()
    stream.synchronize()
    assert isinstance(c, cupy.ndarray)
    assert_gemm_close(cupy.asnumpy(seen_after), a_np, b_np, slack=GPU_SLACK)
