"""fused_cross_entropy through PyTorch: the torch formula (F.cross_entropy with label smoothing,
times the weight, plus the z-loss term) in fp64, gradients against torch autograd, opcheck and
gradcheck, the ignored-row rules and the refusals. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _ce_pytest import torch_ce  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
REDUCTIONS = ["none", "sum", "mean"]


def sample(n, v, device, dtype=torch.float64, seed=0, ignore_every=4, label_dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    z = (torch.randn(n, v, generator=g, dtype=torch.float64) * 3).to(dtype).to(device)
    y = torch.randint(0, v, (n,), generator=g)
    if ignore_every:
        y[::ignore_every] = -100
    w = torch.rand(n, generator=g, dtype=torch.float64) + 0.5  # fp32, fp64 for fp64 logits
    w = w.to(torch.float64 if dtype == torch.float64 else torch.float32).to(device)
    return z, y.to(label_dtype).to(device), w


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("opts", [(0.0, 0.0, 0.0), (0.1, 1e-3, 0.0), (0.2, 0.0, 5.0)])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_torch_fp64(device, reduction, opts, weighted):
    if device == "cuda":
        pytest.skip("fp64 runs on the CPU only; the fp32 test covers CUDA")
    eps, lam, cap = opts
    z, y, w = sample(37, 29, device)
    w = w if weighted else None
    zr = z.clone().requires_grad_()
    loss, zl = recops.fused_cross_entropy(zr, y, w, label_smoothing=eps, z_loss_scale=lam,
                                          softcap=cap, reduction=reduction)
    zt = z.clone().requires_grad_()
    ref, ref_z = torch_ce(zt, y, w, -100, eps, lam, cap, reduction)
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(zl, ref_z)
    g = torch.randn_like(ref)
    (gr,) = torch.autograd.grad(loss, zr, g)
    (gt,) = torch.autograd.grad(ref, zt, g)
    torch.testing.assert_close(gr, gt)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_masked_vocabulary_entries(device, dtype, reduction):
    """-inf logits (a masked vocabulary, as a sampler or a constrained decoder sets them) away from
    the labels: the loss and its gradient are finite and equal torch's (the smoothing term is
    absent when label_smoothing = 0, not 0 * inf = NaN)."""
    if device == "cuda" and dtype == torch.float64:
        pytest.skip("fp64 runs on the CPU only")
    z, y, _ = sample(23, 300, "cpu", torch.float64, seed=5, ignore_every=0)
    mask = torch.zeros_like(z, dtype=torch.bool)
    mask[:, 250:] = True  # the last 50 entries of every row are masked
    y = y % 250
    z = z.masked_fill(mask, float("-inf")).to(dtype).to(device)
    y = y.to(device)
    zr = z.clone().requires_grad_()
    loss, _ = recops.fused_cross_entropy(zr, y, reduction=reduction)
    ref = F.cross_entropy(z.double(), y, reduction=reduction)
    assert torch.isfinite(loss).all()
    tol = dict(rtol=1e-6, atol=1e-6) if dtype != torch.bfloat16 else dict(rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(loss.double(), ref, **tol)
    (g,) = torch.autograd.grad(loss.sum(), zr)
    assert torch.isfinite(g).all() and (g[:, 250:] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("label_dtype", [torch.int32, torch.int64])
def test_low_precision_close_to_fp64(device, dtype, label_dtype):
    z, y, w = sample(63, 1031, device, dtype=dtype, label_dtype=label_dtype)
    zr = z.clone().requires_grad_()
    loss, _ = recops.fused_cross_entropy(zr, y, w, label_smoothing=0.1)
    ref, _ = torch_ce(z.double(), y.long(), w, -100, 0.1, 0.0, 0.0, "mean")
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss.double(), ref, rtol=1e-5, atol=1e-5)
    loss.backward()
    assert zr.grad.dtype == dtype
    zt = z.double().requires_grad_()
    torch_ce(zt, y.long(), w, -100, 0.1, 0.0, 0.0, "mean")[0].backward()
    tol = {torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(zr.grad.double(), zt.grad, rtol=tol, atol=tol * zt.grad.abs().max())


@pytest.mark.parametrize("device", DEVICES)
def test_all_ignored_mean_is_zero(device):
    z, y, _ = sample(5, 7, device, dtype=torch.float32, ignore_every=1)
    z.requires_grad_()
    loss, zl = recops.fused_cross_entropy(z, y)
    assert loss.item() == 0 and zl.item() == 0
    loss.backward()
    assert torch.count_nonzero(z.grad) == 0


@pytest.mark.parametrize("device", DEVICES)
def test_fwd_gives_lse_and_bwd_the_gradient(device):
    z, y, w = sample(9, 11, device, dtype=torch.float32)
    loss, zl, lse = torch.ops.recops.fused_cross_entropy_fwd(z, y, w, reduction=0)
    keep = y != -100
    torch.testing.assert_close(lse[keep], torch.logsumexp(z, -1)[keep])
    assert torch.all(lse[~keep] == 0) and torch.all(loss[~keep] == 0)
    g = torch.ones_like(loss)
    dz = torch.ops.recops.fused_cross_entropy_bwd(g, z, y, w, lse, reduction=0)
    p = torch.softmax(z, -1) - F.one_hot(y.clamp(min=0).long(), 11)
    torch.testing.assert_close(dz, torch.where(keep[:, None], p * w[:, None].float(), 0.0))


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_saves_the_forward_lse(device):
    """The table's save_outputs: the forward's lse is saved (no recompute in the backward)."""
    z, y, w = sample(9, 11, device, dtype=torch.float32)
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        loss, _ = recops.fused_cross_entropy(z.clone().requires_grad_(), y, w, reduction="none")
    lse = torch.ops.recops.fused_cross_entropy_fwd(z, y, w, reduction=0)[2]
    assert any(t.shape == lse.shape and torch.equal(t, lse) for t in packed)
    assert torch.equal(loss.detach(), recops.fused_cross_entropy(z, y, w, reduction="none")[0])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    z, y, w = sample(7, 5, device, dtype=torch.float32)
    for red in (0, 2):
        args = (z.clone().requires_grad_(), y, w, -100, 0.1, 1e-3, 0.0, red)
        torch.library.opcheck(torch.ops.recops.fused_cross_entropy.default, args)
        torch.library.opcheck(torch.ops.recops.fused_cross_entropy_fwd.default,
                              (z, y, w, -100, 0.1, 1e-3, 0.0, red))
        lse = torch.ops.recops.fused_cross_entropy_fwd(z, y, w, reduction=red)[2]
        g = torch.ones(7, device=device) if red == 0 else torch.tensor(1.5, device=device)
        torch.library.opcheck(torch.ops.recops.fused_cross_entropy_bwd.default,
                              (g, z, y, w, lse, -100, 0.1, 1e-3, 0.0, red))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck(reduction):
    z, y, w = sample(6, 5, "cpu", ignore_every=3)
    z.requires_grad_()
    f = lambda t: recops.fused_cross_entropy(t, y, w, label_smoothing=0.1, z_loss_scale=0.01,
                                             softcap=4.0, reduction=reduction)[0]
    assert torch.autograd.gradcheck(f, (z,))


def test_empty_rows():
    z = torch.zeros(0, 7, requires_grad=True)
    y = torch.zeros(0, dtype=torch.int64)
    loss, _ = recops.fused_cross_entropy(z, y)
    assert loss.shape == () and loss.item() == 0
    loss.backward()
    assert z.grad.shape == (0, 7)
    assert recops.fused_cross_entropy(z, y, reduction="none")[0].shape == (0,)


def test_label_out_of_range_is_refused():
    z = torch.randn(3, 4)
    with pytest.raises(RuntimeError, match=r"labels\[1\]=4 must be in \[0, V\) = \[0, 4\)"):
        recops.fused_cross_entropy(z, torch.tensor([0, 4, 1]))


def test_bad_reduction_name():
    with pytest.raises(ValueError, match="reduction"):
        recops.fused_cross_entropy(torch.randn(3, 4), torch.tensor([0, 1, 2]), reduction="avg")


def test_precompute_grad_not_implemented():
    with pytest.raises(RuntimeError, match="precompute_grad=True is not implemented yet"):
        recops.fused_cross_entropy(torch.randn(3, 4), torch.tensor([0, 1, 2]),
                                   precompute_grad=True)


def test_double_backward_raises():
    z, y, w = sample(4, 5, "cpu")
    z.requires_grad_()
    loss, _ = recops.fused_cross_entropy(z, y, w)
    g = torch.ones_like(loss, requires_grad=True)
    with pytest.raises(RuntimeError, match="fused_cross_entropy: double backward is not supported"):
        (gz,) = torch.autograd.grad(loss, z, g, create_graph=True)
        torch.autograd.grad(gz.sum(), g)


def test_torch_compile_matches_eager():
    z, y, w = sample(8, 13, "cpu", dtype=torch.float32)
    f = lambda t: recops.fused_cross_entropy(t, y, w, label_smoothing=0.1)[0]
    za, zb = z.clone().requires_grad_(), z.clone().requires_grad_()
    out = torch.compile(f, fullgraph=True)(za)
    ref = f(zb)
    torch.testing.assert_close(out, ref)
    out.backward()
    ref.backward()
    torch.testing.assert_close(za.grad, zb.grad)
