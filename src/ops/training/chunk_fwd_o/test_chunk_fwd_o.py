"""chunk_fwd_o through PyTorch: a plain-torch peer of the formula in fp64 (per chunk,
scale * (exp(G) * (Q h_c) + (tril(Q K^T) * Gamma) V), GVA by repeat_interleave, chunks restarting
at each cu_seqlens start and numbered over all sequences for h); opcheck; torch.compile against
eager; the forward-only refusal; the fla drop-in (``recops.compat.fla.chunk_fwd_o``), and fla-core
itself when it is importable with a GPU (its kernel is Triton: no CPU path); bad input.
With gk (KDA's per-channel gate): an independent fp64 torch composition (the token-by-token KDA
state recurrence S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t, whose states at
the chunk starts are h) and the formula peer; opcheck, compile, refusals.
Collected by `pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import chunks, gate_cumsum, n_chunks, sequences  # noqa: E402

# Errors relative to the largest |o|: fp64 is computed in fp64; fp32 in fp32; fp16/bf16 outputs
# are one rounding of an fp32 result (half an ulp, plus the fp32 error at a rounding boundary).
TOL = {torch.float64: 1e-12, torch.float32: 2e-6, torch.float16: 2 ** -10,
       torch.bfloat16: 2 ** -7}


def peer_setup(q, k, v, scale, gate_log2):
    """The peers' common start: the scale (default K^-1/2), the exponential, q and k in fp64
    repeated to the HV value heads (GVA), and a zero fp64 o."""
    H, K, HV = q.shape[2], q.shape[3], v.shape[2]
    scale = K ** -0.5 if scale is None else scale
    ex = torch.exp2 if gate_log2 else torch.exp
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    return scale, ex, qv, kv, torch.zeros(v.shape, dtype=torch.float64)


def peer(q, k, v, h, g=None, scale=None, cu_seqlens=None, chunk_size=64, gate_log2=False):
    """The formula in plain torch, fp64: per chunk, o = scale * (exp(G)[:, None] * (Q @ h_c) +
    (tril(Q K^T) * exp(G[:, None] - G[None, :])) @ V), h_c the chunk's state (h[b, c] per batch
    row; with cu_seqlens h[0, running chunk count])."""
    B, T = q.shape[:2]
    scale, ex, qv, kv, o = peer_setup(q, k, v, scale, gate_log2)
    c = 0
    for bi, bos, eos in sequences(B, T, cu_seqlens):
        for ci, s in enumerate(range(bos, eos, chunk_size)):
            e = min(s + chunk_size, eos)
            hc = h[bi, c if cu_seqlens is not None else ci].double()   # [HV, K, V]
            c += 1
            Q = qv[bi, s:e].transpose(0, 1)                              # [HV, L, K]
            Kc = kv[bi, s:e].transpose(0, 1)
            Vc = v[bi, s:e].double().transpose(0, 1)                     # [HV, L, V]
            inter = Q @ hc
            A = (Q @ Kc.transpose(1, 2)).tril()
            if g is not None:
                gc = g[bi, s:e].double().transpose(0, 1)                 # [HV, L]
                inter = inter * ex(gc)[:, :, None]
                d = gc[:, :, None] - gc[:, None, :]
                # only j <= t (d <= 0 for decays) is kept
                d = torch.where(torch.ones_like(d, dtype=torch.bool).tril(), d, 0)
                A = A * ex(d)
            o[bi, s:e] = (scale * (inter + A @ Vc)).transpose(0, 1)
    return o


def make(B, T, H, K, V=32, gva=1, dtype=torch.float32, gates=True, offsets=None, chunk_size=64,
         seed=0, log2=False):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    v = rnd(B, T, HV, V).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    h = (0.3 * rnd(B, n_chunks(B, T, cu, chunk_size), HV, K, V)).to(dtype)
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    return q, k, v, h, g, cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=64),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32),
    "t300_bt16_log2": dict(B=1, T=300, H=1, K=32, chunk_size=16, log2=True),
    "no_gates_gva2": dict(B=2, T=100, H=2, K=16, gva=2, gates=False),
    "varlen_empty": dict(B=1, T=0, H=2, K=32, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec": dict(B=1, T=0, H=1, K=64, offsets=[0, 122, 229, 400, 1000], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    q, k, v, h, g, cu = make(dtype=dtype, **cfg)
    for scale in (None, 0.7):
        got = recops.chunk_fwd_o(q, k, v, h, g, scale, cu, bt, log2)
        want = peer(q, k, v, h, g, scale, cu, bt, log2)
        assert got.dtype == dtype and got.shape == want.shape
        top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
        torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * top)


def test_opcheck():
    q, k, v, h, g, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_fwd_o.default, (q, k, v, h, g, None, cu, 16, False))
    q, k, v, h, g, _ = make(**CONFIGS["t65_bt64"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_fwd_o.default,
                          (q, k, v.float(), h, None, 0.5, None, 64, True))


def test_compile_matches_eager():
    def f(q, k, v, h, g, offsets):
        o = recops.chunk_fwd_o(q, k, v, h, g, seq_offsets=offsets, chunk_size=16)
        return o * 2.0 + 1.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        q, k, v, h, g, cu = make(1, 0, 2, 16, V=8, gva=2, offsets=offsets, chunk_size=16,
                                 seed=seed)
        torch.testing.assert_close(compiled(q, k, v, h, g, cu), f(q, k, v, h, g, cu), rtol=0,
                                   atol=0)


def test_output_in_q_dtype():
    q, k, v, h, g, _ = make(1, 20, 1, 8, V=4, dtype=torch.bfloat16)
    o = recops.chunk_fwd_o(q, k, v.float(), h.double(), g)
    assert o.dtype == torch.bfloat16 and o.shape == (1, 20, 1, 4)


def test_forward_only():
    q, k, v, h, g, _ = make(1, 10, 1, 8, V=4)
    with pytest.raises(RuntimeError, match="q"):
        recops.chunk_fwd_o(q.requires_grad_(True), k, v, h, g)
    with torch.no_grad():  # as inside fla's GDN forward
        recops.chunk_fwd_o(q, k, v, h, g)


def test_noncontiguous_inputs_are_copied():
    q = torch.randn(1, 40, 2, 32)[:, :, :, ::2]
    k = torch.randn(1, 40, 2, 16)
    v = torch.randn(1, 40, 4, 10)[:, :, :, ::2]
    h = torch.randn(1, 2, 4, 5, 16).transpose(-1, -2)
    g = -torch.rand(1, 40, 4).cumsum(1)
    got = recops.chunk_fwd_o(q, k, v, h, g, chunk_size=32)
    torch.testing.assert_close(got.double(), peer(q, k, v, h, g, None, None, 32), rtol=0,
                               atol=1e-5)


def test_bad_input_names_the_argument():
    q, k, v, h, g, _ = make(1, 10, 2, 8, V=4)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        recops.chunk_fwd_o(q, k, v, h, g, chunk_size=128)
    with pytest.raises(RuntimeError, match="v_new's HV=3 must be a multiple of q's H=2"):
        recops.chunk_fwd_o(q, k, torch.randn(1, 10, 3, 4), torch.randn(1, 1, 3, 8, 4))
    with pytest.raises(RuntimeError, match=r"h must be \[B, NT, HV, K, V\]"):
        recops.chunk_fwd_o(q, k, v, torch.randn(1, 2, 2, 8, 4))
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        recops.chunk_fwd_o(torch.randn(2, 10, 2, 8), torch.randn(2, 10, 2, 8),
                           torch.randn(2, 10, 2, 4), torch.randn(2, 1, 2, 8, 4), None, None,
                           torch.tensor([0, 10]))
    with pytest.raises(RuntimeError, match="h's NT=1 is less than the chunk count"):
        recops.chunk_fwd_o(q, k, v, h, g, None, torch.tensor([0, 3, 10]), 16)


# ---- recops.compat.fla.chunk_fwd_o and fla-core --------------------------------------------------


def test_fla_dropin_matches_peer():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2); o in v's dtype.
    q, k, v, h, g, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    got = fla_compat.chunk_fwd_o(q, k, v, h, g=g, cu_seqlens=cu)
    want = peer(q, k, v, h, g, None, cu, 64, True)
    torch.testing.assert_close(got.double(), want, rtol=0, atol=2 ** -7 * want.abs().max().item())
    assert got.dtype == torch.bfloat16
    # state_v_first: h stored [.., V, K].
    got2 = fla_compat.chunk_fwd_o(q, k, v, h.transpose(-1, -2).contiguous(), g, None, None, True,
                                  cu, 64, None)
    torch.testing.assert_close(got2, got, rtol=0, atol=0)
    # g_gamma: g = g_gamma * (position in chunk + 1), log2 units; with cu_seqlens.
    gamma = -torch.rand(v.shape[2]) * 0.1
    pos = torch.cat([torch.arange(e - s) % 32 for _, s, e in sequences(1, q.shape[1], cu)])
    gg = (gamma[None, None, :] * (pos + 1).float()[None, :, None]).contiguous()
    q, k, v, h, _, cu = make(**dict(CONFIGS["varlen_spec"], chunk_size=32))
    got3 = fla_compat.chunk_fwd_o(q, k, v, h, g_gamma=gamma, cu_seqlens=cu, chunk_size=32)
    torch.testing.assert_close(got3.double(), peer(q, k, v, h, gg, None, cu, 32, True), rtol=0,
                               atol=2e-5)
    # v's dtype wins over q's, as fla's empty_like(v).
    q, k, v, h, g, _ = make(2, 50, 2, 16, gva=2, gates=False, chunk_size=32)
    got4 = fla_compat.chunk_fwd_o(q.bfloat16(), k.bfloat16(), v, h, scale=0.5, chunk_size=32)
    assert got4.dtype == torch.float32


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.common.chunk_o import chunk_fwd_o
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_fwd_o is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_fwd_o is a Triton kernel and needs a GPU")
    q, k, v, h, g, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    want = chunk_fwd_o(q.cuda(), k.cuda(), v.cuda(), h.cuda(), g=g.cuda(),
                       cu_seqlens=cu.cuda()).cpu()
    got = recops.chunk_fwd_o(q, k, v, h, g, None, cu, 64, True)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)  # fla rounds A to bf16


# ---- gk: KDA's per-channel gate cumsum [B, T, HV, K] (training_ops §4.5) --------------------------


def kda_recurrence(q, k, v, gl, scale, cu, bt, log2, h0):
    """The token-by-token KDA state recurrence in fp64, independent of any chunked formula: per
    sequence and value head hv (key head hv // (HV // H)), S starts at h0[n]; at each position t,
    S = diag(exp(gl_t)) S + k_t v_t^T and o_t = scale * S^T q_t (exp2 with log2). gl: the raw
    per-channel log gates [B, T, HV, K]. Returns o [B, T, HV, V] and h [B, NT, HV, K, V], the
    states before each chunk of bt positions from the sequence start (fla's numbering)."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    ex = torch.exp2 if log2 else torch.exp
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    o = torch.zeros(B, T, HV, V, dtype=torch.float64)
    hs = []
    for n, (bi, bos, eos) in enumerate(sequences(B, T, cu)):
        S = h0[n].clone()                                                   # [HV, K, V]
        for t in range(bos, eos):
            if (t - bos) % bt == 0:
                hs.append((bi, S.clone()))
            S = ex(gl[bi, t].double())[:, :, None] * S + kv[bi, t][:, :, None] * v[bi, t].double()[:, None, :]
            o[bi, t] = scale * torch.einsum("hk,hkv->hv", qv[bi, t], S)
    NT = n_chunks(B, T, cu, bt)
    h = torch.zeros(B, NT, HV, K, V, dtype=torch.float64)
    per_row = [0] * B
    for i, (bi, S) in enumerate(hs):
        c = i if cu is not None else per_row[bi]
        per_row[bi] += 1
        h[bi, c] = S
    return o, h


def chunk_cumsum_fp64(gl, cu, bt):
    """G: the chunk-local inclusive cumsum of gl [B, T, HV, K] in fp64 (chunks of bt restarting at
    each sequence start)."""
    G = torch.zeros_like(gl, dtype=torch.float64)
    B, T = gl.shape[:2]
    for bi, bos, eos in sequences(B, T, cu):
        for s in range(bos, eos, bt):
            e = min(s + bt, eos)
            G[bi, s:e] = gl[bi, s:e].double().cumsum(0)
    return G


def make_kda(B, T, H, K, V=16, gva=1, dtype=torch.float32, offsets=None, chunk_size=64, seed=0,
             log2=False, gate_div=1.0):
    """q, k (l2-normalised rows), v in dtype; per-channel log gates logsigmoid(U(0,1)) / gate_div
    (log2 units with log2); initial states h0 [N, HV, K, V]."""
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva
    cu = torch.tensor(offsets) if offsets is not None else None
    N = len(offsets) - 1 if offsets is not None else B

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    q = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    k = torch.nn.functional.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    v = rnd(B, T, HV, V).to(dtype)
    gl = torch.nn.functional.logsigmoid(
        torch.rand(B, T, HV, K, generator=gen, dtype=torch.float64)) / gate_div
    if log2:
        gl = gl / math.log(2.0)
    h0 = 0.3 * rnd(N, HV, K, V)
    return q, k, v, gl, h0, cu


GK_CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=16),
    "t70_bt32_gva2_log2": dict(B=1, T=70, H=1, K=12, V=7, gva=2, chunk_size=32, log2=True),
    "t40_bt16_strong": dict(B=2, T=40, H=2, K=8, chunk_size=16, gate_div=0.1),
    "varlen_sub_chunk": dict(B=1, T=0, H=2, K=16, gva=2, offsets=[0, 57, 59, 64], chunk_size=32),
    "varlen_empty": dict(B=1, T=0, H=1, K=8, offsets=[0, 0, 20, 20, 90, 91, 91], chunk_size=16,
                         log2=True),
    "t0": dict(B=2, T=0, H=2, K=8),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(GK_CONFIGS))
def test_gk_matches_kda_recurrence(name, dtype):
    """o with gk against the token-by-token KDA recurrence in fp64 (q, k, v rounded to dtype
    first; h and gk passed in fp64, so only the op's own arithmetic and o's rounding count)."""
    cfg = dict(GK_CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    q, k, v, gl, h0, cu = make_kda(dtype=dtype, **cfg)
    G = chunk_cumsum_fp64(gl, cu, bt)
    for scale in (None, 0.7):
        s = q.shape[-1] ** -0.5 if scale is None else scale
        want, h = kda_recurrence(q, k, v, gl, s, cu, bt, log2, h0)
        got = recops.chunk_fwd_o(q, k, v, h, None, scale, cu, bt, log2, gk=G)
        assert got.dtype == dtype and got.shape == want.shape
        top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
        torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * top)


def gk_peer(q, k, v, h, gk, scale=None, cu_seqlens=None, chunk_size=64, gate_log2=False):
    """The gk formula per chunk in fp64: o = scale * ((Q * exp(G)) @ h_c + A @ V) with
    A_tj = sum_d Q_td K_jd exp(G_td - G_jd) for j <= t (the mask applied before the exponent)."""
    B, T = q.shape[:2]
    scale, ex, qv, kv, o = peer_setup(q, k, v, scale, gate_log2)
    for bi, s, e, c in chunks(B, T, cu_seqlens, chunk_size):
        Q = qv[bi, s:e].transpose(0, 1)                                  # [HV, L, K]
        Kc = kv[bi, s:e].transpose(0, 1)
        Gc = gk[bi, s:e].double().transpose(0, 1)                        # [HV, L, K]
        d = Gc[:, :, None, :] - Gc[:, None, :, :]                        # [HV, L, L, K]
        mask = torch.ones(e - s, e - s, dtype=torch.bool).tril()
        d = torch.where(mask[None, :, :, None], d, 0)
        A = torch.einsum("htd,hjd,htjd->htj", Q, Kc, ex(d)) * mask
        inter = (Q * ex(Gc)) @ h[bi, c].double()
        o[bi, s:e] = (scale * (inter + A @ v[bi, s:e].double().transpose(0, 1))).transpose(0, 1)
    return o


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gk_matches_formula_peer(dtype):
    """gk in fp32 (as recops' chunk_local_cumsum gives it) and h in dtype, against the formula."""
    q, k, v, gl, _, cu = make_kda(1, 0, 2, 24, V=10, gva=2, dtype=dtype, offsets=[0, 0, 50, 53, 130],
                                  chunk_size=32, seed=3)
    G = recops.chunk_local_cumsum(gl.float(), 32, seq_offsets=cu)
    h = (0.3 * torch.randn(1, n_chunks(1, q.shape[1], cu, 32), 4, 24, 10)).to(dtype)
    got = recops.chunk_fwd_o(q, k, v, h, seq_offsets=cu, chunk_size=32, gk=G)
    want = gk_peer(q, k, v, h, G, None, cu, 32)
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * want.abs().max().item())


def test_gk_opcheck_and_compile():
    q, k, v, gl, _, cu = make_kda(**GK_CONFIGS["varlen_sub_chunk"])
    G = chunk_cumsum_fp64(gl, cu, 32).float()
    h = torch.randn(1, n_chunks(1, q.shape[1], cu, 32), 4, 16, 16)
    torch.library.opcheck(torch.ops.recops.chunk_fwd_o.default,
                          (q, k, v, h, None, None, cu, 32, False, G))

    def f(q, k, v, h, G, offsets):
        return recops.chunk_fwd_o(q, k, v, h, seq_offsets=offsets, chunk_size=32, gk=G) * 2.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    torch.testing.assert_close(compiled(q, k, v, h, G, cu), f(q, k, v, h, G, cu), rtol=0, atol=0)


def test_gk_bad_input_names_the_argument():
    q, k, v, gl, _, _ = make_kda(1, 10, 2, 8, V=4)
    h = torch.randn(1, 1, 2, 8, 4)
    G = chunk_cumsum_fp64(gl, None, 64).float()
    with pytest.raises(RuntimeError, match="g and gk are mutually exclusive"):
        recops.chunk_fwd_o(q, k, v, h, torch.zeros(1, 10, 2), gk=G)
    with pytest.raises(RuntimeError, match=r"gk must be \[B, T, HV, K\] = \[1, 10, 2, 8\]"):
        recops.chunk_fwd_o(q, k, v, h, gk=G[..., :7])
    with pytest.raises(RuntimeError, match="q"):  # forward only, with gk too
        recops.chunk_fwd_o(q.requires_grad_(True), k, v, h, gk=G)


def test_gk_cuda_matches_cpu():
    """cuda_sm80 serves gk (kernel_gk.cuh): it matches the CPU path (two 64-row chunks with a
    tail, so every 16-row sub-block and the cross-sub-block factors are exercised)."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    q, k, v, gl, _, _ = make_kda(1, 100, 2, 8, V=4)
    G = chunk_cumsum_fp64(gl, None, 64).float()
    h = torch.randn(1, 2, 2, 8, 4)
    want = recops.chunk_fwd_o(q, k, v, h, gk=G)
    got = recops.chunk_fwd_o(q.cuda(), k.cuda(), v.cuda(), h.cuda(), gk=G.cuda())
    torch.testing.assert_close(got.cpu(), want, rtol=1e-5, atol=1e-5)
