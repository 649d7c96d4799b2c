"""chunk_kda_bwd_intra through PyTorch: the chain intra forward -> (Ahat, M) -> loss
<dAqk, Ahat> + <dAkk, M> by torch autograd in fp64 (per chunk Ahat_ij = sum_d q_i k_j
exp(G_i - G_j) for j <= i, M_ij = beta_i sum_d k_i k_j exp(G_i - G_j) for j < i, q and k leaves at
the H key heads, G in natural-log units), whose gradients plus the incoming dq, dk, dbeta, dg are
the op's four outputs; GVA, varlen with zero-length and sub-chunk sequences, gate_log2, every
dtype; the chain with chunk_kda_fwd_intra's Aqk and chunk_kda_bwd_dav; opcheck; the forward-only
refusal; empty inputs; bad input; the fla drop-in (``recops.compat.fla.chunk_kda_bwd_intra``) and
fla-core itself when it imports with a GPU (Triton only). Collected by `pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import chunks  # noqa: E402


def make(B, T, H, K, gva=1, dtype=torch.float32, offsets=None, chunk_size=64, seed=0,
         log2=False):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    cu = torch.tensor(offsets) if offsets is not None else None
    decay = torch.nn.functional.logsigmoid(torch.rand(B, T, HV, K, generator=gen,
                                                      dtype=torch.float64))
    if log2:
        decay = decay / math.log(2.0)
    t = dict(q=torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype),
             k=torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype),
             g=recops.chunk_local_cumsum(decay.float(), chunk_size, seq_offsets=cu),
             beta=torch.sigmoid(rnd(B, T, HV)).to(dtype),
             dAqk=rnd(B, T, HV, chunk_size).float(), dAkk=rnd(B, T, HV, chunk_size).float(),
             dq=rnd(B, T, H, K).float(), dk=rnd(B, T, H, K).float(),
             dbeta=rnd(B, T, HV).float(), dg=rnd(B, T, HV, K).float())
    return t, cu


def scores(Q, Kc, G, be):
    """Ahat and M of one chunk ([HV, R, K] rows, G natural-log, be [HV, R]) in fp64 torch."""
    R = Q.shape[1]
    low = torch.ones(R, R, dtype=torch.bool).tril()
    strict = low.tril(-1)
    d = torch.where(low[None, :, :, None], G[:, :, None, :] - G[:, None, :, :], 0)
    E = torch.exp(d)
    Ahat = (Q[:, :, None, :] * Kc[:, None, :, :] * E).sum(-1) * low
    M = be[:, :, None] * (Kc[:, :, None, :] * Kc[:, None, :, :] * E).sum(-1) * strict
    return Ahat, M


def autograd_peer(q, k, g, beta, dAqk, dAkk, dq, dk, dbeta, dg, cu_seqlens=None, chunk_size=64,
                  gate_log2=False):
    """The incoming gradients plus those of <dAqk, Ahat> + <dAkk, M> by torch autograd in fp64;
    G's gradient in natural-log units (G = G2 ln 2 with gate_log2)."""
    B, T, H, K = q.shape
    HV, bt = g.shape[2], chunk_size
    grp = HV // H if H else 1
    unit = math.log(2.0) if gate_log2 else 1.0
    ql, kl = q.detach().double().requires_grad_(), k.detach().double().requires_grad_()
    bl = beta.detach().double().requires_grad_()
    gl = (g.double() * unit).requires_grad_()
    qv, kv = ql.repeat_interleave(grp, dim=2), kl.repeat_interleave(grp, dim=2)
    loss = torch.zeros((), dtype=torch.float64)
    for b, s, e, _ in chunks(B, T, cu_seqlens, bt):
        R = e - s
        Ahat, M = scores(qv[b, s:e].transpose(0, 1), kv[b, s:e].transpose(0, 1),
                         gl[b, s:e].transpose(0, 1), bl[b, s:e].transpose(0, 1))
        loss = loss + (dAqk[b, s:e, :, :R].double().transpose(0, 1) * Ahat).sum()
        loss = loss + (dAkk[b, s:e, :, :R].double().transpose(0, 1) * M).sum()
    leaves = [ql, kl, bl, gl]
    if loss.requires_grad:
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        grads = [torch.zeros_like(x) if d is None else d for x, d in zip(leaves, grads)]
    else:
        grads = [torch.zeros_like(x) for x in leaves]
    return (dq.double() + grads[0], dk.double() + grads[1], dbeta.double() + grads[2],
            dg.double() + grads[3])


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=32),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=13, gva=2, chunk_size=32),
    "t100_bt16_log2": dict(B=1, T=100, H=1, K=16, chunk_size=16, log2=True),
    "gva4_log2": dict(B=2, T=40, H=1, K=8, gva=4, chunk_size=32, log2=True),
    "varlen_empty_gva2": dict(B=1, T=0, H=2, K=16, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                              chunk_size=16),
    "varlen_spec_log2": dict(B=1, T=0, H=1, K=16, offsets=[0, 122, 229, 400], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}

NAMES = ("dq", "dk", "dbeta", "dg")


def call(t, cu, bt, log2):
    return recops.chunk_kda_bwd_intra(t["q"], t["k"], t["g"], t["beta"], t["dAqk"], t["dAkk"],
                                      t["dq"], t["dk"], t["dbeta"], t["dg"], cu, bt, log2)


def assert_near(got, want, tol, name):
    top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol * top, msg=name)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_autograd_of_the_intra_forward(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    t, cu = make(dtype=dtype, **cfg)
    got = call(t, cu, bt, log2)
    want = autograd_peer(**t, cu_seqlens=cu, chunk_size=bt, gate_log2=log2)
    for n, a, b, like in zip(NAMES, got, want, ("dq", "dk", "dbeta", "dg")):
        assert a.dtype == torch.float32 and a.shape == t[like].shape, n
        assert_near(a, b, 1e-5, n)


def test_fp64_inputs_are_computed_in_fp64():
    t, cu = make(dtype=torch.float64, **CONFIGS["t63_bt32_gva2"])
    got = call(t, cu, 32, False)
    want = autograd_peer(**t, cu_seqlens=cu, chunk_size=32)
    for n, a, b in zip(NAMES, got, want):  # fp32 outputs: one rounding of an fp64 result
        torch.testing.assert_close(a.double(), b, rtol=1e-6, atol=1e-6, msg=n)


def test_parts_not_read():
    # dAqk above the diagonal, dAkk on and above it, and the columns past a tail chunk
    t, cu = make(**CONFIGS["t65_bt64"])
    want = call(t, cu, 64, False)
    up = torch.ones(64, 64).triu(1).bool()
    for n, m in (("dAqk", up), ("dAkk", torch.ones(64, 64).triu().bool())):
        x = t[n].clone()
        x[:, :64][:, :, :, :][m[None, :, None, :].expand(2, 64, 2, 64)] = 9.0
        x[:, 64:, :, 1:] = 9.0
        t = dict(t, **{n: x})
    got = call(t, cu, 64, False)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_chain_with_the_forward_and_dav():
    """chunk_kda_fwd_intra's Aqk (= scale Ahat) and chunk_kda_bwd_dav's dAqk (the gradient of
    Ahat) give, through this op, the gradient of <do, tril(Aqk) v_new> in q, k and G."""
    t, cu = make(B=1, T=50, H=2, K=8, gva=2, chunk_size=32, dtype=torch.float64)
    B, T, H, K = t["q"].shape
    HV = t["g"].shape[2]
    scale = 0.4
    gen = torch.Generator().manual_seed(3)
    v = torch.randn(B, T, HV, 4, generator=gen, dtype=torch.float64)
    do = torch.randn(B, T, HV, 4, generator=gen, dtype=torch.float64)
    Aqk = recops.chunk_kda_fwd_intra(t["q"], t["k"], v, t["g"].double(), t["beta"], scale, None,
                                     32)[4]
    dAqk, _ = recops.chunk_kda_bwd_dav(v, do, Aqk, scale, None, 32)
    zeros = {n: torch.zeros_like(t[n]) for n in ("dq", "dk", "dbeta", "dg")}
    got = recops.chunk_kda_bwd_intra(t["q"], t["k"], t["g"], t["beta"], dAqk,
                                     torch.zeros_like(dAqk), zeros["dq"], zeros["dk"],
                                     zeros["dbeta"], zeros["dg"], None, 32, False)
    ql, kl = t["q"].clone().requires_grad_(), t["k"].clone().requires_grad_()
    gl = t["g"].double().requires_grad_()
    qv, kv = ql.repeat_interleave(2, dim=2), kl.repeat_interleave(2, dim=2)
    loss = torch.zeros((), dtype=torch.float64)
    for b, s, e, _ in chunks(B, T, None, 32):
        Ahat, _ = scores(qv[b, s:e].transpose(0, 1), kv[b, s:e].transpose(0, 1),
                         gl[b, s:e].transpose(0, 1), t["beta"][b, s:e].transpose(0, 1))
        loss = loss + (do[b, s:e].transpose(0, 1) * ((scale * Ahat) @ v[b, s:e].transpose(0, 1))).sum()
    want = torch.autograd.grad(loss, [ql, kl, gl])
    for a, b in zip((got[0], got[1], got[3]), want):
        torch.testing.assert_close(a.double(), b, rtol=1e-5, atol=1e-5)


def test_opcheck():
    t, cu = make(**CONFIGS["varlen_empty_gva2"])
    torch.library.opcheck(torch.ops.recops.chunk_kda_bwd_intra.default,
                          (t["q"], t["k"], t["g"], t["beta"], t["dAqk"], t["dAkk"], t["dq"],
                           t["dk"], t["dbeta"], t["dg"], cu, 16, False))
    t, _ = make(**CONFIGS["gva4_log2"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_kda_bwd_intra.default,
                          (t["q"], t["k"], t["g"], t["beta"], t["dAqk"], t["dAkk"], t["dq"],
                           t["dk"], t["dbeta"], t["dg"], None, 32, True))


def test_forward_only():
    t, _ = make(1, 10, 1, 8)
    t["q"].requires_grad_(True)
    with pytest.raises(RuntimeError, match="q"):
        call(t, None, 64, False)
    with torch.no_grad():  # as inside fla's KDA backward
        call(t, None, 64, False)


def test_empty_inputs():
    for cfg in (dict(B=2, T=0, H=2, K=8), dict(B=0, T=5, H=1, K=8),
                dict(B=1, T=0, H=1, K=8, offsets=[0, 0, 0])):
        t, cu = make(**cfg)
        assert [x.numel() for x in call(t, cu, 64, False)] == [0] * 4


def test_noncontiguous_inputs_are_copied():
    t, _ = make(1, 40, 2, 16, chunk_size=32)
    want = call(t, None, 32, False)
    t["q"] = torch.stack([t["q"], t["q"]], -1)[..., 0]
    got = call(t, None, 32, False)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bad_input_names_the_argument():
    t, _ = make(1, 10, 2, 8)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        call(t, None, 128, False)
    with pytest.raises(RuntimeError, match=r"dAqk must be \[B, T, HV, BT\] = \[1, 10, 2, 32\]"):
        call(t, None, 32, False)
    with pytest.raises(RuntimeError, match=r"g's HV=3 must be a multiple of q's H=2"):
        call(dict(t, g=torch.zeros(1, 10, 3, 8)), None, 64, False)
    with pytest.raises(RuntimeError, match=r"dq must be \[B, T, H, K\]"):
        call(dict(t, dq=torch.zeros(1, 10, 4, 8)), None, 64, False)
    with pytest.raises(RuntimeError, match=r"beta must be \[B, T, HV\]"):
        call(dict(t, beta=t["beta"][:, :, :1].contiguous()), None, 64, False)


# ---- recops.compat.fla.chunk_kda_bwd_intra and fla-core -----------------------------------------


def test_fla_dropin_matches_the_op():
    # fla's g is the log2-unit cumsum; dq and dk come and go at the HV value heads.
    t, cu = make(**CONFIGS["varlen_empty_gva2"], log2=True)
    B, T, H, K = t["q"].shape
    HV = t["g"].shape[2]
    gen = torch.Generator().manual_seed(9)
    dq_hv = torch.randn(B, T, HV, K, generator=gen)
    dk_hv = torch.randn(B, T, HV, K, generator=gen)
    got = fla_compat.chunk_kda_bwd_intra(t["q"], t["k"], t["g"], t["beta"], t["dAqk"], t["dAkk"],
                                         dq_hv, dk_hv, t["dbeta"], t["dg"], cu_seqlens=cu,
                                         chunk_size=16)
    assert tuple(got[0].shape) == (B, T, HV, K) and got[0].dtype == torch.float32
    want = call(dict(t, dq=dq_hv.view(B, T, H, HV // H, K).sum(3),
                     dk=dk_hv.view(B, T, H, HV // H, K).sum(3)), cu, 16, True)
    torch.testing.assert_close(got[0].view(B, T, H, HV // H, K).sum(3), want[0], rtol=1e-5,
                               atol=1e-5)
    torch.testing.assert_close(got[1].view(B, T, H, HV // H, K).sum(3), want[1], rtol=1e-5,
                               atol=1e-5)
    for a, b in zip(got[2:], want[2:]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.kda.chunk_intra import chunk_kda_bwd_intra
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_kda_bwd_intra is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_kda_bwd_intra is a Triton kernel and needs a GPU")
    t, cu = make(**dict(CONFIGS["varlen_spec_log2"], K=64), dtype=torch.bfloat16)
    # fla reads dAkk's diagonal (wy_dqkg_fused's dA has none): keep only its strictly lower part
    for b, s, e, _ in chunks(1, t["q"].shape[1], cu, 64):
        t["dAkk"][b, s:e, :, :] *= torch.ones(e - s, 64).tril(-1)[:, None, :]
    cuda = {n: x.cuda() for n, x in t.items()}
    want = chunk_kda_bwd_intra(cuda["q"], cuda["k"], cuda["g"], cuda["beta"], cuda["dAqk"],
                               cuda["dAkk"], cuda["dq"], cuda["dk"], cuda["dbeta"], cuda["dg"],
                               cu_seqlens=cu.cuda(), chunk_size=64)
    got = fla_compat.chunk_kda_bwd_intra(t["q"], t["k"], t["g"], t["beta"], t["dAqk"],
                                         t["dAkk"], t["dq"], t["dk"], t["dbeta"], t["dg"],
                                         cu_seqlens=cu)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b.cpu().to(a.dtype), rtol=3e-2, atol=3e-2)
