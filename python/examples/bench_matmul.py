#!/usr/bin/env python3
"""parray.matmul against numpy.matmul (and torch.matmul where PyTorch is installed), as GFLOP/s by size.

A notebook-style script: each `# %%` cell runs on its own in Jupyter or VS Code, and the whole file runs as a
script. Results are checked against float64 before they are timed; the plot is written with matplotlib when
it is installed.

    PYTHONPATH=build/python python3 python/examples/bench_matmul.py --sizes 256,512,1024,2048 --out matmul.png
"""
# %% Set-up
import argparse

import numpy as np

import parray
from parray.timing import seconds as best_of

parser = argparse.ArgumentParser(description="parray.matmul against NumPy and PyTorch")
parser.add_argument("--sizes", default="256,512,1024,2048")
parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
parser.add_argument("--out", default="bench_matmul.png", help="the plot (PNG)")
args, _ = parser.parse_known_args()  # known only: a notebook kernel passes its own arguments
sizes = [int(s) for s in args.sizes.split(",")]
dtype = np.dtype(args.dtype)

try:
    import torch
except ImportError:
    torch = None


def gflops(n, seconds):
    return 2.0 * n**3 / seconds / 1e9


def checked(c, a, b):
    want = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    error = np.linalg.norm(np.asarray(c, np.float64) - want) / np.linalg.norm(want)
    assert error < 8 * np.finfo(dtype).eps * np.sqrt(a.shape[1]), f"relative error {error:.3g}"


# %% Measure: the same operands for every library; a transposed view costs parray nothing
rng = np.random.default_rng(0)
results = {"parray": [], "numpy": [], "parray, a.T": []}
if torch is not None:
    results["torch (CPU)"] = []
    if torch.cuda.is_available() and parray.built_with_cuda:
        results["parray (GPU)"], results["torch (GPU)"] = [], []
for n in sizes:
    a, b = (rng.random((n, n)).astype(dtype) * 2 - 1 for _ in range(2))
    out = np.empty((n, n), dtype)
    checked(parray.matmul(a, b, out=out), a, b)
    results["parray"].append(gflops(n, best_of(lambda: parray.matmul(a, b, out=out))))
    results["numpy"].append(gflops(n, best_of(lambda: np.matmul(a, b, out=out))))
    at = np.ascontiguousarray(a.T).T  # a Fortran-ordered a: read where it lies
    results["parray, a.T"].append(gflops(n, best_of(lambda: parray.matmul(at, b, out=out))))
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        results["torch (CPU)"].append(gflops(n, best_of(lambda: torch.matmul(ta, tb))))
        if "torch (GPU)" in results:
            torch.backends.cuda.matmul.allow_tf32 = False
            ga, gb = ta.cuda(), tb.cuda()
            checked(parray.matmul(ga, gb).cpu().numpy(), a, b)
            sync = torch.cuda.synchronize
            fp32_product = lambda: parray.matmul(ga, gb, precision="fp32")  # noqa: E731
            results["parray (GPU)"].append(gflops(n, best_of(fp32_product, sync=sync)))
            results["torch (GPU)"].append(gflops(n, best_of(lambda: torch.matmul(ga, gb), sync=sync)))
    print(f"{n:>6}  " + "  ".join(f"{name} {values[-1]:8.1f}" for name, values in results.items()) + "  GFLOP/s")

# %% Plot
try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    plt = None
if plt is None:
    print("matplotlib is not installed: no plot (Debian: python3-matplotlib)")
else:
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in results.items():
        ax.plot(sizes, values, marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("n (n x n x n)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title(f"matmul, {dtype.name}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"plot: {args.out}")
