"""mhc_post through PyTorch: the peer is a plain-torch writing of the HF DeepseekV4DecoderLayer
post-mix (``post * y + comb^T @ X``; Megatron's out_in layout is ``comb @ X``) in fp64, its
autograd for the backward, plus opcheck, gradcheck, torch.compile and the refusals. Collected by
`pytest src/ops` (scripts/test_all.sh)."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def hf_post(X, y, post, comb, comb_layout="in_out"):
    """HF DeepSeek V4: the block output expanded by post, plus the streams mixed by comb^T
    (comb[i, j] from stream i to stream j)."""
    mix = comb.transpose(-1, -2) if comb_layout == "in_out" else comb
    return post.unsqueeze(-1) * y.unsqueeze(-2) + torch.matmul(mix, X)


def make(lead, n, C, dtype, device="cpu", scale=1.0):
    cd = torch.float64 if dtype == torch.float64 else torch.float32
    X = (torch.randn(*lead, n, C, dtype=torch.float64) * scale).to(dtype).to(device)
    y = (torch.randn(*lead, C, dtype=torch.float64) * scale).to(dtype).to(device)
    post = (2 * torch.rand(*lead, n, dtype=torch.float64)).to(cd).to(device)
    comb = torch.rand(*lead, n, n, dtype=torch.float64).to(cd).to(device)
    return X, y, post, comb


TOL = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("lead,n,C", [((), 4, 37), ((13,), 4, 199), ((2, 5), 4, 257),
                                      ((9,), 1, 33), ((3,), 8, 5), ((0,), 4, 8)])
@pytest.mark.parametrize("layout", ["in_out", "out_in"])
def test_forward_and_backward_match_hf(device, dtype, lead, n, C, layout):
    X, y, post, comb = make(lead, n, C, dtype, device)
    args = [t.requires_grad_() for t in (X, y, post, comb)]
    out = recops.mhc_post(*args, comb_layout=layout)
    assert out.dtype == dtype and out.shape == X.shape
    dout = torch.randn(out.shape, dtype=torch.float64).to(dtype).to(device)
    grads = torch.autograd.grad(out, args, dout)
    a64 = [t.detach().double().requires_grad_() for t in args]
    out64 = hf_post(*a64, comb_layout=layout)
    g64 = torch.autograd.grad(out64, a64, dout.double())
    tol = TOL[dtype]
    torch.testing.assert_close(out.double(), out64, rtol=tol, atol=tol * 4)
    for g, ref, a in zip(grads, g64, args):
        assert g.dtype == a.dtype and g.shape == a.shape
        # dpost and dcomb are fp32 sums over C of products of dtype values.
        t = TOL[torch.float32] * 10 if g.dtype == torch.float32 else tol
        torch.testing.assert_close(g.double(), ref, rtol=t, atol=t * 4 * max(1, C) ** 0.5)


def test_fp64_matches_hf_closely():
    X, y, post, comb = make((3, 2), 4, 11, torch.float64)
    for layout in ("in_out", "out_in"):
        torch.testing.assert_close(recops.mhc_post(X, y, post, comb, comb_layout=layout),
                                   hf_post(X, y, post, comb, layout), rtol=1e-13, atol=1e-13)


def test_layouts_are_transposes():
    X, y, post, comb = make((5,), 4, 9, torch.float32)
    torch.testing.assert_close(recops.mhc_post(X, y, post, comb),
                               recops.mhc_post(X, y, post, comb.transpose(-1, -2).contiguous(),
                                               comb_layout="out_in"), rtol=0, atol=0)


def test_non_finite_rule():
    X, y, post, comb = make((2,), 4, 5, torch.float32)
    X[0, 1, 2] = float("nan")
    y[1, 3] = float("inf")
    out = recops.mhc_post(X, y, post, comb)
    torch.testing.assert_close(out, hf_post(X.double(), y.double(), post.double(),
                                            comb.double()).float(), equal_nan=True)
    assert out[0, :, 2].isnan().all() and out[1, :, 3].isinf().all()


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    X, y, post, comb = make((3,), 4, 7, torch.float32, device)
    args = [t.requires_grad_() for t in (X, y, post, comb)]
    torch.library.opcheck(torch.ops.recops.mhc_post.default, (*args, 1))
    dout = torch.randn(3, 4, 7, device=device)
    torch.library.opcheck(torch.ops.recops.mhc_post_bwd.default,
                          (dout, *[t.detach() for t in args], 0))


def test_gradcheck():
    for lead, n, C in (((3,), 4, 5), ((2, 2), 3, 2), ((), 1, 3)):
        args = [t.requires_grad_() for t in make(lead, n, C, torch.float64)]
        for layout in ("in_out", "out_in"):
            assert torch.autograd.gradcheck(
                lambda *a: recops.mhc_post(*a, comb_layout=layout), args)


def test_compile_matches_eager():
    f = torch.compile(lambda *a: recops.mhc_post(*a, comb_layout="out_in"), fullgraph=True)
    for lead in ((3,), (5,)):
        args = make(lead, 4, 16, torch.bfloat16)
        torch.testing.assert_close(f(*args), recops.mhc_post(*args, comb_layout="out_in"),
                                   rtol=0, atol=0)


def test_noncontiguous_input_is_copied():
    X, y, post, comb = make((4,), 4, 12, torch.float32)
    Xs = torch.cat([X, X], dim=-1)[..., ::2]
    torch.testing.assert_close(recops.mhc_post(Xs, y, post, comb),
                               recops.mhc_post(Xs.contiguous(), y, post, comb))


def test_bad_input_names_the_argument_and_rule():
    X, y, post, comb = make((2,), 4, 8, torch.bfloat16)
    with pytest.raises(ValueError, match="in_out|out_in"):
        recops.mhc_post(X, y, post, comb, comb_layout="diag")
    with pytest.raises(RuntimeError, match="post must be contiguous fp32\\[2, 4\\]"):
        recops.mhc_post(X, y, post.bfloat16(), comb)
    with pytest.raises(RuntimeError, match="comb must be contiguous fp32\\[2, 4, 4\\]"):
        recops.mhc_post(X, y, post, comb[:, :3])
    with pytest.raises(RuntimeError, match="y must be contiguous bf16\\[2, 8\\]"):
        recops.mhc_post(X, y.float(), post, comb)
    with pytest.raises(RuntimeError, match="X must be fp64, fp32, fp16 or bf16"):
        recops.mhc_post(X.int(), y, post, comb)
    with pytest.raises(RuntimeError, match="comb_layout must be 0 \\(in_out\\) or 1 \\(out_in\\)"):
        torch.ops.recops.mhc_post(X, y, post, comb, 5)


def hf_hyper_connection_layer(X, mixes, block, hc_eps=1e-6, iters=20):
    """The plain-torch HF DeepseekV4HyperConnection + DecoderLayer residual math from the
    projected mixes [..., n(n+2)]: pre = sigmoid + eps, post = 2 sigmoid, comb = the Sinkhorn of
    the comb logits; the block runs on the pre-collapsed streams."""
    n = X.shape[-2]
    pre_w, post_w, comb_w = mixes.split([n, n, n * n], dim=-1)
    pre = torch.sigmoid(pre_w) + hc_eps
    post = 2 * torch.sigmoid(post_w)
    comb = torch.softmax(comb_w.unflatten(-1, (n, n)), dim=-1) + hc_eps
    comb = comb / (comb.sum(dim=-2, keepdim=True) + hc_eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(dim=-1, keepdim=True) + hc_eps)
        comb = comb / (comb.sum(dim=-2, keepdim=True) + hc_eps)
    collapsed = (pre.unsqueeze(-1) * X).sum(dim=-2)
    return post.unsqueeze(-1) * block(collapsed).unsqueeze(-2) + torch.matmul(
        comb.transpose(-1, -2), X)


def recops_hyper_connection_layer(X, mixes, block, hc_eps=1e-6, iters=20):
    """The same layer from recops.mhc_pre_bmm, mhc_sinkhorn and mhc_post."""
    n = X.shape[-2]
    pre_w, post_w, comb_w = mixes.split([n, n, n * n], dim=-1)
    pre = torch.sigmoid(pre_w) + hc_eps
    post = 2 * torch.sigmoid(post_w)
    comb = recops.mhc_sinkhorn(comb_w.unflatten(-1, (n, n)).contiguous(), iters, hc_eps)
    collapsed = recops.mhc_pre_bmm(pre.contiguous(), X, X.dtype)
    return recops.mhc_post(X, block(collapsed), post.contiguous(), comb)


def test_composed_layer_matches_hf_in_value_and_gradient():
    torch.manual_seed(0)
    B, S, n, C = 2, 3, 4, 16
    W = torch.randn(C, C, dtype=torch.float64) / C ** 0.5

    def block(h):
        return torch.tanh(h @ W)

    X = torch.randn(B, S, n, C, dtype=torch.float64, requires_grad=True)
    mixes = torch.randn(B, S, n * (n + 2), dtype=torch.float64, requires_grad=True)
    dout = torch.randn(B, S, n, C, dtype=torch.float64)
    got = recops_hyper_connection_layer(X, mixes, block)
    want = hf_hyper_connection_layer(X, mixes, block)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    g = torch.autograd.grad(got, (X, mixes), dout)
    w = torch.autograd.grad(want, (X, mixes), dout)
    for a, b in zip(g, w):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
