"""chunk_kda_bwd_wy_dqkg_fused through PyTorch: torch autograd of an independent fp64 composition
of the chunked KDA forward (per chunk: Akk = (I + M)^-1 with M the leaf, w = Akk (beta k exp(G)),
u = Akk (beta v), the state output q exp(G) h_c, the next state diag(exp(G_L)) h_c +
sum_t (k_t exp(G_L - G_t)) v_new_t^T, and the loss <do, o> + <dh_c, S'> + <dv2, u - w h_c>),
whose gradients in q, k, v, beta, G and M are the op's six outputs; GVA, varlen with zero-length
and sub-chunk sequences, gate_log2, every dtype; opcheck; the forward-only refusal; empty inputs;
bad input; the fla drop-in (``recops.compat.fla.chunk_kda_bwd_wy_dqkg_fused``) and fla-core
itself when it imports with a GPU (Triton only). Collected by `pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import chunks, n_chunks  # noqa: E402


def akk_of(k, beta, g, cu, bt, log2):
    """The chunks' rows of (I + M)^-1, M_ij = beta_i sum_d k_id k_jd exp(G_id - G_jd) (j < i),
    fp32 [B, T, HV, BT], in fp64 torch."""
    B, T, H, K = k.shape
    HV = beta.shape[2]
    grp = HV // H if H else 1
    ex = torch.exp2 if log2 else torch.exp
    kv = k.double().repeat_interleave(grp, dim=2)
    A = torch.zeros(B, T, HV, bt, dtype=torch.float64)
    for b, s, e, _ in chunks(B, T, cu, bt):
        R = e - s
        Kc = kv[b, s:e].transpose(0, 1)                     # [HV, R, K]
        G = g[b, s:e].double().transpose(0, 1)              # [HV, R, K]
        d = G[:, :, None, :] - G[:, None, :, :]             # [HV, R, R, K]
        mask = torch.ones(R, R, dtype=torch.bool).tril(-1)
        d = torch.where(mask[None, :, :, None], d, 0)
        M = (Kc[:, :, None, :] * Kc[:, None, :, :] * ex(d)).sum(-1)
        M = M * beta[b, s:e].double().transpose(0, 1)[:, :, None] * mask
        Ai = torch.linalg.inv(torch.eye(R, dtype=torch.float64) + M)
        A[b, s:e, :, :R] = Ai.transpose(0, 1)
    return A.float()


def make(B, T, H, K, V=16, gva=1, dtype=torch.float32, offsets=None, chunk_size=64, seed=0,
         log2=False):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    v = rnd(B, T, HV, V).to(dtype)
    v_new = rnd(B, T, HV, V).to(dtype)
    beta = torch.sigmoid(rnd(B, T, HV)).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    decay = torch.nn.functional.logsigmoid(torch.rand(B, T, HV, K, generator=gen,
                                                      dtype=torch.float64))
    if log2:
        decay = decay / math.log(2.0)
    g = recops.chunk_local_cumsum(decay.float(), chunk_size, seq_offsets=cu)
    nt = n_chunks(B, T, cu, chunk_size)
    h = (0.3 * rnd(B, nt, HV, K, V)).to(dtype)
    dh = (0.3 * rnd(B, nt, HV, K, V)).to(dtype)
    do = rnd(B, T, HV, V).to(dtype)
    dv2 = rnd(B, T, HV, V).to(dtype)
    A = akk_of(k, beta, g, cu, chunk_size, log2)
    return dict(q=q, k=k, v=v, v_new=v_new, g=g, beta=beta, Akk=A, h=h, do=do, dh=dh,
                dv2=dv2), cu


def autograd_peer(q, k, v, v_new, g, beta, Akk, h, do, dh, dv2, scale=None, cu_seqlens=None,
                  chunk_size=64, gate_log2=False):
    """The gradients (dq, dk, dv, dbeta, dG, dA) of the chunk loss in fp64 by torch autograd. M is
    recovered from the given Akk (M = Akk^-1 - I per chunk) and is the leaf of Akk = (I + M)^-1;
    G's gradient is in natural-log units (G = G2 ln 2 with gate_log2)."""
    B, T, H, K = q.shape
    HV, bt = v.shape[2], chunk_size
    grp = HV // H if H else 1
    scale = K ** -0.5 if scale is None else scale
    unit = math.log(2.0) if gate_log2 else 1.0
    ql, kl = q.detach().double().requires_grad_(), k.detach().double().requires_grad_()
    vl, bl = v.detach().double().requires_grad_(), beta.detach().double().requires_grad_()
    gl = (g.double() * unit).requires_grad_()
    qv, kv = ql.repeat_interleave(grp, dim=2), kl.repeat_interleave(grp, dim=2)
    loss = torch.zeros((), dtype=torch.float64)
    leaves_m = []
    for b, s, e, c in chunks(B, T, cu_seqlens, bt):
        R = e - s
        Q, Kc = qv[b, s:e].transpose(0, 1), kv[b, s:e].transpose(0, 1)      # [HV, R, K]
        Vc = vl[b, s:e].transpose(0, 1)                                      # [HV, R, V]
        Vn = v_new[b, s:e].double().transpose(0, 1)
        G = gl[b, s:e].transpose(0, 1)                                        # [HV, R, K]
        be = bl[b, s:e].transpose(0, 1)[:, :, None]                           # [HV, R, 1]
        hc, dhc = h[b, c].double(), dh[b, c].double()                         # [HV, K, V]
        eye = torch.eye(R, dtype=torch.float64)
        Ablk = Akk[b, s:e, :, :R].double().transpose(0, 1)                   # [HV, R, R]
        M = (torch.linalg.inv(Ablk) - eye).tril(-1).requires_grad_()
        leaves_m.append((b, s, e, M))
        Ai = torch.linalg.inv(eye + M)
        w = Ai @ (be * Kc * torch.exp(G))
        u = Ai @ (be * Vc)
        o = scale * (Q * torch.exp(G)) @ hc
        GL = G[:, -1:, :]                                                     # [HV, 1, K]
        state = torch.exp(GL).transpose(1, 2) * hc + (Kc * torch.exp(GL - G)).transpose(1, 2) @ Vn
        loss = loss + (do[b, s:e].double().transpose(0, 1) * o).sum() + (dhc * state).sum()
        loss = loss + (dv2[b, s:e].double().transpose(0, 1) * (u - w @ hc)).sum()
    ms = [m for *_, m in leaves_m]
    leaves = [ql, kl, vl, bl, gl] + ms
    if not loss.requires_grad:
        grads = [torch.zeros_like(x) for x in leaves]
    else:
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
        grads = [torch.zeros_like(x) if d is None else d for x, d in zip(leaves, grads)]
    dA = torch.zeros(B, T, HV, bt, dtype=torch.float64)
    for (b, s, e, _), dm in zip(leaves_m, grads[5:]):
        dA[b, s:e, :, :e - s] = dm.tril(-1).transpose(0, 1)
    return grads[0], grads[1], grads[2], grads[3], grads[4], dA


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=32, V=8),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=13, V=7, gva=2, chunk_size=32),
    "t100_bt16_log2": dict(B=1, T=100, H=1, K=16, V=8, chunk_size=16, log2=True),
    "gva4": dict(B=2, T=40, H=1, K=8, V=4, gva=4, chunk_size=32),
    "varlen_empty": dict(B=1, T=0, H=2, K=16, V=8, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec": dict(B=1, T=0, H=1, K=16, V=8, offsets=[0, 122, 229, 400], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8, V=4),
    "t0": dict(B=2, T=0, H=2, K=8, V=4),
}

NAMES = ("dq", "dk", "dv", "dbeta", "dg", "dA")


def call(t, cu, bt, log2, scale=None):
    return recops.chunk_kda_bwd_wy_dqkg_fused(t["q"], t["k"], t["v"], t["v_new"], t["g"],
                                              t["beta"], t["Akk"], t["h"], t["do"], t["dh"],
                                              t["dv2"], scale, cu, bt, log2)


def assert_near(got, want, tol, name):
    top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol * top, msg=name)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_autograd_of_the_chunked_forward(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    t, cu = make(dtype=dtype, **cfg)
    for scale in (None, 0.7):
        got = call(t, cu, bt, log2, scale)
        want = autograd_peer(**t, scale=scale, cu_seqlens=cu, chunk_size=bt, gate_log2=log2)
        B, T, H, K = t["q"].shape
        HV = t["v"].shape[2]
        shapes = [(B, T, H, K), (B, T, H, K), tuple(t["v"].shape), (B, T, HV), (B, T, HV, K),
                  (B, T, HV, bt)]
        for n, a, b, s in zip(NAMES, got, want, shapes):
            assert tuple(a.shape) == s, n
            assert a.dtype == (dtype if n == "dv" else torch.float32), n
            # fp32 outputs (fp32 arithmetic, fp64 for fp64 inputs); dv rounded to v's dtype
            tol = 2 ** -7 if (n == "dv" and dtype == torch.bfloat16) else 2e-5
            assert_near(a, b, tol, n)


def test_fp64_inputs_are_computed_in_fp64():
    t, cu = make(dtype=torch.float64, **CONFIGS["t63_bt32_gva2"])
    got = call(t, cu, 32, False, 0.6)
    want = autograd_peer(**t, scale=0.6, cu_seqlens=cu, chunk_size=32)
    torch.testing.assert_close(got[2], want[2], rtol=1e-10, atol=1e-10)  # dv in v's dtype
    for n, a, b in zip(NAMES, got, want):
        if n != "dv":  # fp32 outputs: one rounding of an fp64 result
            torch.testing.assert_close(a.double(), b, rtol=1e-6, atol=1e-6, msg=n)


def test_opcheck():
    t, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_kda_bwd_wy_dqkg_fused.default,
                          (t["q"], t["k"], t["v"], t["v_new"], t["g"], t["beta"], t["Akk"],
                           t["h"], t["do"], t["dh"], t["dv2"], None, cu, 16, False))
    t, _ = make(**CONFIGS["gva4"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_kda_bwd_wy_dqkg_fused.default,
                          (t["q"], t["k"], t["v"], t["v_new"], t["g"], t["beta"], t["Akk"],
                           t["h"], t["do"], t["dh"], t["dv2"], 0.5, None, 32, True))


def test_forward_only():
    t, _ = make(1, 10, 1, 8, V=4)
    t["q"].requires_grad_(True)
    with pytest.raises(RuntimeError, match="q"):
        call(t, None, 64, False)
    with torch.no_grad():  # as inside fla's KDA backward
        call(t, None, 64, False)


def test_empty_inputs():
    for cfg in (dict(B=2, T=0, H=2, K=8), dict(B=0, T=5, H=1, K=8),
                dict(B=1, T=0, H=1, K=8, offsets=[0, 0, 0])):
        t, cu = make(**cfg)
        out = call(t, cu, 64, False)
        assert [x.numel() for x in out] == [0] * 6


def test_noncontiguous_inputs_are_copied():
    t, _ = make(1, 40, 2, 16, V=5, chunk_size=32)
    want = call(t, None, 32, False)
    t["q"] = torch.stack([t["q"], t["q"]], -1)[..., 0]
    t["h"] = t["h"].transpose(-1, -2).contiguous().transpose(-1, -2)
    got = call(t, None, 32, False)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bad_input_names_the_argument():
    t, _ = make(1, 10, 2, 8, V=4)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        call(t, None, 128, False)
    with pytest.raises(RuntimeError, match=r"Akk must be \[B, T, HV, BT\] = \[1, 10, 2, 32\]"):
        call(t, None, 32, False)
    bad = dict(t, g=t["g"][..., 0].contiguous())
    with pytest.raises(RuntimeError, match=r"g must be \[B, T, HV, K\]"):
        call(bad, None, 64, False)
    bad = dict(t, dh=torch.randn(1, 2, 2, 8, 4))
    with pytest.raises(RuntimeError, match=r"dh must be \[B, NT, HV, K, V\] = \[1, 1, 2, 8, 4\]"):
        call(bad, None, 64, False)
    bad = dict(t, beta=t["beta"][:, :, :1].contiguous())
    with pytest.raises(RuntimeError, match=r"beta must be \[B, T, HV\]"):
        call(bad, None, 64, False)
    with pytest.raises(RuntimeError, match="h's NT=1 is less than the chunk count"):
        tt, _ = make(1, 0, 2, 8, V=4, offsets=[0, 3, 10], chunk_size=16)
        tt["h"], tt["dh"] = tt["h"][:, :1].contiguous(), tt["dh"][:, :1].contiguous()
        call(tt, torch.tensor([0, 3, 10]), 16, False)


# ---- recops.compat.fla.chunk_kda_bwd_wy_dqkg_fused and fla-core ---------------------------------


def test_fla_dropin_matches_the_op():
    # fla's g is the log2-unit chunk-local cumsum (exp2 in its kernel); dq and dk stay at the HV
    # value heads (fla's caller sums them to H); dg in natural-log units.
    t, cu = make(**CONFIGS["varlen_empty"], log2=True)
    got = fla_compat.chunk_kda_bwd_wy_dqkg_fused(
        t["q"], t["k"], t["v"], t["v_new"], t["g"], t["beta"], t["Akk"], t["h"], t["do"],
        t["dh"], t["dv2"], scale=0.25, cu_seqlens=cu, chunk_size=16)
    want = call(t, cu, 16, True, 0.25)
    B, T, H, K = t["q"].shape
    HV = t["v"].shape[2]
    assert tuple(got[0].shape) == (B, T, HV, K) and got[0].dtype == torch.float32
    torch.testing.assert_close(got[0].view(B, T, H, HV // H, K).sum(3), want[0], rtol=1e-5,
                               atol=1e-5)
    torch.testing.assert_close(got[1].view(B, T, H, HV // H, K).sum(3), want[1], rtol=1e-5,
                               atol=1e-5)
    for a, b in zip(got[2:], want[2:]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # state_v_first: h and dh stored [.., V, K]
    got2 = fla_compat.chunk_kda_bwd_wy_dqkg_fused(
        t["q"], t["k"], t["v"], t["v_new"], t["g"], t["beta"], t["Akk"],
        t["h"].transpose(-1, -2).contiguous(), t["do"], t["dh"].transpose(-1, -2).contiguous(),
        t["dv2"], 0.25, True, cu, 16)
    for a, b in zip(got2, got):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.kda.chunk_bwd import chunk_kda_bwd_wy_dqkg_fused
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_kda_bwd_wy_dqkg_fused is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_kda_bwd_wy_dqkg_fused is a Triton kernel and needs a GPU")
    t, cu = make(**dict(CONFIGS["varlen_spec"], K=64, V=64), dtype=torch.bfloat16)
    cuda = {n: x.cuda() for n, x in t.items()}
    want = chunk_kda_bwd_wy_dqkg_fused(cuda["q"], cuda["k"], cuda["v"], cuda["v_new"], cuda["g"],
                                       cuda["beta"], cuda["Akk"], cuda["h"], cuda["do"],
                                       cuda["dh"], cuda["dv2"], scale=0.125,
                                       cu_seqlens=cu.cuda(), chunk_size=64)
    got = fla_compat.chunk_kda_bwd_wy_dqkg_fused(t["q"], t["k"], t["v"], t["v_new"], t["g"],
                                                 t["beta"], t["Akk"], t["h"], t["do"], t["dh"],
                                                 t["dv2"], scale=0.125, cu_seqlens=cu)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b.cpu().to(a.dtype), rtol=3e-2, atol=3e-2)
