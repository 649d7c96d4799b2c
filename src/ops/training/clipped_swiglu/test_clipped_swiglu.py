"""clipped_swiglu through PyTorch: the torch composition (gpt-oss's swiglu and its concatenated
form) in fp64 with autograd, NaN propagation, opcheck, gradcheck and the refusals. Collected by
`pytest src/ops` (scripts/test_all.sh)."""

import math

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def torch_swiglu(x, alpha=1.702, limit=7.0, linear_offset=1.0, interleaved=True):
    if interleaved:
        g, u = x[..., ::2], x[..., 1::2]
    else:
        g, u = x.chunk(2, dim=-1)
    g = g.clamp(max=limit)
    u = u.clamp(min=-limit, max=limit)
    return g * torch.sigmoid(alpha * g) * (u + linear_offset)


def spec_grad(x, dy, alpha=1.702, limit=7.0, linear_offset=1.0, interleaved=True):
    """dx by the spec's formula (§3.6): the masks include the boundary (g <= L, -L <= u <= L)."""
    g, u = (x[..., ::2], x[..., 1::2]) if interleaved else x.chunk(2, dim=-1)
    gc = torch.where(g > limit, torch.full_like(g, limit), g)
    uc = torch.where(u > limit, torch.full_like(u, limit), u)
    uc = torch.where(u < -limit, torch.full_like(u, -limit), uc)
    s = torch.sigmoid(alpha * gc)
    dg = torch.where(g <= limit, dy * (uc + linear_offset) * (s + alpha * gc * s * (1 - s)), 0.0)
    du = torch.where((u >= -limit) & (u <= limit), dy * gc * s, 0.0)
    if interleaved:
        return torch.stack([dg, du], dim=-1).flatten(-2)
    return torch.cat([dg, du], dim=-1)


def off_boundary(x, limit):
    """torch 2.15's clamp backward gives 0 at x == +-limit, the spec the gradient: where the two
    are compared, no element sits on the boundary."""
    return torch.where(x.abs() == limit, x * 1.125, x)


CONFIGS = [
    dict(),
    dict(interleaved=False),
    dict(alpha=1.0, linear_offset=0.0, limit=10.0, interleaved=False),
    dict(limit=math.inf),
    dict(limit=0.5, alpha=2.0, linear_offset=-0.25),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 2), (37, 98), (3, 5, 64), (0, 8)])
@pytest.mark.parametrize("cfg", range(len(CONFIGS)))
def test_forward_and_backward_match_torch(device, dtype, shape, cfg):
    kw = CONFIGS[cfg]
    x = (torch.randn(shape, dtype=torch.float64) * 6).to(dtype)
    x = off_boundary(x, kw.get("limit", 7.0)).to(device).requires_grad_()
    y = recops.clipped_swiglu(x, **kw)
    dy = torch.randn(y.shape, dtype=torch.float64).to(dtype).to(device)
    (dx,) = torch.autograd.grad(y, x, dy)
    x64 = x.detach().double().requires_grad_()
    y64 = torch_swiglu(x64, **kw)
    (dx64,) = torch.autograd.grad(y64, x64, dy.double())
    tol = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    torch.testing.assert_close(y.double(), y64, rtol=tol, atol=tol)
    torch.testing.assert_close(dx.double(), dx64, rtol=tol, atol=tol)


@pytest.mark.parametrize("interleaved", [True, False])
def test_nan_and_boundaries_as_torch(interleaved):
    vals = [math.nan, 7.0, -7.0, 9.0, -9.0, math.inf, -math.inf, 0.5, -3.0, 2.0]
    x = torch.tensor([vals, vals[::-1]], dtype=torch.float64, requires_grad=True)
    y = recops.clipped_swiglu(x, interleaved=interleaved)
    dy = torch.linspace(-1, 1, y.numel(), dtype=torch.float64).reshape(y.shape)
    (dx,) = torch.autograd.grad(y, x, dy)
    x2 = x.detach().clone().requires_grad_()
    y2 = torch_swiglu(x2, interleaved=interleaved)
    (dx2,) = torch.autograd.grad(y2, x2, dy)
    torch.testing.assert_close(y, y2, equal_nan=True)
    spec = spec_grad(x.detach(), dy, interleaved=interleaved)
    torch.testing.assert_close(dx, spec, equal_nan=True)
    # The spec's masks are torch's except on the boundary (torch 2.15 gives 0 there).
    edge = x.detach().abs() == 7.0
    torch.testing.assert_close(dx[~edge], dx2[~edge], equal_nan=True)
    assert (dx[edge] != 0).any()


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x = torch.randn(7, 10, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.clipped_swiglu.default, (x, 1.5, 0.75, 0.5, False))
    torch.library.opcheck(torch.ops.recops.clipped_swiglu_bwd.default,
                          (torch.randn(7, 5, device=device), x.detach(), 1.702, 7.0, 1.0, True))


def test_gradcheck():
    x = (torch.randn(4, 12, dtype=torch.float64) * 3).requires_grad_()
    for kw in CONFIGS:
        assert torch.autograd.gradcheck(lambda t: recops.clipped_swiglu(t, **kw), (x,))


def test_noncontiguous_input_is_copied():
    x = torch.randn(8, 12)[:, ::2]
    torch.testing.assert_close(recops.clipped_swiglu(x), torch_swiglu(x))


def test_compile_dynamic():
    f = torch.compile(lambda t: recops.clipped_swiglu(t, interleaved=False), dynamic=True,
                      fullgraph=True)
    for n in (3, 5):
        x = torch.randn(n, 2 * n)
        torch.testing.assert_close(f(x), torch_swiglu(x, interleaved=False))


def test_bad_input_names_the_argument_and_rule():
    with pytest.raises(RuntimeError, match="x's last dim must be even"):
        recops.clipped_swiglu(torch.ones(3, 5))
    with pytest.raises(RuntimeError, match="x must be fp64, fp32, fp16 or bf16"):
        recops.clipped_swiglu(torch.ones(3, 4, dtype=torch.int32))
    with pytest.raises(RuntimeError, match="limit must be >= 0"):
        recops.clipped_swiglu(torch.ones(3, 4), limit=-1.0)
    with pytest.raises(RuntimeError, match="dy must be contiguous"):
        torch.ops.recops.clipped_swiglu_bwd(torch.ones(3, 3), torch.ones(3, 4), 1.702, 7.0, 1.0,
                                            True)
