"""rms_norm_gated and rms_norm_gated_bwd through PyTorch: the torch formula in fp64 on random
data (both gate orders, groups, silu/sigmoid, optional weight and bias), opcheck, gradcheck in
fp64, the activation names, and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def torch_gated(x, z, weight, bias, eps, sigmoid, group_size, norm_before_gate):
    x, z = x.double(), z.double()
    a = torch.sigmoid(z) if sigmoid else torch.nn.functional.silu(z)
    v = x if norm_before_gate else x * a
    gs = group_size or x.shape[-1]
    vg = v.unflatten(-1, (-1, gs))
    y = (vg * torch.rsqrt(vg.pow(2).mean(-1, keepdim=True) + eps)).flatten(-2)
    if weight is not None:
        y = y * weight.double()
    if bias is not None:
        y = y + bias.double()
    return y * a if norm_before_gate else y


def torch_grads(fn, grad, *tensors):
    """d/d(tensors) of sum(fn(*tensors) * grad) in fp64 by torch autograd (None for None)."""
    leaves = [None if t is None else t.detach().double().requires_grad_(True) for t in tensors]
    out = (fn(*leaves) * grad.double()).sum()
    got = iter(torch.autograd.grad(out, [t for t in leaves if t is not None]))
    return [None if t is None else next(got) for t in leaves]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,group_size", [((37, 97), 0), ((3, 5, 64), 16), ((4, 128), 0),
                                              ((2, 1025), 0), ((6, 96), 32)])
@pytest.mark.parametrize("norm_before_gate", [True, False])
@pytest.mark.parametrize("activation", ["silu", "sigmoid"])
@pytest.mark.parametrize("affine", [True, False])
def test_matches_formula(device, dtype, shape, group_size, norm_before_gate, activation, affine):
    torch.manual_seed(sum(shape) + group_size)
    x = torch.randn(shape, dtype=dtype, device=device)
    z = 2 * torch.randn(shape, dtype=dtype, device=device)
    D = shape[-1]
    w = torch.randn(D, dtype=dtype, device=device) if affine else None
    b = 0.5 * torch.randn(D, dtype=dtype, device=device) if affine else None
    eps = 1e-5
    sig = activation == "sigmoid"
    y = recops.rms_norm_gated(x, z, w, b, eps, activation, group_size, norm_before_gate)
    want = torch_gated(x, z, w, b, eps, sig, group_size, norm_before_gate)
    tol = TOL[dtype]
    torch.testing.assert_close(y.double(), want, atol=tol, rtol=tol)
    gy = torch.randn_like(x)
    act = 1 if sig else 0
    dx, dz, dw, db = torch.ops.recops.rms_norm_gated_bwd(gy, x, z, w, b, eps, act, group_size,
                                                         norm_before_gate, True, True)
    want = torch_grads(lambda *t: torch_gated(*t, eps, sig, group_size, norm_before_gate), gy, x, z, w, b)
    torch.testing.assert_close(dx.double(), want[0], atol=tol, rtol=tol)
    torch.testing.assert_close(dz.double(), want[1], atol=tol, rtol=tol)
    if affine:
        scale = max(1.0, (x.numel() // D) ** 0.5)  # column sums over rows
        torch.testing.assert_close(dw.double(), want[2], atol=tol * scale, rtol=tol)
        torch.testing.assert_close(db.double(), want[3], atol=tol * scale, rtol=tol)
    else:
        assert dw.numel() == 0 and db.numel() == 0


def test_swish_is_silu():
    x, z = torch.randn(5, 16), torch.randn(5, 16)
    torch.testing.assert_close(recops.rms_norm_gated(x, z, activation="swish"),
                               recops.rms_norm_gated(x, z, activation="silu"), rtol=0, atol=0)


def test_autograd_matches_torch():
    torch.manual_seed(0)
    leaves = [torch.randn(6, 40, dtype=torch.float64), torch.randn(6, 40, dtype=torch.float64),
              torch.randn(40, dtype=torch.float64), torch.randn(40, dtype=torch.float64)]
    g = torch.randn(6, 40, dtype=torch.float64)
    a = [t.clone().requires_grad_(True) for t in leaves]
    (recops.rms_norm_gated(*a, 1e-5, "silu", 8, False) * g).sum().backward()
    b = [t.clone().requires_grad_(True) for t in leaves]
    (torch_gated(*b, 1e-5, False, 8, False) * g).sum().backward()
    for s, t in zip(a, b):
        torch.testing.assert_close(s.grad, t.grad)


def test_gradcheck():
    x = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    z = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    w = torch.randn(12, dtype=torch.float64, requires_grad=True)
    b = torch.randn(12, dtype=torch.float64, requires_grad=True)
    for nbg in (True, False):
        for act in ("silu", "sigmoid"):
            assert torch.autograd.gradcheck(
                lambda *t: recops.rms_norm_gated(*t, 1e-3, act, 4, nbg), (x, z, w, b))
    assert torch.autograd.gradcheck(lambda a, c: recops.rms_norm_gated(a, c, eps=1e-3), (x, z))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(3, 5, 16, device=device, requires_grad=True)
    z = torch.randn(3, 5, 16, device=device, requires_grad=True)
    w = torch.randn(16, device=device, requires_grad=True)
    b = torch.randn(16, device=device, requires_grad=True)
    op = torch.ops.recops.rms_norm_gated.default
    torch.library.opcheck(op, (x, z, w, b, 1e-6, 0, 0, True))
    torch.library.opcheck(op, (x, z, None, None, 1e-6, 1, 8, False))
    gy = torch.randn(3, 5, 16, device=device)
    bwd = torch.ops.recops.rms_norm_gated_bwd.default
    torch.library.opcheck(bwd, (gy, x.detach(), z.detach(), w.detach(), b.detach(), 1e-6, 0, 4,
                                True, True, True))
    torch.library.opcheck(bwd, (gy, x.detach(), z.detach(), w.detach(), None, 1e-6, 0, 0, False,
                                False, True))


def test_noncontiguous_inputs_are_copied():
    x, z = torch.randn(16, 9), torch.randn(16, 9)
    torch.testing.assert_close(recops.rms_norm_gated(x.t(), z.t()),
                               recops.rms_norm_gated(x.t().contiguous(), z.t().contiguous()))


def test_errors_name_the_argument():
    x = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match="rms_norm_gated: x must be fp64, fp32, fp16 or bf16"):
        recops.rms_norm_gated(x.int(), x.int())
    with pytest.raises(RuntimeError, match=r"rms_norm_gated: z must be contiguous float32|"
                                           r"rms_norm_gated: z must be contiguous fp32"):
        recops.rms_norm_gated(x, torch.randn(3, 5))
    with pytest.raises(RuntimeError, match=r"rms_norm_gated: weight must be contiguous fp32\[4\]"):
        recops.rms_norm_gated(x, x, torch.randn(5))
    with pytest.raises(RuntimeError, match=r"rms_norm_gated: bias must be contiguous fp32\[4\]"):
        recops.rms_norm_gated(x, x, None, torch.randn(4, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="group_size=3 must be 0 \\(= D\\) or divide D=4"):
        recops.rms_norm_gated(x, x, group_size=3)
    with pytest.raises(RuntimeError, match="eps=-1 must be finite and >= 0"):
        recops.rms_norm_gated(x, x, eps=-1.0)
    with pytest.raises(ValueError):
        recops.rms_norm_gated(x, x, activation="relu")
