"""Runs the parray Python tests for ctest; exit 77 (skipped) naming what is missing, else pytest's status.

    run_tests.py          every test but the GPU ones (ctest Python.pytest, label cpu)
    run_tests.py --gpu    the GPU tests, test_gpu.py (ctest Python.pytest.gpu, label gpu)

pytest's status 5 (no tests collected) is a failure here as it is in ctest: the suite always holds tests.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
gpu = "--gpu" in sys.argv[1:]
for requirement in ("numpy", "pytest", "parray"):
    try:
        __import__(requirement)
    except ImportError as e:
        print(f"SKIP: cannot import {requirement} ({e}); Debian: python3-numpy, python3-pytest", file=sys.stderr)
        sys.exit(77)


def gpu_library():
    """The first of PyTorch and CuPy that sees a CUDA GPU, or None."""
    try:
        import torch
        if torch.cuda.is_available():
            return "torch"
    except ImportError:
        pass
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return "cupy"
    except Exception:  # ImportError, or CUDA errors where no GPU is present
        pass
    return None


if gpu:
    import parray

    if not parray.built_with_cuda:
        print("SKIP: parray was built without CUDA", file=sys.stderr)
        sys.exit(77)
    if gpu_library() is None:
        print("SKIP: neither PyTorch nor CuPy sees a CUDA GPU", file=sys.stderr)
        sys.exit(77)

import pytest  # noqa: E402

selection = [os.path.join(here, "test_gpu.py")] if gpu else [here, "--ignore", os.path.join(here, "test_gpu.py")]
sys.exit(pytest.main(selection + ["-q", "-rs", "-p", "no:cacheprovider"]))
