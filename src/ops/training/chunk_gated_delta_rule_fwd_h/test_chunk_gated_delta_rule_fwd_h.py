"""chunk_gated_delta_rule_fwd_h through PyTorch: a plain-torch peer of the chunk recurrence in fp64
(per chunk h_c = S, v_new = u - W S, S = exp(G_L) S + K^T (exp(G_L - G) * v_new), GVA by
repeat_interleave, chunks restarting at each cu_seqlens start and numbered over all sequences for
h); the GDN forward composed of recops' sub-ops (cumsum -> kkt -> solve_tril -> w/u -> fwd_h ->
fwd_o) against the token-by-token delta-rule recurrence (training_ops.md §4.2) in fp64; gk (KDA's
per-channel gate) against the peer and, composed with chunk_kda_fwd_intra, against the
token-by-token KDA recurrence (§4.5); opcheck;
torch.compile against eager; the forward-only refusal; the fla drop-in
(``recops.compat.fla.chunk_gated_delta_rule_fwd_h``), and fla-core itself when it is importable
with a GPU (its kernel is Triton: no CPU path); bad input. Collected by `pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import chunks, gate_cumsum, n_chunks, sequences  # noqa: E402

# Errors relative to the largest |output|: fp64 is computed in fp64; fp32 in fp32; fp16/bf16
# outputs (h, v_new) are one rounding of an fp32 result; final_state is fp32 always.
TOL = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 2 ** -10,
       torch.bfloat16: 2 ** -7}


def peer(k, w, u, g=None, h0=None, cu_seqlens=None, chunk_size=64, gate_log2=False, nt=None,
         gk=None):
    """The chunk recurrence in plain torch, fp64: returns (h, v_new, final_state) with h's NT =
    ``nt`` (default: the chunk count) and zero chunks past the sequences'. With gk (KDA's
    per-channel gate cumsum [B, T, HV, K]) row i of S is also scaled by exp(gk_L[i])."""
    B, T, H, K = k.shape
    HV, V = u.shape[2], u.shape[3]
    ex = torch.exp2 if gate_log2 else torch.exp
    kv = k.double().repeat_interleave(HV // H, dim=2)
    seqs = sequences(B, T, cu_seqlens)
    nt = n_chunks(B, T, cu_seqlens, chunk_size) if nt is None else nt
    h = torch.zeros(B, nt, HV, K, V, dtype=torch.float64)
    v_new = torch.zeros(B, T, HV, V, dtype=torch.float64)
    ht = torch.zeros(len(seqs), HV, K, V, dtype=torch.float64)
    c = 0
    for n, (bi, bos, eos) in enumerate(seqs):
        S = h0[n].double().clone() if h0 is not None else torch.zeros(HV, K, V,
                                                                        dtype=torch.float64)
        for ci, s in enumerate(range(bos, eos, chunk_size)):
            e = min(s + chunk_size, eos)
            h[bi, c if cu_seqlens is not None else ci] = S
            c += 1
            Wc = w[bi, s:e].double().transpose(0, 1)                     # [HV, L, K]
            Kc = kv[bi, s:e].transpose(0, 1)
            Vn = u[bi, s:e].double().transpose(0, 1) - Wc @ S            # [HV, L, V]
            v_new[bi, s:e] = Vn.transpose(0, 1)
            if g is not None:
                gc = g[bi, s:e].double().transpose(0, 1)                 # [HV, L]
                S = ex(gc[:, -1])[:, None, None] * S
                Vn = Vn * ex(gc[:, -1:] - gc)[:, :, None]
            if gk is not None:
                S = ex(gk[bi, e - 1].double())[:, :, None] * S              # [HV, K, 1]
            S = S + Kc.transpose(1, 2) @ Vn
        ht[n] = S
    return h, v_new, ht


def wy_inputs(k, v, beta, g, cu, bt, log2):
    """w, u of the GDN pipeline (recops' own sub-ops), so that the state stays bounded."""
    A = recops.chunk_scaled_dot_kkt(k, beta, g, cu, bt, log2)
    Ai = recops.solve_tril(A, cu)
    return recops.recompute_w_u_fwd(k, v, beta, Ai, g, cu, None, log2)


def make(B, T, H, K, V=32, gva=1, dtype=torch.float32, gates=True, offsets=None, chunk_size=64,
         seed=0, log2=False, h0=True):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV = H * gva
    N = len(offsets) - 1 if offsets is not None else B

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    k = F.normalize(rnd(B, T, H, K), dim=-1).to(dtype)
    v = rnd(B, T, HV, V).to(dtype)
    beta = torch.sigmoid(rnd(B, T, HV)).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    w, u = wy_inputs(k, v, beta, g, cu, chunk_size, log2)
    init = rnd(N, HV, K, V).float() if h0 else None
    return k, w, u, g, init, cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=64),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32),
    "t300_bt16_log2": dict(B=1, T=300, H=1, K=32, chunk_size=16, log2=True),
    "no_gates_gva2_no_h0": dict(B=2, T=100, H=2, K=16, gva=2, gates=False, h0=False),
    "varlen_empty": dict(B=1, T=0, H=2, K=32, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec": dict(B=1, T=0, H=1, K=64, offsets=[0, 122, 229, 400, 1000], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}


def check(got, want, dtype):
    top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * top)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    log2 = cfg.get("log2", False)
    k, w, u, g, h0, cu = make(dtype=dtype, **cfg)
    nt = n_chunks(k.shape[0], k.shape[1], cu, bt)
    h, v_new, ht = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, True, cu, bt, log2,
                                                        nt if cu is not None else None)
    want_h, want_v, want_ht = peer(k, w, u, g, h0, cu, bt, log2)
    assert h.dtype == dtype and v_new.dtype == dtype and ht.dtype == torch.float32
    assert h.shape == want_h.shape and v_new.shape == want_v.shape and ht.shape == want_ht.shape
    check(h, want_h, dtype)
    check(v_new, want_v, dtype)
    check(ht, want_ht, torch.float32)  # fp32 whatever the input dtype


def gk_cumsum(seed, B, T, HV, K, chunk_size, cu, log2, dtype=torch.float32):
    """gk [B, T, HV, K]: recops' chunk-local cumsum of per-channel logsigmoid(U(0, 1)) (log2 units
    with log2), and the raw decays (fp64, natural log)."""
    gen = torch.Generator().manual_seed(seed)
    raw = F.logsigmoid(torch.rand(B, T, HV, K, generator=gen, dtype=torch.float64))
    scale = 1 / math.log(2.0) if log2 else 1.0
    return recops.chunk_local_cumsum(raw.to(dtype), chunk_size, scale=scale, seq_offsets=cu,
                                     out_dtype=dtype), raw


GK_CONFIGS = {
    "t65_bt64_with_g": dict(B=2, T=65, H=2, K=32),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32, gates=False),
    "t100_bt16_log2_with_g": dict(B=1, T=100, H=1, K=16, chunk_size=16, log2=True),
    "varlen_empty_sub_chunk_bt16": dict(B=1, T=0, H=2, K=16, gva=2, gates=False,
                                        offsets=[0, 0, 57, 59, 59, 64, 64], chunk_size=16),
    "varlen_bt64_log2_no_h0": dict(B=1, T=0, H=1, K=32, offsets=[0, 122, 229, 400], log2=True,
                                   gates=False, h0=False),
    "t0": dict(B=2, T=0, H=2, K=8),
}


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(GK_CONFIGS))
def test_gk_matches_peer(name, dtype):
    cfg = dict(GK_CONFIGS[name])
    bt, log2 = cfg.get("chunk_size", 64), cfg.get("log2", False)
    k, w, u, g, h0, cu = make(dtype=dtype, **cfg)
    B, T, HV, K = k.shape[0], k.shape[1], w.shape[2], k.shape[3]
    gk, _ = gk_cumsum(3, B, T, HV, K, bt, cu, log2)
    nt = n_chunks(B, T, cu, bt)
    h, v_new, ht = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, True, cu, bt, log2,
                                                        nt if cu is not None else None, gk=gk)
    want_h, want_v, want_ht = peer(k, w, u, g, h0, cu, bt, log2, gk=gk)
    assert h.shape == want_h.shape and ht.shape == want_ht.shape
    check(h, want_h, dtype)
    check(v_new, want_v, dtype)
    check(ht, want_ht, torch.float32)
    if T > 0:  # gk is applied: without it the final state differs
        _, _, ht_plain = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, True, cu, bt, log2)
        assert (ht_plain - ht).abs().max() > 1e-3


@pytest.mark.parametrize("log2", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("offsets", [None, [0, 0, 70, 75, 75, 140]])
def test_kda_composition_matches_token_recurrence(offsets, dtype, log2):
    """KDA's forward state path as fla's chunk_kda_fwd: G = chunk_local_cumsum(g) ->
    chunk_kda_fwd_intra -> (w, u, kg) -> fwd_h(k=kg, w, u, gk=G), all recops on the CPU, gives the
    token-by-token KDA recurrence's state before each chunk (h) and final state."""
    B, T, H, K, V, HV, bt = (1, 140, 1, 16, 8, 2, 32) if offsets else (2, 100, 2, 16, 8, 2, 64)
    cu = torch.tensor(offsets) if offsets else None
    N = len(offsets) - 1 if offsets else B
    q, k, v, beta, graw, h0 = token_inputs(11, B, T, H, K, V, HV, N, per_channel=True)
    _, want_ht, before = delta_rule(None, k, v, graw, beta, None, h0, cu)
    q, k, v, beta = (x.to(dtype) for x in (q, k, v, beta))
    G = recops.chunk_local_cumsum(graw.to(dtype), bt, scale=1 / math.log(2) if log2 else 1.0,
                                  seq_offsets=cu, out_dtype=dtype)
    w, u, _, kg, _, _ = recops.chunk_kda_fwd_intra(q, k, v, G, beta, None, cu, bt, log2)
    h, _, ht = recops.chunk_gated_delta_rule_fwd_h(kg, w, u, None, h0, True, cu, bt, log2,
                                                   gk=G)
    # Akk is fp32 whatever the input (§4.5), so w and u carry fp32 rounding; ht is fp32.
    atol = 1e-5 if dtype == torch.float64 else 2e-4
    top = want_ht.abs().max().item()
    torch.testing.assert_close(ht.double(), want_ht, rtol=0, atol=atol * top)
    for b, s, _, c in chunks(B, T, cu, bt):
        torch.testing.assert_close(h[b, c].double(), before[b, s], rtol=0, atol=atol * top)


def test_gk_opcheck_and_cuda():
    """gk passes opcheck, and with a GPU cuda_sm80 (which serves gk) matches the CPU path."""
    k, w, u, g, h0, cu = make(**GK_CONFIGS["varlen_empty_sub_chunk_bt16"])
    gk, _ = gk_cumsum(5, 1, k.shape[1], w.shape[2], k.shape[3], 16, cu, False)
    torch.library.opcheck(torch.ops.recops.chunk_gated_delta_rule_fwd_h.default,
                          (k, w, u, g, h0, True, cu, 16, False, None, False, gk))
    if not torch.cuda.is_available():
        return
    want = recops.chunk_gated_delta_rule_fwd_h(k, w, u, None, h0, True, cu, 16, gk=gk)
    got = recops.chunk_gated_delta_rule_fwd_h(k.cuda(), w.cuda(), u.cuda(), None, h0.cuda(), True,
                                              cu.cuda(), 16, gk=gk.cuda())
    for x, y in zip(got, want):
        torch.testing.assert_close(x.cpu(), y, rtol=1e-5, atol=1e-5)


def test_sync_free_bound_and_fp32_chunk_states():
    k, w, u, g, h0, cu = make(**CONFIGS["varlen_empty"], dtype=torch.bfloat16)
    # Without num_chunks, NT = ceil(T / BT) + N; the chunks past the sequences' are zero.
    h, v_new, ht = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, False, cu, 16,
                                                        fp32_chunk_states=True)
    nt = n_chunks(1, 64, cu, 16)
    assert h.shape[1] == 4 + 6 and h.dtype == torch.float32 and ht.numel() == 0
    want_h, _, _ = peer(k, w, u, g, h0, cu, 16, nt=h.shape[1])
    assert (h[:, nt:] == 0).all()
    torch.testing.assert_close(h.double(), want_h, rtol=0, atol=2e-5)


def delta_rule(q, k, v, g, beta, scale, h0, cu):
    """training_ops.md §4.2's recurrence, token by token, fp64: S_t = exp(g_t) S_{t-1};
    S_t += beta_t k_t (x) (v_t - S_t^T k_t); o_t = scale S_t^T q_t. With a per-channel g
    [B, T, HV, K] it is §4.5's KDA recurrence, S_t = diag(exp(g_t)) S_{t-1}. Returns o (None
    without q), the final states and the state before every position."""
    B, T, H, K = k.shape
    HV = v.shape[2]
    kv = k.double().repeat_interleave(HV // H, dim=2)
    o = torch.zeros(v.shape, dtype=torch.float64) if q is not None else None
    seqs = sequences(B, T, cu)
    ht = torch.zeros(len(seqs), HV, K, v.shape[3], dtype=torch.float64)
    before = torch.zeros(B, T, HV, K, v.shape[3], dtype=torch.float64)
    for n, (bi, bos, eos) in enumerate(seqs):
        S = h0[n].double().clone()
        for t in range(bos, eos):
            before[bi, t] = S
            S = torch.exp(g[bi, t].double()).reshape(HV, -1, 1) * S     # [HV, 1 or K, 1]
            kt = kv[bi, t]                                                # [HV, K]
            err = v[bi, t].double() - torch.einsum("hkv,hk->hv", S, kt)
            S = S + beta[bi, t].double()[:, None, None] * kt[:, :, None] * err[:, None, :]
            if q is not None:
                qt = q[bi, t].double().repeat_interleave(HV // H, dim=0)
                o[bi, t] = scale * torch.einsum("hkv,hk->hv", S, qt)
        ht[n] = S
    return o, ht, before


def token_inputs(seed, B, T, H, K, V, HV, N, per_channel=False):
    """q, k (l2-normalised), v, beta, the raw log decays g ([B, T, HV], or [B, T, HV, K] with
    per_channel) in fp64 and h0 fp32, as fla's tests condition them."""
    gen = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1)
    v = torch.randn(B, T, HV, V, generator=gen, dtype=torch.float64)
    beta = torch.sigmoid(torch.randn(B, T, HV, generator=gen, dtype=torch.float64))
    gs = (B, T, HV, K) if per_channel else (B, T, HV)
    graw = F.logsigmoid(torch.rand(*gs, generator=gen, dtype=torch.float64))
    if per_channel:
        graw = graw / 4
    h0 = torch.randn(N, HV, K, V, generator=gen, dtype=torch.float64).float()
    return q, k, v, beta, graw, h0


@pytest.mark.parametrize("log2", [False, True])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("offsets", [None, [0, 0, 70, 75, 75, 200]])
def test_composed_gdn_forward_matches_token_recurrence(offsets, dtype, log2):
    """cumsum -> chunk_scaled_dot_kkt -> solve_tril -> recompute_w_u_fwd -> fwd_h -> chunk_fwd_o,
    all recops on the CPU, equals the token-by-token recurrence (o and the final state)."""
    B, T, H, K, V, HV, bt = (1, 200, 2, 16, 8, 4, 32) if offsets else (2, 150, 2, 16, 8, 4, 64)
    cu = torch.tensor(offsets) if offsets else None
    N = len(offsets) - 1 if offsets else B
    q, k, v, beta, graw, h0 = token_inputs(7, B, T, H, K, V, HV, N)
    scale = K ** -0.5
    want_o, want_ht, _ = delta_rule(q, k, v, graw, beta, scale, h0, cu)
    q, k, v, beta = (x.to(dtype) for x in (q, k, v, beta))
    G = recops.chunk_local_cumsum(graw.to(dtype), bt, scale=1 / math.log(2) if log2 else 1.0,
                                  seq_offsets=cu, out_dtype=dtype)
    A = recops.chunk_scaled_dot_kkt(k, beta, G, cu, bt, log2)
    Ai = recops.solve_tril(A, cu, out_dtype=dtype)
    w, u = recops.recompute_w_u_fwd(k, v, beta, Ai, G, cu, None, log2)
    h, v_new, ht = recops.chunk_gated_delta_rule_fwd_h(k, w, u, G, h0, True, cu, bt, log2)
    o = recops.chunk_fwd_o(q, k, v_new, h, G, scale, cu, bt, log2)
    # fp64 inputs: chunk_scaled_dot_kkt's A is fp32 whatever the input (§4.3), so the pipeline
    # carries fp32 rounding (~1e-8 relative) into w and u; ht is fp32 whatever the input.
    atol = 1e-6 if dtype == torch.float64 else 2e-4
    torch.testing.assert_close(o.double(), want_o, rtol=0, atol=atol * want_o.abs().max().item())
    torch.testing.assert_close(ht.double(), want_ht, rtol=0,
                               atol=atol * want_ht.abs().max().item())


def test_opcheck():
    k, w, u, g, h0, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_gated_delta_rule_fwd_h.default,
                          (k, w, u, g, h0, True, cu, 16, False, None, False))
    k, w, u, g, h0, _ = make(**CONFIGS["t65_bt64"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_gated_delta_rule_fwd_h.default,
                          (k, w, u.float(), None, None, False, None, 64, True, None, True))


def test_compile_matches_eager():
    def f(k, w, u, g, h0, offsets):
        h, v_new, ht = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, True, offsets, 16)
        return h * 2.0, v_new + 1.0, ht

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        k, w, u, g, h0, cu = make(1, 0, 2, 16, V=8, gva=2, offsets=offsets, chunk_size=16,
                                  seed=seed)
        for a, b in zip(compiled(k, w, u, g, h0, cu), f(k, w, u, g, h0, cu)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_forward_only():
    k, w, u, g, h0, _ = make(1, 10, 1, 8, V=4)
    with pytest.raises(RuntimeError, match="k"):
        recops.chunk_gated_delta_rule_fwd_h(k.requires_grad_(True), w, u, g)
    with torch.no_grad():  # as inside fla's GDN forward
        recops.chunk_gated_delta_rule_fwd_h(k, w, u, g)


def test_noncontiguous_inputs_are_copied():
    k = F.normalize(torch.randn(1, 40, 2, 32), dim=-1)[:, :, :, ::2]
    w = 0.1 * torch.randn(1, 40, 4, 16)
    u = torch.randn(1, 40, 4, 10)[:, :, :, ::2]
    g = -torch.rand(1, 40, 4).cumsum(1)
    h0 = torch.randn(1, 4, 5, 16).transpose(-1, -2)
    h, v_new, ht = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, True, chunk_size=32)
    for got, want in zip((h, v_new, ht), peer(k, w, u, g, h0, None, 32)):
        torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-4)


def test_bad_input_names_the_argument():
    k, w, u, g, h0, _ = make(1, 10, 2, 8, V=4)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, chunk_size=128)
    with pytest.raises(RuntimeError, match="w's HV=3 must be a multiple of k's H=2"):
        recops.chunk_gated_delta_rule_fwd_h(k, torch.randn(1, 10, 3, 8), torch.randn(1, 10, 3, 4))
    with pytest.raises(RuntimeError, match=r"initial_state must be \[N, HV, K, V\]"):
        recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, torch.randn(2, 2, 8, 4))
    with pytest.raises(RuntimeError, match=r"g must be \[B, T, HV\]"):
        recops.chunk_gated_delta_rule_fwd_h(k, w, u, g[:, :5].contiguous())
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        recops.chunk_gated_delta_rule_fwd_h(torch.randn(2, 10, 2, 8), torch.randn(2, 10, 2, 8),
                                            torch.randn(2, 10, 2, 4), None, None, False,
                                            torch.tensor([0, 10]))
    for bad in (torch.zeros(1, 10, 2, 9), torch.zeros(1, 10, 1, 8), torch.zeros(1, 10, 2),
                torch.zeros(1, 10, 2, 8, dtype=torch.int32)):
        with pytest.raises(RuntimeError, match=r"gk must be \[B, T, HV, K\] \(w's HV, k's K\)"):
            recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, gk=bad)
    with pytest.raises(RuntimeError, match="num_chunks=1 is less than the chunk count"):
        recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, None, False, torch.tensor([0, 3, 10]),
                                            16, num_chunks=1)


# ---- recops.compat.fla.chunk_gated_delta_rule_fwd_h and fla-core ------------------------------


def test_fla_dropin_matches_peer():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2); h has NT = the chunk
    # count with cu_seqlens (fla's len(chunk_indices)); final_state None without
    # output_final_state.
    k, w, u, g, h0, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    h, v_new, ht = fla_compat.chunk_gated_delta_rule_fwd_h(k, w, u, g=g, initial_state=h0,
                                                           output_final_state=True,
                                                           cu_seqlens=cu)
    want_h, want_v, want_ht = peer(k, w, u, g, h0, cu, 64, True)
    assert h.shape == want_h.shape and h.dtype == torch.bfloat16 and ht.dtype == torch.float32
    check(h, want_h, torch.bfloat16)
    check(v_new, want_v, torch.bfloat16)
    check(ht, want_ht, torch.float32)
    # state_v_first: states stored [.., V, K]; save_new_value=False; no final state.
    h2, v2, ht2 = fla_compat.chunk_gated_delta_rule_fwd_h(
        k, w, u, g, None, h0.transpose(-1, -2).contiguous(), False, 64, False, True, cu, cu)
    assert v2 is None and ht2 is None
    torch.testing.assert_close(h2, h.transpose(-1, -2), rtol=0, atol=0)
    # NT from chunk_indices (fla's [NT, 2] schedule): its length, here 3 over the count of 16.
    nt = n_chunks(1, k.shape[1], cu, 64)
    h4, _, _ = fla_compat.chunk_gated_delta_rule_fwd_h(k, w, u, g, None, h0, cu_seqlens=cu,
                                                       chunk_indices=torch.zeros(nt + 3, 2))
    assert h4.shape[1] == nt + 3 and (h4[:, nt:] == 0).all()
    torch.testing.assert_close(h4[:, :nt], h, rtol=0, atol=0)
    # Dense batch, no gate, no initial state.
    k, w, u, _, _, _ = make(2, 70, 2, 16, gva=2, gates=False, h0=False, chunk_size=32)
    h3, v3, ht3 = fla_compat.chunk_gated_delta_rule_fwd_h(k, w, u, chunk_size=32)
    want_h, want_v, _ = peer(k, w, u, None, None, None, 32)
    assert h3.shape == (2, 3, 4, 16, 32) and ht3 is None
    check(h3, want_h, torch.float32)
    check(v3, want_v, torch.float32)


def test_fla_dropin_gk_matches_peer():
    # fla's gk is KDA's log2-unit per-channel cumsum, passed with k already gated (kg); here with
    # and without g, GVA, cu_seqlens and state_v_first.
    k, w, u, g, h0, cu = make(**GK_CONFIGS["varlen_empty_sub_chunk_bt16"])
    gk, _ = gk_cumsum(9, 1, k.shape[1], w.shape[2], k.shape[3], 16, cu, True)
    for gate in (None, gate_cumsum(torch.Generator().manual_seed(2), 1, k.shape[1], w.shape[2],
                                   16, cu, True)):
        h, v_new, ht = fla_compat.chunk_gated_delta_rule_fwd_h(
            k, w, u, g=gate, gk=gk, initial_state=h0, output_final_state=True, chunk_size=16,
            cu_seqlens=cu)
        want_h, want_v, want_ht = peer(k, w, u, gate, h0, cu, 16, True, gk=gk)
        check(h, want_h, torch.float32)
        check(v_new, want_v, torch.float32)
        check(ht, want_ht, torch.float32)
        h2, _, ht2 = fla_compat.chunk_gated_delta_rule_fwd_h(
            k, w, u, gate, gk, h0.transpose(-1, -2).contiguous(), True, 16, True, True, cu)
        torch.testing.assert_close(h2, h.transpose(-1, -2), rtol=0, atol=0)
        torch.testing.assert_close(ht2, ht.transpose(-1, -2), rtol=0, atol=0)


def test_fla_dropin_feeds_chunk_fwd_o():
    """h and v_new from the drop-in are what fla's chunk_fwd_o reads (the same chunk numbering)."""
    k, w, u, g, h0, cu = make(**CONFIGS["varlen_empty"])
    q = F.normalize(torch.randn(*k.shape, dtype=torch.float64), dim=-1).float()
    h, v_new, _ = fla_compat.chunk_gated_delta_rule_fwd_h(k, w, u, g, None, h0, False, 16,
                                                          cu_seqlens=cu)
    o = fla_compat.chunk_fwd_o(q, k, v_new, h, g, cu_seqlens=cu, chunk_size=16)
    h_b, v_b, _ = recops.chunk_gated_delta_rule_fwd_h(k, w, u, g, h0, False, cu, 16, True)
    o_b = recops.chunk_fwd_o(q, k, v_b, h_b, g, None, cu, 16, True)
    torch.testing.assert_close(o, o_b, rtol=0, atol=0)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.common.chunk_delta_h import chunk_gated_delta_rule_fwd_h
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_gated_delta_rule_fwd_h is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_gated_delta_rule_fwd_h is a Triton kernel and needs a GPU")
    k, w, u, g, h0, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    want = chunk_gated_delta_rule_fwd_h(k.cuda(), w.cuda(), u.cuda(), g=g.cuda(),
                                        initial_state=h0.cuda(), output_final_state=True,
                                        cu_seqlens=cu.cuda())
    got = fla_compat.chunk_gated_delta_rule_fwd_h(k, w, u, g=g, initial_state=h0,
                                                  output_final_state=True, cu_seqlens=cu)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b.cpu(), rtol=2e-2, atol=2e-2)  # fla rounds to bf16
