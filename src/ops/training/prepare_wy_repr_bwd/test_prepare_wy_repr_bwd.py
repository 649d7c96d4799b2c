"""prepare_wy_repr_bwd through PyTorch: torch autograd in fp64 of the WY forward it inverts
(A = beta * (k k^T) * Gamma strictly lower per chunk, as chunk_scaled_dot_kkt; Ai = (I + A)^-1;
w = Ai (beta * exp(G) * k), u = Ai (beta * v), as recompute_w_u_fwd) with the loss
<dw, w> + <du, u>, whose gradients to k, v, beta and G are the op's outputs; an independent
plain-torch fp64 computation of the spec's formulas (matrix form per chunk) on the recops
pipeline's Ai for every dtype; opcheck; the optional dg; the forward-only refusal; the fla
drop-in (``recops.compat.fla.prepare_wy_repr_bwd``, log2 gates), and fla-core itself when it is
importable with a GPU (its kernel is Triton: no CPU path); bad input. Collected by
`pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import gate_cumsum, sequences  # noqa: E402

# Errors relative to the largest |output|: fp64 is computed in fp64; fp32 in fp32; fp16/bf16
# outputs are one rounding of an fp32 result (half an ulp, plus the fp32 error at a boundary).
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2 ** -10,
       torch.bfloat16: 2 ** -7}


def chunks(B, T, cu_seqlens, bt):
    """(batch row, first, end) of every chunk."""
    return [(b, s, min(s + bt, e)) for b, first, e in sequences(B, T, cu_seqlens)
            for s in range(first, e, bt)]


def autograd_peer(k, v, beta, g, dw, du, cu_seqlens=None, chunk_size=64, gate_log2=False):
    """Torch autograd, fp64, of L = sum_c <dw, w> + <du, u> with, per chunk and value head,
    A = tril(beta_t (k_t . k_j) exp(G_t - G_j), -1), Ai = (I + A)^-1, w = Ai (beta exp(G) k),
    u = Ai (beta v). G's gradient in natural-log units (the leaf is G * ln 2 with gate_log2).
    Returns (dk, dv, dbeta, dg, Ai) with Ai [B, T, HV, BT] laid out as solve_tril writes it."""
    B, T, H, K = k.shape
    HV = v.shape[2]
    grp = HV // H
    kl, vl, bl = (x.detach().double().clone().requires_grad_() for x in (k, v, beta))
    unit = math.log(2.0) if gate_log2 else 1.0
    gl = (g.detach().double() * unit).requires_grad_() if g is not None else None
    kv = kl.repeat_interleave(grp, dim=2)
    Ai_out = torch.zeros(B, T, HV, chunk_size, dtype=torch.float64)
    loss = 0
    for b, s, e in chunks(B, T, cu_seqlens, chunk_size):
        R = e - s
        Kc = kv[b, s:e].transpose(0, 1)                      # [HV, R, K]
        Vc = vl[b, s:e].transpose(0, 1)                      # [HV, R, V]
        bc = bl[b, s:e].transpose(0, 1)                      # [HV, R]
        if gl is not None:
            Gc = gl[b, s:e].transpose(0, 1)
            gam = torch.exp(Gc[:, :, None] - Gc[:, None, :])
            ec = torch.exp(Gc)
        else:
            gam = torch.ones(HV, R, R, dtype=torch.float64)
            ec = torch.ones(HV, R, dtype=torch.float64)
        A = torch.tril(bc[:, :, None] * (Kc @ Kc.transpose(1, 2)) * gam, -1)
        Ai = torch.linalg.inv(torch.eye(R, dtype=torch.float64) + A)
        w = Ai @ (bc * ec)[:, :, None].mul(Kc)
        u = Ai @ bc[:, :, None].mul(Vc)
        loss = loss + (dw[b, s:e].double().transpose(0, 1) * w).sum()
        loss = loss + (du[b, s:e].double().transpose(0, 1) * u).sum()
        Ai_out[b, s:e, :, :R] = Ai.detach().transpose(0, 1)
    leaves = [kl, vl, bl] + ([gl] if gl is not None else [])
    if torch.is_tensor(loss) and loss.requires_grad:
        grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    else:
        grads = [None] * len(leaves)
    grads = [torch.zeros_like(x) if gr is None else gr for x, gr in zip(leaves, grads)]
    dg = grads[3] if gl is not None else None
    return grads[0], grads[1], grads[2], dg, Ai_out


def peer(k, v, beta, g, Ai, dw, du, cu_seqlens=None, gate_log2=False):
    """The spec's formulas in plain torch, fp64, per chunk and all value heads at once:
    Ub = Ai^T dU, Wb = Ai^T dW; dv = beta Ub; dk = beta e Wb; db = rowsum(Ub V) + e rowsum(Wb K);
    dg = beta e rowsum(K Wb); dA = -tril(Ai^T tril(dU (beta V)^T + dW (beta e K)^T, -1) Ai^T, -1)
    * Gamma; db += rowsum(dA KK); dk += beta dA K + (beta dA)^T K; dg += rowsum(dA A) -
    colsum(dA A) with A = beta KK (no Gamma: dA carries it); dk summed over each group."""
    B, T, H, K = k.shape
    HV, BT = v.shape[2], Ai.shape[3]
    grp = HV // H
    ex = torch.exp2 if gate_log2 else torch.exp
    kv = k.double().repeat_interleave(grp, dim=2)
    dk = torch.zeros(B, T, HV, K, dtype=torch.float64)
    dv = torch.zeros(v.shape, dtype=torch.float64)
    db = torch.zeros(beta.shape, dtype=torch.float64)
    dg = torch.zeros(beta.shape, dtype=torch.float64)
    for b, s, e in chunks(B, T, cu_seqlens, BT):
        R = e - s
        a = Ai[b, s:e, :, :R].double().transpose(0, 1)           # [HV, R, R]
        Kc, Vc = kv[b, s:e].transpose(0, 1), v[b, s:e].double().transpose(0, 1)
        dW, dU = dw[b, s:e].double().transpose(0, 1), du[b, s:e].double().transpose(0, 1)
        bc = beta[b, s:e].double().transpose(0, 1)[:, :, None]     # [HV, R, 1]
        if g is not None:
            Gc = g[b, s:e].double().transpose(0, 1)
            ec = ex(Gc)[:, :, None]
            gam = ex(Gc[:, :, None] - Gc[:, None, :])
        else:
            ec = torch.ones_like(bc)
            gam = torch.ones(HV, R, R, dtype=torch.float64)
        at = a.transpose(1, 2)
        Ub, Wb = at @ dU, at @ dW
        dvc = bc * Ub
        dkc = bc * ec * Wb
        wk = (Wb * Kc).sum(-1)
        dbc = (Ub * Vc).sum(-1) + ec[..., 0] * wk
        dgc = bc[..., 0] * ec[..., 0] * wk
        dAi = torch.tril(dU @ (bc * Vc).transpose(1, 2) + dW @ (bc * ec * Kc).transpose(1, 2), -1)
        dA = -torch.tril(at @ dAi @ at, -1) * torch.where(torch.ones(R, R).tril(-1).bool(), gam, 0)
        KK = Kc @ Kc.transpose(1, 2)
        dbc = dbc + (dA * KK).sum(-1)
        dkc = dkc + bc * (dA @ Kc) + (bc * dA).transpose(1, 2) @ Kc
        AdA = dA * bc * KK
        dgc = dgc + AdA.sum(-1) - AdA.sum(-2)
        dk[b, s:e] = dkc.transpose(0, 1)
        dv[b, s:e] = dvc.transpose(0, 1)
        db[b, s:e] = dbc.transpose(0, 1)
        dg[b, s:e] = dgc.transpose(0, 1)
    return dk.view(B, T, H, grp, K).sum(3), dv, db, (dg if g is not None else None)


def make(B, T, H, K, V=None, gva=1, dtype=torch.float32, gates=True, offsets=None,
         chunk_size=64, seed=0, log2=False, pipeline=True):
    """fla's test conditioning: l2-normalised k, beta = sigmoid(U(0,1)), G the chunk cumsum of
    logsigmoid(U(0,1)) (log2 units with log2), dw, du ~ N(0, 1); Ai from the recops pipeline of
    these inputs (chunk_scaled_dot_kkt then solve_tril) when `pipeline`."""
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    HV, V = H * gva, (K if V is None else V)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1).to(dtype)
    v = torch.randn(B, T, HV, V, generator=gen, dtype=torch.float64).to(dtype)
    beta = torch.sigmoid(torch.rand(B, T, HV, generator=gen, dtype=torch.float64)).to(dtype)
    dw = torch.randn(B, T, HV, K, generator=gen, dtype=torch.float64).to(dtype)
    du = torch.randn(B, T, HV, V, generator=gen, dtype=torch.float64).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    Ai = None
    if pipeline:
        A = recops.chunk_scaled_dot_kkt(k, beta, g, cu, chunk_size, log2)
        Ai = recops.solve_tril(A, cu)
    return k, v, beta, g, Ai, dw, du, cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=32, V=16),
    "t63_bt32_gva2_v19": dict(B=1, T=63, H=2, K=37, V=19, gva=2, chunk_size=32),
    "t150_bt16_log2": dict(B=1, T=150, H=1, K=64, V=8, chunk_size=16, log2=True),
    "no_gates_gva2": dict(B=2, T=100, H=2, K=16, gva=2, gates=False),
    "varlen_empty": dict(B=1, T=0, H=2, K=32, V=12, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                         chunk_size=16),
    "varlen_spec_gva2": dict(B=1, T=0, H=1, K=32, V=16, gva=2, offsets=[0, 122, 229, 400, 500],
                             log2=True),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
    "k0": dict(B=1, T=20, H=1, K=0, V=5, chunk_size=16),
}


def _close(got, want, dtype):
    assert got.dtype == dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * scale)


def _run(k, v, beta, g, Ai, dw, du, cu, chunk_size=None, log2=False):
    return recops.prepare_wy_repr_bwd(k, v, beta, g, Ai, dw, du, cu, chunk_size, log2)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_torch_autograd_fp64(name):
    """The strongest check: the op's (dk, dv, dbeta, dg) are the autograd gradients of the WY
    forward (kkt -> (I + A)^-1 -> w, u) on the Ai that forward builds."""
    cfg = dict(CONFIGS[name])
    log2 = cfg.get("log2", False)
    bt = cfg.get("chunk_size", 64)
    k, v, beta, g, _, dw, du, cu = make(dtype=torch.float64, pipeline=False, **cfg)
    gdk, gdv, gdb, gdg, Ai = autograd_peer(k, v, beta, g, dw, du, cu, bt, log2)
    dk, dv, db, dg = _run(k, v, beta, g, Ai, dw, du, cu, log2=log2)
    torch.testing.assert_close(dk, gdk, rtol=0, atol=1e-10)
    torch.testing.assert_close(dv, gdv, rtol=0, atol=1e-10)
    torch.testing.assert_close(db, gdb, rtol=0, atol=1e-10)
    if g is None:
        assert dg.shape == (0,)
    else:
        assert dg.dtype == torch.float32
        top = gdg.abs().max().item() if gdg.numel() else 0.0
        torch.testing.assert_close(dg.double(), gdg, rtol=0, atol=1e-5 * max(1.0, top))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    cfg = dict(CONFIGS[name])
    log2 = cfg.get("log2", False)
    k, v, beta, g, Ai, dw, du, cu = make(dtype=dtype, **cfg)
    dk, dv, db, dg = _run(k, v, beta, g, Ai, dw, du, cu, log2=log2)
    pk, pv, pb, pg = peer(k, v, beta, g, Ai, dw, du, cu, log2)
    _close(dk, pk, dtype)
    _close(dv, pv, dtype)
    _close(db, pb, dtype)
    if g is not None:
        _close(dg, pg, torch.float32)


def test_opcheck():
    k, v, beta, g, Ai, dw, du, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.prepare_wy_repr_bwd.default,
                          (k, v, beta, g, Ai, dw, du, cu, 16, False))
    k, v, beta, _, Ai, dw, du, _ = make(**CONFIGS["t63_bt32_gva2_v19"], dtype=torch.bfloat16,
                                        gates=False)
    torch.library.opcheck(torch.ops.recops.prepare_wy_repr_bwd.default,
                          (k, v, beta, None, Ai, dw, du, None, None, True))


def test_forward_only():
    k, v, beta, g, Ai, dw, du, _ = make(1, 10, 1, 8)
    with pytest.raises(RuntimeError, match="du"):
        _run(k, v, beta, g, Ai, dw, du.requires_grad_(True), None)
    with torch.no_grad():  # as inside fla's GDN backward
        _run(k, v, beta, g, Ai, dw, du, None)


def test_noncontiguous_inputs_are_copied():
    k, v, beta, g, Ai, dw, du, _ = make(1, 40, 2, 16, V=6, gva=2)
    nc = [torch.stack([x, -x], -1)[..., 0] for x in (k, v, dw, du)]
    assert not any(x.is_contiguous() for x in nc)
    got = _run(nc[0], nc[1], beta, g, Ai, nc[2], nc[3], None)
    want = _run(k, v, beta, g, Ai, dw, du, None)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bad_input_names_the_argument():
    k, v, beta, g, Ai, dw, du, _ = make(1, 10, 2, 8)
    with pytest.raises(RuntimeError, match="chunk_size=32 must equal Ai's last dim 64"):
        _run(k, v, beta, g, Ai, dw, du, None, chunk_size=32)
    with pytest.raises(RuntimeError, match="dw must be \\[B, T, HV, K\\]"):
        _run(k, v, beta, g, Ai, dw[..., :4], du, None)
    with pytest.raises(RuntimeError, match="du must be \\[B, T, HV, V\\]"):
        _run(k, v, beta, g, Ai, dw, du[:, :9], None)
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        x = make(2, 10, 2, 8)
        _run(*x[:7], torch.tensor([0, 10]))


# ---- recops.compat.fla.prepare_wy_repr_bwd and fla-core ------------------------------------------


def test_fla_dropin_matches_autograd():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2); its dg is the
    # natural-log-unit gradient; returns (dk, dv, db, dg) with dg in g's dtype.
    cfg = dict(CONFIGS["varlen_spec_gva2"])
    k, v, beta, g, _, dw, du, cu = make(dtype=torch.float64, pipeline=False, **cfg)
    gdk, gdv, gdb, gdg, Ai = autograd_peer(k, v, beta, g, dw, du, cu, 64, True)
    dk, dv, db, dg = fla_compat.prepare_wy_repr_bwd(k, v, beta, Ai, dw, du, g=g, cu_seqlens=cu,
                                                    chunk_indices=None)
    for a, b in ((dk, gdk), (dv, gdv), (db, gdb)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-10)
    assert dg.dtype == g.dtype
    torch.testing.assert_close(dg.double(), gdg, rtol=0, atol=1e-4)
    k, v, beta, _, Ai, dw, du, _ = make(2, 50, 2, 16, gva=2, gates=False, chunk_size=32)
    dk, dv, db, dg = fla_compat.prepare_wy_repr_bwd(k=k, v=v, beta=beta, A=Ai, dw=dw, du=du)
    assert dg is None
    pk, pv, pb, _ = peer(k, v, beta, None, Ai, dw, du)
    _close(dk, pk, torch.float32)
    _close(dv, pv, torch.float32)
    _close(db, pb, torch.float32)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.gated_delta_rule.wy_fast import prepare_wy_repr_bwd
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's prepare_wy_repr_bwd is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's prepare_wy_repr_bwd is a Triton kernel and needs a GPU")
    k, v, beta, g, Ai, dw, du, cu = make(**CONFIGS["varlen_spec_gva2"], dtype=torch.bfloat16)
    want = prepare_wy_repr_bwd(k.cuda(), v.cuda(), beta.cuda(), Ai.cuda(), dw.cuda(), du.cuda(),
                               g.cuda(), cu.cuda())
    got = fla_compat.prepare_wy_repr_bwd(k, v, beta, Ai, dw, du, g, cu)
    for a, b in zip(got, want):
        torch.testing.assert_close(a.float(), b.cpu().float(), rtol=2e-2, atol=2e-2)
