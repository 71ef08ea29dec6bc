#!/usr/bin/env python3
"""Host time per call of PyTorch operators made in Python, at 64^3 on the GPU: where parray.torch's operator
overhead goes, and what a Python-defined operator costs at all.

    python3 python/bench/torch_op_overhead.py [--csv FILE]

Timed in turn, each a median over 7 runs of 2000 back-to-back calls (synchronised at the end): torch.matmul
(PyTorch's own C++ operator), parray.matmul (parray's module, no operator), torch.ops.parray.matmul (the
operator), and probe operators whose Python kernels only allocate the result: from torch.library.custom_op
with and without a registered gradient, from torch.library.Library with no autograd kernel and with a
hand-written one.
"""
import argparse
import csv
import statistics
import time

import torch

import parray
import parray.torch  # noqa: F401  (registers torch.ops.parray.*)


def per_call_us(call, calls=2000, repeats=7):
    for _ in range(200):
        call()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(samples)


def probes():
    @torch.library.custom_op("parray_probe::plain", mutates_args=())
    def plain(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_empty((a.shape[0], b.shape[1]))

    @torch.library.custom_op("parray_probe::with_grad", mutates_args=())
    def with_grad(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a.new_empty((a.shape[0], b.shape[1]))

    with_grad.register_autograd(lambda ctx, g: (g, g), setup_context=lambda ctx, inputs, output: None)
    lib = torch.library.Library("parray_probe", "FRAGMENT")
    lib.define("raw(Tensor a, Tensor b) -> Tensor")
    lib.impl("raw", lambda a, b: a.new_empty((a.shape[0], b.shape[1])), "CUDA")
    # The same with a hand-written Autograd kernel that passes a call needing no gradient straight below
    # autograd (custom_op's does the same through a generic pytree walk).
    lib.define("thin(Tensor a, Tensor b) -> Tensor")
    lib.impl("thin", lambda a, b: a.new_empty((a.shape[0], b.shape[1])), "CUDA")
    below = torch._C._after_autograd_keyset
    thin = torch.ops.parray_probe.thin.default

    def thin_autograd(keyset, a, b):
        if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad):
            raise NotImplementedError("a probe without a gradient")
        return thin.redispatch(keyset & below, a, b)

    lib.impl("thin", thin_autograd, "Autograd", with_keyset=True)
    probes.library = lib  # kept alive with the operators
    return {"probe custom_op, no gradient": torch.ops.parray_probe.plain,
            "probe custom_op, gradient registered": torch.ops.parray_probe.with_grad,
            "probe Library.impl (CUDA kernel only)": torch.ops.parray_probe.raw,
            "probe Library.impl + thin Autograd kernel": torch.ops.parray_probe.thin}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv")
    args = ap.parse_args()
    a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
    calls = {"torch.matmul": lambda: torch.matmul(a, b), "parray.matmul": lambda: parray.matmul(a, b),
             "torch.ops.parray.matmul": lambda: torch.ops.parray.matmul(a, b),
             "a.new_empty": lambda: a.new_empty((64, 64))}
    calls.update({name: (lambda op=op: op(a, b)) for name, op in probes().items()})
    device = torch.cuda.get_device_name()
    print(f"parray.torch's matmul and gemm: {parray.torch.OPERATORS}-defined operators")
    rows = [(device, name, per_call_us(call)) for name, call in calls.items()]
    for _, name, us in rows:
        print(f"{name:40s} {us:8.2f} us")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["device", "call", "us_per_call"])
            w.writerows((d, n, f"{us:.3f}") for d, n, us in rows)


if __name__ == "__main__":
    main()
