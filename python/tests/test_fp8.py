"""parray.matmul8 on float8 PyTorch CUDA tensors: per-tensor and block scales, every FP8 pair and output type,
against the FP64 product of the dequantised inputs (docs/verification.md, "FP8 data"); the caller's stream; the
errors. Skips where PyTorch (with float8 dtypes), a CUDA build of parray or a Hopper GPU is missing."""
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
import parray  # noqa: E402

if not hasattr(torch, "float8_e4m3fn"):
    pytest.skip("this PyTorch has no float8 dtypes", allow_module_level=True)
if not (parray.built_with_cuda and torch.cuda.is_available()):
    pytest.skip("parray was built without CUDA, or PyTorch sees no GPU", allow_module_level=True)
if torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("FP8 step 20 needs a Hopper GPU (compute capability 9.x)", allow_module_level=True)

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2
ROUNDOFF = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-24}


def operands(m, k, n, ta, tb, blockwise, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = ((torch.rand(m, k, generator=g) * 2 - 1) * 8).to(ta).cuda()
    b = ((torch.rand(n, k, generator=g) * 2 - 1) * 8).to(tb).cuda().t()  # (K, N), column-major
    if not blockwise:
        return a, b, torch.tensor([0.75], device="cuda"), torch.tensor([1.25], device="cuda")
    kb, nb = -(-k // 128), -(-n // 128)

    def scales(rows, cols):  # (1 + j/16) 2^e, e <= 0: exact products with FP8 values, float16 sums in range
        return torch.ldexp(1 + torch.randint(0, 16, (rows, cols), generator=g) / 16,
                           torch.randint(-4, 1, (rows, cols), generator=g)).float().cuda()
    return a, b, scales(kb, m).t(), scales(kb, nb)  # scale_a (M, kb) column-major, scale_b (kb, nb) row-major


def dequantised(x, scale, rows_per_scale, cols_per_scale):
    x = x.double().cpu()
    if scale.numel() == 1:
        return x * scale.double().cpu().item()
    s = scale.double().cpu().repeat_interleave(rows_per_scale, 0).repeat_interleave(cols_per_scale, 1)
    return x * s[:x.shape[0], :x.shape[1]]


def check(out, a, b, sa, sb, alpha=1.0, beta=0.0, c0=None):
    want = alpha * dequantised(a, sa, 1, 128) @ dequantised(b, sb, 128, 128)
    if c0 is not None:
        want += beta * c0.double().cpu()
    got = out.double().cpu()
    assert torch.isfinite(got).all()
    rel = ((got - want).norm() / want.norm()).item()
    assert rel <= 2.0**-9 + 2 * ROUNDOFF[out.dtype], rel


@pytest.mark.parametrize("ta,tb", [(E4M3, E4M3), (E4M3, E5M2), (E5M2, E5M2)])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("blockwise", [False, True])
@pytest.mark.parametrize("shape", [(256, 384, 128), (100, 272, 300), (1, 64, 33)])
def test_matches_dequantised_fp64_product(ta, tb, out_dtype, blockwise, shape):
    m, k, n = shape
    a, b, sa, sb = operands(m, k, n, ta, tb, blockwise)
    out = parray.matmul8(a, b, sa, sb, out_dtype=out_dtype)
    assert out.shape == (m, n) and out.dtype == out_dtype
    check(out, a, b, sa, sb)


def test_alpha_beta_and_out():
    a, b, sa, sb = operands(128, 256, 192, E4M3, E4M3, True, seed=3)
    c0 = torch.rand(128, 192, dtype=torch.float32, device="cuda")
    out = c0.clone()
    assert parray.matmul8(a, b, sa, sb, out=out, alpha=1.5, beta=-0.5) is out
    check(out, a, b, sa, sb, 1.5, -0.5, c0)


def test_cublaslt_baseline_agrees():
    a, b, sa, sb = operands(256, 512, 256, E4M3, E4M3, False, seed=5)
    check(parray.matmul8(a, b, sa, sb, impl="cublaslt"), a, b, sa, sb)


def test_runs_on_the_callers_stream():
    a, b, sa, sb = operands(512, 1024, 512, E4M3, E4M3, False, seed=9)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        out = torch.full((512, 512), float("nan"), dtype=torch.bfloat16, device="cuda")
        parray.matmul8(a, b, sa, sb, out=out)
    side.synchronize()
    check(out, a, b, sa, sb)


def test_errors_name_the_argument():
    a, b, sa, sb = operands(64, 128, 64, E4M3, E4M3, False)
    with pytest.raises(TypeError, match="^a: dtype"):
        parray.matmul8(a.float(), b, sa, sb)
    with pytest.raises(ValueError, match="^b: must be column-major"):
        parray.matmul8(a, b.contiguous(), sa, sb)
    with pytest.raises(ValueError, match="^b: has 100 rows"):
        parray.matmul8(a, b[:100], sa, sb)
    with pytest.raises(TypeError, match="^scale_a: dtype"):
        parray.matmul8(a, b, sa.double(), sb)
    with pytest.raises(ValueError, match="^scale_b: is on cpu"):
        parray.matmul8(a, b, sa, sb.cpu())
    with pytest.raises(ValueError, match="^scale_a: blockwise scales"):
        parray.matmul8(a, b, torch.ones(64, 2, device="cuda"), torch.ones(1, 1, device="cuda"))
    with pytest.raises(TypeError, match="^out: dtype"):
        parray.matmul8(a, b, sa, sb, out=torch.empty(64, 64, dtype=torch.float64, device="cuda"))
    with pytest.raises(TypeError, match="^a: a ndarray"):
        parray.matmul8(a.cpu().float().numpy(), b, sa, sb)
    with pytest.raises(ValueError, match="16-byte aligned"):
        parray.matmul8(a[:, 8:], b[8:], sa, sb)  # rows of a start 8 bytes in
