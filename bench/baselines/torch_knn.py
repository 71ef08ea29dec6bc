#!/usr/bin/env python3
"""PyTorch's exact k-NN on the GPU, the baseline of the exact k-NN.

The same data as parray (written by `parray knn --synthetic N,d,Q --k 1
--save-data PREFIX`), the same method a PyTorch user writes:
    d2 = ||q||^2 + ||x||^2 - 2 q @ x.T   (FP32, TF32 off), torch.topk(k, largest=False)
over query chunks of 2048 (anchors.md's figure), timed with CUDA events (median
of --reps runs after a warm-up), data resident on the GPU. Recall@k is checked
against an FP64 ground truth computed on the GPU from data centered on the
base's mean (so that data far from the origin is ranked right), a returned
neighbour counting when its FP64 distance is within a relative 1e-9 of the
k-th true one (ties count). Also times the GEMV lab report's case (1
query x 1024 x 32, distances + full sort) per call: one call between CUDA
events, and CUDA events around 2000 back-to-back calls (as parray dist does).

Output: CSV rows impl,device,metric,n,d,q,k,threads,ms,qps,recall,ok,note
"""
import argparse
import sys

import numpy as np
import torch


def read_fvecs(path):
    raw = np.fromfile(path, dtype=np.int32)
    if raw.size == 0:
        sys.exit(f"torch_knn: {path} is empty")
    d = int(raw[0])
    if d <= 0 or raw.size % (d + 1) != 0:
        sys.exit(f"torch_knn: {path} is not a whole number of dimension-{d} records")
    rec = raw.reshape(-1, d + 1)
    if not (rec[:, 0] == d).all():
        sys.exit(f"torch_knn: {path} has records of different dimensions")
    return rec[:, 1:].copy().view(np.float32)


def knn_torch(base, bn, queries, k, chunk):
    out_d, out_i = [], []
    for s in range(0, queries.shape[0], chunk):
        q = queries[s:s + chunk]
        d2 = (q * q).sum(1, keepdim=True) + bn[None, :] - 2.0 * (q @ base.T)
        d2.clamp_(min=0)
        v, i = torch.topk(d2, k, dim=1, largest=False, sorted=True)
        out_d.append(v)
        out_i.append(i)
    return torch.cat(out_d), torch.cat(out_i)


def ground_truth_kth(base, queries, k, chunk):
    """k-th smallest squared distance per query, FP64 on the GPU, centered."""
    mu = base.double().mean(0)
    b64 = base.double() - mu
    bn = (b64 * b64).sum(1)
    kth = []
    for s in range(0, queries.shape[0], chunk):
        q = queries[s:s + chunk].double() - mu
        d2 = (q * q).sum(1, keepdim=True) + bn[None, :] - 2.0 * (q @ b64.T)
        kth.append(torch.topk(d2, k, dim=1, largest=False, sorted=True).values[:, -1])
    return torch.cat(kth)


def recall(base, queries, idx, kth):
    hits = 0
    for s in range(0, queries.shape[0], 1024):
        q = queries[s:s + 1024].double()
        x = base[idx[s:s + 1024]].double()  # (chunk, k, d)
        d = ((x - q[:, None, :]) ** 2).sum(2)
        limit = kth[s:s + 1024, None] * (1 + 1e-9)
        hits += int((d <= limit).sum())
    return hits / idx.numel()


def time_ms(fn, reps):
    fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="PREFIX of PREFIX_base.fvecs / PREFIX_queries.fvecs")
    p.add_argument("--k", default="10,100")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--chunk", type=int, default=2048)
    p.add_argument("--lab-case", action="store_true", help="also time 1 query x 1024 x 32 + full sort")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    base = torch.from_numpy(read_fvecs(a.data + "_base.fvecs")).to(dev)
    queries = torch.from_numpy(read_fvecs(a.data + "_queries.fvecs")).to(dev)
    if base.shape[1] != queries.shape[1]:
        sys.exit("torch_knn: base and queries differ in dimension")
    n, d = base.shape
    q = queries.shape[0]
    name = torch.cuda.get_device_name(0)
    print("impl,device,metric,n,d,q,k,threads,ms,qps,recall,ok,note")
    for k in [int(s) for s in a.k.split(",")]:
        bn = (base * base).sum(1)
        ms = time_ms(lambda: knn_torch(base, (base * base).sum(1), queries, k, a.chunk), a.reps)
        _, idx = knn_torch(base, bn, queries, k, a.chunk)
        kth = ground_truth_kth(base, queries, k, a.chunk)
        r = recall(base, queries, idx, kth)
        print(f"torch-matmul-topk,gpu,l2,{n},{d},{q},{k},1,{ms:.4f},{q / (ms * 1e-3):.1f},{r:.6f},{int(r >= 1.0)},"
              f"\"{name}; torch {torch.__version__}; FP32 no TF32; chunks of {a.chunk}\"", flush=True)
    if a.lab_case:
        g = torch.Generator(device="cpu").manual_seed(1)
        x = (torch.rand(1024, 32, generator=g) * 2 - 1).to(dev)
        qv = (torch.rand(1, 32, generator=g) * 2 - 1).to(dev)
        lab_call = lambda: torch.sort(((x - qv) ** 2).sum(1))
        ms = time_ms(lab_call, 200)
        print(f"torch-dist-sort,gpu,l2,1024,32,1,1024,1,{ms:.5f},{1 / (ms * 1e-3):.1f},1.0,1,"
              f"\"the GEMV lab report's case: distances + torch.sort, one call between CUDA events (median of 200)\"", flush=True)
        calls = 2000
        a_ev, b_ev = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a_ev.record()
        for _ in range(calls):
            lab_call()
        b_ev.record()
        torch.cuda.synchronize()
        ms = a_ev.elapsed_time(b_ev) / calls
        print(f"torch-dist-sort-b2b,gpu,l2,1024,32,1,1024,1,{ms:.5f},{1 / (ms * 1e-3):.1f},1.0,1,"
              f"\"the GEMV lab report's case: CUDA events around {calls} back-to-back calls, per call\"", flush=True)


if __name__ == "__main__":
    main()
