#!/usr/bin/env bash
# tests/python_pip_install.sh PYTHON SOURCE_DIR WORK_DIR: the Python module as a pip
# user installs it. A fresh virtual environment (with the system's site
# packages: NumPy, setuptools and wheel come from Debian, and no package index
# is reachable), `pip install --no-build-isolation --no-index SOURCE_DIR`
# (setup.py builds the module with CMake, CPU only here), then `import parray`
# from outside the source tree and one product checked against NumPy in FP64.
# PYTHON is the interpreter the build found with NumPy. Skips (77) where it
# cannot make a virtual environment with pip (Debian: python3-venv) or lacks
# setuptools' wheel builder (python3-wheel).
set -euo pipefail
python=$1
src=$(cd "$2" && pwd)
work=$3
if ! "$python" -c "import ensurepip, venv, wheel" >/dev/null 2>&1; then
  echo "SKIP: $python cannot make a virtual environment with pip and wheel (Debian: python3-venv, python3-wheel)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work"
"$python" -m venv --system-site-packages "$work/venv"
# CPU only and at -O1: the test is of the install (pip, setup.py, CMake, the
# package found outside the tree), not of the optimiser's output, and the
# compile is most of its time.
if ! PARRAY_BUILD_DIR="$work/cmake" \
    PARRAY_CMAKE_ARGS="-DPARRAY_ENABLE_CUDA=OFF -DPARRAY_ENABLE_MPI=OFF -DCMAKE_CXX_FLAGS_RELEASE=-O1" \
    "$work/venv/bin/python" -m pip install --no-build-isolation --no-index "$src" >"$work/pip.log" 2>&1; then
  tail -n 40 "$work/pip.log"
  echo "FAILED: pip install (log: $work/pip.log)"
  exit 1
fi
cd "$work"  # outside the source tree: the installed package, not python/parray
"$work/venv/bin/python" - <<'PY'
import os
import sys
import numpy as np
import parray

where = os.path.realpath(parray.__file__)  # the installed copy, not python/parray of the sources
assert where.startswith(os.path.realpath(sys.prefix) + os.sep), where
rng = np.random.default_rng(7)
a = rng.uniform(-1, 1, (67, 131)).astype(np.float32)
b = rng.uniform(-1, 1, (131, 45)).astype(np.float32)
c = parray.matmul(a, b)
ref = a.astype(np.float64) @ b.astype(np.float64)
bound = 2 * (131 + 4) * 2.0**-24 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
assert np.all(np.isfinite(c)) and np.all(np.abs(c - ref) <= bound), float(np.max(np.abs(c - ref) - bound))
print("pip install ok:", where)
PY
