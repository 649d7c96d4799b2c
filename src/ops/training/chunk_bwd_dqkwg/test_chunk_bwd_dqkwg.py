"""chunk_bwd_dqkwg through PyTorch: an independent plain-torch fp64 computation of the formulas
(per chunk in matrix form, GVA by repeat_interleave and a group sum, chunks restarting at each
cu_seqlens start and numbered over all sequences for h and dh); torch autograd of the chunk loss
sum_c [<do, o_c> + <dh_c, S'_c> - <dv2, w h_c>] in fp64, whose gradients are dq, dk, dw and dG;
opcheck; the optional outputs; the forward-only refusal; the fla drop-in
(``recops.compat.fla.chunk_bwd_dqkwg``), and fla-core itself when it is importable with a GPU (its
kernel is Triton: no CPU path); bad input. Collected by `pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import chunks, gate_cumsum, n_chunks  # noqa: E402

# Errors relative to the largest |output|: fp64 is computed in fp64; fp32 in fp32; fp16/bf16
# outputs are one rounding of an fp32 result (half an ulp, plus the fp32 error at a boundary).
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2 ** -10,
       torch.bfloat16: 2 ** -7}


def peer(q, k, v, w, g, h, dh, do, dv2, scale=None, cu_seqlens=None, chunk_size=64,
         gate_log2=False):
    """The formulas in plain torch, fp64, per chunk and all value heads at once (matrix form):
    DS = scale * tril(dO V^T) * Gamma; dQ = scale * exp(G) * dO h^T + DS K; dK = exp(G_L - G) *
    V dh^T + DS^T Q; dW = -dV2 h^T; dG = rowsum(Q * dQ) - rowsum(K * dK), + exp(G_L) <dh, h> +
    sum(K * (exp(G_L - G) * V dh^T)) on the last row; dq, dk summed over each group."""
    B, T, H, K = q.shape
    HV = v.shape[2]
    grp = HV // H if H else 1
    scale = K ** -0.5 if scale is None else scale
    ex = torch.exp2 if gate_log2 else torch.exp
    qv = q.double().repeat_interleave(grp, dim=2)
    kv = k.double().repeat_interleave(grp, dim=2)
    dq = torch.zeros(B, T, HV, K, dtype=torch.float64)
    dk = torch.zeros(B, T, HV, K, dtype=torch.float64)
    dw = torch.zeros(B, T, HV, K, dtype=torch.float64) if w is not None else None
    dg = torch.zeros(B, T, HV, dtype=torch.float64) if g is not None else None
    for b, s, e, c in chunks(B, T, cu_seqlens, chunk_size):
        Q = qv[b, s:e].transpose(0, 1)                   # [HV, R, K]
        Kc = kv[b, s:e].transpose(0, 1)
        Vc = v[b, s:e].double().transpose(0, 1)          # [HV, R, V]
        dO = do[b, s:e].double().transpose(0, 1)
        hc = h[b, c].double()                             # [HV, K, V]
        dhc = dh[b, c].double()
        R = e - s
        DS = (dO @ Vc.transpose(1, 2)).tril()             # [HV, R, R]
        if g is not None:
            G = g[b, s:e].double().transpose(0, 1)        # [HV, R]
            d = G[:, :, None] - G[:, None, :]
            d = torch.where(torch.ones(R, R, dtype=torch.bool).tril(), d, 0)
            DS = DS * ex(d)
            fq = ex(G)[:, :, None]
            fk = ex(G[:, -1:] - G)[:, :, None]
        else:
            fq = fk = torch.ones(HV, R, 1, dtype=torch.float64)
        DS = scale * DS
        inter_k = fk * (Vc @ dhc.transpose(1, 2))         # [HV, R, K]
        dQ = scale * fq * (dO @ hc.transpose(1, 2)) + DS @ Kc
        dK = inter_k + DS.transpose(1, 2) @ Q
        dq[b, s:e] = dQ.transpose(0, 1)
        dk[b, s:e] = dK.transpose(0, 1)
        if w is not None:
            dw[b, s:e] = -(dv2[b, s:e].double().transpose(0, 1) @ hc.transpose(1, 2)).transpose(0, 1)
        if g is not None:
            dG = (Q * dQ).sum(-1) - (Kc * dK).sum(-1)     # [HV, R]
            dG[:, -1] += ex(G[:, -1]) * (hc * dhc).sum((1, 2)) + (Kc * inter_k).sum((1, 2))
            dg[b, s:e] = dG.transpose(0, 1)
    dq = dq.view(B, T, H, grp, K).sum(3)
    dk = dk.view(B, T, H, grp, K).sum(3)
    return dq, dk, dw, dg


def autograd_peer(q, k, v, w, g, h, dh, do, dv2, scale=None, cu_seqlens=None, chunk_size=64,
                  gate_log2=False):
    """The gradients of the chunk loss sum_c [<do, o_c> + <dh_c, S'_c> - <dv2, w h_c>] in fp64 by
    torch autograd, with o_c = scale * (exp(G) * Q h_c + (tril(Q K^T) * Gamma) V), the state after
    chunk c S'_c = exp(G_L) h_c + sum_t exp(G_L - G_t) k_t v_t^T, h_c and v held fixed. G's
    gradient is taken in natural-log units (d/dG of exp(G ln 2) / ln 2 with gate_log2)."""
    B, T, H, K = q.shape
    HV = v.shape[2]
    grp = HV // H if H else 1
    scale = K ** -0.5 if scale is None else scale
    ql, kl = q.double().requires_grad_(), k.double().requires_grad_()
    wl = w.double().requires_grad_() if w is not None else None
    # natural-log G as the leaf: exp2(G2) = exp(G2 * ln 2)
    unit = math.log(2.0) if gate_log2 else 1.0
    gl = (g.double() * unit).requires_grad_() if g is not None else None
    qv, kv = ql.repeat_interleave(grp, dim=2), kl.repeat_interleave(grp, dim=2)
    loss = 0
    for b, s, e, c in chunks(B, T, cu_seqlens, chunk_size):
        R = e - s
        Q, Kc = qv[b, s:e].transpose(0, 1), kv[b, s:e].transpose(0, 1)
        Vc = v[b, s:e].double().transpose(0, 1)
        hc, dhc = h[b, c].double(), dh[b, c].double()
        A = (Q @ Kc.transpose(1, 2)).tril()
        inter = Q @ hc
        state = hc.clone()
        kw = Kc
        if gl is not None:
            G = gl[b, s:e].transpose(0, 1)
            d = G[:, :, None] - G[:, None, :]
            d = torch.where(torch.ones(R, R, dtype=torch.bool).tril(), d, 0)
            A = A * torch.exp(d)
            inter = inter * torch.exp(G)[:, :, None]
            state = torch.exp(G[:, -1])[:, None, None] * hc
            kw = Kc * torch.exp(G[:, -1:] - G)[:, :, None]
        o = scale * (inter + A @ Vc)
        state = state + kw.transpose(1, 2) @ Vc
        loss = loss + (do[b, s:e].double().transpose(0, 1) * o).sum() + (dhc * state).sum()
        if wl is not None:
            W = wl[b, s:e].transpose(0, 1)
            loss = loss - (dv2[b, s:e].double().transpose(0, 1) * (W @ hc)).sum()
    leaves = [x for x in (ql, kl, wl, gl) if x is not None]
    if not torch.is_tensor(loss):
        return [torch.zeros_like(x) for x in leaves]
    return torch.autograd.grad(loss, leaves, allow_unused=True)


def make(B, T, H, K, V=32, gva=1, dtype=torch.float32, gates=True, with_w=True, offsets=None,
         chunk_size=64, seed=0, log2=False):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    v = rnd(B, T, HV, V).to(dtype)
    do = rnd(B, T, HV, V).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    nt = n_chunks(B, T, cu, chunk_size)
    h = (0.3 * rnd(B, nt, HV, K, V)).to(dtype)
    dh = (0.3 * rnd(B, nt, HV, K, V)).to(dtype)
    w = (0.3 * rnd(B, T, HV, K)).to(dtype) if with_w else None
    dv2 = rnd(B, T, HV, V).to(dtype) if with_w else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    return dict(q=q, k=k, v=v, w=w, g=g, h=h, dh=dh, do=do, dv2=dv2), cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=64),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32),
    "t300_bt16_log2": dict(B=1, T=300, H=1, K=32, chunk_size=16, log2=True),
    "no_gates_gva2": dict(B=2, T=100, H=2, K=16, gva=2, gates=False),
    "no_w_gva4": dict(B=1, T=70, H=1, K=16, V=8, gva=4, with_w=False, chunk_size=32),
    "varlen_empty": dict(B=1, T=0, H=2, K=32, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec": dict(B=1, T=0, H=1, K=64, offsets=[0, 122, 229, 400, 1000], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}


def call(t, cu, bt, log2, scale=None):
    return recops.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["w"], t["g"], t["h"], t["dh"],
                                  t["do"], t["dv2"], scale, cu, bt, log2)


def assert_near(got, want, dtype, name):
    top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * top, msg=name)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    t, cu = make(dtype=dtype, **cfg)
    for scale in (None, 0.7):
        dq, dk, dw, dg = call(t, cu, bt, log2, scale)
        want = peer(**t, scale=scale, cu_seqlens=cu, chunk_size=bt, gate_log2=log2)
        assert dq.dtype == dtype and dk.dtype == dtype and dq.shape == t["q"].shape
        assert_near(dq, want[0], dtype, "dq")
        assert_near(dk, want[1], dtype, "dk")
        if t["w"] is not None:
            assert dw.dtype == dtype and dw.shape == t["w"].shape
            assert_near(dw, want[2], dtype, "dw")
        else:
            assert dw.shape == (0,)
        if t["g"] is not None:
            assert dg.dtype == torch.float32 and dg.shape == t["g"].shape
            # dg is stored in fp32 whatever the dtype (fp32 arithmetic below fp64)
            assert_near(dg, want[3], torch.float32, "dg")
        else:
            assert dg.shape == (0,)


@pytest.mark.parametrize("name", ["t65_bt64", "t63_bt32_gva2", "t300_bt16_log2", "no_w_gva4",
                                  "varlen_empty", "no_gates_gva2"])
def test_gradients_of_the_chunk_loss(name):
    """The op's outputs are the autograd gradients of the chunk loss (fp64 inputs)."""
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    t, cu = make(dtype=torch.float64, **cfg)
    dq, dk, dw, dg = call(t, cu, bt, log2, 0.6)
    grads = list(autograd_peer(**t, scale=0.6, cu_seqlens=cu, chunk_size=bt, gate_log2=log2))
    want = {"dq": grads.pop(0), "dk": grads.pop(0)}
    if t["w"] is not None:
        want["dw"] = grads.pop(0)
    if t["g"] is not None:
        want["dg"] = grads.pop(0)
    got = {"dq": dq, "dk": dk, "dw": dw, "dg": dg}
    for n, x in want.items():
        tol = 1e-5 if n == "dg" else 1e-10  # dg is stored in fp32
        torch.testing.assert_close(got[n].double(), x, rtol=tol, atol=tol, msg=n)


def test_opcheck():
    t, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_bwd_dqkwg.default,
                          (t["q"], t["k"], t["v"], t["w"], t["g"], t["h"], t["dh"], t["do"],
                           t["dv2"], None, cu, 16, False))
    t, _ = make(**CONFIGS["no_gates_gva2"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_bwd_dqkwg.default,
                          (t["q"], t["k"].float(), t["v"], None, None, t["h"], t["dh"], t["do"],
                           None, 0.5, None, 64, True))


def test_output_dtypes_follow_q_k_w():
    t, _ = make(1, 20, 1, 8, V=4, dtype=torch.bfloat16)
    dq, dk, dw, dg = recops.chunk_bwd_dqkwg(t["q"], t["k"].half(), t["v"].float(), t["w"].double(),
                                            t["g"], t["h"], t["dh"], t["do"], t["dv2"])
    assert (dq.dtype, dk.dtype, dw.dtype, dg.dtype) == (torch.bfloat16, torch.float16,
                                                        torch.float64, torch.float32)


def test_forward_only():
    t, _ = make(1, 10, 1, 8, V=4)
    t["q"].requires_grad_(True)
    with pytest.raises(RuntimeError, match="q"):
        call(t, None, 64, False)
    with torch.no_grad():  # as inside fla's GDN backward
        call(t, None, 64, False)


def test_noncontiguous_inputs_are_copied():
    t, _ = make(1, 40, 2, 16, V=5, chunk_size=32)
    t["q"] = torch.randn(1, 40, 2, 32)[:, :, :, ::2]
    t["do"] = torch.randn(1, 40, 2, 10)[:, :, :, ::2]
    t["h"] = torch.randn(1, 2, 2, 5, 16).transpose(-1, -2)
    got = call(t, None, 32, False)
    want = peer(**t, cu_seqlens=None, chunk_size=32)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.double(), b, rtol=0, atol=1e-4)


def test_bad_input_names_the_argument():
    t, _ = make(1, 10, 2, 8, V=4)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        call(t, None, 128, False)
    with pytest.raises(RuntimeError, match="w and dv2 are given together"):
        recops.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["w"], t["g"], t["h"], t["dh"], t["do"],
                               None)
    with pytest.raises(RuntimeError, match=r"dh must be \[B, NT, HV, K, V\]"):
        recops.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["w"], t["g"], t["h"],
                               torch.randn(1, 1, 2, 8, 5), t["do"], t["dv2"])
    with pytest.raises(RuntimeError, match=r"do must be \[B, T, HV, V\]"):
        recops.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["w"], t["g"], t["h"], t["dh"],
                               t["do"][:, :, :1].contiguous(), t["dv2"])
    with pytest.raises(RuntimeError, match="h's NT=1 is less than the chunk count"):
        call(t, torch.tensor([0, 3, 10]), 16, False)


# ---- recops.compat.fla.chunk_bwd_dqkwg and fla-core ----------------------------------------------


def test_fla_dropin_matches_peer():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2); dg in natural-log units.
    t, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    dq, dk, dw, dg = fla_compat.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["do"], t["h"], t["dh"],
                                                w=t["w"], g=t["g"], dv=t["dv2"], scale=0.125,
                                                cu_seqlens=cu)
    want = peer(**t, scale=0.125, cu_seqlens=cu, chunk_size=64, gate_log2=True)
    for name, a, b in zip(("dq", "dk", "dw"), (dq, dk, dw), want):
        assert a.dtype == torch.bfloat16
        assert_near(a, b, torch.bfloat16, name)
    assert dg.dtype == torch.float32
    assert_near(dg, want[3], torch.float32, "dg")
    # state_v_first: h and dh stored [.., V, K].
    got2 = fla_compat.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["do"],
                                      t["h"].transpose(-1, -2).contiguous(),
                                      t["dh"].transpose(-1, -2).contiguous(), t["w"], t["g"],
                                      None, t["dv2"], 0.125, True, cu, 64, None)
    for a, b in zip(got2, (dq, dk, dw, dg)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # No w: dw None (dv not read); g_gamma without g: g = g_gamma * (position in chunk + 1),
    # log2 units, and dg None, as fla's kernel.
    t, cu = make(**dict(CONFIGS["varlen_spec"], chunk_size=32, gates=False))
    gamma = -torch.rand(t["v"].shape[2]) * 0.1
    pos = torch.cat([torch.arange(e - s) for _, s, e, _ in chunks(1, t["q"].shape[1], cu, 32)])
    gg = (gamma[None, None, :] * (pos + 1).float()[None, :, None]).contiguous()
    dq, dk, dw, dg = fla_compat.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["do"], t["h"], t["dh"],
                                                g_gamma=gamma, dv=t["dv2"], cu_seqlens=cu,
                                                chunk_size=32)
    assert dw is None and dg is None
    want = peer(t["q"], t["k"], t["v"], None, gg, t["h"], t["dh"], t["do"], None, None, cu, 32,
                True)
    assert_near(dq, want[0], torch.float32, "dq")
    assert_near(dk, want[1], torch.float32, "dk")


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.common.chunk_o import chunk_bwd_dqkwg
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_bwd_dqkwg is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_bwd_dqkwg is a Triton kernel and needs a GPU")
    t, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    cuda = {n: (x.cuda() if x is not None else None) for n, x in t.items()}
    want = chunk_bwd_dqkwg(cuda["q"], cuda["k"], cuda["v"], cuda["do"], cuda["h"], cuda["dh"],
                           w=cuda["w"], g=cuda["g"], dv=cuda["dv2"], scale=0.125,
                           cu_seqlens=cu.cuda())
    got = fla_compat.chunk_bwd_dqkwg(t["q"], t["k"], t["v"], t["do"], t["h"], t["dh"], w=t["w"],
                                     g=t["g"], dv=t["dv2"], scale=0.125, cu_seqlens=cu)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b.cpu(), rtol=3e-2, atol=3e-2)  # fla rounds ds to bf16
