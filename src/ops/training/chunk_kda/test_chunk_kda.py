"""chunk_kda through PyTorch: an independent plain-torch fp64 peer (the token-by-token KDA
recurrence of training_ops.md §4.5 with the per-channel decay, GVA by repeat_interleave, sequences from cu_seqlens, F.normalize
-like l2norm with eps added to the sum of squares); fla's relative-RMS gate on bf16 (§5: 0.005 for
o and ht); the gradients of every input against torch autograd of the peer (recops' backward
op through the Autograd kernel, also via the fla drop-in); opcheck; torch.compile against eager;
bad input. The peer, the input builder and the runs against the peer are
common/_gdn_composed_pytest.py's (shared by chunk_gated_delta_rule and chunk_kda). The fla
drop-in is tested in tests/python/test_compat_fla.py. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch

import recops

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
import _gdn_composed_pytest as composed  # noqa: E402
from _gdn_composed_pytest import TOL, close, peer  # noqa: E402


def make(*args, **kw):
    """composed.make with g [B, T, HV, K] (per channel)."""
    return composed.make(*args, per_channel=True, **kw)


CONFIGS = {
    "t65_bt64_gva2": dict(B=2, T=65, H=2, K=64, gva=2),
    "t63_bt32": dict(B=1, T=63, H=3, K=37, V=19, chunk_size=32),
    "t150_bt32_no_h0": dict(B=1, T=150, H=1, K=32, chunk_size=32, h0=False),
    "l2norm_gva2": dict(B=2, T=80, H=1, K=16, gva=2, raw_qk=True, l2norm=True),
    "varlen_empty_tail": dict(B=1, T=0, H=2, K=32, gva=2, offsets=[0, 0, 57, 59, 59, 64, 64],
                              chunk_size=32),
    "varlen_spec": dict(B=1, T=0, H=1, K=64, offsets=[0, 122, 229, 400, 1000], chunk_size=32),
    "strong_decay": dict(B=1, T=100, H=1, K=32, gate_s=0.1),
    "t1": dict(B=3, T=1, H=2, K=8),
    "t0": dict(B=2, T=0, H=2, K=8),
}


def run(cfg, dtype, scale=None, seed=0):
    return composed.run(recops.chunk_kda, make, cfg, dtype, scale, seed)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_peer(name, dtype):
    for scale in (None, 0.7):
        o, ht, want_o, want_ht = run(CONFIGS[name], dtype, scale)
        assert o.dtype == dtype and o.shape == want_o.shape
        assert ht.dtype == torch.float32 and ht.shape == want_ht.shape
        close(o, want_o, TOL[dtype])
        close(ht, want_ht, TOL[dtype])


@pytest.mark.parametrize("name", ["t65_bt64_gva2", "varlen_spec", "l2norm_gva2"])
def test_fla_relative_rms_gate_bf16(name):
    """§5: bf16 inputs, ||out - gold|| / ||gold|| <= 0.005 for o and final_state."""
    o, ht, want_o, want_ht = run(CONFIGS[name], torch.bfloat16, seed=1)
    for got, want in ((o, want_o), (ht, want_ht)):
        err = (got.double() - want).norm() / want.norm()
        assert err <= 0.005 or (got.double() - want).abs().max() <= 1e-6, err


def test_no_final_state_is_empty():
    q, k, v, g, beta, h0, _ = make(1, 20, 1, 8, V=4)
    o, ht = recops.chunk_kda(q, k, v, g, beta, initial_state=h0)
    assert ht.shape == (0,) and o.shape == v.shape


def test_opcheck():
    q, k, v, g, beta, h0, cu = make(1, 0, 2, 16, V=8, gva=2, offsets=[0, 0, 20, 23])
    torch.library.opcheck(torch.ops.recops.chunk_kda.default,
                          (q, k, v, g, beta, None, h0, True, cu, False, 32))
    q, k, v, g, beta, _, _ = make(2, 30, 1, 8, V=4, dtype=torch.bfloat16, h0=False)
    torch.library.opcheck(torch.ops.recops.chunk_kda.default,
                          (q, k, v, g, beta, 0.5, None, False, None, True, 32))


def test_compile_matches_eager():
    def f(q, k, v, g, beta, h0, offsets):
        o, ht = recops.chunk_kda(q, k, v, g, beta, initial_state=h0,
                                              output_final_state=True, seq_offsets=offsets,
                                              chunk_size=32)
        return o * 2.0 + 1.0, ht.sum()

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        args = make(1, 0, 2, 16, V=8, gva=2, offsets=offsets, seed=seed)
        for a, b in zip(compiled(*args), f(*args)):
            torch.testing.assert_close(a, b, rtol=0, atol=0)


GRAD_CONFIGS = {
    "dense_gva2": dict(B=2, T=70, H=1, K=16, V=8, gva=2, chunk_size=32),
    "bt64_no_h0": dict(B=1, T=80, H=2, K=8, V=4, chunk_size=64, h0=False),
    "l2norm": dict(B=1, T=40, H=1, K=8, V=4, gva=2, raw_qk=True, l2norm=True, chunk_size=32),
    "varlen_empty": dict(B=1, T=0, H=1, K=8, V=4, gva=2, offsets=[0, 0, 37, 40, 40, 58],
                         chunk_size=32),
    "no_final_state": dict(B=2, T=33, H=1, K=8, V=4, chunk_size=32, ht=False),
}


@pytest.mark.parametrize("name", list(GRAD_CONFIGS))
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_backward_matches_peer_autograd(name, dtype):
    """recops' gradients (chunk_kda_bwd through the Autograd kernel) against torch autograd of the
    plain fp64 recurrence, for every differentiable input (composed.backward_matches_peer_autograd)."""
    composed.backward_matches_peer_autograd(recops.chunk_kda, make, GRAD_CONFIGS[name], dtype)


def test_backward_through_fla_dropin():
    from recops.compat import fla
    q, k, v, g, beta, h0, cu = make(1, 0, 1, 8, V=4, gva=2, offsets=[0, 20, 20, 45],
                                    dtype=torch.float64, seed=5)
    ins = [x.detach().requires_grad_(True) for x in (q, k, v, g.double(), beta, h0.double())]
    o, ht = fla.chunk_kda(*ins[:5], initial_state=ins[5], output_final_state=True,
                          cu_seqlens=cu, chunk_size=32)
    ref = [x.detach().requires_grad_(True) for x in ins]
    wo, wht = peer(*ref[:5], None, ref[5], cu)
    got = torch.autograd.grad(o.sum() + ht.sum(), ins)
    want = torch.autograd.grad(wo.sum() + wht.sum(), ref)
    for a, b in zip(got, want):
        close(a, b, 5e-5)


def test_noncontiguous_inputs_are_copied():
    q, k, v, g, beta, h0, _ = make(1, 40, 2, 16, V=8)
    qn = torch.stack([q, q], -1)[..., 0]
    assert not qn.is_contiguous()
    got, _ = recops.chunk_kda(qn, k, v, g, beta, chunk_size=32)
    want, _ = peer(q, k, v, g, beta)
    close(got, want, TOL[torch.float32])


def test_bad_input_names_the_argument():
    q, k, v, g, beta, h0, _ = make(1, 10, 2, 8, V=4)
    with pytest.raises(RuntimeError, match="chunk_size=16 must be 32 or 64"):
        recops.chunk_kda(q, k, v, g, beta, chunk_size=16)
    with pytest.raises(RuntimeError, match="v's HV=3 must be a multiple of q's H=2"):
        recops.chunk_kda(q, k, torch.randn(1, 10, 3, 4), torch.randn(1, 10, 3, 8),
                         torch.rand(1, 10, 3))
    with pytest.raises(RuntimeError, match=r"g must be \[B, T, HV, K\]"):
        recops.chunk_kda(q, k, v, g[..., 0], beta)
    with pytest.raises(RuntimeError, match="k must have q's dtype"):
        recops.chunk_kda(q, k.bfloat16(), v, g, beta)
    with pytest.raises(RuntimeError, match=r"initial_state must be \[N, HV, K, V\]"):
        recops.chunk_kda(q, k, v, g, beta, initial_state=torch.zeros(2, 2, 8, 4))
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        recops.chunk_kda(torch.randn(2, 10, 2, 8), torch.randn(2, 10, 2, 8),
                         torch.randn(2, 10, 2, 4), torch.randn(2, 10, 2, 8),
                         torch.rand(2, 10, 2), seq_offsets=torch.tensor([0, 10]))


def test_compile_backward_matches_eager():
    """The backward under torch.compile(dynamic=True): chunk_kda_bwd's Meta kernel for
    symbolic sizes (training/common/gdn_binding.h), gradients equal to eager."""
    def f(q, k, v, g, beta, h0, offsets):
        o, ht = recops.chunk_kda(q, k, v, g, beta, initial_state=h0,
                                 output_final_state=True, seq_offsets=offsets,
                                 chunk_size=32)
        return (o * o).sum() + ht.sum()

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        q, k, v, g, beta, h0, cu = make(1, 0, 2, 16, V=8, gva=2, offsets=offsets, seed=seed)
        ins = [x.detach().requires_grad_(True) for x in (q, k, v, g, beta, h0)]
        got = torch.autograd.grad(compiled(*ins, cu), ins)
        ref = [x.detach().requires_grad_(True) for x in ins]
        want = torch.autograd.grad(f(*ref, cu), ref)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
