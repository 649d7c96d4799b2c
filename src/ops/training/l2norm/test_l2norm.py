"""l2norm and l2norm_bwd through PyTorch: the torch formula in fp64 on random data (eps added to
the sum of squares), opcheck, gradcheck in fp64, out_dtype, and the errors. Collected by
`pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def torch_l2norm(x, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (37, 97), (2, 9, 4, 128), (4, 1025)])
def test_matches_formula(device, dtype, shape):
    torch.manual_seed(sum(shape))
    x = torch.randn(shape, dtype=dtype, device=device)
    eps = 0.5 if shape[-1] == 1 else 1e-6
    y = recops.l2norm(x, eps)
    tol = TOL[dtype]
    assert y.dtype == dtype
    torch.testing.assert_close(y.double(), torch_l2norm(x, eps), atol=tol, rtol=tol)
    gy = torch.randn_like(x)
    dx = torch.ops.recops.l2norm_bwd(gy, x, eps, None)
    xd = x.double().requires_grad_(True)
    (torch_l2norm(xd, eps) * gy.double()).sum().backward()
    torch.testing.assert_close(dx.double(), xd.grad, atol=tol, rtol=tol)


def test_out_dtype_fp32():
    x = torch.randn(5, 64, dtype=torch.bfloat16)
    y = recops.l2norm(x, 1e-6, torch.float32)
    assert y.dtype == torch.float32
    torch.testing.assert_close(y.double(), torch_l2norm(x, 1e-6), atol=1e-6, rtol=1e-5)


def test_eps_is_added_to_the_sum_not_a_floor():
    x = torch.full((1, 4), 1e-3, dtype=torch.float64)
    want = 1e-3 / (4e-6 + 1e-2) ** 0.5
    torch.testing.assert_close(recops.l2norm(x, 1e-2), torch.full((1, 4), want, dtype=torch.float64))


def test_gradcheck():
    x = torch.randn(5, 7, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a: recops.l2norm(a, 1e-3), (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(3, 5, 16, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.l2norm.default, (x, 1e-6, None))
    torch.library.opcheck(torch.ops.recops.l2norm_bwd.default,
                          (torch.randn(3, 5, 16, device=device), x.detach(), 1e-6, None))


def test_errors_name_the_argument():
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="l2norm: x must be fp64, fp32, fp16 or bf16"):
        recops.l2norm(x.int())
    with pytest.raises(RuntimeError, match="l2norm: eps=-1 must be finite and >= 0"):
        recops.l2norm(x, -1.0)
    with pytest.raises(RuntimeError, match=r"l2norm: x must be \[\.\.\., D\] with D >= 1"):
        recops.l2norm(torch.randn(3, 0))
    with pytest.raises(RuntimeError, match="l2norm_bwd: grad_y must be contiguous fp32"):
        torch.ops.recops.l2norm_bwd(x[:2], x, 1e-6, None)
