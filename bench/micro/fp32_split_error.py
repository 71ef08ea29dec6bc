#!/usr/bin/env python3
"""bench/micro/fp32_split_error.py [--csv F]: the error of ways to reach FP32 accuracy on the tensor
cores, simulated on the CPU, against the FP32 verifier's tolerances (docs/verification.md).

A tensor core multiplies narrow inputs exactly (their products fit FP32) and adds each
instruction's products (8 of K for TF32, 16 for BF16; modelled as exact) to its FP32 sum by
truncation; the step-15 kernels add 256 of K that way before the sum joins an FP32 accumulator
rounded to nearest. Every scheme below is simulated so, inputs split on the host as
the split pass would:

  fp32        an FP32 GEMM: one fused multiply-add per product, rounded to nearest (the reference)
  3xtf32      big = tf32(x) (nearest, ties away: cvt.rna), small = tf32(x - big);
              big*big + big*small + small*big (three TF32 products: what step 15 runs)
  tf32+2bf16  big = tf32(x), small = bf16(x - big); big*big in TF32, bf16(big)*small and
              small*bf16(big) in BF16 (one TF32 and two BF16 products: BF16 runs at twice TF32's
              rate, so the time of two TF32 products instead of three), as step 21 runs them:
              the TF32 product promoted every 256 of K, the cross terms one BF16 GEMM over 2K
              summed in the tensor cores throughout, the two added in FP32
  6xbf16      x = x0 + x1 + x2, each bf16 of what is left; the six products of order <= 2^-16 (the
              time of three TF32 products)
  int8xS      integer slices (Ozaki's scheme): each row of A (column of B) scaled by a power of two
              to at most 1 in magnitude, then cut into S signed 7-bit slices (x = sum_s 2^(1-7s) q_s,
              |q_s| <= 64, each the rounding of what is left); the products q_s q_t with s + t <= S + 1
              are exact in INT32 (INT8 tensor cores, four times TF32's rate on Hopper), scaled back
              and added in FP32: S = 3, 4, 5 take 6, 10, 15 products, the time of 1.5, 2.5, 3.75
              TF32 products

Data (M = N = 48): uniform [-1, 1); offset 1000 + [-1, 1); wide exponents (sign x [1, 2) x 2^e,
e uniform in [-40, 40]); tiny (half the values scaled by 2^-40..2^-30: their products with
the others fall far below the big parts' roundings).
For each scheme, data set and K: the relative Frobenius error over tol(K) = 4u(sqrt(K) + 4) and the
largest element error over 2 (K + 4) u (|A||B|)_ij, u = 2^-24: a scheme passes where both are <= 1.
Prints a CSV (or writes --csv F). Needs NumPy.
"""
import argparse
import sys

import numpy as np

U = 2.0 ** -24


def round_mantissa(x, bits):
    """x (float32 array) rounded to `bits` explicit mantissa bits, nearest, ties away from zero
    (cvt.rna); zero below FP32's smallest normal, as the tensor cores see such inputs."""
    x = np.asarray(x, dtype=np.float32)
    drop = 23 - bits
    i = x.view(np.uint32).astype(np.uint64)
    half = np.uint64(1 << (drop - 1))
    mask = np.uint64(~((1 << drop) - 1) & 0xFFFFFFFF)
    r = ((i + half) & mask).astype(np.uint32).view(np.float32)
    r = np.where(np.isfinite(x), r, x)
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.float32(0), r).astype(np.float32)


def bf16_nearest_even(x):
    """x rounded to BF16 (nearest, ties to even), as a conversion on the CUDA cores does it."""
    x = np.asarray(x, dtype=np.float32)
    i = x.view(np.uint32).astype(np.uint64)
    lsb = (i >> np.uint64(16)) & np.uint64(1)
    r = ((i + np.uint64(0x7FFF) + lsb) & np.uint64(0xFFFF0000)).astype(np.uint32).view(np.float32)
    r = np.where(np.isfinite(x), r, x)
    return np.where(np.abs(x) < np.float32(2.0 ** -126), np.float32(0), r).astype(np.float32)


def tf32(x):
    return round_mantissa(x, 10)


def add_toward_zero(acc, v):
    """acc + v in FP32, truncated (acc, v float32 arrays)."""
    exact = acc.astype(np.float64) + v.astype(np.float64)
    f = exact.astype(np.float32)
    over = np.abs(f.astype(np.float64)) > np.abs(exact)
    return np.where(over, np.nextafter(f, np.float32(0)), f).astype(np.float32)


def tensor_core_gemm(pairs, k, promote=256):
    """sum over the (A part, B part, instruction K) triples of A_part @ B_part as the kernel adds
    them: each wgmma's products over its K (8 for TF32, 16 for BF16) summed exactly and added to
    the partial sum truncated to FP32; the partial sums of 256 of K added to an FP32 accumulator
    rounded to nearest."""
    m, n = pairs[0][0].shape[0], pairs[0][1].shape[1]
    acc = np.zeros((m, n), np.float32)
    for k0 in range(0, k, promote):
        part = np.zeros((m, n), np.float32)
        for s0 in range(k0, min(k, k0 + promote), 16):
            for a, b, step in pairs:
                for t0 in range(s0, min(k, s0 + 16), step):
                    t1 = min(k, t0 + step)
                    dot = a[:, t0:t1].astype(np.float64) @ b[t0:t1, :].astype(np.float64)
                    part = add_toward_zero(part, dot)
        acc = (acc + part).astype(np.float32)
    return acc


def fp32_gemm(a, b, k):
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for kk in range(k):
        acc = (acc.astype(np.float64) + a[:, kk:kk + 1].astype(np.float64) * b[kk:kk + 1, :]).astype(np.float32)
    return acc


def split3(x, first, rest):
    big = first(x)
    small = np.where(np.isfinite(big), rest((x - big).astype(np.float32)), np.float32(0)).astype(np.float32)
    return big, small


def scheme(name, a, b, k):
    if name == "fp32":
        return fp32_gemm(a, b, k)
    if name == "3xtf32":
        ab, as_ = split3(a, tf32, tf32)
        bb, bs = split3(b, tf32, tf32)
        return tensor_core_gemm([(ab, bb, 8), (ab, bs, 8), (as_, bb, 8)], k)
    if name == "tf32+2bf16":
        # as step 21 runs it: the TF32 product with its sums promoted every 256 of K, then the cross
        # terms as one BF16 GEMM over 2K summed in the tensor cores throughout, added to C in FP32
        ab, as_ = split3(a, tf32, bf16_nearest_even)
        bb, bs = split3(b, tf32, bf16_nearest_even)
        big = tensor_core_gemm([(ab, bb, 8)], k)
        cat_a = np.concatenate([bf16_nearest_even(ab), as_], axis=1)
        cat_b = np.concatenate([bs, bf16_nearest_even(bb)], axis=0)
        cross = tensor_core_gemm([(cat_a, cat_b, 16)], 2 * k, promote=2 * k)
        return (big.astype(np.float64) + cross.astype(np.float64)).astype(np.float32)
    if name == "6xbf16":
        def three(x):
            x0 = bf16_nearest_even(x)
            x1 = bf16_nearest_even((x - x0).astype(np.float32))
            x2 = bf16_nearest_even((x - x0 - x1).astype(np.float32))
            return x0, x1, x2
        a0, a1, a2 = three(a)
        b0, b1, b2 = three(b)
        return tensor_core_gemm([(a0, b0, 16), (a0, b1, 16), (a1, b0, 16), (a0, b2, 16), (a1, b1, 16), (a2, b0, 16)], k)
    if name.startswith("int8x"):
        return int8_scheme(a, b, k, int(name[5:]))
    raise ValueError(name)


def int8_slices(x, count, axis):
    """x (float32) as `count` slices of signed integers |q| <= 64 along rows (axis 1: one scale
    per row) or columns (axis 0), x ~= scale * sum_s 2^(1 - 7s) q_s, and the power-of-two scale."""
    x = x.astype(np.float64)
    top = np.max(np.abs(x), axis=axis, keepdims=True)
    scale = 2.0 ** np.ceil(np.log2(np.where(top > 0, top, 1.0)))
    rest = x / scale
    slices = []
    for s in range(1, count + 1):
        q = np.rint(rest * 2.0 ** (7 * s - 1))  # |rest| <= 2^-(7s - 6): |q| <= 64
        slices.append(q)
        rest = rest - q * 2.0 ** (1 - 7 * s)
    return slices, scale


def int8_scheme(a, b, k, count):
    """Ozaki's integer slices: every product q_s(A) q_t(B) with s + t <= count + 1, exact (as an
    INT32 sum of INT8 products is), scaled back and added to an FP32 accumulator rounded to
    nearest, the smallest terms first."""
    qa, sa = int8_slices(a, count, 1)
    qb, sb = int8_slices(b, count, 0)
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    pairs = [(s, t) for s in range(1, count + 1) for t in range(1, count + 1) if s + t <= count + 1]
    for s, t in sorted(pairs, key=lambda p: -(p[0] + p[1])):
        exact = (qa[s - 1] @ qb[t - 1]) * 2.0 ** (2 - 7 * (s + t))  # an INT32 sum: exact
        acc = (acc.astype(np.float64) + (exact * sa * sb).astype(np.float32)).astype(np.float32)
    return acc


def data(kind, rows, cols, rng):
    if kind == "uniform":
        return rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    if kind == "offset":
        return (1000 + rng.uniform(-1, 1, (rows, cols))).astype(np.float32)
    if kind == "wide":
        e = rng.integers(-40, 41, (rows, cols))
        return (rng.choice([-1.0, 1.0], (rows, cols)) * rng.uniform(1, 2, (rows, cols)) * 2.0 ** e).astype(np.float32)
    if kind == "tiny":
        x = rng.uniform(-1, 1, (rows, cols))
        tiny = rng.random((rows, cols)) < 0.5
        x[tiny] *= 2.0 ** rng.integers(-40, -29, tiny.sum())
        return x.astype(np.float32)
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv", help="write the table here instead of standard output")
    ap.add_argument("--ks", default="1,4,16,64,256,2048", help="values of K, comma list")
    ap.add_argument("--size", type=int, default=48, help="M = N")
    args = ap.parse_args()
    try:
        ks = [int(v) for v in args.ks.split(",")]
        if not ks or min(ks) < 1 or args.size < 1:
            raise ValueError
    except ValueError:
        print("fp32_split_error: --ks takes positive integers, --size a positive integer", file=sys.stderr)
        return 2
    rng = np.random.default_rng(5)
    lines = ["scheme,data,k,rel_frobenius,frob_over_tol,worst_element_over_bound"]
    for kind in ("uniform", "offset", "wide", "tiny"):
        for k in ks:
            a, b = data(kind, args.size, k, rng), data(kind, k, args.size, rng)
            ref = a.astype(np.float64) @ b.astype(np.float64)
            bound = 2 * (k + 4) * U * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
            tol = 4 * U * (np.sqrt(k) + 4)
            for name in ("fp32", "3xtf32", "tf32+2bf16", "6xbf16", "int8x3", "int8x4", "int8x5"):
                c = scheme(name, a, b, k).astype(np.float64)
                rel = np.linalg.norm(c - ref) / np.linalg.norm(ref)
                worst = np.max(np.abs(c - ref) / np.where(bound > 0, bound, np.inf))
                lines.append(f"{name},{kind},{k},{rel:.3e},{rel / tol:.3f},{worst:.3f}")
    text = "\n".join(lines) + "\n"
    if args.csv:
        with open(args.csv, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
