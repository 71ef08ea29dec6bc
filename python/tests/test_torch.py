"""parray inside PyTorch programs (parray.torch): the operators against an FP64 reference, their fake kernels
and registration (torch.library.opcheck), gradients (gradcheck in FP64, torch.matmul's in FP32),
torch.compile(fullgraph=True), the Linear layer and the switches, and the errors a PyTorch user expects.
Skips where PyTorch 2.4 or later is not installed; the CUDA cases where parray or PyTorch has no GPU."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pt = pytest.importorskip("parray.torch", reason="parray.torch needs PyTorch 2.4 or later")
import parray  # noqa: E402
from conftest import assert_gemm_close  # noqa: E402

HAVE_CUDA = parray.built_with_cuda and torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA build or GPU"))]
needs_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="parray was built without CUDA, or PyTorch sees no GPU")
# The default GPU GEMM may run 3xTF32, FP32-accurate within a small factor of the FP32 bound.
SLACK = 8


def rand(shape, device, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed + 7 * len(shape) + sum(shape))
    x = torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1  # never zeros in practice, signs mixed
    return x.to(dtype).to(device)


def reference(a, b):
    return torch.matmul(a.double().cpu(), b.double().cpu())


def assert_matmul_close(got, a, b, slack=SLACK):
    want = reference(a, b)
    scale = torch.matmul(a.double().abs().cpu(), b.double().abs().cpu())
    k = a.shape[-1]
    eps = torch.finfo(got.dtype).eps
    assert got.shape == want.shape and got.dtype == a.dtype and got.device == a.device
    got64 = got.double().cpu()
    assert torch.isfinite(got64).all()
    assert ((got64 - want).abs() <= slack * (k + 2) * eps * scale + 1e-30).all()


# (a shape, b shape): matrices, vectors, stacks with NumPy broadcasting
SHAPES = [((37, 29), (29, 41)), ((29,), (29, 41)), ((37, 29), (29,)), ((29,), (29,)), ((5, 17, 9), (5, 9, 13)),
          ((5, 17, 9), (9, 13)), ((17, 9), (3, 9, 13)), ((2, 1, 17, 9), (3, 9, 13)), ((4, 17, 9), (9,)),
          ((9,), (4, 9, 13)), ((0, 17, 9), (9, 13)), ((17, 0), (0, 13))]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shapes", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_matmul_as_torch_matmul(device, dtype, shapes):
    a, b = rand(shapes[0], device, dtype), rand(shapes[1], device, dtype, seed=1)
    got = torch.ops.parray.matmul(a, b)
    if a.shape[-1] == 0:
        assert got.shape == torch.matmul(a, b).shape and (got == 0).all()
        return
    assert_matmul_close(got, a, b)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_reads_strided_views_in_place(device):
    base = rand((70, 90), device)
    a = base[1:60:2, 3:80:3]  # every 2nd row, every 3rd column
    b = rand((40, 26), device).t()[:, 3:]  # transposed, offset
    assert_matmul_close(pt.matmul(a, b[: a.shape[1]]), a, b[: a.shape[1]])
    stack = rand((6, 20, 30), device).transpose(-1, -2)[::2]  # transposed matrices, every 2nd of the stack
    w = rand((1, 20, 11), device).expand(3, 20, 11)  # a batch dimension of stride 0
    assert_matmul_close(pt.matmul(stack, w), stack, w)
    row = rand((1, 30), device).expand(20, 30)  # a matrix dimension of stride 0
    assert_matmul_close(pt.matmul(row, rand((30, 7), device)), row, rand((30, 7), device))


@pytest.mark.parametrize("device", DEVICES)
def test_gemm_alpha_beta_and_c_unchanged(device):
    a, b, c = rand((33, 21), device), rand((21, 19), device, seed=1), rand((33, 19), device, seed=2)
    c_before = c.clone()
    got = pt.gemm(a, b, c, alpha=-1.5, beta=0.5)
    assert torch.equal(c, c_before)
    assert_gemm_close(got.cpu().numpy(), a.cpu().numpy(), b.cpu().numpy(), -1.5, 0.5, c.cpu().numpy(), slack=SLACK)
    c_nan = torch.full_like(c, float("nan"))
    assert torch.isfinite(pt.gemm(a, b, c_nan, beta=0.0)).all()  # beta 0: c is not read


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("shapes", [((64, 48), (48, 80)), ((6, 40, 24), (24, 56)), ((3, 1, 40, 24), (2, 24, 56)),
                                    ((24,), (24, 56))], ids=lambda s: f"{s[0]}x{s[1]}")
def test_matmul_16bit(dtype, shapes):
    a, b = rand(shapes[0], "cuda", dtype), rand(shapes[1], "cuda", dtype, seed=1)
    got = pt.matmul(a, b)
    assert got.dtype == dtype and got.shape == torch.matmul(a, b).shape
    want = reference(a, b)  # of the 16-bit inputs themselves: the products are exact in FP32
    scale = torch.matmul(a.double().abs().cpu(), b.double().abs().cpu())
    unit = torch.finfo(dtype).eps  # the result's rounding to 16 bits dominates
    assert ((got.double().cpu() - want).abs() <= unit * scale + 1e-6).all()


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    """Schema, fake kernel, autograd registration and dispatch as torch.library.opcheck tests them."""
    samples = [(rand((9, 7), device, torch.float64), rand((7, 5), device, torch.float64, 1)),
               (rand((3, 9, 7), device), rand((7,), device, seed=1)),
               (rand((7,), device, torch.float64), rand((2, 7, 5), device, torch.float64, 1))]
    for a, b in samples:
        torch.library.opcheck(torch.ops.parray.matmul.default, (a.requires_grad_(), b.requires_grad_()))
    a, b, c = rand((9, 7), device), rand((7, 5), device, seed=1), rand((9, 5), device, seed=2)
    torch.library.opcheck(torch.ops.parray.gemm.default, (a, b, c, 2.0, 0.5))
    torch.library.opcheck(torch.ops.parray.knn.default, (rand((50, 8), device), rand((6, 8), device, seed=1), 4))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [((6, 5), (5, 4)), ((5,), (5, 4)), ((2, 6, 5), (5,)), ((3, 1, 6, 5), (2, 5, 4))],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_gradcheck_fp64(device, shapes):
    a = rand(shapes[0], device, torch.float64).requires_grad_()
    b = rand(shapes[1], device, torch.float64, seed=1).requires_grad_()
    assert torch.autograd.gradcheck(pt.matmul, (a, b))
    c = rand((6, 4), device, torch.float64, seed=2).requires_grad_()
    a2, b2 = rand((6, 5), device, torch.float64).requires_grad_(), rand((5, 4), device, torch.float64).requires_grad_()
    assert torch.autograd.gradcheck(lambda x, y, z: pt.gemm(x, y, z, alpha=-0.5, beta=2.0), (a2, b2, c))


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_match_torch_fp32(device):
    torch.backends.cuda.matmul.allow_tf32 = False
    a = rand((4, 70, 50), device).requires_grad_()
    b = rand((50, 30), device, seed=1).requires_grad_()
    weight = rand((4, 70, 30), device, seed=2)
    (pt.matmul(a, b) * weight).sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    (torch.matmul(a, b) * weight).sum().backward()
    for got, want in ((ga, a.grad), (gb, b.grad)):
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item())


def _mlp(device):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16)).to(device)


@pytest.mark.parametrize("device", DEVICES)
def test_use_parray_shares_parameters_and_agrees(device):
    model = _mlp(device)
    x = rand((10, 3, 32), device)
    want = model(x)
    weights = [p.data_ptr() for p in model.parameters()]
    pt.use_parray(model)
    assert all(isinstance(m, pt.Linear) for m in (model[0], model[2]))
    assert [p.data_ptr() for p in model.parameters()] == weights
    assert torch.allclose(model(x), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_on_parray_routes_the_calls(device, monkeypatch):
    calls = []
    real = pt._matmul_op
    monkeypatch.setattr(pt, "_matmul_op", lambda *args: calls.append(1) or real(*args))
    a, b = rand((12, 8), device), rand((8, 5), device, seed=1)
    layer = torch.nn.Linear(8, 3).to(device)
    with pt.matmul_on_parray():
        results = [torch.matmul(a, b), a @ b, torch.mm(a, b), layer(a)]
        torch.matmul(a, b, out=torch.empty(12, 5, device=device))  # with out=: PyTorch's own
    assert len(calls) == 4
    for got in results[:3]:
        assert_matmul_close(got, a, b)
    assert torch.allclose(results[3], torch.nn.functional.linear(a, layer.weight, layer.bias), rtol=1e-4, atol=1e-5)


@needs_cuda
def test_compile_fullgraph_equals_eager():
    model = pt.use_parray(_mlp("cuda"))
    x = rand((64, 32), "cuda")
    compiled = torch.compile(model, fullgraph=True)
    assert torch.allclose(compiled(x), model(x), rtol=1e-5, atol=1e-6)
    loss = compiled(x).square().mean()
    loss.backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())


@pytest.mark.parametrize("device", DEVICES)
def test_knn_exact(device):
    base, queries = rand((300, 16), device), rand((20, 16), device, seed=1)
    distances, indices = pt.knn(base, queries, 5)
    assert distances.device == base.device and indices.dtype == torch.int64 and tuple(indices.shape) == (20, 5)
    want = torch.cdist(queries.double().cpu(), base.double().cpu()).square().topk(5, largest=False)
    assert torch.equal(indices.cpu(), want.indices)
    assert torch.allclose(distances.double().cpu(), want.values, rtol=1e-4, atol=1e-5)


def test_errors_name_the_argument():
    a, b = rand((4, 3), "cpu"), rand((3, 5), "cpu")
    with pytest.raises(TypeError, match="^a: dtype torch.int64"):
        pt.matmul(a.long(), b)
    with pytest.raises(TypeError, match="^b: dtype torch.float64 differs"):
        pt.matmul(a, b.double())
    with pytest.raises(ValueError, match="^b: has 4 rows, a has 3 columns"):
        pt.matmul(a, rand((4, 5), "cpu"))
    with pytest.raises(ValueError, match="^a, b: batch dimensions"):
        pt.matmul(rand((2, 4, 3), "cpu"), rand((3, 3, 5), "cpu"))
    with pytest.raises(ValueError, match="^precision:"):
        pt.matmul(a, b, precision="fp8")
    with pytest.raises(ValueError, match="^c: shape"):
        pt.gemm(a, b, rand((5, 4), "cpu"))
    with pytest.raises(ValueError, match="^k: "):
        pt.knn(b, b, 0)
    with pytest.raises(TypeError, match="^a: torch.bfloat16 runs on CUDA tensors only"):
        pt.matmul(a.bfloat16(), b.bfloat16())


@needs_cuda
def test_errors_on_the_gpu():
    a, b = rand((4, 3), "cuda"), rand((3, 5), "cpu")
    with pytest.raises(ValueError, match="^b: is on cpu, a on cuda"):
        pt.matmul(a, b)
    h = rand((8, 8, 8), "cuda", torch.bfloat16)[:, ::2, ::2][0]  # neither rows nor columns contiguous
    with pytest.raises(ValueError, match="^a: neither its rows nor its columns are contiguous"):
        pt.matmul(h, rand((4, 4), "cuda", torch.bfloat16))
    with pytest.raises(TypeError, match="^base: dtype torch.float64 on cuda"):
        pt.knn(rand((10, 4), "cuda", torch.float64), rand((2, 4), "cuda", torch.float64), 1)


def test_linear_repr_and_state_dict():
    layer = pt.Linear(6, 4, precision="tf32")
    assert "precision='tf32'" in repr(layer)
    plain = torch.nn.Linear(6, 4)
    plain.load_state_dict(layer.state_dict())
    assert np.allclose(plain.weight.detach().numpy(), layer.weight.detach().numpy())


def test_cpp_operators_loaded_where_built():
    """Where _parray_torch.so was built beside the module, parray.torch's matmul and gemm are its C++ operators."""
    import os
    if not os.path.exists(os.path.join(os.path.dirname(parray.__file__), "_parray_torch.so")):
        pytest.skip("_parray_torch.so was not built (PyTorch's C++ headers were not found at build time)")
    assert pt.OPERATORS == "C++", pt.OPERATORS_WHY
