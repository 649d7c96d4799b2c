"""layer_norm, swish_layer_norm and their backward ops through PyTorch: the torch formula in fp64
on random data (optional weight and bias, both forms), opcheck, gradcheck in fp64, and the
errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def torch_ln(x, weight, bias, eps, swish):
    x = x.double()
    D = x.shape[-1]
    y = torch.nn.functional.layer_norm(x, (D,), None if weight is None else weight.double(),
                                       None if bias is None else bias.double(), eps)
    return torch.sigmoid(y) * x if swish else y


def torch_grads(fn, grad, *tensors):
    """d/d(tensors) of sum(fn(*tensors) * grad) in fp64 by torch autograd (None for None)."""
    leaves = [None if t is None else t.detach().double().requires_grad_(True) for t in tensors]
    out = (fn(*leaves) * grad.double()).sum()
    got = iter(torch.autograd.grad(out, [t for t in leaves if t is not None]))
    return [None if t is None else next(got) for t in leaves]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 97), (3, 5, 64), (4, 512), (2, 1025), (1, 1)])
@pytest.mark.parametrize("swish", [False, True])
@pytest.mark.parametrize("affine", [True, False])
def test_matches_formula(device, dtype, shape, swish, affine):
    torch.manual_seed(sum(shape))
    x = torch.randn(shape, dtype=dtype, device=device) + 0.5
    D = shape[-1]
    w = torch.randn(D, dtype=dtype, device=device) if affine else None
    b = 0.5 * torch.randn(D, dtype=dtype, device=device) if affine else None
    eps = 1e-5
    fwd = recops.swish_layer_norm if swish else recops.layer_norm
    y = fwd(x, w, b, eps)
    want = torch_ln(x, w, b, eps, swish)
    tol = TOL[dtype]
    torch.testing.assert_close(y.double(), want, atol=tol, rtol=tol)
    gy = torch.randn_like(x)
    bwd = torch.ops.recops.swish_layer_norm_bwd if swish else torch.ops.recops.layer_norm_bwd
    dx, dw, db = bwd(gy, x, w, b, eps, True, True)
    want = torch_grads(lambda *t: torch_ln(*t, eps, swish), gy, x, w, b)
    # D = 1: dx is r·0 in exact arithmetic, so an absolute tolerance only
    torch.testing.assert_close(dx.double(), want[0], atol=tol * 4, rtol=tol)
    if affine:
        scale = max(1.0, (x.numel() // D) ** 0.5)  # column sums over rows
        torch.testing.assert_close(dw.double(), want[1], atol=tol * scale, rtol=tol)
        torch.testing.assert_close(db.double(), want[2], atol=tol * scale, rtol=tol)
    else:
        assert dw.numel() == 0 and db.numel() == 0


@pytest.mark.parametrize("swish", [False, True])
def test_autograd_matches_torch(swish):
    torch.manual_seed(0)
    leaves = [torch.randn(6, 40, dtype=torch.float64), torch.randn(40, dtype=torch.float64),
              torch.randn(40, dtype=torch.float64)]
    g = torch.randn(6, 40, dtype=torch.float64)
    fwd = recops.swish_layer_norm if swish else recops.layer_norm
    a = [t.clone().requires_grad_(True) for t in leaves]
    (fwd(*a, 1e-5) * g).sum().backward()
    b = [t.clone().requires_grad_(True) for t in leaves]
    (torch_ln(*b, 1e-5, swish) * g).sum().backward()
    for s, t in zip(a, b):
        torch.testing.assert_close(s.grad, t.grad)


def test_gradcheck():
    x = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    w = torch.randn(12, dtype=torch.float64, requires_grad=True)
    b = torch.randn(12, dtype=torch.float64, requires_grad=True)
    for fwd in (recops.layer_norm, recops.swish_layer_norm):
        assert torch.autograd.gradcheck(lambda *t: fwd(*t, 1e-3), (x, w, b))
        assert torch.autograd.gradcheck(lambda a: fwd(a, eps=1e-3), (x,))
        assert torch.autograd.gradcheck(lambda a, c: fwd(a, None, c, 1e-3), (x, b))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(3, 5, 16, device=device, requires_grad=True)
    w = torch.randn(16, device=device, requires_grad=True)
    b = torch.randn(16, device=device, requires_grad=True)
    gy = torch.randn(3, 5, 16, device=device)
    for name in ("layer_norm", "swish_layer_norm"):
        op = getattr(torch.ops.recops, name).default
        torch.library.opcheck(op, (x, w, b, 1e-5))
        torch.library.opcheck(op, (x, None, None, 1e-5))
        bwd = getattr(torch.ops.recops, name + "_bwd").default
        torch.library.opcheck(bwd, (gy, x.detach(), w.detach(), b.detach(), 1e-5, True, True))
        torch.library.opcheck(bwd, (gy, x.detach(), w.detach(), None, 1e-5, False, True))


def test_noncontiguous_inputs_are_copied():
    x = torch.randn(16, 9)
    torch.testing.assert_close(recops.layer_norm(x.t()), recops.layer_norm(x.t().contiguous()))
    torch.testing.assert_close(recops.swish_layer_norm(x.t()),
                               recops.swish_layer_norm(x.t().contiguous()))


def test_errors_name_the_argument():
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="layer_norm: x must be fp64, fp32, fp16 or bf16"):
        recops.layer_norm(x.int())
    with pytest.raises(RuntimeError, match=r"swish_layer_norm: weight must be contiguous fp32\[4\]"):
        recops.swish_layer_norm(x, torch.randn(5))
    with pytest.raises(RuntimeError, match=r"layer_norm: bias must be contiguous fp32\[4\]"):
        recops.layer_norm(x, None, torch.randn(4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="eps=-1 must be finite and >= 0"):
        recops.layer_norm(x, eps=-1.0)
