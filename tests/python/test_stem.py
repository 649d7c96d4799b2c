"""The Stem family (stem_indexer.md) through torch.ops.recops: the §9 worked example, the ops
against plain-PyTorch compositions written here from the spec (fp64), the block-mask helpers
(dense and FlexAttention), the end-to-end pipeline, opcheck, torch.compile(fullgraph=True) and the
errors of spec §10."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import recops
from recops import stem

I32 = torch.int32


def _i32(x, device="cpu"):
    return torch.tensor(x, dtype=I32, device=device)


# ------------------------------ plain-PyTorch goldens ------------------------------

def _ceil(a, b):
    return (a + b - 1) // b if a > 0 else 0


def _budget(P, i, Kb, Qb, alpha=1.0, rm=0.2, bm=30, rl=0.1, bl=30):
    f = np.float32
    if P < 56:
        Ks = P
    elif P < 160:
        Ks = int(math.floor(f(f(P) * f(rm)))) + bm
    else:
        Ks = int(math.floor(f(f(P) * f(rl)))) + bl
    p, delta = i + Kb - Qb, P - Ks
    if p < Ks or delta <= 1:
        return Ks
    t = f(f(p - Ks) / f(delta - 1))
    d = f(f(f(Ks) * f(alpha)) - f(Ks))
    k = int(math.floor(f(float(t) * float(d) + float(Ks))))
    return min(max(k, 1), Ks)


def golden_indexer(qflat, kflat, vbias, lq, lk, lp=None, *, causal=True, Bs=128, Ts=16, alpha=1.0,
                   I=4, Wn=4, rm=0.2, bm=30, rl=0.1, bl=30, prec=1):
    """§3.2 in fp64 torch: returns (sorted id lists per row, lengths)."""
    B, Nq, Qmax, _ = qflat.shape
    Nk, Kmax = kflat.shape[1], kflat.shape[2]
    G, R = Nq // Nk, Bs // Ts
    lp = lk if lp is None else lp
    rows, lens = {}, torch.zeros(B, Nq, Qmax, dtype=I32)
    for b in range(B):
        Lq, Lk, Lp = int(lq[b]), int(lk[b]), int(lp[b])
        Qb, Kb, P = _ceil(Lq, Bs), _ceil(Lk, Bs), _ceil(Lp, Bs)
        for hq in range(Nq):
            hk = hq // G
            S = (qflat[b, hq].double() @ kflat[b, hk].double().T / R**2
                 + vbias[b, hk].double()).float()
            S = torch.nan_to_num(S, nan=-math.inf, posinf=math.inf, neginf=-math.inf)
            if prec == 2:
                S = S.bfloat16().float()
            for i in range(Qmax):
                sel = []
                if i < Qb:
                    V = Kb if (not causal or (Lq == 1 and Lp >= Lk)) else min(max(Kb - Qb + i + 1, 0), Kb)
                    forced = set(range(min(I, V))) | set(range(max(V - Wn, 0), V))
                    cand = [j for j in range(V) if j not in forced]
                    K = min(max(_budget(P, i, Kb, Qb, alpha, rm, bm, rl, bl), 0), 256, len(cand))
                    cand.sort(key=lambda j: (-float(S[i, j]), j))
                    sel = sorted(forced | set(cand[:K]))
                rows[(b, hq, i)] = sel
                lens[b, hq, i] = len(sel)
    return rows, lens


def plain_prepare(q, k, v, cu_q, lk, cu_kv, *, Bs=128, Ts=16, lam=0.3, qmax, kmax):
    B, Nq, D = len(lk), q.shape[1], q.shape[2]
    Nk, R = k.shape[1], Bs // Ts
    qf = torch.zeros(B, Nq, qmax, Ts * D, dtype=torch.float64)
    kf = torch.zeros(B, Nk, kmax, Ts * D, dtype=torch.float64)
    vb = torch.zeros(B, Nk, kmax, dtype=torch.float64)
    for b in range(B):
        Lq, Lk = int(cu_q[b + 1] - cu_q[b]), int(lk[b])
        qb = torch.zeros(qmax * Bs, Nq, D, dtype=torch.float64)
        qb[:Lq] = q[cu_q[b]:cu_q[b] + Lq].double()
        # token i·Bs + g + r·Ts -> [i, r, g]
        qf[b] = qb.view(qmax, R, Ts, Nq, D).sum(1).permute(2, 0, 1, 3).reshape(Nq, qmax, Ts * D)
        kb = torch.zeros(kmax * Bs, Nk, D, dtype=torch.float64)
        kb[:Lk] = k[cu_kv[b]:cu_kv[b] + Lk].double()
        ks = kb.view(kmax, R, Ts, Nk, D).sum(1).flip(1)
        kf[b] = ks.permute(2, 0, 1, 3).reshape(Nk, kmax, Ts * D)
        Kb = _ceil(Lk, Bs)
        n = R * Kb
        if n == 0:
            continue
        vv = torch.zeros(n * Ts, Nk, v.shape[2], dtype=torch.float64)
        vv[:Lk] = v[cu_kv[b]:cu_kv[b] + Lk].double()
        m = vv.norm(dim=-1).view(n, Ts, Nk).amax(1)
        ell = torch.log(m + 1e-6)
        mu = ell.mean(0)
        sigma = ell.std(0) if n > 1 else torch.zeros(Nk, dtype=torch.float64)
        z = (ell - mu) / (sigma + 1e-6)
        vb[b, :, :Kb] = (lam * z.clamp_min(0)).view(Kb, R, Nk).mean(1).T
    return qf.bfloat16(), kf.bfloat16(), vb.float()


def dense_masked_attention(q, k, v, block_mask, cu_q, lk, cu_kv, *, causal=True, Bs=128, scale=None):
    """Dense attention per batch with the token mask of §7 built from a dense block mask."""
    Tq, Nq, D = q.shape
    Nk = k.shape[1]
    G = Nq // Nk
    scale = 1 / math.sqrt(D) if scale is None else scale
    out = torch.zeros(Tq, Nq, D, dtype=torch.float64)
    lse = torch.full((Nq, Tq), -math.inf, dtype=torch.float64)
    for b in range(len(lk)):
        Lq, Lk = int(cu_q[b + 1] - cu_q[b]), int(lk[b])
        if Lq == 0:
            continue
        qq = q[cu_q[b]:cu_q[b] + Lq].double().transpose(0, 1)
        kk = k[cu_kv[b]:cu_kv[b] + Lk].double().transpose(0, 1).repeat_interleave(G, 0)
        vv = v[cu_kv[b]:cu_kv[b] + Lk].double().transpose(0, 1).repeat_interleave(G, 0)
        t = torch.arange(Lq)[:, None]
        s = torch.arange(Lk)[None, :]
        allowed = block_mask[b][:, t // Bs, s // Bs].bool()
        if causal:
            allowed = allowed & (s <= Lk - Lq + t)
        x = (qq @ kk.transpose(1, 2) * scale).masked_fill(~allowed, -math.inf)
        l_ = torch.logsumexp(x, -1)
        p = torch.exp(x - l_[..., None]).nan_to_num(0.0)
        out[cu_q[b]:cu_q[b] + Lq] = (p @ vv).transpose(0, 1)
        lse[:, cu_q[b]:cu_q[b] + Lq] = l_
    return out, lse


def _rows(idx, lens):
    B, Nq, Qmax, _ = idx.shape
    return {(b, h, i): sorted(idx[b, h, i, :int(lens[b, h, i])].tolist())
            for b in range(B) for h in range(Nq) for i in range(Qmax)}


# ------------------------------------ tests ------------------------------------

def _worked_example():
    qflat = torch.zeros(1, 2, 5, 16, dtype=torch.bfloat16)
    qflat[0, 0, :, 0] = 8
    qflat[0, 1, :, 1] = 8
    kflat = torch.zeros(1, 1, 12, 16, dtype=torch.bfloat16)
    kflat[0, 0, :, 0] = torch.tensor([0, 0, 8, 24, 16, 24, 4, 40, 16, 32, 0, 0.])
    kflat[0, 0, :, 1] = torch.tensor([0, 0, 16, 8, 16, -8, 16, 0, 8, 24, 0, 0.])
    vbias = torch.zeros(1, 1, 12)
    vbias[0, 0, 5] = 2**-8
    return qflat, kflat, vbias


@pytest.mark.parametrize("prec", [1, 2])
def test_worked_example_b(prec):
    qflat, kflat, vbias = _worked_example()
    idx, n = recops.stem_indexer(qflat, kflat, vbias, _i32([400]), _i32([1500]),
                                 num_prompt_tokens=_i32([7680]), initial_blocks=2, window_size=2,
                                 alpha=0.25, k_block_num_rate_medium=0.05,
                                 k_block_num_bias_medium=1, topk_score_precision=prec)
    assert n.tolist() == [[[7, 7, 7, 7, 0], [7, 7, 7, 7, 0]]]
    rows = _rows(idx, n)
    row3 = [0, 1, 3, 7, 9, 10, 11] if prec == 2 else [0, 1, 5, 7, 9, 10, 11]
    assert rows[(0, 0, 3)] == row3
    assert rows[(0, 1, 3)] == [0, 1, 2, 4, 9, 10, 11]
    assert rows[(0, 0, 0)] == [0, 1, 3, 4, 5, 7, 8]
    assert (idx[0, :, 4] == -1).all() and (idx[0, :, :4, 7:] == -1).all()


@pytest.mark.parametrize("prec", [1, 2])
@pytest.mark.parametrize("case", ["prefill", "chunked", "decode_mix", "budget", "noncausal"])
def test_indexer_vs_python_golden(case, prec):
    g = torch.Generator().manual_seed(hash(case) % 1000 + prec)
    cfg = {
        "prefill": dict(Nq=4, Nk=2, lq=[1500, 129], lk=[1500, 129], kw={}),
        "chunked": dict(Nq=2, Nk=1, lq=[300], lk=[7000], kw=dict(alpha=0.5)),
        "decode_mix": dict(Nq=4, Nk=4, lq=[1, 700], lk=[9000, 700], kw={}),
        "budget": dict(Nq=2, Nk=1, lq=[2000], lk=[20000], kw=dict(alpha=0.3), lp=[20480]),
        "noncausal": dict(Nq=2, Nk=2, lq=[500], lk=[1800], kw=dict(causal=False)),
    }[case]
    Df = 32
    Qmax = max(_ceil(x, 128) for x in cfg["lq"])
    Kmax = max(_ceil(x, 128) for x in cfg["lk"])
    B = len(cfg["lq"])
    qflat = torch.randn(B, cfg["Nq"], Qmax, Df, generator=g).bfloat16()
    kflat = torch.randn(B, cfg["Nk"], Kmax, Df, generator=g).bfloat16()
    vbias = torch.rand(B, cfg["Nk"], Kmax, generator=g) * 0.3
    lp = cfg.get("lp")
    idx, n = recops.stem_indexer(qflat, kflat, vbias, _i32(cfg["lq"]), _i32(cfg["lk"]),
                                 num_prompt_tokens=None if lp is None else _i32(lp),
                                 topk_score_precision=prec, **cfg["kw"])
    kw = dict(cfg["kw"])
    rows, lens = golden_indexer(qflat, kflat, vbias, cfg["lq"], cfg["lk"], lp, prec=prec, **kw)
    assert torch.equal(n, lens)
    got = _rows(idx, n)
    assert got == rows
    # With metadata: identical bits.
    meta = recops.stem_indexer_metadata(_i32(cfg["lq"]), _i32(cfg["lk"]), cfg["Nq"], cfg["Nk"],
                                        causal=kw.get("causal", True), dim_qkflat=Df)
    idx2, n2 = recops.stem_indexer(qflat, kflat, vbias, _i32(cfg["lq"]), _i32(cfg["lk"]),
                                   num_prompt_tokens=None if lp is None else _i32(lp),
                                   metadata=meta, topk_score_precision=prec, **cfg["kw"])
    assert torch.equal(idx, idx2) and torch.equal(n, n2)


def test_prepare_vs_plain():
    g = torch.Generator().manual_seed(3)
    lq, lk = [300, 1], [700, 129]
    cu_q = [0, 300, 301]
    cu_kv = [0, 700, 829]
    q = torch.randn(301, 4, 32, generator=g).bfloat16()
    k = torch.randn(829, 2, 32, generator=g).bfloat16()
    v = torch.randn(829, 2, 32, generator=g).bfloat16()
    qf, kf, vb = recops.stem_prepare(q, k, v, _i32(cu_q), _i32(lk), cu_seqlens_kv=_i32(cu_kv))
    assert qf.shape == (2, 4, 3, 512) and kf.shape == (2, 2, 6, 512) and vb.shape == (2, 2, 6)
    pq, pk, pv = plain_prepare(q, k, v, cu_q, lk, cu_kv, qmax=3, kmax=6)
    assert (qf.float() - pq.float()).abs().max() <= 2**-7 * pq.float().abs().max()
    assert (kf.float() - pk.float()).abs().max() <= 2**-7 * pk.float().abs().max()
    torch.testing.assert_close(vb, pv, atol=1e-5, rtol=1e-4)
    # Paged K/V (page 16) gives the same result.
    perm = torch.randperm(64, generator=g)
    kp = torch.zeros(64, 16, 2, 32, dtype=torch.bfloat16)
    vp = torch.zeros(64, 16, 2, 32, dtype=torch.bfloat16)
    table = torch.zeros(2, 44, dtype=I32)
    nxt = 0
    for b in range(2):
        for pg in range(_ceil(lk[b], 16)):
            table[b, pg] = perm[nxt]
            rows = slice(cu_kv[b] + pg * 16, min(cu_kv[b] + (pg + 1) * 16, cu_kv[b] + lk[b]))
            cnt = rows.stop - rows.start
            kp[perm[nxt], :cnt] = k[rows]
            vp[perm[nxt], :cnt] = v[rows]
            nxt += 1
    qf2, kf2, vb2 = recops.stem_prepare(q, kp, vp, _i32(cu_q), _i32(lk), block_table=table)
    assert torch.equal(qf, qf2) and torch.equal(kf, kf2) and torch.equal(vb, vb2)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_attention_vs_dense_masked(dtype):
    g = torch.Generator().manual_seed(5)
    lq, lk, Bs = [100, 37], [333, 37], 32
    cu_q, cu_kv = [0, 100, 137], [0, 333, 370]
    q = torch.randn(137, 4, 64, generator=g).to(dtype)
    k = torch.randn(370, 2, 64, generator=g).to(dtype)
    v = torch.randn(370, 2, 64, generator=g).to(dtype)
    Qmax, Kmax = 4, 11
    idx = torch.full((2, 4, Qmax, Kmax), -1, dtype=I32)
    n = torch.zeros(2, 4, Qmax, dtype=I32)
    for b in range(2):
        Kb, Qb = _ceil(lk[b], Bs), _ceil(lq[b], Bs)
        for h in range(4):
            for i in range(Qb):
                sel = torch.randperm(Kb, generator=g)[: int(torch.randint(0, Kb + 1, (1,), generator=g))]
                idx[b, h, i, : len(sel)] = sel.to(I32)
                n[b, h, i] = len(sel)
    out, lse = recops.block_sparse_attention(q, k, v, idx, n, cu_seqlens_q=_i32(cu_q),
                                             kv_seq_lens=_i32(lk), cu_seqlens_kv=_i32(cu_kv),
                                             sparse_block_size=Bs)
    mask = stem.to_dense_block_mask(idx, n)
    assert mask.dtype == torch.uint8 and mask.shape == (2, 4, Qmax, Kmax)
    assert int(mask.sum()) == int(n.sum())
    ref_out, ref_lse = dense_masked_attention(q, k, v, mask, cu_q, lk, cu_kv, Bs=Bs)
    tol = 2**-7 if dtype == torch.bfloat16 else 2**-10
    torch.testing.assert_close(out.double(), ref_out, atol=2 * tol, rtol=2 * tol)
    fin = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), fin)
    torch.testing.assert_close(lse.double()[fin], ref_lse[fin], atol=1e-5, rtol=1e-5)
    assert (out.double()[~fin.T] == 0).all()


def test_full_selection_is_dense_causal_sdpa():
    g = torch.Generator().manual_seed(6)
    L, Bs = 300, 64
    q = torch.randn(L, 4, 64, generator=g).bfloat16()
    k = torch.randn(L, 2, 64, generator=g).bfloat16()
    v = torch.randn(L, 2, 64, generator=g).bfloat16()
    Qb = _ceil(L, Bs)
    idx = torch.full((1, 4, Qb, Qb), -1, dtype=I32)
    n = torch.zeros(1, 4, Qb, dtype=I32)
    for i in range(Qb):
        idx[0, :, i, : i + 1] = torch.arange(i, -1, -1, dtype=I32)  # permuted prefix
        n[0, :, i] = i + 1
    out, _ = recops.block_sparse_attention(q, k, v, idx, n, cu_seqlens_q=_i32([0, L]),
                                           kv_seq_lens=_i32([L]), cu_seqlens_kv=_i32([0, L]),
                                           sparse_block_size=Bs)
    ref = F.scaled_dot_product_attention(q.transpose(0, 1).float(), k.transpose(0, 1).float(),
                                         v.transpose(0, 1).float(), is_causal=True,
                                         enable_gqa=True).transpose(0, 1)
    torch.testing.assert_close(out.float(), ref, atol=2**-6, rtol=2**-6)


def test_flex_block_mask_matches():
    from torch.nn.attention.flex_attention import flex_attention

    g = torch.Generator().manual_seed(7)
    Bs, lq, lk = 128, [200], [450]
    q = torch.randn(200, 2, 64, generator=g)
    k = torch.randn(450, 1, 64, generator=g)
    v = torch.randn(450, 1, 64, generator=g)
    qflat, kflat, vbias = recops.stem_prepare(q.bfloat16(), k.bfloat16(), v.bfloat16(),
                                              _i32([0, 200]), _i32(lk), cu_seqlens_kv=_i32([0, 450]))
    idx, n = recops.stem_indexer(qflat, kflat, vbias, _i32(lq), _i32(lk), initial_blocks=1,
                                 window_size=1, num_prompt_tokens=_i32([60 * 128]), alpha=0.1)
    out, _ = recops.block_sparse_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), idx, n,
                                           cu_seqlens_q=_i32([0, 200]), kv_seq_lens=_i32(lk),
                                           cu_seqlens_kv=_i32([0, 450]))
    bm = stem.to_flex_block_mask(idx, n, _i32(lq), _i32(lk), block_size=Bs)
    Qmax, Kmax = idx.shape[2], idx.shape[3]
    qp = torch.zeros(1, 2, Qmax * Bs, 64)
    kp = torch.zeros(1, 1, Kmax * Bs, 64)
    vp = torch.zeros(1, 1, Kmax * Bs, 64)
    qp[0, :, :200] = q.bfloat16().float().transpose(0, 1)
    kp[0, :, :450] = k.bfloat16().float().transpose(0, 1)
    vp[0, :, :450] = v.bfloat16().float().transpose(0, 1)
    ref = flex_attention(qp, kp, vp, block_mask=bm, enable_gqa=True)[0, :, :200].transpose(0, 1)
    torch.testing.assert_close(out.float(), ref, atol=2**-6, rtol=2**-6)


def _plain_pipeline(q, k, v, L, Bs=128):
    """All-PyTorch pipeline: prepare and select in fp64 torch, then dense masked attention."""
    Qb = _ceil(L, Bs)
    qf, kf, vb = plain_prepare(q, k, v, [0, L], [L], [0, L], qmax=Qb, kmax=Qb)
    rows, lens = golden_indexer(qf, kf, vb, [L], [L])
    mask = torch.zeros(1, q.shape[1], Qb, Qb, dtype=torch.uint8)
    for (b, h, i), sel in rows.items():
        mask[b, h, i, sel] = 1
    return dense_masked_attention(q, k, v, mask, [0, L], [L], [0, L])[0], lens


def test_end_to_end_4k():
    g = torch.Generator().manual_seed(8)
    L, Nq, Nk, D = 4096, 2, 1, 32
    q = torch.randn(L, Nq, D, generator=g).bfloat16()
    k = torch.randn(L, Nk, D, generator=g).bfloat16()
    v = torch.randn(L, Nk, D, generator=g).bfloat16()
    cu, lens = _i32([0, L]), _i32([L])
    qf, kf, vb = recops.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu)
    meta = recops.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=qf.shape[-1])
    idx, n = recops.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
    out, _ = recops.block_sparse_attention(q, k, v, idx, n, cu_seqlens_q=cu, kv_seq_lens=lens,
                                           cu_seqlens_kv=cu)
    ref, ref_lens = _plain_pipeline(q, k, v, L)
    assert torch.equal(n, ref_lens)
    # Selections may differ only through boundary ties of the bf16 representatives; with random
    # data there are none, so the outputs agree to the dtype's tolerance.
    torch.testing.assert_close(out.double(), ref, atol=2**-6, rtol=2**-6)


def _samples():
    g = torch.Generator().manual_seed(9)
    q = torch.randn(300, 4, 32, generator=g).bfloat16()
    k = torch.randn(400, 2, 32, generator=g).bfloat16()
    v = torch.randn(400, 2, 32, generator=g).bfloat16()
    cu_q, cu_kv, lk = _i32([0, 100, 300]), _i32([0, 150, 400]), _i32([150, 250])
    prep = ((q, k, v, cu_q, lk), dict(cu_seqlens_kv=cu_kv, max_q_blocks=2, max_kv_blocks=2))
    qf, kf, vb = recops.stem_prepare(*prep[0], **prep[1])
    lq = _i32([100, 200])
    meta = recops.stem_indexer_metadata(lq, lk, 4, 2, dim_qkflat=512)
    idx, n = recops.stem_indexer(qf, kf, vb, lq, lk)
    return {
        "stem_prepare": prep,
        "stem_indexer": ((qf, kf, vb, lq, lk), dict(metadata=meta, topk_score_precision=2)),
        "stem_indexer_metadata": ((lq, lk, 4, 2), dict(dim_qkflat=512)),
        "block_sparse_attention": ((q, k, v, idx, n), dict(cu_seqlens_q=cu_q, kv_seq_lens=lk,
                                                           cu_seqlens_kv=cu_kv)),
    }


@pytest.mark.parametrize("name", ["stem_prepare", "stem_indexer", "stem_indexer_metadata",
                                  "block_sparse_attention"])
def test_opcheck(name):
    args, kwargs = _samples()[name]
    torch.library.opcheck(getattr(torch.ops.recops, name), args, kwargs)


def test_compile_fullgraph_pipeline():
    s = _samples()
    q, k, v, cu_q, lk = s["stem_prepare"][0]
    cu_kv = s["stem_prepare"][1]["cu_seqlens_kv"]
    lq = _i32([100, 200])

    def pipeline(q, k, v):
        qf, kf, vb = recops.stem_prepare(q, k, v, cu_q, lk, cu_seqlens_kv=cu_kv, max_q_blocks=2,
                                         max_kv_blocks=2)
        meta = recops.stem_indexer_metadata(lq, lk, 4, 2, dim_qkflat=512)
        idx, n = recops.stem_indexer(qf, kf, vb, lq, lk, metadata=meta)
        out, lse = recops.block_sparse_attention(q, k, v, idx, n, cu_seqlens_q=cu_q,
                                                 kv_seq_lens=lk, cu_seqlens_kv=cu_kv)
        return out * 2, lse, stem.to_dense_block_mask(idx, n)

    eager = pipeline(q, k, v)
    compiled = torch.compile(pipeline, fullgraph=True, backend="aot_eager")(q, k, v)
    for a, b in zip(eager, compiled):
        assert torch.equal(a, b)


def test_empty_inputs():
    qflat = torch.zeros(2, 2, 0, 16, dtype=torch.bfloat16)
    kflat = torch.zeros(2, 1, 3, 16, dtype=torch.bfloat16)
    idx, n = recops.stem_indexer(qflat, kflat, torch.zeros(2, 1, 3), _i32([0, 0]), _i32([300, 0]))
    assert idx.shape == (2, 2, 0, 3) and n.shape == (2, 2, 0)
    qflat = torch.zeros(1, 2, 2, 16, dtype=torch.bfloat16)
    kflat = torch.zeros(1, 1, 0, 16, dtype=torch.bfloat16)
    idx, n = recops.stem_indexer(qflat, kflat, torch.zeros(1, 1, 0), _i32([200]), _i32([0]))
    assert n.tolist() == [[[0, 0], [0, 0]]]


# ------------------------------- errors (spec §10) -------------------------------

def _ix_args():
    qflat, kflat, vbias = _worked_example()
    return [qflat, kflat, vbias, _i32([400]), _i32([1500])]


@pytest.mark.parametrize("mutate,exc,match", [
    (lambda a, k: a.__setitem__(0, a[0].float()), TypeError, "qflat must have dtype bfloat16"),
    (lambda a, k: a.__setitem__(1, a[1].half()), TypeError, "kflat must have dtype bfloat16"),
    (lambda a, k: a.__setitem__(2, a[2].double()), TypeError, "vbias must have dtype float32"),
    (lambda a, k: a.__setitem__(3, a[3].long()), TypeError, "q_seq_lens must have dtype int32"),
    (lambda a, k: a.__setitem__(0, a[0][0]), ValueError, "qflat must be 4-D"),
    (lambda a, k: a.__setitem__(2, a[2][:, :, :5]), ValueError, "vbias has shape"),
    (lambda a, k: a.__setitem__(1, a[1][..., :8]), ValueError, "must agree on B and Df"),
    (lambda a, k: k.update(stem_stride=5), ValueError, "stem_stride=5"),
    (lambda a, k: k.update(initial_blocks=-1), ValueError, "initial_blocks=-1"),
    (lambda a, k: k.update(window_size=-1), ValueError, "window_size=-1"),
    (lambda a, k: k.update(alpha=0.0), ValueError, "alpha=0"),
    (lambda a, k: k.update(alpha=1.5), ValueError, "alpha=1.5"),
    (lambda a, k: k.update(alpha=float("nan")), ValueError, "alpha=nan"),
    (lambda a, k: k.update(k_block_num_rate_medium=2.0), ValueError, "k_block_num_rate_medium=2"),
    (lambda a, k: k.update(k_block_num_bias_large=-1), ValueError, "k_block_num_bias_large=-1"),
    (lambda a, k: k.update(topk_score_precision=3), ValueError, "must be 1 or 2"),
    (lambda a, k: a.__setitem__(3, _i32([-5])), ValueError, r"q_seq_lens\[0\]=-5"),
    (lambda a, k: a.__setitem__(4, _i32([1537])), ValueError, r"kv_seq_lens\[0\]=1537 exceeds"),
    (lambda a, k: k.update(num_prompt_tokens=_i32([1000])), ValueError,
     r"num_prompt_tokens\[0\]=1000 must be >= kv_seq_lens\[0\]=1500"),
    (lambda a, k: k.update(metadata=recops.stem_indexer_metadata(_i32([399]), _i32([1500]), 2, 1,
                                                                 dim_qkflat=16)),
     ValueError, "fingerprint"),
    (lambda a, k: k.update(metadata=recops.stem_indexer_metadata(_i32([400]), _i32([1500]), 2, 1)),
     ValueError, "dim_qkflat"),
    (lambda a, k: k.update(metadata=_i32([0] * 5)), ValueError, "numel"),
])
def test_indexer_errors(mutate, exc, match):
    a, kw = _ix_args(), {}
    mutate(a, kw)
    with pytest.raises(exc, match=match):
        recops.stem_indexer(*a, **kw)


def test_heads_and_batch_errors():
    z = torch.zeros
    with pytest.raises(ValueError, match="Nq=12, Nk=8"):
        recops.stem_indexer(z(1, 12, 1, 16, dtype=torch.bfloat16), z(1, 8, 1, 16, dtype=torch.bfloat16),
                            z(1, 8, 1), _i32([1]), _i32([1]))
    with pytest.raises(ValueError, match="B=65537"):
        recops.stem_indexer(z(65537, 1, 0, 16, dtype=torch.bfloat16),
                            z(65537, 1, 0, 16, dtype=torch.bfloat16), z(65537, 1, 0),
                            torch.zeros(65537, dtype=I32), torch.zeros(65537, dtype=I32))
    with pytest.raises(ValueError, match="Nq=12, Nk=8"):
        recops.stem_indexer_metadata(_i32([1]), _i32([1]), 12, 8)


def test_prepare_and_attention_errors():
    q = torch.zeros(10, 2, 16, dtype=torch.bfloat16)
    k = torch.zeros(10, 1, 16, dtype=torch.bfloat16)
    cu, lk = _i32([0, 10]), _i32([10])
    with pytest.raises(ValueError, match="exactly one of cu_seqlens_kv"):
        recops.stem_prepare(q, k, k, cu, lk)
    with pytest.raises(ValueError, match="exactly one of cu_seqlens_kv"):
        recops.stem_prepare(q, k, k, cu, lk, cu_seqlens_kv=cu, block_table=_i32([[0]]))
    with pytest.raises(TypeError, match="no dtype mix"):
        recops.stem_prepare(q, k.half(), k, cu, lk, cu_seqlens_kv=cu)
    with pytest.raises(ValueError, match="cu_seqlens_q must be monotone"):
        recops.stem_prepare(q, k, k, _i32([0, 10, 5]), _i32([10, 0]), cu_seqlens_kv=_i32([0, 10, 10]))
    idx = torch.full((1, 2, 1, 1), -1, dtype=I32)
    n = torch.ones(1, 2, 1, dtype=I32)
    idx[..., 0] = 1
    with pytest.raises(ValueError, match=r"holds id 1, outside \[0, Kb=1\)"):
        recops.block_sparse_attention(q, k, k, idx, n, cu_seqlens_q=cu, kv_seq_lens=lk,
                                      cu_seqlens_kv=cu)
    with pytest.raises(TypeError, match="bfloat16 or float16"):
        recops.block_sparse_attention(q.float(), k.float(), k.float(), idx, n, cu_seqlens_q=cu,
                                      kv_seq_lens=lk, cu_seqlens_kv=cu)
    # Empty selection: 0 and -inf.
    out, lse = recops.block_sparse_attention(q, k, k, idx, torch.zeros_like(n), cu_seqlens_q=cu,
                                             kv_seq_lens=lk, cu_seqlens_kv=cu)
    assert (out == 0).all() and torch.isneginf(lse).all()


@pytest.mark.parametrize("name", ["stem_prepare", "stem_indexer", "block_sparse_attention"])
def test_forward_only_ops_refuse_inputs_that_require_grad(name):
    """No silent gradient loss: a floating input that requires grad is an error naming it."""
    args, kwargs = _samples()[name]
    args = (args[0].clone().requires_grad_(True),) + tuple(args[1:])
    with pytest.raises(RuntimeError, match=f"recops.{name}: argument .* requires grad"):
        getattr(torch.ops.recops, name)(*args, **kwargs)
    with torch.no_grad():
        getattr(torch.ops.recops, name)(*args, **kwargs)


def _bsa_full(L=130, Bs=64, D=16, dtype=torch.bfloat16, seed=11):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(L, 1, D, generator=g).to(dtype) for _ in range(3))
    Qb = _ceil(L, Bs)
    idx = torch.full((1, 1, Qb, Qb), -1, dtype=I32)
    n = torch.zeros(1, 1, Qb, dtype=I32)
    for i in range(Qb):
        idx[0, 0, i, : i + 1] = torch.arange(i + 1, dtype=I32)
        n[0, 0, i] = i + 1
    kw = dict(cu_seqlens_q=_i32([0, L]), kv_seq_lens=_i32([L]), cu_seqlens_kv=_i32([0, L]),
              sparse_block_size=Bs)
    return q, k, v, idx, n, kw


def test_bsa_non_finite_propagates_as_the_reference():
    # Issue 21: a NaN key in a selected block used to zero the rows that see it (lse -inf), and a
    # NaN query row became 0 / -inf; the reference gives NaN for exactly the rows that attend.
    q, k, v, idx, n, kw = _bsa_full()
    k_nan = k.clone()
    k_nan[70, 0, 2] = float("nan")  # block 1: tokens 70.. (causal) see it
    out, lse = recops.block_sparse_attention(q, k_nan, v, idx, n, **kw)
    ref_out, ref_lse = recops.block_sparse_attention(q, k, v, idx, n, **kw)
    assert bool(out[70:].isnan().all()) and bool(lse[0, 70:].isnan().all())
    torch.testing.assert_close(out[:70], ref_out[:70], rtol=0, atol=0)
    q_bad = q.clone()
    q_bad[5, 0, 0] = float("nan")
    q_bad[6, 0, 0] = float("inf")
    out, lse = recops.block_sparse_attention(q_bad, k, v, idx, n, **kw)
    assert bool(out[5:7].isnan().all()) and bool(lse[0, 5:7].isnan().all())
    torch.testing.assert_close(out[7:], ref_out[7:], rtol=0, atol=0)


def test_bsa_zero_head_dim_gives_log_count():
    q, k, v, idx, n, kw = _bsa_full(D=0)
    out, lse = recops.block_sparse_attention(q, k, v, idx, n, **kw)
    assert out.shape == (130, 1, 0)
    want = torch.arange(1, 131, dtype=torch.float32).log()  # causal: token t sees t + 1 keys
    torch.testing.assert_close(lse[0], want)


def test_stem_prepare_nan_in_v_reaches_vbias():
    # Issue 21: a NaN in V was dropped by the norm max (vbias unchanged). Now it makes that
    # (batch, KV head)'s vbias NaN for its blocks, as the reference; other heads are unchanged.
    g = torch.Generator().manual_seed(12)
    L = 300
    q = torch.randn(L, 4, 64, generator=g).bfloat16()
    k = torch.randn(L, 2, 64, generator=g).bfloat16()
    v = torch.randn(L, 2, 64, generator=g).bfloat16()
    cu = _i32([0, L])
    _, _, vb = recops.stem_prepare(q, k, v, cu, _i32([L]), cu_seqlens_kv=cu)
    v_nan = v.clone()
    v_nan[17, 1, 5] = float("nan")
    qf, kf, vb_nan = recops.stem_prepare(q, k, v_nan, cu, _i32([L]), cu_seqlens_kv=cu)
    assert bool(vb_nan[0, 1].isnan().all())
    torch.testing.assert_close(vb_nan[0, 0], vb[0, 0], rtol=0, atol=0)
    assert not bool(qf.isnan().any() or kf.isnan().any())
