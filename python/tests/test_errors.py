"""Bad arguments raise TypeError or ValueError whose message starts with the argument's name; none crashes."""
import numpy as np
import pytest

import parray


def matrix(rows, cols, dtype=np.float32):
    return (np.arange(rows * cols, dtype=np.float64).reshape(rows, cols) % 7 - 3).astype(dtype)


@pytest.mark.parametrize("call,error,starts", [
    (lambda: parray.gemm(matrix(2, 3, np.int64), matrix(3, 2)), TypeError, "a: elements of format"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2, np.float64)), TypeError, "b: dtype float64 differs"),
    (lambda: parray.gemm(matrix(2, 3), matrix(4, 2)), ValueError, "b: has 4 rows, a has 3 columns"),
    (lambda: parray.gemm(np.ones((2, 3, 4), np.float32), matrix(3, 2)), ValueError, "a: has 3 dimensions"),
    (lambda: parray.gemm([[1.0]], matrix(1, 1)), TypeError, "a: a list is not an array"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2), out=np.empty((2, 2), np.float64)), TypeError, "out: dtype"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2), out=np.empty((2, 3), np.float32)), ValueError,
     "out: shape (2, 3) is not (2, 2)"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2), beta=1.0), ValueError, "beta: is not 0"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2), precision="fp8"), ValueError, "precision: unknown precision"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2), threads=-1), ValueError, "threads: -1 is negative"),
    (lambda: parray.gemm(matrix(2, 3), matrix(3, 2), impl="no-such-gemm"), ValueError,
     "unknown implementation 'no-such-gemm'"),
    (lambda: parray.gemm(matrix(2, 3).astype(">f4"), matrix(3, 2)), TypeError, "a: elements of format '>f'"),
    (lambda: parray.matmul(np.ones((2, 2, 2)), np.ones((3, 2))), ValueError, "b: has 3 rows, a has 2 columns"),
    (lambda: parray.matmul(np.ones((2, 2, 2)), np.ones((3, 2, 2))), ValueError, "a, b: batch dimensions (2,)"),
    (lambda: parray.matmul(np.ones((2, 2, 2)), np.ones((2, 2)), out=np.empty((2, 2))), ValueError,
     "out: shape (2, 2) is not (2, 2, 2)"),
    (lambda: parray.matmul(np.float64(1.0), np.ones((2, 2))), ValueError, "a: a 0-dimensional array"),
    (lambda: parray.matmul16(matrix(2, 3, np.float16), matrix(3, 2, np.float16)), TypeError,
     "a: a ndarray in host memory; matmul16 takes CUDA tensors"),
    (lambda: parray.matmul8(matrix(2, 32), matrix(32, 2), matrix(1, 1), matrix(1, 1)), TypeError,
     "a: a ndarray is not a PyTorch tensor; matmul8 takes float8 CUDA tensors"),
])
def test_gemm_argument_errors(call, error, starts):
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(starts), str(info.value)


def test_read_only_out():
    out = np.zeros((2, 2), np.float32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="^out: is read-only"):
        parray.gemm(matrix(2, 3), matrix(3, 2), out=out)


def test_out_overlapping_an_input():
    square = matrix(4, 4)
    with pytest.raises(ValueError, match="^out: overlaps a"):
        parray.gemm(square, matrix(4, 4), out=square)
    storage = np.zeros((4, 8), np.float32)
    with pytest.raises(ValueError, match="^out: overlaps b"):
        parray.gemm(matrix(4, 4), storage[:, 4:].T, out=storage[:, :4])


def test_out_whose_elements_share_memory():
    storage = np.zeros(4, np.float32)
    aliased = np.lib.stride_tricks.as_strided(storage, shape=(2, 2), strides=(0, 4), writeable=True)
    with pytest.raises(ValueError, match="maps two elements to the same address"):
        parray.gemm(matrix(2, 3), matrix(3, 2), out=aliased)


def test_misaligned_data():
    raw = np.zeros(4 * 9 + 1, np.uint8)
    misaligned = np.frombuffer(raw.data, dtype=np.float32, count=9, offset=1).reshape(3, 3)
    with pytest.raises(ValueError, match="^a: its data is not aligned"):
        parray.gemm(misaligned, matrix(3, 3))


def test_strides_not_whole_elements():
    raw = np.zeros(64, np.uint8)
    odd = np.lib.stride_tricks.as_strided(raw.view(np.float32), shape=(2, 2), strides=(6, 4))
    with pytest.raises(ValueError, match="^a: stride 6 bytes"):
        parray.gemm(odd, matrix(2, 2))


@pytest.mark.parametrize("call,error,starts", [
    (lambda: parray.knn(matrix(10, 4), matrix(2, 4), 0), ValueError, "k: 0 is not a positive integer"),
    (lambda: parray.knn(matrix(10, 4), matrix(2, 4), 11), ValueError, "knn: k = 11 is out of range"),
    (lambda: parray.knn(matrix(10, 4), matrix(2, 5), 3), ValueError, "queries: have dimension 5, base has 4"),
    (lambda: parray.knn(matrix(10, 4), matrix(2, 4, np.float64), 3), TypeError, "queries: dtype differs"),
    (lambda: parray.knn(matrix(10, 4), matrix(2, 4), 3, metric="cosine"), ValueError, "metric:"),
    (lambda: parray.knn(np.full((10, 4), np.nan, np.float32), matrix(2, 4), 3), ValueError, "base: holds NaN"),
    (lambda: parray.knn(matrix(10, 4), np.full((2, 4), np.inf, np.float32), 3), ValueError, "queries: holds NaN"),
    (lambda: parray.FlatIndex(0), ValueError, "d: 0 is not a positive integer"),
    (lambda: parray.FlatIndex(4).search(matrix(1, 4), 1), ValueError, "queries: the index is empty"),
    (lambda: parray.FlatIndex(4).add(matrix(3, 5)), ValueError, "x: shape (3, 5) is not (n, 4)"),
])
def test_knn_argument_errors(call, error, starts):
    with pytest.raises(error) as info:
        call()
    assert str(info.value).startswith(starts), str(info.value)


def test_layout_and_view_errors():
    with pytest.raises(ValueError):
        parray.Layout("[2][")
    with pytest.raises(ValueError):
        parray.Layout("[#T_0][#T_1]")  # T unknown
    with pytest.raises(TypeError, match="^S: a symbol is a type"):
        parray.Layout("[#S_0]", S=1.5)
    with pytest.raises(ValueError, match="^storage: the type"):
        parray.view(np.zeros(10, np.float32), parray.Layout("[4][4]"))
    with pytest.raises(ValueError, match="^storage: the storage of a view must be C-contiguous"):
        parray.view(np.zeros((8, 8), np.float32)[:, ::2], parray.Layout("[4][4]"))
    with pytest.raises(ValueError, match="2 top-level dimensions"):
        parray.view(np.zeros(8, np.float32), parray.Layout("[8]"))


def test_vector_file_errors(tmp_path):
    truncated = tmp_path / "bad.fvecs"
    truncated.write_bytes(np.array([4], np.int32).tobytes() + np.zeros(3, np.float32).tobytes())
    with pytest.raises(ValueError):
        parray.read_fvecs(str(truncated))
    with pytest.raises(ValueError):
        parray.read_fvecs(str(tmp_path / "missing.fvecs"))


def test_flat_index_keeps_one_dtype():
    index = parray.FlatIndex(4)
    index.add(matrix(3, 4))
    with pytest.raises(TypeError, match="^x: dtype float64 differs"):
        index.add(matrix(3, 4, np.float64))
