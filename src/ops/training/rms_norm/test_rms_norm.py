"""rms_norm, rms_norm_rstd and their backward ops through PyTorch: the torch formula in fp64 on
random data, opcheck (schema, fake/Meta, autograd registration), gradcheck in fp64, the Gemma
offset, out_dtype, and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def torch_rms_norm(x, weight, eps, offset):
    x = x.double()
    r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    y = x * r
    return y if weight is None else y * (offset + weight.double())


def torch_rstd(x, eps):
    return torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + eps)


def grads(fn, grad, *tensors):
    """The fp64 autograd gradients of sum(fn(...) * grad) with respect to tensors (None kept)."""
    leaves = [None if t is None else t.detach().double().requires_grad_(True) for t in tensors]
    (fn(*leaves) * grad.double()).sum().backward()
    return [None if t is None else t.grad for t in leaves]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (37, 97), (3, 5, 65), (4, 1025)])
@pytest.mark.parametrize("with_weight", [True, False])
def test_matches_formula(device, dtype, shape, with_weight):
    torch.manual_seed(sum(shape))
    x = torch.randn(shape, dtype=dtype, device=device)
    w = torch.randn(shape[-1], dtype=dtype, device=device) if with_weight else None
    offset = 0.5 if with_weight else 0.0
    eps = 0.5 if shape[-1] == 1 else 1e-6  # D = 1: see the README (cancellation in dx)
    y = recops.rms_norm(x, w, eps, offset)
    tol = TOL[dtype]
    torch.testing.assert_close(y.double(), torch_rms_norm(x, w, eps, offset), atol=tol, rtol=tol)
    gy = torch.randn_like(x)
    dx, dw = torch.ops.recops.rms_norm_bwd(gy, x, w, eps, offset, True)
    want = grads(lambda a, b: torch_rms_norm(a, b, eps, offset), gy, x, w)
    torch.testing.assert_close(dx.double(), want[0], atol=tol, rtol=tol)
    if with_weight:
        rows = x.numel() // shape[-1]
        scale = max(1.0, rows ** 0.5)  # dweight sums over rows
        torch.testing.assert_close(dw.double(), want[1], atol=tol * scale, rtol=tol)
    else:
        assert dw.numel() == 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("out_dtype", [None, torch.float32, torch.bfloat16])
def test_rstd(device, dtype, out_dtype):
    torch.manual_seed(3)
    x = torch.randn(4, 8, 96, dtype=dtype, device=device)
    r = recops.rms_norm_rstd(x, 1e-6, out_dtype)
    assert r.shape == (4, 8, 1) and r.dtype == (out_dtype or torch.float32)
    tol = TOL[out_dtype or torch.float32] if dtype == torch.float32 else TOL[dtype]
    torch.testing.assert_close(r.double(), torch_rstd(x, 1e-6), atol=tol, rtol=tol)
    gr = torch.randn(4, 8, 1, dtype=r.dtype, device=device)
    dx = torch.ops.recops.rms_norm_rstd_bwd(gr, x, 1e-6, out_dtype)
    want = grads(lambda a: torch_rstd(a, 1e-6), gr, x)[0]
    torch.testing.assert_close(dx.double(), want, atol=TOL[dtype], rtol=TOL[dtype])


def test_gemma_offset_and_no_weight_agree():
    x = torch.randn(7, 33, dtype=torch.float64)
    zeros = torch.zeros(33, dtype=torch.float64)
    torch.testing.assert_close(recops.rms_norm(x, zeros, 1e-6, 1.0), recops.rms_norm(x, None))


def test_autograd_matches_torch():
    torch.manual_seed(0)
    x = torch.randn(6, 40, dtype=torch.float64, requires_grad=True)
    w = torch.randn(40, dtype=torch.float64, requires_grad=True)
    g = torch.randn(6, 40, dtype=torch.float64)
    (recops.rms_norm(x, w, 1e-5, 1.0) * g).sum().backward()
    x2 = x.detach().clone().requires_grad_(True)
    w2 = w.detach().clone().requires_grad_(True)
    (torch_rms_norm(x2, w2, 1e-5, 1.0) * g).sum().backward()
    torch.testing.assert_close(x.grad, x2.grad)
    torch.testing.assert_close(w.grad, w2.grad)


def test_gradcheck():
    x = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    w = torch.randn(7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: recops.rms_norm(a, b, 1e-3, 0.25), (x, w))
    assert torch.autograd.gradcheck(lambda a: recops.rms_norm(a, None, 1e-3), (x,))
    assert torch.autograd.gradcheck(
        lambda a: recops.rms_norm_rstd(a, 1e-3, torch.float64), (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(3, 5, 16, device=device, requires_grad=True)
    w = torch.randn(16, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.rms_norm.default, (x, w, 1e-6, 0.0))
    torch.library.opcheck(torch.ops.recops.rms_norm.default, (x, None, 1e-6, 0.0))
    torch.library.opcheck(torch.ops.recops.rms_norm_rstd.default, (x, 1e-6, None))
    gy = torch.randn(3, 5, 16, device=device)
    torch.library.opcheck(torch.ops.recops.rms_norm_bwd.default,
                          (gy, x.detach(), w.detach(), 1e-6, 0.0, True))


def test_noncontiguous_x_is_copied():
    x = torch.randn(16, 9)
    xt = x.t()  # [9, 16], not contiguous
    torch.testing.assert_close(recops.rms_norm(xt), recops.rms_norm(xt.contiguous()))


def test_errors_name_the_argument():
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="rms_norm: x must be fp64, fp32, fp16 or bf16"):
        recops.rms_norm(x.int())
    with pytest.raises(RuntimeError, match=r"rms_norm: weight must be \[D\] = \[4\]"):
        recops.rms_norm(x, torch.randn(5))
    with pytest.raises(RuntimeError, match="rms_norm: weight must have x's dtype"):
        recops.rms_norm(x, torch.randn(4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="rms_norm: eps=-1 must be finite and >= 0"):
        recops.rms_norm(x, None, -1.0)
    with pytest.raises(RuntimeError, match=r"rms_norm_rstd: x must be \[\.\.\., D\] with D >= 1"):
        recops.rms_norm_rstd(torch.randn(3, 0))
    with pytest.raises(RuntimeError, match="rms_norm_bwd: grad_y must be contiguous"):
        torch.ops.recops.rms_norm_bwd(x[:2], x, None, 1e-6, 0.0, True)
