"""parray.Layout in the paper's notation and parray.view: blocked storage handed to gemm as a matrix."""
import numpy as np
import pytest

import parray
from conftest import assert_gemm_close


def test_notation_round_trip():
    fig17 = parray.Layout("[#S_1][[#S_0][#S_2]]", S="[2][1024][512]")
    assert fig17.shape == (1024, 1024) and fig17.size == 1024 * 1024 and fig17.rank == 2
    assert str(fig17) == "[1024:512][[2:524288][512:1]]"
    assert repr(fig17) == "parray.Layout('[1024:512][[2:524288][512:1]]')"
    assert parray.Layout(str(fig17)) == fig17
    assert fig17.offset(1) == 1 and fig17.offset(512) == 524288 and fig17.offset(1024) == 512
    assert parray.Layout("[N/16][16]", N=64).shape == (4, 16)
    storage = parray.Layout("[2][4]")
    assert parray.Layout("[#S_1][#S_0]", S=storage).shape == (4, 2)
    assert parray.Layout("[#S_1][#S_0]", S=storage).dim(0) == parray.Layout("[4:1]")


def fig17_operands(rng, rows, half):
    """Figure 17: storage [2][rows][half], one rows x 2*half matrix of two column halves."""
    layout = parray.Layout("[#S_1][[#S_0][#S_2]]", S=f"[2][{rows}][{half}]")
    return layout, (rng.random((2, rows, half)) * 2 - 1).astype(np.float32)


def as_matrix(storage):
    return np.concatenate([storage[0], storage[1]], axis=1)


@pytest.mark.parametrize("impl", [None, "gold", "parray-cpu"])
def test_figure17_views_in_gemm(rng, impl):
    layout, sa = fig17_operands(rng, 64, 32)
    _, sb = fig17_operands(rng, 64, 32)
    _, sc = fig17_operands(rng, 64, 32)
    a, b, c = parray.view(sa, layout), parray.view(sb, layout), parray.view(sc, layout)
    np.testing.assert_array_equal(a.numpy(), as_matrix(sa))
    c0 = as_matrix(sc).copy()
    assert parray.gemm(a, b, out=c, alpha=2.0, beta=-1.0, impl=impl) is c
    assert_gemm_close(as_matrix(sc), as_matrix(sa), as_matrix(sb), alpha=2.0, beta=-1.0, c0=c0)


def test_figure18_blocked_storage_with_numpy_operands(rng):
    """Figure 18: storage [2][2][r2][c2], 2x2 blocks each stored contiguously."""
    layout = parray.Layout("[[#S_0][#S_2]][[#S_1][#S_3]]", S="[2][2][24][20]")
    storage = (rng.random((2, 2, 24, 20)) * 2 - 1)
    blocked = parray.view(storage, layout)
    dense = np.block([[storage[0, 0], storage[0, 1]], [storage[1, 0], storage[1, 1]]])
    np.testing.assert_array_equal(blocked.numpy(), dense)
    b = np.asfortranarray(rng.random((40, 7)) + 0.5)
    assert_gemm_close(parray.gemm(blocked, b), dense, b)
    a = rng.random((5, 48)) - 0.5
    assert_gemm_close(parray.gemm(a, blocked), a, dense)
