"""norm_mul_dropout and norm_mul_dropout_bwd through PyTorch: the torch formula in fp64 on random
data (layer and group norm, concat_ux), with dropout 0 and with the mask rebuilt here from the
README's definition of the RNG; opcheck, gradcheck in fp64, and the errors. Collected by
`pytest src/ops`."""

import numpy as np
import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 3e-3, torch.bfloat16: 2e-2}


def keep_mask(seed, offset, rows, width, p):
    """The README's RNG: kept[i, c] for e = offset + i * width + c (all mod 2^64)."""
    with np.errstate(over="ignore"):
        e = np.uint64(offset % 2**64) + np.arange(rows * width, dtype=np.uint64)
        z = np.uint64(seed % 2**64) + (e + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    v = (z >> np.uint64(40)).astype(np.float64) / 16777216.0
    return torch.from_numpy(v >= np.float32(p)).reshape(rows, width)


def torch_nmd(x, u, w, b, eps, p, training, concat, group, heads, seed=0, offset=0):
    x, u = x.double(), u.double()
    D = x.shape[-1]
    if group:
        xg = x.unflatten(-1, (heads, D // heads))
        n = torch.nn.functional.layer_norm(xg, (D // heads,), eps=eps)
        ln = (n * w.double()[:, None] + b.double()[:, None]).flatten(-2)
    else:
        ln = torch.nn.functional.layer_norm(x, (D,), w.double(), b.double(), eps)
    y = u * ln
    out = torch.cat([u, x, y], -1) if concat else y
    if training and p > 0:
        rows = out.numel() // out.shape[-1]
        m = keep_mask(seed, offset, rows, out.shape[-1], p).reshape(out.shape).to(out.device)
        out = torch.where(m, out / (1 - p), torch.zeros_like(out))
    return out


def torch_grads(fn, grad, *tensors):
    leaves = [t.detach().double().requires_grad_(True) for t in tensors]
    out = (fn(*leaves) * grad.double()).sum()
    return torch.autograd.grad(out, leaves)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(37, 96), (3, 5, 64), (4, 512), (1, 8)])
@pytest.mark.parametrize("concat", [False, True])
@pytest.mark.parametrize("group", [False, True])
@pytest.mark.parametrize("p", [0.0, 0.3])
def test_matches_formula(device, dtype, shape, concat, group, p):
    torch.manual_seed(sum(shape))
    D = shape[-1]
    heads = 4 if group else 1
    nw = heads if group else D
    x = torch.randn(shape, dtype=dtype, device=device) + 0.5
    u = torch.randn(shape, dtype=dtype, device=device)
    w = torch.randn(nw, dtype=dtype, device=device)
    b = 0.5 * torch.randn(nw, dtype=dtype, device=device)
    args = (1e-5, p, True, concat, group, heads, -1, 1234, 5)
    out = recops.norm_mul_dropout(x, u, w, b, *args)
    ref = lambda *t: torch_nmd(*t, 1e-5, p, True, concat, group, heads, 1234, 5)
    tol = TOL[dtype]
    torch.testing.assert_close(out.double(), ref(x, u, w, b), atol=tol, rtol=tol)
    go = torch.randn_like(out)
    got = torch.ops.recops.norm_mul_dropout_bwd(go, x, u, w, b, *args)
    want = torch_grads(ref, go, x, u, w, b)
    rows = x.numel() // D
    for i, (g, t) in enumerate(zip(got, want)):
        scale = max(1.0, rows ** 0.5) * (D // nw) ** 0.5 if i >= 2 else 1.0
        torch.testing.assert_close(g.double(), t, atol=tol * 4 * scale, rtol=tol)


def test_not_training_and_ratio_zero_are_identity():
    x, u, w, b = torch.randn(5, 16), torch.randn(5, 16), torch.randn(16), torch.randn(16)
    plain = recops.norm_mul_dropout(x, u, w, b)
    torch.testing.assert_close(recops.norm_mul_dropout(x, u, w, b, dropout_ratio=0.5,
                                                       training=False), plain, rtol=0, atol=0)
    torch.testing.assert_close(plain.double(), torch_nmd(x, u, w, b, 1e-5, 0, True, False, False, 1))


def test_mask_depends_on_seed_and_offset_only():
    x, u, w, b = torch.randn(8, 32), torch.randn(8, 32), torch.randn(32), torch.randn(32)
    a = recops.norm_mul_dropout(x, u, w, b, dropout_ratio=0.5, seed=3, offset=1)
    assert torch.equal(a, recops.norm_mul_dropout(x, u, w, b, dropout_ratio=0.5, seed=3, offset=1))
    assert not torch.equal(a, recops.norm_mul_dropout(x, u, w, b, dropout_ratio=0.5, seed=4,
                                                      offset=1))
    kept = (a != 0).double().mean().item()
    assert 0.35 < kept < 0.65


def test_autograd_matches_torch():
    torch.manual_seed(0)
    leaves = [torch.randn(6, 40, dtype=torch.float64), torch.randn(6, 40, dtype=torch.float64),
              torch.randn(40, dtype=torch.float64), torch.randn(40, dtype=torch.float64)]
    g = torch.randn(6, 120, dtype=torch.float64)
    a = [t.clone().requires_grad_(True) for t in leaves]
    (recops.norm_mul_dropout(*a, 1e-5, 0.25, True, True, seed=9) * g).sum().backward()
    c = [t.clone().requires_grad_(True) for t in leaves]
    (torch_nmd(*c, 1e-5, 0.25, True, True, False, 1, 9, 0) * g).sum().backward()
    for s, t in zip(a, c):
        torch.testing.assert_close(s.grad, t.grad)


def test_gradcheck():
    x = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    u = torch.randn(5, 12, dtype=torch.float64, requires_grad=True)
    w = torch.randn(12, dtype=torch.float64, requires_grad=True)
    b = torch.randn(12, dtype=torch.float64, requires_grad=True)
    wg = torch.randn(3, dtype=torch.float64, requires_grad=True)
    bg = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda *t: recops.norm_mul_dropout(*t, 1e-3, 0.3, True, True, seed=2), (x, u, w, b))
    assert torch.autograd.gradcheck(
        lambda *t: recops.norm_mul_dropout(*t, 1e-3, 0.3, True, False, True, 3), (x, u, wg, bg))


def test_opcheck():
    x = torch.randn(3, 5, 16, requires_grad=True)
    u = torch.randn(3, 5, 16, requires_grad=True)
    w = torch.randn(16, requires_grad=True)
    b = torch.randn(16, requires_grad=True)
    op = torch.ops.recops.norm_mul_dropout.default
    torch.library.opcheck(op, (x, u, w, b, 1e-5, 0.2, True, True, False, 1, -1, 3, 0))
    wg, bg = torch.randn(4, requires_grad=True), torch.randn(4, requires_grad=True)
    torch.library.opcheck(op, (x, u, wg, bg, 1e-5, 0.0, True, False, True, 4, 4, 0, 0))
    bwd = torch.ops.recops.norm_mul_dropout_bwd.default
    go = torch.randn(3, 5, 48)
    torch.library.opcheck(bwd, (go, x.detach(), u.detach(), w.detach(), b.detach(), 1e-5, 0.2,
                                True, True, False, 1, -1, 3, 0))


def test_errors_name_the_argument():
    x = torch.randn(3, 4)
    w = torch.randn(4)
    with pytest.raises(RuntimeError, match=r"norm_mul_dropout: dropout_ratio=1 must be in \[0, 1\)"):
        recops.norm_mul_dropout(x, x, w, w, dropout_ratio=1.0)
    with pytest.raises(RuntimeError, match=r"norm_mul_dropout: weight must be contiguous fp32\[2\]"):
        recops.norm_mul_dropout(x, x, w, w, group_norm=True, num_heads=2)
    with pytest.raises(RuntimeError, match="num_heads \\* linear_dim must equal D=4"):
        recops.norm_mul_dropout(x, x, w[:3], w[:3], group_norm=True, num_heads=3)
    with pytest.raises(RuntimeError, match="norm_mul_dropout: u must be contiguous"):
        recops.norm_mul_dropout(x, torch.randn(3, 5), w, w)
