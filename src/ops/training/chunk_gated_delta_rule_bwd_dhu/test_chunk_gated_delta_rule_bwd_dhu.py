"""chunk_gated_delta_rule_bwd_dhu through PyTorch: torch autograd of an fp64 chunked GDN forward
(dh, dh0 and dv2 are gradients of that forward's states, initial state and v_new), with and
without gk (KDA's per-channel gate: the forward's state decays by diag(exp(gk_L)) per chunk); an
independent fp64 torch loop of the op's recurrence for every dtype; opcheck; torch.compile
against eager; the forward-only refusal; the fla drop-in
(``recops.compat.fla.chunk_gated_delta_rule_bwd_dhu``), and fla-core itself when it is
importable with a GPU (its kernel is Triton: no CPU path); bad input. Collected by
`pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import gate_cumsum, sequences  # noqa: E402

OP = recops.chunk_gated_delta_rule_bwd_dhu

# Errors relative to each output's largest |value|: fp64 is computed in fp64; fp32 in fp32 over
# the chunks' recurrence; fp16/bf16 outputs are one rounding of an fp32 result.
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2 ** -10,
       torch.bfloat16: 2 ** -7}


def nt_of(B, T, cu_seqlens, bt):
    """dh's dim 1: ceil(T / bt), plus N with cu_seqlens (the sync-free bound)."""
    n = (T + bt - 1) // bt
    return n if cu_seqlens is None else n + len(cu_seqlens) - 1


def loop_peer(q, k, w, do, dv, g=None, h0=None, dht=None, scale=None, cu_seqlens=None,
              chunk_size=64, gate_log2=False, gk=None):
    """The op's recurrence as written, plain torch in fp64, all value heads at once
    (GVA by repeat_interleave); gk: dS's rows also decay by exp(gk[L]) per chunk."""
    B, T, H, K = q.shape
    HV, V = do.shape[2], do.shape[3]
    scale = K ** -0.5 if scale is None else scale
    ex = torch.exp2 if gate_log2 else torch.exp
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    seqs = sequences(B, T, cu_seqlens)
    dh = torch.zeros(B, nt_of(B, T, cu_seqlens, chunk_size), HV, K, V, dtype=torch.float64)
    dh0 = torch.zeros(len(seqs), HV, K, V, dtype=torch.float64)
    dv2 = torch.zeros(B, T, HV, V, dtype=torch.float64)
    base = 0
    for n, (bi, bos, eos) in enumerate(seqs):
        starts = list(range(bos, eos, chunk_size))
        S = dht[n].double().clone() if dht is not None else torch.zeros(HV, K, V,
                                                                         dtype=torch.float64)
        for ci in reversed(range(len(starts))):
            s = starts[ci]
            e = min(s + chunk_size, eos)
            dh[bi, base + ci if cu_seqlens is not None else ci] = S
            gc = g[bi, s:e].double() if g is not None else torch.zeros(e - s, HV,
                                                                       dtype=torch.float64)
            gl = gc[-1]                                                     # [HV]
            kc, qc = kv[bi, s:e], qv[bi, s:e]                                # [L, HV, K]
            d2 = dv[bi, s:e].double() + ex(gl[None, :] - gc)[:, :, None] * torch.einsum(
                "thk,hkv->thv", kc, S)
            dv2[bi, s:e] = d2
            qg = ex(gc)[:, :, None] * qc
            decay = ex(gl)[:, None, None]                                   # [HV, 1, 1]
            if gk is not None:
                decay = decay * ex(gk[bi, e - 1].double())[:, :, None]       # [HV, K, 1]
            S = (decay * S
                 + scale * torch.einsum("thk,thv->hkv", qg, do[bi, s:e].double())
                 - torch.einsum("thk,thv->hkv", w[bi, s:e].double(), d2))
        dh0[n] = S
        base += len(starts)
    return dh, dh0, dv2


def autograd_peer(q, k, w, u, g, h0, dht, do, scale, cu_seqlens, bt, gate_log2, gk=None):
    """The chunked GDN forward in fp64 with torch autograd (training_ops §4.3's fwd_h and fwd_o):
    per chunk c with state S_c, v_new = u − w·S_c, o = scale·exp(G)·(q·S_c) +
    scale·(tril(q·kᵀ)·Γ)·v_new, S_{c+1} = exp(G_L)·S_c + Σ_t exp(G_L − G_t)·k_t ⊗ v_new_t; with gk
    (KDA, fla's fwd_h USE_GK: q, k stand for the gated qg, kg) S_{c+1} = exp(G_L)·
    diag(exp(gk_L))·S_c + Σ_t exp(G_L − G_t)·k_t ⊗ v_new_t;
    loss = Σ o·do + Σ S_final·dht. Returns dv_local (the gradient of v_new through the chunk's
    own o only), and the gradients of loss w.r.t. each S_{c+1} (dh, in dh's numbering), of h0
    (dh0) and of v_new (dv2)."""
    B, T, H, K = q.shape
    HV, V = do.shape[2], do.shape[3]
    ex = torch.exp2 if gate_log2 else torch.exp
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    seqs = sequences(B, T, cu_seqlens)
    h0l = h0.double().clone().requires_grad_(True)
    loss = torch.zeros((), dtype=torch.float64)
    dv_local = torch.zeros(B, T, HV, V, dtype=torch.float64)
    after, vnews = [], []        # (S_{c+1}, dh index), (v_new, rows)
    base = 0
    for n, (bi, bos, eos) in enumerate(seqs):
        S = h0l[n]
        starts = list(range(bos, eos, bt))
        for ci, s in enumerate(starts):
            e = min(s + bt, eos)
            L = e - s
            gc = g[bi, s:e].double() if g is not None else torch.zeros(L, HV, dtype=torch.float64)
            Q = qv[bi, s:e].transpose(0, 1)                                  # [HV, L, K]
            Kc = kv[bi, s:e].transpose(0, 1)
            vn = u[bi, s:e].double().transpose(0, 1) - w[bi, s:e].double().transpose(0, 1) @ S
            vn.retain_grad()
            d = gc.T[:, :, None] - gc.T[:, None, :]                           # [HV, L, L]
            mask = torch.ones(L, L, dtype=torch.bool).tril()
            A = torch.where(mask, (Q @ Kc.transpose(1, 2)) * ex(torch.where(mask, d, 0)), 0)
            o = scale * (ex(gc.T)[:, :, None] * (Q @ S) + A @ vn)
            dO = do[bi, s:e].double().transpose(0, 1)
            loss = loss + (o * dO).sum()
            dv_local[bi, s:e] = (scale * A.transpose(1, 2) @ dO).transpose(0, 1)
            gl = gc[-1]
            decay = ex(gl)[:, None, None]
            if gk is not None:
                decay = decay * ex(gk[bi, e - 1].double())[:, :, None]
            S = decay * S + (Kc * ex(gl[None, :] - gc).T[:, :, None]).transpose(
                1, 2) @ vn
            S.retain_grad()
            after.append((S, bi, base + ci if cu_seqlens is not None else ci))
            vnews.append((vn, bi, s, e))
        loss = loss + (S * dht[n].double()).sum()
        base += len(starts)
    loss.backward()
    dh = torch.zeros(B, nt_of(B, T, cu_seqlens, bt), HV, K, V, dtype=torch.float64)
    for S, bi, c in after:
        dh[bi, c] = S.grad
    dv2 = torch.zeros(B, T, HV, V, dtype=torch.float64)
    for vn, bi, s, e in vnews:
        dv2[bi, s:e] = vn.grad.transpose(0, 1)
    return dv_local, dh, h0l.grad, dv2


def make(B, T, H, K, V=16, gva=1, dtype=torch.float32, gates=True, offsets=None, chunk_size=64,
         seed=0, log2=False, gk=False):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva
    N = B if offsets is None else len(offsets) - 1

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    w = (rnd(B, T, HV, K) / (K * math.sqrt(chunk_size))).to(dtype)
    u = rnd(B, T, HV, V).to(dtype)
    do = rnd(B, T, HV, V).to(dtype)
    dv = rnd(B, T, HV, V).to(dtype)
    h0 = rnd(N, HV, K, V).float()
    dht = rnd(N, HV, K, V).float()
    cu = torch.tensor(offsets) if offsets is not None else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    gkc = None
    if gk:  # per-channel: the [B, T, HV·K] cumsum seen as [B, T, HV, K]
        gkc = gate_cumsum(gen, B, T, HV * K, chunk_size, cu, log2).reshape(B, T, HV, K)
    return dict(q=q, k=k, w=w, u=u, do=do, dv=dv, h0=h0, dht=dht, g=g, cu=cu, gk=gkc)


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=32),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32),
    "t300_bt16_log2": dict(B=1, T=300, H=1, K=32, chunk_size=16, log2=True),
    "no_gates_gva2": dict(B=2, T=100, H=2, K=16, gva=2, gates=False),
    "varlen_empty": dict(B=1, T=0, H=2, K=32, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec": dict(B=1, T=0, H=1, K=16, V=8, offsets=[0, 122, 229, 400, 1000], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
    # gk (KDA's per-channel gate), with and without g:
    "gk_t65": dict(B=2, T=65, H=2, K=32, gk=True),
    "gk_only_t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32, gates=False,
                                  gk=True),
    "gk_t100_bt16_log2": dict(B=1, T=100, H=1, K=16, chunk_size=16, log2=True, gk=True),
    "gk_varlen_empty": dict(B=1, T=0, H=2, K=16, gva=2, offsets=[0, 0, 5, 5, 40, 41, 41],
                            chunk_size=16, gates=False, gk=True),
    "gk_varlen_sub_chunk_log2": dict(B=1, T=0, H=1, K=8, V=8, offsets=[0, 3, 4, 19, 19, 28],
                                     log2=True, gk=True),
    "gk_t0": dict(B=2, T=0, H=2, K=8, gk=True),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_autograd_of_the_forward(name):
    """fp64: dh[c] is the gradient of the state after chunk c, dh0 of h0 and dv2 of v_new, in
    a chunked GDN forward differentiated by torch."""
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    x = make(dtype=torch.float64, **cfg)
    for scale in (None, 0.7):
        sc = x["q"].shape[3] ** -0.5 if scale is None else scale
        dv_local, dh_w, dh0_w, dv2_w = autograd_peer(x["q"], x["k"], x["w"], x["u"], x["g"],
                                                     x["h0"], x["dht"], x["do"], sc, x["cu"],
                                                     bt, log2, gk=x["gk"])
        dh, dh0, dv2 = OP(x["q"], x["k"], x["w"], x["do"], dv_local, x["g"], x["h0"], x["dht"],
                          scale, x["cu"], bt, log2, gk=x["gk"])
        assert dh.dtype == torch.float64 and dh0.dtype == torch.float32
        torch.testing.assert_close(dh, dh_w, rtol=0, atol=1e-10)
        torch.testing.assert_close(dv2, dv2_w, rtol=0, atol=1e-10)
        # dh0 is fp32: one rounding of the fp64 dS.
        torch.testing.assert_close(dh0.double(), dh0_w, rtol=2 ** -23, atol=1e-30)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_loop_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    x = make(dtype=dtype, **cfg)
    for scale, with_h0, with_dht in ((None, True, True), (0.7, False, True), (1.3, True, False)):
        h0 = x["h0"] if with_h0 else None
        dht = x["dht"] if with_dht else None
        dh, dh0, dv2 = OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], h0, dht, scale,
                          x["cu"], bt, log2, gk=x["gk"])
        w_dh, w_dh0, w_dv2 = loop_peer(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], h0, dht,
                                       scale, x["cu"], bt, log2, gk=x["gk"])
        assert dh.dtype == dtype and dv2.dtype == dtype and dh.shape == w_dh.shape
        for got, want, tol in ((dh, w_dh, TOL[dtype]), (dv2, w_dv2, TOL[dtype]),
                               (dh0, w_dh0, max(TOL[dtype], 1e-5))):
            if not with_h0 and got is dh0:
                assert dh0.numel() == 0
                continue
            top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
            torch.testing.assert_close(got.double(), want, rtol=0, atol=tol * top)


def kda_token_peer(q, k, v, beta, a, h0, dht, do, scale, bt):
    """KDA token by token in fp64 with torch autograd (one sequence per batch row): with per-channel
    log decays a_t [HV, K], S_t = diag(exp(a_t))·S_{t−1}, then the delta rule
    S_t += beta_t·k_t ⊗ (v_t − S_tᵀ k_t), o_t = scale·S_tᵀ q_t; loss = Σ o·do + Σ S_T·dht. Returns
    the gradients of loss w.r.t. the state after each chunk (dh, dh's numbering) and h0 (dh0)."""
    B, T, H, K = q.shape
    HV = v.shape[2]
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    h0l = h0.double().clone().requires_grad_(True)
    loss = torch.zeros((), dtype=torch.float64)
    ends = []
    for b in range(B):
        S = h0l[b]                                                          # [HV, K, V]
        for t in range(T):
            S = torch.exp(a[b, t].double())[:, :, None] * S
            kt = kv[b, t]                                                   # [HV, K]
            err = v[b, t].double() - torch.einsum("hk,hkv->hv", kt, S)
            S = S + beta[b, t].double()[:, None, None] * kt[:, :, None] * err[:, None, :]
            o = scale * torch.einsum("hk,hkv->hv", qv[b, t], S)
            loss = loss + (o * do[b, t].double()).sum()
            if (t + 1) % bt == 0 or t + 1 == T:
                # The chunk's end state as its own node: its gradient is what reaches it from the
                # later positions (and dht), not o_t's own read of S_t (the chunk form's o reads
                # S_c and the intra-chunk term instead).
                S = S.clone()
                S.retain_grad()
                ends.append((S, b, t // bt))
        loss = loss + (S * dht[b].double()).sum()
    loss.backward()
    dh = torch.zeros(B, (T + bt - 1) // bt, HV, K, v.shape[3], dtype=torch.float64)
    for S, b, c in ends:
        dh[b, c] = S.grad
    return dh, h0l.grad


def kda_chunk_inputs(q, k, v, beta, a, do, scale, bt):
    """The chunk form's inputs of the op (fla's chunk_kda: qg, kg, w and dv_local), built from the
    token quantities in fp64: G the chunk-local inclusive cumsum of a, qg = q·exp(G),
    kg = k·exp(G_L − G), w = (I + M)^-1 (beta·k·exp(G)) with M_ij = beta_i Σ_d k_i k_j
    exp(G_i − G_j) (j < i), dv_local = scale·Aqkᵀ·do with Aqk_ij = Σ_d q_i k_j exp(G_i − G_j)
    (j <= i). Also returns G (gk)."""
    B, T, H, K = q.shape
    HV = v.shape[2]
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    G = torch.zeros(B, T, HV, K, dtype=torch.float64)
    qg = torch.zeros_like(G)
    kg = torch.zeros_like(G)
    w = torch.zeros_like(G)
    dv = torch.zeros(B, T, HV, v.shape[3], dtype=torch.float64)
    for b in range(B):
        for s in range(0, T, bt):
            e = min(s + bt, T)
            L = e - s
            Gc = a[b, s:e].double().cumsum(0).transpose(0, 1)               # [HV, L, K]
            Q, Kc = qv[b, s:e].transpose(0, 1), kv[b, s:e].transpose(0, 1)
            bc = beta[b, s:e].double().T                                    # [HV, L]
            D = Gc[:, :, None, :] - Gc[:, None, :, :]                       # [HV, L, L, K]
            strict = torch.ones(L, L, dtype=torch.bool).tril(-1)
            incl = torch.ones(L, L, dtype=torch.bool).tril()
            KK = torch.einsum("hik,hjk,hijk->hij", Kc, Kc, torch.exp(torch.where(
                strict[None, :, :, None], D, 0)))
            M = torch.where(strict, bc[:, :, None] * KK, 0)
            Ainv = torch.linalg.inv(torch.eye(L, dtype=torch.float64) + M)
            w[b, s:e] = (Ainv @ (bc[:, :, None] * Kc * torch.exp(Gc))).transpose(0, 1)
            QK = torch.einsum("hik,hjk,hijk->hij", Q, Kc, torch.exp(torch.where(
                incl[None, :, :, None], D, 0)))
            Aqk = torch.where(incl, QK, 0)
            dv[b, s:e] = (scale * Aqk.transpose(1, 2) @ do[b, s:e].double().transpose(0, 1)
                          ).transpose(0, 1)
            qg[b, s:e] = (Q * torch.exp(Gc)).transpose(0, 1)
            kg[b, s:e] = (Kc * torch.exp(Gc[:, -1:, :] - Gc)).transpose(0, 1)
            G[b, s:e] = Gc.transpose(0, 1)
    return qg, kg, w, dv, G


@pytest.mark.parametrize("B,T,H,K,V,bt", [(2, 37, 1, 8, 4, 16), (1, 70, 2, 8, 6, 32),
                                          (1, 20, 1, 4, 3, 64)])
def test_gk_matches_a_token_by_token_kda(B, T, H, K, V, bt):
    """The op with q = qg, k = kg, w, dv_local and gk = G from KDA's chunk form against torch
    autograd of KDA's token recurrence: dh after every chunk and dh0 (no g). HV = H: qg and kg
    carry the value head's gate, so the op's [B, T, H, K] q and k cannot hold them under GVA."""
    gen = torch.Generator().manual_seed(B * 100 + T)
    HV = H

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1)
    k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1)
    v = rnd(B, T, HV, V)
    beta = torch.sigmoid(rnd(B, T, HV))
    a = torch.nn.functional.logsigmoid(rnd(B, T, HV, K) + 2.0)
    h0, dht, do = rnd(B, HV, K, V), rnd(B, HV, K, V), rnd(B, T, HV, V)
    scale = K ** -0.5
    want_dh, want_dh0 = kda_token_peer(q, k, v, beta, a, h0, dht, do, scale, bt)
    qg, kg, w, dv, G = kda_chunk_inputs(q, k, v, beta, a, do, scale, bt)
    dh, dh0, _ = OP(qg, kg, w, do, dv, None, h0, dht, scale, None, bt, gk=G)
    torch.testing.assert_close(dh, want_dh, rtol=0, atol=1e-10)
    torch.testing.assert_close(dh0.double(), want_dh0, rtol=2 ** -22, atol=1e-6)


def test_gk_zero_is_no_gk_and_gk_matters():
    x = make(**CONFIGS["gk_t65"])
    base = OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"])
    zero = OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"],
              gk=torch.zeros_like(x["gk"]))
    with_gk = OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"], gk=x["gk"])
    for a, b in zip(base, zero):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    # dh's last chunk (dht) and dv2's last chunk rows do not see gk; dh's earlier chunks do.
    torch.testing.assert_close(with_gk[0][:, -1], base[0][:, -1], rtol=0, atol=0)
    assert (with_gk[0][:, 0] - base[0][:, 0]).abs().max() > 1e-2


def test_suffix_then_prefix_equals_the_full_run():
    """Stateful continuity (§5): the suffix run from dht gives dS at the cut as its dh0; the prefix
    run from that dS gives the full run's dh, dh0 and dv2 (the cut on a chunk boundary)."""
    x = make(2, 150, 2, 16, V=8, gva=2, chunk_size=32, seed=3)
    cut = 64
    full = OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"], chunk_size=32)

    def part(a, b, dht):
        return OP(*(x[n][:, a:b].contiguous() for n in ("q", "k", "w", "do", "dv", "g")), x["h0"],
                  dht, chunk_size=32)

    dh_s, mid, dv2_s = part(cut, 150, x["dht"])
    dh_p, dh0_p, dv2_p = part(0, cut, mid)
    torch.testing.assert_close(torch.cat([dh_p, dh_s], 1), full[0], rtol=0, atol=1e-6)
    torch.testing.assert_close(dh0_p, full[1], rtol=0, atol=1e-6)
    torch.testing.assert_close(torch.cat([dv2_p, dv2_s], 1), full[2], rtol=0, atol=1e-6)


def test_fp32_chunk_states():
    x = make(**CONFIGS["t65_bt64"], dtype=torch.bfloat16)
    dh, _, _ = OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], None, x["dht"],
                  fp32_chunk_states=True)
    assert dh.dtype == torch.float32
    want, _, _ = loop_peer(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], None, x["dht"])
    torch.testing.assert_close(dh.double(), want, rtol=0, atol=1e-5 * want.abs().max().item())


def test_opcheck():
    x = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_gated_delta_rule_bwd_dhu.default,
                          (x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"],
                           None, x["cu"], 16, False, False))
    x = make(**CONFIGS["t65_bt64"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_gated_delta_rule_bwd_dhu.default,
                          (x["q"], x["k"], x["w"], x["do"], x["dv"].float(), None, None, None,
                           0.5, None, 64, True, True))
    x = make(**CONFIGS["gk_varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_gated_delta_rule_bwd_dhu.default,
                          (x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"],
                           None, x["cu"], 16, False, False, x["gk"]))


def test_compile_matches_eager():
    def f(q, k, w, do, dv, g, h0, dht, offsets):
        dh, dh0, dv2 = OP(q, k, w, do, dv, g, h0, dht, seq_offsets=offsets, chunk_size=16)
        return dh * 2.0, dh0 + 1.0, dv2 - 1.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        x = make(1, 0, 2, 16, V=8, gva=2, offsets=offsets, chunk_size=16, seed=seed)
        args = (x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"], x["dht"], x["cu"])
        for a, b in zip(compiled(*args), f(*args)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_forward_only():
    x = make(1, 10, 1, 8, V=4)
    with pytest.raises(RuntimeError, match="q"):
        OP(x["q"].requires_grad_(True), x["k"], x["w"], x["do"], x["dv"], x["g"])
    with torch.no_grad():  # as inside fla's GDN backward
        OP(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"])


def test_noncontiguous_inputs_are_copied():
    q = torch.randn(1, 40, 2, 32)[:, :, :, ::2]
    k = torch.nn.functional.normalize(torch.randn(1, 40, 2, 16), dim=-1)
    w = (torch.randn(1, 40, 4, 32) * 0.01)[:, :, :, ::2]
    do = torch.randn(1, 40, 4, 10)[:, :, :, ::2]
    dv = torch.randn(1, 40, 4, 5)
    dht = torch.randn(1, 4, 5, 16).transpose(-1, -2)
    g = -torch.rand(1, 40, 4).cumsum(1) * 0.1
    got = OP(q, k, w, do, dv, g, None, dht, chunk_size=32)
    want = loop_peer(q, k, w, do, dv, g, None, dht, None, None, 32)
    for a, b in ((got[0], want[0]), (got[2], want[2])):
        torch.testing.assert_close(a.double(), b, rtol=0, atol=1e-5)


def test_bad_input_names_the_argument():
    x = make(1, 10, 2, 8, V=4)
    args = (x["q"], x["k"], x["w"], x["do"], x["dv"])
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        OP(*args, chunk_size=128)
    with pytest.raises(RuntimeError, match="do's HV=3 must be a multiple of q's H=2"):
        OP(x["q"], x["k"], x["w"], torch.randn(1, 10, 3, 4), x["dv"])
    with pytest.raises(RuntimeError, match=r"w must be \[B, T, HV, K\]"):
        OP(x["q"], x["k"], torch.randn(1, 10, 2, 7), x["do"], x["dv"])
    with pytest.raises(RuntimeError, match=r"dht must be \[N, HV, K, V\]"):
        OP(*args, None, None, torch.randn(2, 2, 8, 4))
    with pytest.raises(RuntimeError, match=r"h0 must be \[N, HV, K, V\]"):
        OP(*args, None, torch.randn(1, 2, 8, 4), None, None, torch.tensor([0, 3, 10]), 16)
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        OP(*(torch.cat([a, a]) for a in args), seq_offsets=torch.tensor([0, 10]))
    # gk: [B, T, HV, K] of a floating dtype (HV = do's, here 2; K = q's, 8).
    with pytest.raises(RuntimeError, match=r"gk must be \[B, T, HV, K\] = \[1, 10, 2, 8\]"):
        OP(*args, gk=torch.zeros(1, 10, 2, 7))
    with pytest.raises(RuntimeError, match=r"gk must be \[B, T, HV, K\] of fp64"):
        OP(*args, gk=torch.zeros(1, 10, 2))
    with pytest.raises(RuntimeError, match=r"gk must be \[B, T, HV, K\] of fp64"):
        OP(*args, gk=torch.zeros(1, 10, 2, 8, dtype=torch.int32))


# ---- recops.compat.fla.chunk_gated_delta_rule_bwd_dhu and fla-core ------------------------------


def test_fla_dropin_matches_peer():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2); dh exact-sized.
    x = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    cu = x["cu"]
    dh, dh0, dv2 = fla_compat.chunk_gated_delta_rule_bwd_dhu(
        x["q"], x["k"], x["w"], x["do"], x["dv"], g=x["g"], h0=x["h0"], dht=x["dht"], scale=0.25,
        cu_seqlens=cu)
    w_dh, w_dh0, w_dv2 = loop_peer(x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], x["h0"],
                                   x["dht"], 0.25, cu, 64, True)
    count = sum((e - s + 63) // 64 for _, s, e in sequences(1, x["q"].shape[1], cu))
    assert dh.shape == (1, count, 1, 16, 8) and dh.dtype == torch.bfloat16
    assert dh0.dtype == torch.float32 and dv2.dtype == torch.bfloat16
    top = w_dh.abs().max().item()
    torch.testing.assert_close(dh.double(), w_dh[:, :count], rtol=0, atol=2 ** -7 * top)
    torch.testing.assert_close(dh0.double(), w_dh0, rtol=0, atol=1e-5 * w_dh0.abs().max().item())
    torch.testing.assert_close(dv2.double(), w_dv2, rtol=0,
                               atol=2 ** -7 * w_dv2.abs().max().item())
    # state_v_first: h0, dht, dh and dh0 as [.., V, K].
    dh_t, dh0_t, dv2_t = fla_compat.chunk_gated_delta_rule_bwd_dhu(
        x["q"], x["k"], x["w"], x["do"], x["dv"], x["g"], None,
        x["h0"].transpose(-1, -2).contiguous(), x["dht"].transpose(-1, -2).contiguous(), 0.25, True,
        cu, 64)
    torch.testing.assert_close(dh_t.transpose(-1, -2), dh, rtol=0, atol=0)
    torch.testing.assert_close(dh0_t.transpose(-1, -2), dh0, rtol=0, atol=0)
    torch.testing.assert_close(dv2_t, dv2, rtol=0, atol=0)
    # No h0: dh0 is None, as fla's; dense input: NT = ceil(T / BT).
    x = make(2, 50, 2, 16, gva=2, gates=False, chunk_size=32)
    dh, dh0, dv2 = fla_compat.chunk_gated_delta_rule_bwd_dhu(x["q"], x["k"], x["w"], x["do"],
                                                             x["dv"], chunk_size=32)
    assert dh0 is None and dh.shape == (2, 2, 4, 16, 16)


def test_fla_dropin_with_gk():
    """gk (fla's USE_GK, log2 units as fla's KDA passes it), with and without g, with
    cu_seqlens and state_v_first."""
    for cfg, g_on in ((CONFIGS["gk_varlen_sub_chunk_log2"], False),
                      (dict(B=2, T=50, H=2, K=16, gva=2, chunk_size=32, log2=True, gk=True),
                       True)):
        x = make(**cfg, dtype=torch.bfloat16)
        bt = cfg.get("chunk_size", 64)
        g = x["g"] if g_on else None
        dh, dh0, dv2 = fla_compat.chunk_gated_delta_rule_bwd_dhu(
            x["q"], x["k"], x["w"], x["do"], x["dv"], g=g, gk=x["gk"], h0=x["h0"], dht=x["dht"],
            cu_seqlens=x["cu"], chunk_size=bt)
        w_dh, w_dh0, w_dv2 = loop_peer(x["q"], x["k"], x["w"], x["do"], x["dv"], g, x["h0"],
                                       x["dht"], None, x["cu"], bt, True, gk=x["gk"])
        count = sum((e - s + bt - 1) // bt for _, s, e in sequences(*x["q"].shape[:2], x["cu"]))
        assert dh.shape[1] == (count if x["cu"] is not None else w_dh.shape[1])
        for got, want in ((dh, w_dh[:, :dh.shape[1]]), (dh0, w_dh0), (dv2, w_dv2)):
            top = max(1.0, want.abs().max().item())
            torch.testing.assert_close(got.double(), want, rtol=0, atol=2 ** -7 * top)
        dh_t, dh0_t, dv2_t = fla_compat.chunk_gated_delta_rule_bwd_dhu(
            x["q"], x["k"], x["w"], x["do"], x["dv"], g, x["gk"],
            x["h0"].transpose(-1, -2).contiguous(), x["dht"].transpose(-1, -2).contiguous(), None,
            True, x["cu"], bt)
        torch.testing.assert_close(dh_t.transpose(-1, -2), dh, rtol=0, atol=0)
        torch.testing.assert_close(dh0_t.transpose(-1, -2), dh0, rtol=0, atol=0)
        torch.testing.assert_close(dv2_t, dv2, rtol=0, atol=0)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.common.chunk_delta_h import chunk_gated_delta_rule_bwd_dhu
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_gated_delta_rule_bwd_dhu is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_gated_delta_rule_bwd_dhu is a Triton kernel and needs a GPU")
    x = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    c = {n: (t.cuda() if t is not None else None) for n, t in x.items()}
    want = chunk_gated_delta_rule_bwd_dhu(c["q"], c["k"], c["w"], c["do"], c["dv"], g=c["g"],
                                          h0=c["h0"], dht=c["dht"], scale=0.25,
                                          cu_seqlens=c["cu"])
    got = fla_compat.chunk_gated_delta_rule_bwd_dhu(x["q"], x["k"], x["w"], x["do"], x["dv"],
                                                    g=x["g"], h0=x["h0"], dht=x["dht"],
                                                    scale=0.25, cu_seqlens=x["cu"])
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b.cpu(), rtol=2e-2, atol=2e-2)
