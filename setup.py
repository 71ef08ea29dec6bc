"""The Python package `parray`: its compiled part built by CMake, the rest from python/parray.

    pip install --no-build-isolation .

needs nothing beyond Debian's packages (python3-dev, python3-setuptools,
python3-wheel, pybind11-dev, python3-numpy and parray's own build
dependencies) and downloads nothing. Environment:
  PARRAY_BUILD_JOBS   parallel compile jobs (default: all cores)
  PARRAY_CMAKE_ARGS   extra CMake arguments, e.g. "-DPARRAY_ENABLE_CUDA=OFF"
  PARRAY_BUILD_DIR    the CMake build directory (default: build-pip/cmake)
setuptools' own build files go to build-pip/ as well, never to build/.
"""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
BUILD_BASE = ROOT / "build-pip"


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures parray for this interpreter, builds only the module's target and copies it into the package."""

    def build_extension(self, ext):
        build_dir = Path(os.environ.get("PARRAY_BUILD_DIR", BUILD_BASE / "cmake")).resolve()
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DPython3_EXECUTABLE={sys.executable}", "-DPARRAY_BUILD_TESTS=OFF",
                     *shlex.split(os.environ.get("PARRAY_CMAKE_ARGS", ""))]
        subprocess.run(configure, check=True)
        jobs = os.environ.get("PARRAY_BUILD_JOBS", str(os.cpu_count() or 1))
        subprocess.run(["cmake", "--build", str(build_dir), "--target", "parray_python", "-j", jobs], check=True)
        package = build_dir / "python" / "parray"
        built = sorted(p for p in package.glob("_parray*.so") if p.name != "_parray_torch.so")
        if not built:
            sys.exit("parray: CMake did not build the Python module (is pybind11-dev installed? see CMake's output)")
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built[0], target)
        # The C++ PyTorch operators, where CMake found PyTorch's C++ headers (cmake/torch.cmake).
        if (build_dir / "CMakeFiles" / "parray_torch.dir").is_dir():
            subprocess.run(["cmake", "--build", str(build_dir), "--target", "parray_torch", "-j", jobs], check=True)
            shutil.copy2(package / "_parray_torch.so", target.parent / "_parray_torch.so")


BUILD_BASE.mkdir(exist_ok=True)
setup(
    name="parray",
    version="0.1.0",
    description="Zero-copy GEMM and exact k-NN on NumPy, PyTorch and CuPy arrays, on parray's CPU and GPU kernels",
    packages=["parray"],
    package_dir={"": "python"},
    ext_modules=[CMakeExtension("parray._parray")],
    cmdclass={"build_ext": CMakeBuild},
    python_requires=">=3.9",
    install_requires=["numpy"],
    options={"build": {"build_base": str(BUILD_BASE)}, "egg_info": {"egg_base": str(BUILD_BASE)}},
    zip_safe=False,
)
