"""Runs the parray Python tests for ctest; exit 77 (skipped) naming what is missing, else pytest's status.
A module that was built but does not import fails; so does a GPU that cannot be used where
PARRAY_REQUIRE_GPU=1 (the GPU machine).

    run_tests.py          every test but the GPU ones (ctest Python.pytest, label cpu)
    run_tests.py --gpu    the GPU tests, test_gpu.py (ctest Python.pytest.gpu, label gpu)

pytest's status 5 (no tests collected) is a failure here as it is in ctest: the suite always holds tests.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
gpu = "--gpu" in sys.argv[1:]
def built_module():
    """The compiled module on the path (a build's python/parray/_parray*.so), or None."""
    import glob
    for entry in sys.path:
        found = glob.glob(os.path.join(entry or ".", "parray", "_parray*.so"))
        if found:
            return found[0]
    return None


for requirement in ("numpy", "pytest", "parray"):
    try:
        __import__(requirement)
    except ImportError as e:
        if requirement == "parray" and built_module():  # built but broken: a failure, not a skip
            print(f"FAILED: {built_module()} was built but does not import: {e}", file=sys.stderr)
            sys.exit(1)
        print(f"SKIP: cannot import {requirement} ({e}); Debian: python3-numpy, python3-pytest", file=sys.stderr)
        sys.exit(77)

# On the GPU machine (PARRAY_REQUIRE_GPU=1, scripts/gpu-check) a GPU that cannot be used fails the GPU tests.
require_gpu = os.environ.get("PARRAY_REQUIRE_GPU") == "1"


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
        print(f"{'FAILED' if require_gpu else 'SKIP'}: parray was built without CUDA", file=sys.stderr)
        sys.exit(1 if require_gpu else 77)
    if gpu_library() is None:
        print(f"{'FAILED' if require_gpu else 'SKIP'}: neither PyTorch nor CuPy sees a CUDA GPU", file=sys.stderr)
        sys.exit(1 if require_gpu else 77)

import pytest  # noqa: E402

# PyTorch lives on the GPU machine: its tests (test_torch.py, CPU and CUDA tensors) run with the GPU ones
# there, and in the CPU run where PyTorch is installed (they skip, naming it, where it is not).
selection = [os.path.join(here, name) for name in ("test_gpu.py", "test_torch.py", "test_fp8.py")] if gpu else \
    [here, "--ignore", os.path.join(here, "test_gpu.py"), "--ignore", os.path.join(here, "test_fp8.py")]
sys.exit(pytest.main(selection + ["-q", "-rs", "-p", "no:cacheprovider"]))
