"""Shared helpers of the parray tests: random operands and the FP64 reference with a rigorous bound."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261128)


def random_matrix(rng, rows, cols, dtype):
    """Uniform in [-1, 1): random signs and magnitudes, never zeros."""
    return (rng.random((rows, cols)) * 2 - 1).astype(dtype)


def assert_gemm_close(result, a, b, alpha=1.0, beta=0.0, c0=None, slack=1, input_rounding=0.0):
    """result against alpha a b + beta c0 in FP64, elementwise within the classical bound
    (K + 2) eps (|alpha| |a| |b| + |beta| |c0|): any summation order meets it, a wrong element does not.
    slack widens it for products whose inputs are split (3xTF32); input_rounding adds the relative
    error of each product of rounded inputs (TF32: both inputs' lost bits), which does not grow with K."""
    a64, b64 = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    want = alpha * (a64 @ b64)
    scale = abs(alpha) * (np.abs(a64) @ np.abs(b64))
    if beta != 0:
        c64 = np.asarray(c0, dtype=np.float64)
        want = want + beta * c64
        scale = scale + abs(beta) * np.abs(c64)
    result = np.asarray(result)
    eps = np.finfo(result.dtype).eps
    bound = (slack * (a64.shape[1] + 2) * eps + input_rounding) * scale + np.finfo(result.dtype).tiny
    assert result.shape == want.shape
    assert np.all(np.isfinite(result))
    excess = np.abs(result.astype(np.float64) - want) - bound
    assert excess.max(initial=-1.0) <= 0, f"worst element off by {excess.max() + bound.flat[excess.argmax()]}"
