"""mhc_sinkhorn through PyTorch: the peer is a plain-torch writing of the HF
DeepseekV4HyperConnection Sinkhorn (forward, and its autograd for the backward), plus opcheck,
gradcheck, torch.compile and the refusals. Collected by `pytest src/ops` (scripts/test_all.sh)."""

import math

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def hf_sinkhorn(logits, iters=20, eps=1e-6):
    """The HF DeepSeek V4 comb projection: softmax over the last axis + eps, a column
    normalisation, then iters - 1 row/column rounds (each sum + eps)."""
    p = torch.softmax(logits, dim=-1) + eps
    p = p / (p.sum(dim=-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        p = p / (p.sum(dim=-1, keepdim=True) + eps)
        p = p / (p.sum(dim=-2, keepdim=True) + eps)
    return p


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shape", [(4, 4), (37, 4, 4), (2, 3, 4, 4), (5, 1, 1), (3, 7, 7),
                                   (0, 4, 4)])
@pytest.mark.parametrize("iters,eps", [(20, 1e-6), (1, 1e-6), (10, 0.0), (3, 0.3)])
def test_forward_and_backward_match_hf(device, shape, iters, eps):
    logits = (torch.randn(shape, dtype=torch.float64) * 3).float().to(device).requires_grad_()
    P = recops.mhc_sinkhorn(logits, iters, eps)
    dP = torch.randn(P.shape, dtype=torch.float64).float().to(device)
    (dl,) = torch.autograd.grad(P, logits, dP)
    l64 = logits.detach().double().requires_grad_()
    P64 = hf_sinkhorn(l64, iters, eps)
    (dl64,) = torch.autograd.grad(P64, l64, dP.double())
    torch.testing.assert_close(P.double(), P64, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(dl.double(), dl64, rtol=1e-4, atol=1e-5)


def test_fp64_matches_hf_closely():
    logits = torch.randn(9, 4, 4, dtype=torch.float64, requires_grad=True)
    dP = torch.randn(9, 4, 4, dtype=torch.float64)
    P = recops.mhc_sinkhorn(logits)
    (dl,) = torch.autograd.grad(P, logits, dP)
    l2 = logits.detach().clone().requires_grad_()
    P2 = hf_sinkhorn(l2)
    (dl2,) = torch.autograd.grad(P2, l2, dP)
    torch.testing.assert_close(P, P2, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(dl, dl2, rtol=1e-10, atol=1e-12)


def test_doubly_stochastic_after_many_rounds():
    P = recops.mhc_sinkhorn(torch.randn(6, 4, 4, dtype=torch.float64) * 2, 300, 0.0)
    torch.testing.assert_close(P.sum(-1), torch.ones(6, 4, dtype=torch.float64))
    torch.testing.assert_close(P.sum(-2), torch.ones(6, 4, dtype=torch.float64))


def test_non_finite_rule():
    logits = torch.randn(4, 4, 4)
    logits[0, 1, 2] = math.nan
    logits[1, 0, 0] = math.inf
    logits[2, 3, :] = -math.inf
    logits[3, 0, 1] = -math.inf  # a zero probability only
    P = recops.mhc_sinkhorn(logits)
    assert P[:3].isnan().all()
    assert P[3].isfinite().all()
    torch.testing.assert_close(P[3], hf_sinkhorn(logits[3].double()).float(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    logits = torch.randn(5, 4, 4, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.mhc_sinkhorn.default, (logits, 7, 1e-3))
    torch.library.opcheck(torch.ops.recops.mhc_sinkhorn_bwd.default,
                          (torch.randn(5, 4, 4, device=device), logits.detach(), 7, 1e-3))


def test_gradcheck():
    for shape, iters in (((3, 4, 4), 20), ((2, 3, 3), 1), ((1, 1), 5), ((2, 2, 5, 5), 4)):
        logits = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        assert torch.autograd.gradcheck(lambda t: recops.mhc_sinkhorn(t, iters, 1e-6), (logits,))


def test_compile_matches_eager():
    f = torch.compile(lambda t: recops.mhc_sinkhorn(t, 20, 1e-6), fullgraph=True)
    for n in (3, 5):
        logits = torch.randn(n, 4, 4)
        torch.testing.assert_close(f(logits), recops.mhc_sinkhorn(logits), rtol=0, atol=0)


def test_noncontiguous_input_is_copied():
    logits = torch.randn(4, 4, 6)[..., :4]
    torch.testing.assert_close(recops.mhc_sinkhorn(logits), hf_sinkhorn(logits.double()).float(),
                               rtol=1e-5, atol=1e-6)


def test_bad_input_names_the_argument_and_rule():
    with pytest.raises(RuntimeError, match="logits must be fp32 \\(or fp64\\)"):
        recops.mhc_sinkhorn(torch.randn(2, 4, 4, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="logits' last two dims must be equal"):
        recops.mhc_sinkhorn(torch.randn(2, 4, 3))
    with pytest.raises(RuntimeError, match="iters must be >= 1"):
        recops.mhc_sinkhorn(torch.randn(2, 4, 4), 0)
    with pytest.raises(RuntimeError, match="eps must be finite and >= 0"):
        recops.mhc_sinkhorn(torch.randn(2, 4, 4), 20, -1.0)
    with pytest.raises(RuntimeError, match="dP must be contiguous, fp32 with shape \\[2, 4, 4\\]"):
        torch.ops.recops.mhc_sinkhorn_bwd(torch.randn(2, 4, 3), torch.randn(2, 4, 4), 20, 1e-6)
