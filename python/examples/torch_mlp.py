#!/usr/bin/env python3
"""An MLP trained in FP32 through parray (parray.torch.use_parray) beside PyTorch's FP32 and TF32 matmuls.

    python3 python/examples/torch_mlp.py [--width 4096] [--layers 4] [--batch 4096] [--steps 300]
                                         [--csv bench/results/NAME.csv]

The three runs start from one initialisation and see the same synthetic regression data (a random teacher
network); each step is forward, backward and an SGD update. Printed and written as CSV: the loss of every
step of every run, and each run's median step time (CUDA events, after warm-up steps that are not timed).
parray's FP32-accurate GEMM (3xTF32 on the tensor cores) should give PyTorch FP32's loss curve within
round-off, at about the speed of its TF32 one. The operator's host cost per call is measured by
python/bench/torch_op_overhead.py.
"""
import argparse
import copy
import csv
import statistics

import torch

import parray
import parray.torch as pt


def make_model(width, layers, device):
    torch.manual_seed(1)
    parts = []
    for i in range(layers):
        parts.append(torch.nn.Linear(width, width))
        if i + 1 < layers:
            parts.append(torch.nn.ReLU())
    return torch.nn.Sequential(*parts).to(device)


def make_data(width, batch, device):
    g = torch.Generator(device=device).manual_seed(2)
    x = torch.randn(batch, width, device=device, generator=g)
    teacher = torch.randn(width, width, device=device, generator=g) / width ** 0.5
    return x, torch.tanh(x @ teacher)


def train(model, x, y, steps, warmup, lr):
    """Losses of every step and the median time of the steps after warm-up (ms)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses, times = [], []
    for step in range(steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        stop.record()
        losses.append(loss.detach())
        if step >= warmup:
            times.append((start, stop))
    torch.cuda.synchronize()
    return [float(v) for v in losses], statistics.median(s.elapsed_time(e) for s, e in times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--csv", help="where to write the losses and step times")
    args = parser.parse_args()
    if not torch.cuda.is_available() or not parray.built_with_cuda:
        raise SystemExit("torch_mlp: needs a CUDA GPU and parray built with CUDA")

    x, y = make_data(args.width, args.batch, "cuda")
    initial = make_model(args.width, args.layers, "cuda")
    runs = {}
    for name in ("parray-fp32", "torch-fp32", "torch-tf32"):
        torch.backends.cuda.matmul.allow_tf32 = name == "torch-tf32"
        model = copy.deepcopy(initial)
        if name == "parray-fp32":
            pt.use_parray(model)
        runs[name] = train(model, x, y, args.steps, args.warmup, args.lr)
    torch.backends.cuda.matmul.allow_tf32 = False

    device = torch.cuda.get_device_name()
    reference = runs["torch-fp32"][0]
    print(f"{device}: {args.layers} x Linear {args.width}, batch {args.batch}, {args.steps} SGD steps")
    for name, (losses, ms) in runs.items():
        drift = max(abs(a - b) / abs(b) for a, b in zip(losses, reference))
        print(f"  {name:12s} step {ms:8.3f} ms  ({runs['torch-fp32'][1] / ms:5.2f}x torch-fp32)  "
              f"loss {losses[0]:.6f} -> {losses[-1]:.6f}  max rel. diff. to torch-fp32 {drift:.2e}")
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["device", "run", "step", "loss", "median_step_ms", "width", "layers", "batch"])
            for name, (losses, ms) in runs.items():
                for step, loss in enumerate(losses):
                    w.writerow([device, name, step, f"{loss:.9g}", f"{ms:.4f}", args.width, args.layers, args.batch])


if __name__ == "__main__":
    main()
