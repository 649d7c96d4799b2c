"""Helpers of the composed ops' tests (chunk_gated_delta_rule: g [B, T, HV]; chunk_kda: g
[B, T, HV, K], a per-channel decay): the independent plain-torch fp64 peer (the token-by-token
recurrence of training_ops.md §4.2 / §4.5, GVA by repeat_interleave, sequences from cu_seqlens,
F.normalize-like l2norm with eps added to the sum of squares), the input builder `make` (fla's
conditioning, §5), the tolerances, the comparison and the forward and gradient runs against the
peer. Not collected itself (the leading underscore); each op's test_<op>.py imports it."""

import torch
import torch.nn.functional as F

from _gdn_pytest import sequences

# Errors relative to the largest |o| (|ht|): fp64 / fp32 runs keep an fp32 state; fp16 / bf16
# store w, u, h and v_new in the input dtype (as fla does), several roundings deep.
TOL = {torch.float64: 2e-6, torch.float32: 2e-5, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def peer(q, k, v, g, beta, scale=None, h0=None, cu_seqlens=None, l2norm=False):
    """The recurrence in plain torch, fp64: S = exp(g_t) S (g [B, T, HV]), or S = diag(exp(g_t)) S
    per key channel (g [B, T, HV, K]); S += beta_t k_t (v_t - S^T k_t); o_t = scale S^T q_t;
    returns (o, final_state)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    scale = K ** -0.5 if scale is None else scale
    per_channel = g.dim() == 4
    q, k, v, g, beta = (x.double() for x in (q, k, v, g, beta))
    if l2norm:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    q = q.repeat_interleave(HV // H, dim=2)
    k = k.repeat_interleave(HV // H, dim=2)
    seqs = sequences(B, T, cu_seqlens)
    o = torch.zeros(B, T, HV, V, dtype=torch.float64)
    ht = torch.zeros(len(seqs), HV, K, V, dtype=torch.float64)
    for n, (b, s, e) in enumerate(seqs):
        S = h0[n].double().clone() if h0 is not None else torch.zeros(HV, K, V,
                                                                      dtype=torch.float64)
        for t in range(s, e):
            decay = torch.exp(g[b, t])
            S = S * (decay[:, :, None] if per_channel else decay[:, None, None])
            pred = torch.einsum("hkv,hk->hv", S, k[b, t])
            S = S + beta[b, t][:, None, None] * k[b, t][:, :, None] * (v[b, t] - pred)[:, None, :]
            o[b, t] = scale * torch.einsum("hkv,hk->hv", S, q[b, t])
        ht[n] = S
    return o, ht


def make(B, T, H, K, V=32, gva=1, dtype=torch.float32, offsets=None, h0=True, raw_qk=False,
         gate_s=1.0, seed=0, per_channel=False):
    """(q, k, v, g, beta, h0, cu): g [B, T, HV] fp32, or [B, T, HV, K] with per_channel."""
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q, k = rnd(B, T, H, K), rnd(B, T, H, K)
    if not raw_qk:  # fla's conditioning (§5)
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    v = rnd(B, T, HV, V).to(dtype)
    gate = (B, T, HV, K) if per_channel else (B, T, HV)
    g = F.logsigmoid(torch.rand(*gate, generator=gen, dtype=torch.float64)) / gate_s
    beta = torch.rand(B, T, HV, generator=gen, dtype=torch.float64).sigmoid().to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    N = len(offsets) - 1 if offsets is not None else B
    hs = rnd(N, HV, K, V).float() if h0 else None
    return q.to(dtype), k.to(dtype), v, g.float(), beta, hs, cu


def run(op, make, cfg, dtype, scale=None, seed=0):
    """op (recops.chunk_gated_delta_rule or recops.chunk_kda) on make's inputs of cfg, and the
    peer's answer: (o, ht, want_o, want_ht)."""
    cfg = dict(cfg)
    bt = cfg.pop("chunk_size", 64)
    l2 = cfg.pop("l2norm", False)
    q, k, v, g, beta, h0, cu = make(dtype=dtype, seed=seed, **cfg)
    o, ht = op(q, k, v, g, beta, scale, h0, True, cu, l2, bt)
    want_o, want_ht = peer(q, k, v, g, beta, scale, h0, cu, l2)
    return o, ht, want_o, want_ht


def close(got, want, tol):
    top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=tol * top)


def backward_matches_peer_autograd(op, make, cfg, dtype):
    """op's gradients (its backward op through the Autograd kernel) against torch autograd of the
    plain fp64 recurrence, for every differentiable input. recops keeps the state in fp32 whatever
    the dtype (§2.4), so fp64 inputs are judged at an fp32-state tolerance, not by finite
    differences."""
    cfg = dict(cfg)
    bt = cfg.pop("chunk_size", 64)
    l2 = cfg.pop("l2norm", False)
    want_ht = cfg.pop("ht", True)
    q, k, v, g, beta, h0, cu = make(dtype=torch.float64, seed=3, **cfg)
    ins = [x.to(dtype).detach().requires_grad_(True) for x in (q, k, v, g, beta)]
    ref = [x.detach().double().requires_grad_(True) for x in ins]
    if h0 is not None:
        ins.append(h0.detach().to(dtype).requires_grad_(True))
        ref.append(ins[-1].detach().double().requires_grad_(True))
    gen = torch.Generator().manual_seed(9)
    o, ht = op(*ins[:5], None, ins[5] if h0 is not None else None, want_ht, cu, l2, bt)
    wo, wht = peer(*ref[:5], None, ref[5] if h0 is not None else None, cu, l2)
    do = torch.randn(wo.shape, generator=gen, dtype=torch.float64)
    dht = torch.randn(wht.shape, generator=gen, dtype=torch.float64)
    loss = (o.double() * do).sum() + ((ht.double() * dht).sum() if want_ht else 0.0)
    wloss = (wo * do).sum() + ((wht * dht).sum() if want_ht else 0.0)
    got = torch.autograd.grad(loss, ins)
    want = torch.autograd.grad(wloss, ref)
    for n, a, b in zip(["q", "k", "v", "g", "beta", "h0"], got, want):
        assert a.shape == b.shape, n
        close(a, b, 5e-5)
