"""mhc_pre_bmm through PyTorch: the peer is a plain-torch writing of the HF
DeepseekV4HyperConnection collapse (``(h_pre[..., None] * X).sum(-2)``) in fp64 and its autograd
for the backward, plus opcheck, gradcheck, torch.compile (static and dynamic) and the refusals.
Collected by `pytest src/ops` (scripts/test_all.sh)."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def hf_pre(h_pre, X):
    """HF DeepSeek V4: the n streams collapsed by the pre weights (HF then casts to X's dtype,
    which is out_dtype=X.dtype here)."""
    return (h_pre.unsqueeze(-1) * X).sum(dim=-2)


def make(lead, n, C, dtype, device="cpu"):
    cd = torch.float64 if dtype == torch.float64 else torch.float32
    h = (torch.rand(*lead, n, dtype=torch.float64) + 1e-6).to(cd).to(device)
    X = torch.randn(*lead, n, C, dtype=torch.float64).to(dtype).to(device)
    return h, X


TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("lead,n,C", [((), 4, 37), ((13,), 4, 199), ((2, 5), 4, 257),
                                      ((9,), 1, 33), ((3,), 8, 5), ((0,), 4, 8)])
@pytest.mark.parametrize("out_dtype", [None, "x"])
def test_forward_and_backward_match_hf(device, dtype, lead, n, C, out_dtype):
    h, X = make(lead, n, C, dtype, device)
    h.requires_grad_()
    X.requires_grad_()
    ot = dtype if out_dtype == "x" else None
    y = recops.mhc_pre_bmm(h, X, ot)
    assert y.dtype == (ot or torch.float32) and y.shape == (*lead, C)
    dy = torch.randn(y.shape, dtype=torch.float64).to(y.dtype).to(device)
    dh, dX = torch.autograd.grad(y, (h, X), dy)
    assert dh.dtype == torch.float32 and dX.dtype == dtype
    h64, X64 = h.detach().double().requires_grad_(), X.detach().double().requires_grad_()
    y64 = hf_pre(h64, X64)
    dh64, dX64 = torch.autograd.grad(y64, (h64, X64), dy.double())
    ty = TOL[y.dtype]
    torch.testing.assert_close(y.double(), y64, rtol=ty, atol=ty * 4)
    torch.testing.assert_close(dX.double(), dX64, rtol=TOL[dtype], atol=TOL[dtype])
    t = TOL[torch.float32] * 10
    torch.testing.assert_close(dh.double(), dh64, rtol=t, atol=t * max(1, C) ** 0.5)


def test_fp64_matches_hf_closely():
    h, X = make((3, 2), 4, 11, torch.float64)
    torch.testing.assert_close(recops.mhc_pre_bmm(h, X, torch.float64), hf_pre(h, X),
                               rtol=1e-13, atol=1e-13)


def test_deterministic():
    h, X = make((64,), 4, 1000, torch.bfloat16)
    h.requires_grad_()
    dy = torch.randn(64, 1000)
    runs = [torch.autograd.grad(recops.mhc_pre_bmm(h, X), h, dy)[0] for _ in range(3)]
    assert all(torch.equal(runs[0], r) for r in runs[1:])


def test_non_finite_rule():
    h, X = make((2,), 4, 5, torch.float32)
    X[0, 1, 2] = float("nan")
    X[1, 0, 3] = float("inf")
    y = recops.mhc_pre_bmm(h, X)
    torch.testing.assert_close(y, hf_pre(h.double(), X.double()).float(), equal_nan=True)
    assert y[0, 2].isnan() and y[1, 3].isinf()


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    h, X = make((3,), 4, 7, torch.bfloat16, device)
    h.requires_grad_()
    X.requires_grad_()
    torch.library.opcheck(torch.ops.recops.mhc_pre_bmm.default, (h, X, torch.bfloat16))
    torch.library.opcheck(torch.ops.recops.mhc_pre_bmm.default, (h, X, None))
    torch.library.opcheck(torch.ops.recops.mhc_pre_bmm_bwd.default,
                          (torch.randn(3, 7, device=device), h.detach(), X.detach(), None))


def test_gradcheck():
    for lead, n, C in (((3,), 4, 5), ((2, 2), 3, 2), ((), 1, 3)):
        h, X = make(lead, n, C, torch.float64)
        h.requires_grad_()
        X.requires_grad_()
        assert torch.autograd.gradcheck(lambda a, b: recops.mhc_pre_bmm(a, b, torch.float64),
                                        (h, X))


@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_matches_eager(dynamic):
    f = torch.compile(lambda a, b: recops.mhc_pre_bmm(a, b, torch.bfloat16), dynamic=dynamic,
                      fullgraph=True)
    for lead in ((3,), (5,)):
        h, X = make(lead, 4, 16, torch.bfloat16)
        torch.testing.assert_close(f(h, X), recops.mhc_pre_bmm(h, X, torch.bfloat16),
                                   rtol=0, atol=0)


def test_noncontiguous_input_is_copied():
    h, X = make((4,), 4, 12, torch.float32)
    Xs = torch.cat([X, X], dim=-1)[..., ::2]
    torch.testing.assert_close(recops.mhc_pre_bmm(h, Xs), recops.mhc_pre_bmm(h, Xs.contiguous()))


def test_bad_input_names_the_argument_and_rule():
    h, X = make((2,), 4, 8, torch.bfloat16)
    with pytest.raises(RuntimeError, match="h_pre must be contiguous fp32\\[2, 4\\]"):
        recops.mhc_pre_bmm(h.bfloat16(), X)
    with pytest.raises(RuntimeError, match="h_pre must be contiguous fp32\\[2, 4\\]"):
        recops.mhc_pre_bmm(h[:, :3], X)
    with pytest.raises(RuntimeError, match="X must be fp64, fp32, fp16 or bf16"):
        recops.mhc_pre_bmm(h, X.int())
    with pytest.raises(RuntimeError, match="out_dtype must be fp64, fp32, fp16 or bf16"):
        recops.mhc_pre_bmm(h, X, torch.int32)
    with pytest.raises(RuntimeError, match="dy must have y's shape \\[2, 8\\] and dtype fp32"):
        torch.ops.recops.mhc_pre_bmm_bwd(torch.randn(2, 8).bfloat16(), h, X, None)
