"""chunk_kda_bwd_dav through PyTorch: torch autograd of an independent fp64 composition of the
intra-chunk output term (per chunk o_i = sum_{j <= i} scale * Ahat_ij v_new_j, the loss <do, o>),
whose gradients in Ahat and v_new are the op's dAqk and dv; varlen with zero-length and sub-chunk
sequences, every dtype; opcheck; the forward-only refusal; empty inputs; bad input; the fla
drop-in (``recops.compat.fla.chunk_kda_bwd_dAv``) and fla-core itself when it imports with a GPU
(Triton only). Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import chunks  # noqa: E402


def make(B, T, HV, V, dtype=torch.float32, offsets=None, chunk_size=64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]

    def rnd(*s):
        return torch.randn(*s, generator=gen, dtype=torch.float64)

    cu = torch.tensor(offsets) if offsets is not None else None
    t = dict(v_new=rnd(B, T, HV, V).to(dtype), do=rnd(B, T, HV, V).to(dtype),
             Aqk=(0.3 * rnd(B, T, HV, chunk_size)).to(dtype))
    return t, cu


def autograd_peer(v_new, do, Aqk, scale, cu_seqlens, chunk_size):
    """(dAqk, dv) by torch autograd: Ahat = Aqk / scale (lower part) and v_new are the leaves of
    the loss sum_chunks <do, tril(scale * Ahat) v_new>."""
    B, T, HV, V = v_new.shape
    bt = chunk_size
    vl = v_new.detach().double().requires_grad_()
    loss = torch.zeros((), dtype=torch.float64)
    leaves = []
    for b, s, e, _ in chunks(B, T, cu_seqlens, bt):
        R = e - s
        Ahat = (Aqk[b, s:e, :, :R].double().transpose(0, 1) / scale).tril().requires_grad_()
        leaves.append((b, s, e, Ahat))
        o = (scale * Ahat.tril()) @ vl[b, s:e].transpose(0, 1)           # [HV, R, V]
        loss = loss + (do[b, s:e].double().transpose(0, 1) * o).sum()
    dA = torch.zeros(B, T, HV, bt, dtype=torch.float64)
    if not loss.requires_grad:
        return dA, torch.zeros_like(vl)
    grads = torch.autograd.grad(loss, [vl] + [a for *_, a in leaves], allow_unused=True)
    for (b, s, e, _), d in zip(leaves, grads[1:]):
        dA[b, s:e, :, :e - s] = d.tril().transpose(0, 1)
    return dA, grads[0]


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, HV=2, V=8),
    "t63_bt32": dict(B=1, T=63, HV=3, V=7, chunk_size=32),
    "t100_bt16": dict(B=1, T=100, HV=1, V=8, chunk_size=16),
    "varlen_empty": dict(B=1, T=0, HV=2, V=8, offsets=[0, 0, 57, 59, 59, 64, 64], chunk_size=16),
    "varlen_spec": dict(B=1, T=0, HV=1, V=8, offsets=[0, 122, 229, 400]),
    "t1": dict(B=3, T=1, HV=2, V=4),
    "t0": dict(B=2, T=0, HV=2, V=4),
}


def call(t, cu, bt, scale=None):
    return recops.chunk_kda_bwd_dav(t["v_new"], t["do"], t["Aqk"], scale, cu, bt)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_autograd(name, dtype):
    cfg = dict(CONFIGS[name])
    bt = cfg.get("chunk_size", 64)
    t, cu = make(dtype=dtype, **cfg)
    for scale in (None, 0.7):
        dA, dv = call(t, cu, bt, scale)
        want_dA, want_dv = autograd_peer(**t, scale=1.0 if scale is None else scale,
                                         cu_seqlens=cu, chunk_size=bt)
        assert dA.dtype == torch.float32 and tuple(dA.shape) == tuple(t["Aqk"].shape)
        assert dv.dtype == dtype and dv.shape == t["do"].shape
        torch.testing.assert_close(dA.double(), want_dA, rtol=2e-6, atol=2e-6)
        tol = 2 ** -7 if dtype == torch.bfloat16 else 2e-6
        torch.testing.assert_close(dv.double(), want_dv, rtol=tol, atol=tol)


def test_upper_part_and_tail_columns_are_not_read():
    t, cu = make(**CONFIGS["t65_bt64"])
    want = call(t, cu, 64, 0.5)
    A = t["Aqk"].clone()
    A += torch.triu(torch.full((64, 64), 7.0), 1)[:, None, :].repeat(2, 1, 1)[:65]
    A[:, 64:, :, 1:] = 5.0  # the 1-row tail chunk's columns past its row
    got = call(dict(t, Aqk=A), cu, 64, 0.5)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_opcheck():
    t, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_kda_bwd_dav.default,
                          (t["v_new"], t["do"], t["Aqk"], None, cu, 16))
    t, _ = make(**CONFIGS["t63_bt32"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_kda_bwd_dav.default,
                          (t["v_new"], t["do"], t["Aqk"], 0.5, None, 32))


def test_forward_only():
    t, _ = make(1, 10, 1, 4)
    t["do"].requires_grad_(True)
    with pytest.raises(RuntimeError, match="do"):
        call(t, None, 64)
    with torch.no_grad():  # as inside fla's KDA backward
        call(t, None, 64)


def test_empty_inputs():
    for cfg in (dict(B=2, T=0, HV=2, V=8), dict(B=0, T=5, HV=1, V=8),
                dict(B=1, T=0, HV=1, V=8, offsets=[0, 0, 0])):
        t, cu = make(**cfg)
        assert [x.numel() for x in call(t, cu, 64)] == [0, 0]


def test_noncontiguous_inputs_are_copied():
    t, _ = make(1, 40, 2, 5, chunk_size=32)
    want = call(t, None, 32)
    t["do"] = torch.stack([t["do"], t["do"]], -1)[..., 0]
    got = call(t, None, 32)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_bad_input_names_the_argument():
    t, _ = make(1, 10, 2, 4)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        call(t, None, 128)
    with pytest.raises(RuntimeError, match=r"Aqk must be \[B, T, HV, BT\] = \[1, 10, 2, 32\]"):
        call(t, None, 32)
    with pytest.raises(RuntimeError, match=r"do must be \[B, T, HV, V\]"):
        call(dict(t, do=t["do"][..., :3].contiguous()), None, 64)
    with pytest.raises(RuntimeError, match="scale=inf must be finite"):
        call(t, None, 64, float("inf"))


# ---- recops.compat.fla.chunk_kda_bwd_dAv and fla-core -------------------------------------------


def test_fla_dropin_matches_the_op():
    t, cu = make(**CONFIGS["varlen_empty"])
    K = 16
    k = torch.randn(1, t["do"].shape[1], 1, K)
    got = fla_compat.chunk_kda_bwd_dAv(None, k, t["v_new"], t["do"], t["Aqk"], cu_seqlens=cu,
                                       chunk_size=16)
    want = call(t, cu, 16, K ** -0.5)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(ValueError, match="A"):
        fla_compat.chunk_kda_bwd_dAv(None, k, t["v_new"], t["do"])


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.kda.chunk_bwd import chunk_kda_bwd_dAv
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_kda_bwd_dAv is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_kda_bwd_dAv is a Triton kernel and needs a GPU")
    t, cu = make(**dict(CONFIGS["varlen_spec"], V=64), dtype=torch.bfloat16)
    k = torch.randn(1, t["do"].shape[1], 1, 64, dtype=torch.bfloat16)
    want = chunk_kda_bwd_dAv(k.cuda(), k.cuda(), t["v_new"].cuda(), t["do"].cuda(),
                             t["Aqk"].cuda(), scale=0.125, cu_seqlens=cu.cuda(), chunk_size=64)
    got = fla_compat.chunk_kda_bwd_dAv(k, k, t["v_new"], t["do"], t["Aqk"], scale=0.125,
                                       cu_seqlens=cu)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b.cpu().to(a.dtype), rtol=3e-2, atol=3e-2)
