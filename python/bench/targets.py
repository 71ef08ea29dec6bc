#!/usr/bin/env python3
"""The Python module's measured targets, each printed with the device it ran on.

  CPU  call overhead of parray.gemm on 8x8x8 over the same library call made from C++  (target <= 5 us)
  CPU  parray.matmul against numpy.matmul (NumPy's own BLAS) at 1024..4096             (target >= 1.0x)
  CPU  parray.matmul against numpy.matmul on float32 stacks, 256 x 64^3 and 64 x 512^3 (target >= 1.0x)
  GPU  call overhead on 8x8x8 (target <= 10 us); parray.matmul against torch.matmul, FP32 accuracy
       (TF32 off in PyTorch, precision="fp32" in parray) at 4096 (target >= 1.0x); parray.knn against
       torch matmul + topk, exact, 10^6 x 128, 10^4 queries, k = 100 (target >= 2.0x, recall 1.0)

Every result is checked against a float64 reference before it is timed; the compared calls are timed in
turn, best of several rounds, so that the load of other processes falls on both alike. The GPU part runs where PyTorch
sees a GPU and parray was built with CUDA.

    PYTHONPATH=build/python python3 python/bench/targets.py [--sizes 1024,2048,4096] [--csv out.csv] [--no-gpu]
"""
import argparse
import csv
import os
import platform
import sys

import numpy as np

import parray
from parray.timing import in_blocks, interleaved, per_call_seconds


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def check_product(c, a, b):
    """Relative Frobenius error against float64 within the FP32 bound's order."""
    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    want = a64 @ b64
    error = np.linalg.norm(np.asarray(c, np.float64) - want) / np.linalg.norm(want)
    limit = 8 * np.finfo(np.asarray(c).dtype).eps * np.sqrt(a64.shape[1])
    if not error <= limit:
        sys.exit(f"parray's product failed its check: relative error {error:.3g} > {limit:.3g}")


def cpu_overhead(rows, calls):
    rng = np.random.default_rng(1)
    a, b = (rng.random((8, 8), np.float32) + 0.5 for _ in range(2))
    out = np.empty((8, 8), np.float32)
    parray.gemm(a, b, out=out)
    check_product(out, a, b)
    library = parray._parray.time_library_calls(a, b, out, None, 2 * calls, False)
    variants = {
        "gemm(a, b, out=out)": lambda: parray.gemm(a, b, out=out),
        "gemm(a, b)": lambda: parray.gemm(a, b),
        "matmul(a, b)": lambda: parray.matmul(a, b),
    }
    for name, run in variants.items():
        per_call = per_call_seconds(run, calls)
        rows.append(dict(device=cpu_name(), what=f"call overhead 8x8x8 f32, {name}", parray_us=per_call * 1e6,
                         baseline="the same call from C++", baseline_us=library * 1e6,
                         result=f"{(per_call - library) * 1e6:.2f} us over C++ (target <= 5)"))


def cpu_matmul(rows, sizes, dtypes):
    rng = np.random.default_rng(2)
    for dtype in dtypes:
        for n in sizes:
            a, b = (rng.random((n, n)).astype(dtype) * 2 - 1 for _ in range(2))
            out = np.empty((n, n), dtype)
            parray.matmul(a, b, out=out)
            if n <= 2048:
                check_product(out, a, b)
            best = in_blocks({"parray": lambda: parray.matmul(a, b, out=out),
                              "numpy": lambda: np.matmul(a, b, out=out)}, repeats=5 if n >= 4096 else 10)
            ours, numpy_time = best["parray"], best["numpy"]
            rows.append(dict(device=cpu_name(), what=f"matmul {n}^3 {np.dtype(dtype).name}", parray_us=ours * 1e6,
                             baseline="numpy.matmul", baseline_us=numpy_time * 1e6,
                             result=f"{numpy_time / ours:.2f}x numpy (target >= 1.0)"))


def cpu_stacks(rows, stacks):
    """Stacks of float32 matrices, count x n^3: one batched call of parray's against numpy.matmul's loop."""
    rng = np.random.default_rng(4)
    for count, n in stacks:
        a, b = (rng.random((count, n, n)).astype(np.float32) * 2 - 1 for _ in range(2))
        out = np.empty((count, n, n), np.float32)
        parray.matmul(a, b, out=out)
        for i in range(0, count, max(1, count // 4)):
            check_product(out[i], a[i], b[i])
        best = in_blocks({"parray": lambda: parray.matmul(a, b, out=out),
                          "numpy": lambda: np.matmul(a, b, out=out)}, repeats=10)
        ours, numpy_time = best["parray"], best["numpy"]
        rows.append(dict(device=cpu_name(), what=f"matmul stack {count} x {n}^3 float32", parray_us=ours * 1e6,
                         baseline="numpy.matmul", baseline_us=numpy_time * 1e6,
                         result=f"{numpy_time / ours:.2f}x numpy (target >= 1.0)"))


def gpu_part(rows, calls):
    try:
        import torch
    except ImportError:
        print("GPU part skipped: PyTorch is not installed", file=sys.stderr)
        return
    if not torch.cuda.is_available() or not parray.built_with_cuda:
        print("GPU part skipped: no CUDA GPU for PyTorch, or parray built without CUDA", file=sys.stderr)
        return
    torch.backends.cuda.matmul.allow_tf32 = False  # torch.matmul at FP32 accuracy, as parray's precision="fp32"
    device = torch.cuda.get_device_name()
    sync = torch.cuda.synchronize
    a, b = (torch.rand((8, 8), device="cuda") + 0.5 for _ in range(2))
    out = torch.empty((8, 8), device="cuda")
    parray.gemm(a, b, out=out)
    check_product(out.cpu().numpy(), a.cpu().numpy(), b.cpu().numpy())
    library = parray._parray.time_library_calls(a.__dlpack__(stream=1), b.__dlpack__(stream=1),
                                                out.__dlpack__(stream=1), None, calls, True)
    per_call = per_call_seconds(lambda: parray.gemm(a, b, out=out), calls // 5, sync)
    rows.append(dict(device=device, what="call overhead 8x8x8 f32 on the GPU, gemm(a, b, out=out)",
                     parray_us=per_call * 1e6, baseline="the same call from C++", baseline_us=library * 1e6,
                     result=f"{(per_call - library) * 1e6:.2f} us over C++ (target <= 10)"))

    n = 4096
    a, b = (torch.rand((n, n), device="cuda") * 2 - 1 for _ in range(2))
    out = torch.empty((n, n), device="cuda")
    parray.matmul(a, b, out=out, precision="fp32")
    check_product(out.cpu().numpy(), a.cpu().numpy(), b.cpu().numpy())
    best = interleaved({"parray": lambda: parray.matmul(a, b, out=out, precision="fp32"),
                        "torch": lambda: torch.matmul(a, b, out=out)}, 20, sync)
    ours, theirs = best["parray"], best["torch"]
    rows.append(dict(device=device, what=f"matmul {n}^3 f32, FP32 accuracy", parray_us=ours * 1e6,
                     baseline="torch.matmul (TF32 off)", baseline_us=theirs * 1e6,
                     result=f"{theirs / ours:.2f}x torch (target >= 1.0; 1.8 with 3xTF32)"))

    n, q, d, k = 1_000_000, 10_000, 128, 100
    generator = torch.Generator(device="cuda").manual_seed(3)
    base = torch.rand((n, d), device="cuda", generator=generator)
    queries = torch.rand((q, d), device="cuda", generator=generator)
    base_norms = (base * base).sum(1)

    def torch_knn():
        found = []
        for start in range(0, q, 1000):  # query tiles: the full 10^4 x 10^6 matrix would take 40 GB
            part = queries[start:start + 1000]
            keys = base_norms[None, :] - 2 * (part @ base.T)
            found.append(torch.topk(keys, k, dim=1, largest=False).indices)
        return torch.cat(found)

    _, indices = parray.knn(base, queries, k)
    truth = torch_knn()
    best = interleaved({"parray": lambda: parray.knn(base, queries, k), "torch": torch_knn}, 3, sync)
    ours, theirs = best["parray"], best["torch"]
    sample = slice(0, 100)  # the exact check in float64 on 100 queries
    exact = torch.cdist(queries[sample].double(), base.double()).topk(k, largest=False).indices
    recall_ours = recall(indices[sample], exact)
    recall_torch = recall(truth[sample], exact)
    rows.append(dict(device=device, what=f"knn {n}x{d}, {q} queries, k={k}", parray_us=ours * 1e6,
                     baseline="torch matmul + topk", baseline_us=theirs * 1e6,
                     result=f"{theirs / ours:.2f}x torch (target >= 2.0), recall {recall_ours:.4f} "
                            f"(torch {recall_torch:.4f}) on 100 queries against float64"))


def recall(found, exact):
    hits = sum(len(set(f.tolist()) & set(e.tolist())) for f, e in zip(found, exact))
    return hits / exact.numel()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1024,2048,4096")
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--stacks", default="256x64,64x512", help="COUNTxN stacks of float32 N x N matrices")
    parser.add_argument("--csv", help="also write the rows to this CSV file")
    parser.add_argument("--calls", type=int, default=100000, help="calls per round of the overhead timings")
    parser.add_argument("--no-gpu", action="store_true")
    args = parser.parse_args()
    rows = []
    cpu_overhead(rows, args.calls)
    cpu_matmul(rows, [int(s) for s in args.sizes.split(",")], [np.dtype(t).type for t in args.dtypes.split(",")])
    cpu_stacks(rows, [tuple(int(x) for x in s.split("x")) for s in args.stacks.split(",") if s])
    if not args.no_gpu:
        gpu_part(rows, args.calls)
    print(f"threads: parray {os.environ.get('OMP_NUM_THREADS', 'all cores')}, NumPy's BLAS its default")
    for r in rows:
        print(f"{r['device']:<28.28} {r['what']:<48} parray {r['parray_us']:>12.2f} us  {r['baseline']:<24} "
              f"{r['baseline_us']:>12.2f} us  {r['result']}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)


if __name__ == "__main__":
    main()
