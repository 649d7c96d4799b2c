"""chunk_bwd_dv_local through PyTorch: a plain-torch peer of the formula in fp64 (per chunk,
dv = scale * (triu(K Q^T) * Gamma) DO with Gamma_ji = exp(G_i - G_j), GVA by repeat_interleave,
chunks restarting at each cu_seqlens start); opcheck; torch.compile against eager; the
forward-only refusal; the fla drop-in (``recops.compat.fla.chunk_bwd_dv_local``), and fla-core
itself when it is importable with a GPU (its kernel is Triton: no CPU path); bad input.
Collected by `pytest src/ops`."""

import math
import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import gate_cumsum  # noqa: E402

# Errors relative to the largest |dv|: fp64 is computed in fp64; fp32 in fp32; fp16/bf16 outputs
# are one rounding of an fp32 result (half an ulp, plus the fp32 error at a rounding boundary).
TOL = {torch.float64: 1e-12, torch.float32: 2e-6, torch.float16: 2 ** -10,
       torch.bfloat16: 2 ** -7}


def spans(B, T, cu_seqlens, bt):
    """(batch row, first, one past last) of every chunk."""
    seqs = ([(b, 0, T) for b in range(B)] if cu_seqlens is None else
            [(0, s, e) for s, e in zip(cu_seqlens[:-1].tolist(), cu_seqlens[1:].tolist())])
    return [(b, s, min(s + bt, e)) for b, lo, e in seqs for s in range(lo, e, bt)]


def peer(q, k, g, do, scale=None, cu_seqlens=None, chunk_size=64, gate_log2=False):
    """The formula in plain torch, fp64: per chunk and value head, the matrix
    M[j, i] = (k_j . q_i) * exp(G_i - G_j) for i >= j (0 below), dv = scale * M @ DO."""
    B, T, H, K = q.shape
    HV = do.shape[2]
    scale = K ** -0.5 if scale is None else scale
    qv = q.double().repeat_interleave(HV // H, dim=2)
    kv = k.double().repeat_interleave(HV // H, dim=2)
    dv = torch.zeros(do.shape, dtype=torch.float64)
    for b, s, e in spans(B, T, cu_seqlens, chunk_size):
        Q = qv[b, s:e].permute(1, 0, 2)                       # [HV, L, K]
        Kc = kv[b, s:e].permute(1, 0, 2)
        D = do[b, s:e].double().permute(1, 0, 2)              # [HV, L, V]
        M = torch.triu(Kc @ Q.transpose(1, 2))                # rows j, columns i >= j
        if g is not None:
            G = g[b, s:e].double().t()                        # [HV, L]
            diff = G[:, None, :] - G[:, :, None]              # G_i - G_j at [j, i]
            keep = torch.ones(e - s, e - s, dtype=torch.bool).triu()
            diff = torch.where(keep, diff, torch.zeros((), dtype=torch.float64))
            M = M * (torch.exp2(diff) if gate_log2 else torch.exp(diff))
        dv[b, s:e] = (scale * (M @ D)).permute(1, 0, 2)
    return dv


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
    do = rnd(B, T, HV, V).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, HV, chunk_size, cu, log2)
    return q, k, g, do, cu


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
    q, k, g, do, cu = make(dtype=dtype, **cfg)
    for scale in (None, 0.7):
        got = recops.chunk_bwd_dv_local(q, k, g, do, scale, cu, bt, log2)
        want = peer(q, k, g, do, scale, cu, bt, log2)
        assert got.dtype == dtype and got.shape == want.shape
        top = max(1.0, want.abs().max().item()) if want.numel() else 1.0
        torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * top)


def test_opcheck():
    q, k, g, do, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_bwd_dv_local.default,
                          (q, k, g, do, None, cu, 16, False))
    q, k, g, do, _ = make(**CONFIGS["t65_bt64"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_bwd_dv_local.default,
                          (q, k, None, do.float(), 0.5, None, 64, True))


def test_compile_matches_eager():
    def f(q, k, g, do, offsets):
        dv = recops.chunk_bwd_dv_local(q, k, g, do, seq_offsets=offsets, chunk_size=16)
        return dv * 2.0 + 1.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        q, k, g, do, cu = make(1, 0, 2, 16, V=8, gva=2, offsets=offsets, chunk_size=16,
                               seed=seed)
        torch.testing.assert_close(compiled(q, k, g, do, cu), f(q, k, g, do, cu), rtol=0,
                                   atol=0)


def test_output_in_do_dtype():
    q, k, g, do, _ = make(1, 20, 1, 8, V=4, dtype=torch.bfloat16)
    dv = recops.chunk_bwd_dv_local(q, k, g, do.float())
    assert dv.dtype == torch.float32 and dv.shape == (1, 20, 1, 4)
    dv = recops.chunk_bwd_dv_local(q.double(), k, g, do)
    assert dv.dtype == torch.bfloat16


def test_forward_only():
    q, k, g, do, _ = make(1, 10, 1, 8, V=4)
    with pytest.raises(RuntimeError, match="do"):
        recops.chunk_bwd_dv_local(q, k, g, do.requires_grad_(True))
    with torch.no_grad():  # as inside fla's GDN backward
        recops.chunk_bwd_dv_local(q, k, g, do)


def test_noncontiguous_inputs_are_copied():
    q = torch.randn(1, 40, 2, 32)[:, :, :, ::2]
    k = torch.randn(1, 40, 2, 16)
    do = torch.randn(1, 40, 4, 10)[:, :, :, ::2]
    g = -torch.rand(1, 4, 40).cumsum(2).transpose(1, 2)
    got = recops.chunk_bwd_dv_local(q, k, g, do, chunk_size=32)
    torch.testing.assert_close(got.double(), peer(q, k, g, do, None, None, 32), rtol=0,
                               atol=1e-5)


def test_bad_input_names_the_argument():
    q, k, g, do, _ = make(1, 10, 2, 8, V=4)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        recops.chunk_bwd_dv_local(q, k, g, do, chunk_size=128)
    with pytest.raises(RuntimeError, match="do's HV=3 must be a multiple of q's H=2"):
        recops.chunk_bwd_dv_local(q, k, None, torch.randn(1, 10, 3, 4))
    with pytest.raises(RuntimeError, match=r"g must be \[B, T, HV\]"):
        recops.chunk_bwd_dv_local(q, k, torch.randn(1, 10, 3), do)
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        recops.chunk_bwd_dv_local(torch.randn(2, 10, 2, 8), torch.randn(2, 10, 2, 8), None,
                                  torch.randn(2, 10, 2, 4), None, torch.tensor([0, 10]))
    with pytest.raises(RuntimeError, match="scale=inf must be finite"):
        recops.chunk_bwd_dv_local(q, k, g, do, math.inf)


# ---- recops.compat.fla.chunk_bwd_dv_local and fla-core -------------------------------------------


def test_fla_dropin_matches_peer():
    # fla's order (q, k, do, g, ...); g is the log2-unit chunk-local cumsum (exp2); dv in do's dtype.
    q, k, g, do, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    got = fla_compat.chunk_bwd_dv_local(q, k, do, g=g, scale=0.125, cu_seqlens=cu)
    want = peer(q, k, g, do, 0.125, cu, 64, True)
    torch.testing.assert_close(got.double(), want, rtol=0, atol=2 ** -7 * want.abs().max().item())
    assert got.dtype == torch.bfloat16
    # g_gamma: g = g_gamma * (position in chunk + 1), log2 units; with cu_seqlens.
    q, k, _, do, cu = make(**dict(CONFIGS["varlen_spec"], chunk_size=32))
    gamma = -torch.rand(do.shape[2]) * 0.1
    pos = torch.cat([torch.arange(e - s) % 32 for s, e in zip(cu[:-1].tolist(), cu[1:].tolist())])
    gg = (gamma[None, None, :] * (pos + 1).float()[None, :, None]).contiguous()
    got2 = fla_compat.chunk_bwd_dv_local(q, k, do, g_gamma=gamma, cu_seqlens=cu, chunk_size=32)
    torch.testing.assert_close(got2.double(), peer(q, k, gg, do, None, cu, 32, True), rtol=0,
                               atol=2e-5)
    # Batched g_gamma without cu_seqlens; positional arguments in fla's order.
    q, k, _, do, _ = make(2, 50, 2, 16, gva=2, gates=False, chunk_size=16)
    gamma = -torch.rand(4) * 0.2
    pos = torch.arange(50) % 16
    gg = (gamma[None, None, :] * (pos + 1).float()[None, :, None]).expand(2, 50, 4)
    got3 = fla_compat.chunk_bwd_dv_local(q, k, do, None, gamma, None, 0.5, None, 16, None)
    torch.testing.assert_close(got3.double(), peer(q, k, gg, do, 0.5, None, 16, True), rtol=0,
                               atol=2e-5)
    with pytest.raises(NotImplementedError, match="A"):
        fla_compat.chunk_bwd_dv_local(q, k, do, A=torch.zeros(2, 50, 4, 16))


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.common.chunk_o import chunk_bwd_dv_local
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_bwd_dv_local is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_bwd_dv_local is a Triton kernel and needs a GPU")
    q, k, g, do, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    want = chunk_bwd_dv_local(q.cuda(), k.cuda(), do.cuda(), g=g.cuda(), scale=0.125,
                              cu_seqlens=cu.cuda()).cpu()
    got = recops.chunk_bwd_dv_local(q, k, g, do, 0.125, cu, 64, True)
    torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)  # fla rounds A to bf16
