"""parray.gemm / matmul on NumPy arrays against the FP64 reference: every stride pattern, dtypes,
alpha and beta, zero sizes, every CPU implementation of the registry, no copies, the GIL released."""
import threading
import time
import tracemalloc

import numpy as np
import pytest

import parray
from conftest import assert_gemm_close, random_matrix

DTYPES = [np.float32, np.float64]


def strided(pattern, rng, rows, cols, dtype):
    """A rows x cols operand with the strides the pattern names, over random storage."""
    if pattern == "c":
        return random_matrix(rng, rows, cols, dtype)
    if pattern == "fortran":
        return np.asfortranarray(random_matrix(rng, rows, cols, dtype))
    if pattern == "transposed":
        return random_matrix(rng, cols, rows, dtype).T
    if pattern == "every-2nd-row":
        return random_matrix(rng, 2 * rows, cols, dtype)[::2]
    if pattern == "every-3rd-col":
        return random_matrix(rng, rows, 3 * cols, dtype)[:, ::3]
    if pattern == "padded-block":
        return random_matrix(rng, rows + 3, cols + 5, dtype)[2:rows + 2, 1:cols + 1]
    if pattern == "reversed-rows":
        return random_matrix(rng, rows, cols, dtype)[::-1]
    if pattern == "reversed-cols-transposed":
        return random_matrix(rng, cols, rows, dtype)[:, ::-1].T
    if pattern == "broadcast-row":
        return np.broadcast_to(random_matrix(rng, 1, cols, dtype), (rows, cols))
    raise ValueError(pattern)


INPUT_PATTERNS = ["c", "fortran", "transposed", "every-2nd-row", "every-3rd-col", "padded-block", "reversed-rows",
                  "reversed-cols-transposed", "broadcast-row"]
OUT_PATTERNS = ["c", "fortran", "transposed", "every-2nd-row", "every-3rd-col", "padded-block", "reversed-rows",
                "reversed-cols-transposed"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pa", INPUT_PATTERNS)
@pytest.mark.parametrize("pb", INPUT_PATTERNS)
def test_every_input_stride_pattern(rng, dtype, pa, pb):
    a, b = strided(pa, rng, 13, 11, dtype), strided(pb, rng, 11, 17, dtype)
    c = parray.gemm(a, b)
    assert c.dtype == dtype and c.shape == (13, 17)
    assert_gemm_close(c, a, b)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pc", OUT_PATTERNS)
def test_every_out_stride_pattern_with_alpha_beta(rng, dtype, pc):
    a, b = random_matrix(rng, 19, 23, dtype), strided("transposed", rng, 23, 7, dtype)
    out = strided(pc, rng, 19, 7, dtype)
    c0 = out.copy()
    result = parray.gemm(a, b, out=out, alpha=-1.5, beta=0.75)
    assert result is out
    assert_gemm_close(out, a, b, alpha=-1.5, beta=0.75, c0=c0)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (1, 64, 300), (300, 1, 64), (65, 130, 257), (8, 8, 8)])
def test_shapes(rng, m, n, k):
    a, b = random_matrix(rng, m, k, np.float32), random_matrix(rng, k, n, np.float32)
    assert_gemm_close(parray.matmul(a, b), a, b)


@pytest.mark.parametrize("m,n,k", [(0, 5, 3), (5, 0, 3), (0, 0, 0), (4, 6, 0)])
def test_zero_sizes(rng, m, n, k):
    a, b = np.ones((m, k), np.float64), np.ones((k, n), np.float64)
    assert parray.gemm(a, b).shape == (m, n)
    out = np.full((m, n), 3.0)
    parray.gemm(a, b, out=out, beta=0.5)
    np.testing.assert_array_equal(out, np.full((m, n), 1.5 if k == 0 else 1.5 + k))


def test_beta_zero_does_not_read_out_and_alpha_zero_does_not_read_inputs(rng):
    a, b = random_matrix(rng, 6, 5, np.float32), random_matrix(rng, 5, 4, np.float32)
    out = np.full((6, 4), np.nan, np.float32)
    parray.gemm(a, b, out=out, beta=0.0)
    assert_gemm_close(out, a, b)
    nan_a = np.full_like(a, np.nan)
    out = np.full((6, 4), 2.0, np.float32)
    parray.gemm(nan_a, b, out=out, alpha=0.0, beta=3.0)
    np.testing.assert_array_equal(out, np.full((6, 4), 6.0, np.float32))


def test_matmul_vectors_like_numpy(rng):
    a, b, v = random_matrix(rng, 7, 5, np.float64), random_matrix(rng, 5, 3, np.float64), rng.random(5) + 0.5
    for x, y in [(v, b), (a, v), (v, v)]:
        got, want = parray.matmul(x, y), np.matmul(x, y)
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-13)
    out = np.empty(3)
    assert parray.matmul(v, b, out=out) is out
    np.testing.assert_allclose(out, v @ b, rtol=1e-13)


def test_every_cpu_implementation_of_the_registry(rng):
    names = [i["name"] for i in parray.impls() if i["device"] == "cpu"]
    assert "parray-cpu" in names
    a, b = strided("padded-block", rng, 37, 29, np.float32), strided("transposed", rng, 29, 31, np.float32)
    for impl in parray.impls():
        if impl["device"] != "cpu":
            continue
        for dtype in DTYPES:
            if ("f32" if dtype == np.float32 else "f64") not in impl["dtypes"]:
                continue
            x, y = a.astype(dtype), np.asfortranarray(b.astype(dtype))
            assert_gemm_close(parray.gemm(x, y, impl=impl["name"]), x, y)


def test_impls_describe_the_registry():
    entries = parray.impls()
    assert len({e["name"] for e in entries}) == len(entries)
    default = [e["name"] for e in entries if e["device"] == "cpu" and e["default"]]
    assert len(default) == 1
    for e in entries:
        assert e["device"] in ("cpu", "gpu") and e["dtypes"] and e["description"]


def test_precision_requests(rng):
    a, b = random_matrix(rng, 9, 9, np.float32), random_matrix(rng, 9, 9, np.float32)
    assert_gemm_close(parray.gemm(a, b, precision="tf32"), a, b)  # fp32 products meet tf32
    with pytest.raises(ValueError, match="asks for fp64"):
        parray.gemm(a, b, precision="fp64")


def test_operands_are_not_copied(rng):
    a = random_matrix(rng, 512, 384, np.float64).T
    b = random_matrix(rng, 1024, 512, np.float64)[::2]
    out = np.asfortranarray(np.empty((384, 512)))
    tracemalloc.start()
    parray.gemm(a, b, out=out)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * 1024, f"{peak} bytes allocated by Python during the call"
    assert_gemm_close(out, a, b)


def test_array_interface_objects_are_read_in_place(rng):
    class Exported:
        def __init__(self, x):
            self.x = x
            self.__array_interface__ = x.__array_interface__

    a, b = random_matrix(rng, 4, 6, np.float64), random_matrix(rng, 6, 5, np.float64)
    assert_gemm_close(parray.gemm(Exported(a.T.T), Exported(b)), a, b)


def test_the_gil_is_released_during_the_product(rng):
    a, b = random_matrix(rng, 1000, 1000, np.float64), random_matrix(rng, 1000, 1000, np.float64)
    span = {}

    def product():
        span["start"] = time.perf_counter()
        parray.gemm(a, b, threads=1)
        span["end"] = time.perf_counter()

    worker = threading.Thread(target=product)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    during = [t for t in ticks if span["start"] <= t <= span["end"]]
    duration = span["end"] - span["start"]
    gaps = np.diff([span["start"]] + during + [span["end"]])
    assert duration > 0.02, "the product was too short to tell"
    assert gaps.max() < duration / 2, f"this thread stood still for {gaps.max():.3f} s of a {duration:.3f} s product"


@pytest.mark.parametrize("a_shape,b_shape", [((3, 13, 11), (11, 17)), ((13, 11), (2, 11, 17)),
                                             ((2, 1, 13, 11), (3, 11, 17)), ((11,), (4, 11, 17)),
                                             ((2, 3, 13, 11), (11,)), ((0, 13, 11), (11, 17)), ((2, 13, 0), (0, 17))])
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_stacks_broadcast_as_numpy(rng, a_shape, b_shape, dtype):
    a = (rng.random(a_shape) * 2 - 1).astype(dtype)
    b = (rng.random(b_shape) * 2 - 1).astype(dtype)
    c = parray.matmul(a, b)
    want_shape = np.matmul(a, b).shape
    assert c.shape == want_shape and c.dtype == dtype
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    c2 = c.reshape(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2]) + (a2.shape[-2], b2.shape[-1]))
    for index in np.ndindex(*c2.shape[:-2]):
        ai = a2[tuple(0 if s == 1 else i for i, s in zip(index[len(index) - a2.ndim + 2:], a2.shape[:-2]))]
        bi = b2[tuple(0 if s == 1 else i for i, s in zip(index[len(index) - b2.ndim + 2:], b2.shape[:-2]))]
        assert_gemm_close(c2[index], ai, bi)


def test_matmul_stack_of_strided_views_into_out(rng):
    """Transposed and sliced stacks, the result into a strided out: views all through."""
    a = (rng.random((4, 11, 26)) * 2 - 1).astype(np.float32).transpose(0, 2, 1)[:, ::2]  # 4 x 13 x 11, strided
    b = (rng.random((17, 11)) * 2 - 1).astype(np.float32).T  # 11 x 17, transposed
    out = np.full((4, 17, 13), np.nan, np.float32).transpose(0, 2, 1)  # 4 x 13 x 17, transposed
    assert parray.matmul(a, b, out=out) is out
    for i in range(4):
        assert_gemm_close(out[i], a[i], b)


def _count_batched_calls(monkeypatch):
    calls = []
    real = parray._parray.gemm_batched_host

    def counting(count, *args):
        calls.append(count)
        return real(count, *args)

    monkeypatch.setattr(parray._parray, "gemm_batched_host", counting)
    return calls


def test_matmul_stack_is_one_batched_call(rng, monkeypatch):
    """A contiguous stack (two batch dimensions, B broadcast) is one call of the library's batch."""
    calls = _count_batched_calls(monkeypatch)
    a = (rng.random((4, 64, 9, 7)) * 2 - 1).astype(np.float32)
    b = (rng.random((7, 5)) * 2 - 1).astype(np.float32)
    c = parray.matmul(a, b)
    assert calls == [256]
    for index in np.ndindex(4, 64):
        assert_gemm_close(c[index], a[index], b)


def test_matmul_stack_strides_that_do_not_collapse(rng, monkeypatch):
    """A batch dimension cut short (its outer neighbour's stride no longer its stride times its size): a
    batch call per index of the outer dimension; a reversed batch dimension: one product at a time."""
    calls = _count_batched_calls(monkeypatch)
    a = (rng.random((3, 5, 6, 5)) * 2 - 1).astype(np.float64)[:, :4]  # 3 x 4 x 6 x 5
    b = (rng.random((3, 4, 5, 7)) * 2 - 1).astype(np.float64)
    c = parray.matmul(a, b)
    assert calls == [4, 4, 4]
    for index in np.ndindex(3, 4):
        assert_gemm_close(c[index], a[index], b[index])
    reversed_a = a[::-1]
    c = parray.matmul(reversed_a, b)
    for index in np.ndindex(3, 4):
        assert_gemm_close(c[index], reversed_a[index], b[index])


def test_matmul_stack_out_overlapping_an_input_is_refused(rng):
    a = (rng.random((6, 4, 4)) * 2 - 1).astype(np.float32)
    with pytest.raises(ValueError, match="out"):
        parray.matmul(a[:3], a[3:], out=a[1:4])
