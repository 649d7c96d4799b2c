"""chunk_local_cumsum through PyTorch: a plain-torch peer of fla-core's semantics (fp32 cumsum per
chunk, times scale, chunks restarting at each cu_seqlens start), forward and backward (autograd
through the peer in fp64); gradcheck; opcheck; torch.compile against eager; the fla drop-in
(``recops.compat.fla``), and fla-core itself when it is importable with a GPU; bad input.
Collected by `pytest src/ops`."""

import math

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

RCP_LN2 = 1.0 / math.log(2.0)
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def peer(g, chunk_size, reverse=False, scale=None, cu_seqlens=None, output_dtype=torch.float):
    """fla's chunk_local_cumsum in plain torch: per chunk, an acc-dtype cumsum over time (fp32,
    fp64 for fp64 g), times scale, cast to output_dtype (None: g's dtype)."""
    acc = torch.float64 if g.dtype == torch.float64 else torch.float32
    B, T = g.shape[:2]
    if cu_seqlens is not None:
        bounds = cu_seqlens.tolist()
        seqs = [(0, bounds[n], bounds[n + 1]) for n in range(len(bounds) - 1)]
    else:
        seqs = [(b, 0, T) for b in range(B)]
    parts = {}
    for b, bos, eos in seqs:
        for s in range(bos, eos, chunk_size):
            x = g[b, s:min(s + chunk_size, eos)].to(acc)
            c = x.flip(0).cumsum(0).flip(0) if reverse else x.cumsum(0)
            parts[(b, s)] = c * scale if scale is not None else c
    rows = []
    for b in range(B):
        chunks = [parts[k] for k in sorted(parts) if k[0] == b]
        rows.append(torch.cat(chunks) if chunks else g.new_zeros((0,) + g.shape[2:], dtype=acc))
    out = torch.stack(rows) if rows else g.new_zeros(g.shape, dtype=acc)
    return out.to(output_dtype or g.dtype)


CONFIGS = {
    "3d_t65": dict(shape=(2, 65, 3)),
    "4d_t63_reverse": dict(shape=(3, 63, 2, 5), reverse=True),
    "t300_bt16_log2": dict(shape=(1, 300, 4), chunk_size=16, scale=RCP_LN2, gates=True),
    "bt1": dict(shape=(2, 7, 3), chunk_size=1, scale=-0.5),
    "bt_past_t": dict(shape=(2, 11, 2, 3), chunk_size=128, reverse=True),
    "varlen_empty": dict(shape=(1, 0, 3, 4), offsets=[0, 0, 57, 59, 59, 64, 64], chunk_size=16),
    "varlen_reverse_log2": dict(shape=(1, 0, 5), offsets=[0, 122, 229, 400, 1000], reverse=True,
                                scale=RCP_LN2, gates=True),
    "t0": dict(shape=(2, 0, 3)),
}


def make(cfg, dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    shape = list(cfg["shape"])
    offsets = cfg.get("offsets")
    if offsets:
        shape[1] = offsets[-1]
    g = torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1
    if cfg.get("gates"):
        g = torch.nn.functional.logsigmoid(g * 4)  # GDN's natural-log decays, g < 0
    kw = dict(chunk_size=cfg.get("chunk_size", 64), reverse=cfg.get("reverse", False),
              scale=cfg.get("scale", 1.0),
              seq_offsets=torch.tensor(offsets) if offsets else None)
    return g.to(dtype), kw


def peer_of(g, kw, out_dtype):
    return peer(g, kw["chunk_size"], kw["reverse"], kw["scale"], kw["seq_offsets"], out_dtype)


@pytest.mark.parametrize("name", list(CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("out_dtype", [None, torch.bfloat16])
def test_matches_peer_fwd_bwd(name, dtype, out_dtype):
    g, kw = make(CONFIGS[name], dtype)
    g.requires_grad_(True)
    out = recops.chunk_local_cumsum(g, **kw, out_dtype=out_dtype)
    want_dtype = out_dtype or torch.float32
    assert out.dtype == want_dtype and out.shape == g.shape
    # The forward against the peer with the same rounding of the output.
    want = peer_of(g.detach(), kw, want_dtype)
    tol = max(TOL[want_dtype], TOL[torch.float32])
    torch.testing.assert_close(out.double(), want.double(), rtol=tol, atol=tol * 8)
    # The backward against autograd through the peer in fp64.
    dout = torch.randn(g.shape, generator=torch.Generator().manual_seed(1)).to(want_dtype)
    (dg,) = torch.autograd.grad(out, g, dout)
    g64 = g.detach().double().requires_grad_(True)
    ref = peer_of(g64, kw, torch.float64)
    if ref.requires_grad:
        (want_dg,) = torch.autograd.grad(ref, g64, dout.double())
    else:  # T = 0: the peer's output is a constant
        want_dg = torch.zeros_like(g64)
    assert dg.dtype == dtype
    tol = max(TOL[dtype], TOL[torch.float32])
    torch.testing.assert_close(dg.double(), want_dg, rtol=tol, atol=tol * 8)


def test_values_by_hand():
    """A check that cannot pass by symmetry: 1..5 in chunks of 2, forward and reversed."""
    g = torch.arange(1.0, 6.0).view(1, 5, 1)
    assert recops.chunk_local_cumsum(g, 2).flatten().tolist() == [1, 3, 3, 7, 5]
    assert recops.chunk_local_cumsum(g, 2, True, 2.0).flatten().tolist() == [6, 4, 14, 8, 10]
    off = torch.tensor([0, 0, 3, 5], dtype=torch.int32)
    assert recops.chunk_local_cumsum(g, 2, seq_offsets=off).flatten().tolist() == [1, 3, 3, 4, 9]


@pytest.mark.parametrize("name", ["4d_t63_reverse", "varlen_empty", "t300_bt16_log2"])
def test_gradcheck(name):
    g, kw = make(CONFIGS[name], seed=3)
    g = g[:, :80].contiguous() if kw["seq_offsets"] is None else g
    g.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: recops.chunk_local_cumsum(t, **kw, out_dtype=torch.float64), (g,))


def test_opcheck():
    g, kw = make(CONFIGS["varlen_empty"], torch.float32)
    g.requires_grad_(True)
    args = (g, 16, True, 0.5, kw["seq_offsets"], torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_local_cumsum.default, args)
    dout = torch.randn(g.shape).to(torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_local_cumsum_bwd.default,
                          (dout, g.detach(), 16, True, 0.5, kw["seq_offsets"], torch.bfloat16))
    g3 = torch.randn(2, 70, 3, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.chunk_local_cumsum.default,
                          (g3, 64, False, 1.0, None, None))


def test_compile_matches_eager():
    def f(g, offsets):
        G = recops.chunk_local_cumsum(g, 16, scale=RCP_LN2, seq_offsets=offsets)
        return torch.exp2(G) * 2.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        g, _ = make(dict(shape=(1, 0, 4), offsets=offsets, gates=True), torch.float32, seed)
        off = torch.tensor(offsets)
        ge = g.clone().requires_grad_(True)
        gc = g.clone().requires_grad_(True)
        want, got = f(ge, off), compiled(gc, off)
        torch.testing.assert_close(got, want, rtol=0, atol=0)
        want.sum().backward()
        got.sum().backward()
        torch.testing.assert_close(gc.grad, ge.grad, rtol=0, atol=0)


def test_noncontiguous_input_is_copied():
    g = torch.randn(2, 30, 8)[:, :, ::2]
    torch.testing.assert_close(recops.chunk_local_cumsum(g, 8), peer(g, 8))


def test_empty():
    g = torch.zeros(1, 0, 3, requires_grad=True)
    out = recops.chunk_local_cumsum(g, seq_offsets=torch.tensor([0, 0, 0]))
    assert out.shape == (1, 0, 3) and out.dtype == torch.float32
    out.sum().backward()
    assert g.grad.shape == g.shape


def _bad(msg, g=None, **kw):
    g = torch.randn(1, 10, 3) if g is None else g
    with pytest.raises(RuntimeError, match=msg):
        recops.chunk_local_cumsum(g, **kw)


def test_bad_input():
    _bad(r"chunk_size=48 must be a power of two", chunk_size=48)
    _bad(r"chunk_size=0 must be a power of two", chunk_size=0)
    _bad(r"packed input \(seq_offsets\) requires B=1; got B=2", g=torch.randn(2, 10, 3),
         seq_offsets=torch.tensor([0, 10]))
    _bad(r"seq_offsets\[2\]=4 < seq_offsets\[1\]=6; offsets must be non-decreasing",
         seq_offsets=torch.tensor([0, 6, 4, 10]))
    _bad(r"seq_offsets\[2\]=9 but T \(g's dim 1\) is 10", seq_offsets=torch.tensor([0, 4, 9]))
    _bad(r"seq_offsets must be int32 or int64", seq_offsets=torch.tensor([0.0, 10.0]))
    _bad(r"g must be \[B, T, H\] or \[B, T, H, K\] of fp64, fp32, fp16 or bf16",
         g=torch.ones(1, 10, 3, dtype=torch.int32))
    _bad(r"g must be \[B, T, H\] or \[B, T, H, K\]", g=torch.randn(10, 3))
    _bad(r"out_dtype must be fp64, fp32, fp16 or bf16; got int32", out_dtype=torch.int32)
    _bad(r"scale=inf must be finite", scale=math.inf)
    with pytest.raises(RuntimeError, match=r"dout must be contiguous fp32\[1, 10, 3\]"):
        torch.ops.recops.chunk_local_cumsum_bwd(torch.randn(1, 10, 3).half(),
                                                torch.randn(1, 10, 3), 64, False, 1.0, None,
                                                None)


# ---- recops.compat.fla.chunk_local_cumsum and fla-core ------------------------------------------


def test_fla_dropin_matches_peer():
    g = torch.randn(1, 100, 2, 6, generator=torch.Generator().manual_seed(4)).bfloat16()
    cu = torch.tensor([0, 30, 30, 100])
    for kw in (dict(), dict(reverse=True, scale=RCP_LN2), dict(output_dtype=None),
               dict(cu_seqlens=cu, output_dtype=torch.bfloat16, chunk_indices=None)):
        got = fla_compat.chunk_local_cumsum(g, 32, **kw)
        want = peer(g, 32, **{k: v for k, v in kw.items() if k != "chunk_indices"})
        assert got.dtype == want.dtype
        torch.testing.assert_close(got.double(), want.double(), rtol=1.6e-2, atol=1e-5)
    assert fla_compat.chunk_local_cumsum(g).dtype == torch.float32  # chunk_size 64 by default
    with pytest.raises(DeprecationWarning, match="head_first has been removed"):  # as fla 0.6.0
        fla_compat.chunk_local_cumsum(g, 64, head_first=True)
    with pytest.raises(TypeError):
        fla_compat.chunk_local_cumsum(g, 64, unknown=1)
    with pytest.raises(RuntimeError, match="chunk_size=24 must be a power of two"):
        fla_compat.chunk_local_cumsum(g, 24)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    cumsum = pytest.importorskip("fla.ops.utils.cumsum", reason="fla-core is not installed")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_local_cumsum is a Triton kernel and needs a GPU")
    g, kw = make(CONFIGS["varlen_reverse_log2"], torch.bfloat16)
    cu = kw["seq_offsets"]
    want = cumsum.chunk_local_cumsum(g.cuda(), 64, reverse=True, scale=RCP_LN2,
                                     cu_seqlens=cu.cuda()).cpu()
    got = recops.chunk_local_cumsum(g, 64, True, RCP_LN2, cu)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
