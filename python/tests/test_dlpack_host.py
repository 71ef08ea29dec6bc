"""The DLPack path on host memory: arrays offering only __dlpack__ (as a PyTorch CPU tensor does), built here
from NumPy, go through the same capsule parsing that GPU tensors use."""
import numpy as np
import pytest

import parray
from conftest import assert_gemm_close, random_matrix


class DlpackOnly:
    """An array that exports nothing but DLPack (no buffer protocol, no __array_interface__)."""

    def __init__(self, x):
        self.x = x
        self.shape = x.shape

    def __dlpack__(self, stream=None):
        assert stream is None, "a host array gets no stream"
        return self.x.__dlpack__()

    def __dlpack_device__(self):
        return self.x.__dlpack_device__()

    def __getitem__(self, index):
        return DlpackOnly(self.x[index])


VIEWS = {
    "c": lambda x: x,
    "transposed": lambda x: np.ascontiguousarray(x.T).T,
    "every-2nd-row": lambda x: np.repeat(x, 2, axis=0)[::2],
    "padded-block": lambda x: np.pad(x, ((1, 2), (3, 1)))[1:-2, 3:-1],
    "reversed-rows": lambda x: x[::-1].copy()[::-1],
}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("view", list(VIEWS))
def test_gemm_through_capsules(rng, dtype, view):
    a, b = random_matrix(rng, 9, 14, dtype), random_matrix(rng, 14, 6, dtype)
    out = VIEWS[view](random_matrix(rng, 9, 6, dtype))
    c0 = out.copy()
    result = parray.gemm(DlpackOnly(VIEWS[view](a)), DlpackOnly(VIEWS[view](b)), out=DlpackOnly(out), alpha=0.5,
                         beta=2.0)
    assert isinstance(result, DlpackOnly) and result.x is out
    assert_gemm_close(out, a, b, alpha=0.5, beta=2.0, c0=c0)


def test_capsule_errors(rng):
    a = DlpackOnly(random_matrix(rng, 3, 4, np.float32))
    with pytest.raises(TypeError, match="^b: dtype int32 is not float32 or float64"):
        parray.gemm(a, DlpackOnly(np.ones((4, 2), np.int32)), out=DlpackOnly(np.empty((3, 2), np.float32)))
    with pytest.raises(ValueError, match="^out: shape"):
        parray.gemm(a, DlpackOnly(np.ones((4, 2), np.float32)), out=DlpackOnly(np.empty((2, 2), np.float32)))
    with pytest.raises(TypeError, match="^out: cannot allocate a DlpackOnly"):
        parray.gemm(a, DlpackOnly(np.ones((4, 2), np.float32)))
    with pytest.raises(TypeError, match="^base: a DlpackOnly in host memory"):
        parray.knn(a, a, 1)
