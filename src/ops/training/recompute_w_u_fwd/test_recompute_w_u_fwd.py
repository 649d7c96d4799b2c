"""recompute_w_u_fwd through PyTorch: a plain-torch peer of the formula in fp64 (per chunk,
u = Ai (beta * v), w = Ai (beta * exp(G) * k), GVA by repeat_interleave, chunks restarting at
each cu_seqlens start), on Ai from the recops pipeline (chunk_scaled_dot_kkt then solve_tril)
and on a random unit lower triangular Ai; opcheck; torch.compile against eager; the forward-only
refusal; the fla drop-in (``recops.compat.fla.recompute_w_u_fwd``), and fla-core itself when it
is importable with a GPU (its kernel is Triton: no CPU path); bad input. Collected by
`pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import gate_cumsum, sequences  # noqa: E402

# The CPU sums in fp32 (fp64 for fp64): error relative to the largest |output|, plus one rounding
# of the output dtype.
TOL = {torch.float64: 1e-12, torch.float32: 2e-6, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def peer(k, v, beta, Ai, g=None, cu_seqlens=None, gate_log2=False):
    """The formula in plain torch, fp64: per chunk (L rows) u = Ai[:, :L] @ (beta * v) and
    w = Ai[:, :L] @ (beta * exp(G) * k) with k's heads repeated to HV."""
    B, T, H, K = k.shape
    HV, BT = v.shape[2], Ai.shape[3]
    kv = k.double().repeat_interleave(HV // H, dim=2) if H else k.double().new_zeros(B, T, HV, K)
    x = beta.double()[..., None]
    xk = kv * x
    if g is not None:
        e = torch.exp2(g.double()) if gate_log2 else torch.exp(g.double())
        xk = xk * e[..., None]
    xv = v.double() * x
    w = torch.zeros(B, T, HV, K, dtype=torch.float64)
    u = torch.zeros(v.shape, dtype=torch.float64)
    for b, bos, eos in sequences(B, T, cu_seqlens):
        for s in range(bos, eos, BT):
            e_ = min(s + BT, eos)
            a = Ai[b, s:e_, :, : e_ - s].double().transpose(0, 1)      # [HV, L, L]
            w[b, s:e_] = (a @ xk[b, s:e_].transpose(0, 1)).transpose(0, 1)
            u[b, s:e_] = (a @ xv[b, s:e_].transpose(0, 1)).transpose(0, 1)
    return w, u


def make(B, T, H, K, V=None, gva=1, dtype=torch.float32, gates=True, offsets=None,
         chunk_size=64, seed=0, log2=False, random_ai=False):
    """fla's test conditioning: l2-normalised k, beta = sigmoid(U(0,1)), G the chunk cumsum of
    logsigmoid(U(0,1)) (log2 units with log2); Ai from the recops pipeline of these inputs, or
    unit lower triangular with U(-1,1) below the diagonal."""
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV, V = H * gva, V or K
    k = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1).to(dtype)
    v = torch.randn(B, T, HV, V, generator=gen, dtype=torch.float64).to(dtype)
    beta = torch.sigmoid(torch.rand(B, T, HV, generator=gen, dtype=torch.float64)).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    if random_ai:
        Ai = torch.rand(B, T, HV, chunk_size, generator=gen) * 2 - 1
        for b, bos, eos in sequences(B, T, cu):
            for t in range(bos, eos):
                i = (t - bos) % chunk_size
                Ai[b, t, :, i] = 1
                Ai[b, t, :, i + 1:] = 0
    else:
        A = recops.chunk_scaled_dot_kkt(k, beta, g, cu, chunk_size, log2)
        Ai = recops.solve_tril(A, cu)
    return k, v, beta, Ai, g, cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=64),
    "t63_bt32_gva2_v50": dict(B=1, T=63, H=2, K=37, V=50, gva=2, chunk_size=32),
    "t300_bt16_log2": dict(B=1, T=300, H=1, K=128, chunk_size=16, log2=True),
    "no_gates_gva2": dict(B=2, T=100, H=2, K=16, gva=2, gates=False),
    "random_ai_bt32": dict(B=2, T=90, H=1, K=24, V=8, chunk_size=32, random_ai=True),
    "varlen_empty": dict(B=1, T=0, H=2, K=32, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec": dict(B=1, T=0, H=1, K=64, offsets=[0, 122, 229, 400, 1000], log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}


def _close(got, want, dtype):
    assert got.dtype == dtype and got.shape == want.shape
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * scale)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    log2 = cfg.get("log2", False)
    k, v, beta, Ai, g, cu = make(dtype=dtype, **cfg)
    w, u = recops.recompute_w_u_fwd(k, v, beta, Ai, g, cu, gate_log2=log2)
    ww, uu = peer(k, v, beta, Ai, g, cu, log2)
    _close(w, ww, dtype)
    _close(u, uu, dtype)


def test_ai_dtypes_and_chunk_size_argument():
    k, v, beta, Ai, g, _ = make(**CONFIGS["t65_bt64"])
    ww, uu = peer(k, v, beta, Ai.bfloat16(), g)
    w, u = recops.recompute_w_u_fwd(k, v, beta, Ai.bfloat16(), g, chunk_size=64)
    _close(w, ww, torch.float32)
    _close(u, uu, torch.float32)


def test_opcheck():
    k, v, beta, Ai, g, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.recompute_w_u_fwd.default,
                          (k, v, beta, Ai, g, cu, 16, False))
    k, v, beta, Ai, _, _ = make(**CONFIGS["t63_bt32_gva2_v50"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.recompute_w_u_fwd.default,
                          (k, v, beta, Ai, None, None, None, True))


def test_compile_matches_eager():
    def f(k, v, beta, Ai, g, offsets):
        w, u = recops.recompute_w_u_fwd(k, v, beta, Ai, g, offsets)
        return w * 2.0 + 1.0, u.sum(-1)

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        k, v, beta, Ai, g, cu = make(1, 0, 2, 16, V=12, gva=2, offsets=offsets, chunk_size=16,
                                     seed=seed)
        for got, want in zip(compiled(k, v, beta, Ai, g, cu), f(k, v, beta, Ai, g, cu)):
            torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_forward_only():
    k, v, beta, Ai, g, _ = make(1, 10, 1, 8)
    with pytest.raises(RuntimeError, match="v"):
        recops.recompute_w_u_fwd(k, v.requires_grad_(True), beta, Ai, g)
    with torch.no_grad():  # as inside fla's GDN forward
        recops.recompute_w_u_fwd(k, v, beta, Ai, g)


def test_noncontiguous_inputs_are_copied():
    k = torch.randn(1, 40, 2, 32)[:, :, :, ::2]
    v = torch.randn(1, 40, 4, 10)[:, :, :, ::2]
    beta = torch.rand(1, 40, 8)[:, :, ::2]
    g = -torch.rand(1, 40, 4).cumsum(1)
    Ai = torch.randn(1, 40, 4, 64)[..., ::2]
    w, u = recops.recompute_w_u_fwd(k, v, beta, Ai, g)
    ww, uu = peer(k, v, beta, Ai, g)
    torch.testing.assert_close(w.double(), ww, rtol=0, atol=1e-4)
    torch.testing.assert_close(u.double(), uu, rtol=0, atol=1e-4)


def test_bad_input_names_the_argument():
    k, v, beta, Ai, g, _ = make(1, 10, 2, 8)
    with pytest.raises(RuntimeError, match="chunk_size=32 must equal Ai's last dim 64"):
        recops.recompute_w_u_fwd(k, v, beta, Ai, g, chunk_size=32)
    with pytest.raises(RuntimeError, match="v's HV=3 must be a multiple of k's H=2"):
        recops.recompute_w_u_fwd(k, torch.randn(1, 10, 3, 8), torch.rand(1, 10, 3),
                                 torch.rand(1, 10, 3, 64))
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        recops.recompute_w_u_fwd(torch.randn(2, 10, 2, 8), torch.randn(2, 10, 2, 8),
                                 torch.rand(2, 10, 2), torch.rand(2, 10, 2, 64), None,
                                 torch.tensor([0, 10]))


# ---- recops.compat.fla.recompute_w_u_fwd and fla-core --------------------------------------------


def test_fla_dropin_matches_peer():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2); returns (w, u).
    k, v, beta, Ai, g, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    w, u = fla_compat.recompute_w_u_fwd(k, v, beta, Ai, g, cu, None)
    ww, uu = peer(k, v, beta, Ai, g, cu, True)
    _close(w, ww, torch.bfloat16)
    _close(u, uu, torch.bfloat16)
    k, v, beta, Ai, _, _ = make(2, 50, 2, 16, gva=2, gates=False, chunk_size=32)
    w, u = fla_compat.recompute_w_u_fwd(k=k, v=v, beta=beta, A=Ai)
    ww, uu = peer(k, v, beta, Ai)
    _close(w, ww, torch.float32)
    _close(u, uu, torch.float32)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.gated_delta_rule.wy_fast import recompute_w_u_fwd
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's recompute_w_u_fwd is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's recompute_w_u_fwd is a Triton kernel and needs a GPU")
    k, v, beta, Ai, g, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    want = recompute_w_u_fwd(k.cuda(), v.cuda(), beta.cuda(), Ai.cuda(), g.cuda(), cu.cuda())
    got = recops.recompute_w_u_fwd(k, v, beta, Ai, g, cu, gate_log2=True)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.float(), b.cpu().float(), rtol=2e-2, atol=2e-2)
