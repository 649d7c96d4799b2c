"""chunk_scaled_dot_kkt through PyTorch: a plain-torch peer of the formula (per chunk,
beta * (k k^T) * exp(G_i - G_j), strictly lower triangular, GVA by repeat_interleave, chunks
restarting at each cu_seqlens start) in fp64; opcheck; torch.compile against eager; the
forward-only refusal; the fla drop-in (``recops.compat.fla.chunk_scaled_dot_kkt_fwd``), and
fla-core itself when it is importable with a GPU (its kernel is Triton: no CPU path); bad input.
Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import gate_cumsum  # noqa: E402

# A is fp32 (fp64 k: one rounding of an fp64 result); the CPU dots are fp32 otherwise: errors
# relative to the largest |A|.
TOL = {torch.float64: 1.2e-7, torch.float32: 2e-6, torch.float16: 2e-6, torch.bfloat16: 2e-6}


def peer(k, beta, g=None, cu_seqlens=None, chunk_size=64, gate_log2=False):
    """The formula in plain torch, fp64: per chunk of each sequence, A = tril(beta[:, None] *
    (K K^T) * exp(G[:, None] - G[None, :]), -1), padded to chunk_size columns."""
    B, T, H, K = k.shape
    HV = beta.shape[2]
    kv = k.double().repeat_interleave(HV // H, dim=2) if H else k.double().new_zeros(B, T, HV, K)
    A = torch.zeros(B, T, HV, chunk_size, dtype=torch.float64)
    if cu_seqlens is not None:
        b = cu_seqlens.tolist()
        seqs = [(0, b[n], b[n + 1]) for n in range(len(b) - 1)]
    else:
        seqs = [(i, 0, T) for i in range(B)]
    for bi, bos, eos in seqs:
        for s in range(bos, eos, chunk_size):
            e = min(s + chunk_size, eos)
            kc = kv[bi, s:e].transpose(0, 1)                        # [HV, L, K]
            a = kc @ kc.transpose(1, 2)                             # [HV, L, L]
            if g is not None:
                gc = g[bi, s:e].double().transpose(0, 1)            # [HV, L]
                d = gc[:, :, None] - gc[:, None, :]
                # only the strictly lower triangle (d <= 0 for decays) is kept
                d = torch.where(torch.ones_like(d, dtype=torch.bool).tril(-1), d, 0)
                a = a * (torch.exp2(d) if gate_log2 else torch.exp(d))
            a = a * beta[bi, s:e].double().transpose(0, 1)[:, :, None]
            a = a.tril(-1)
            A[bi, s:e, :, : e - s] = a.transpose(0, 1)
    return A


def make(B, T, H, K, gva=1, dtype=torch.float32, gates=True, offsets=None, chunk_size=64,
         seed=0, log2=False):
    gen = torch.Generator().manual_seed(seed)
    if offsets is not None:
        T = offsets[-1]
    k = torch.nn.functional.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64),
                                      dim=-1).to(dtype)
    beta = torch.sigmoid(torch.rand(B, T, H * gva, generator=gen, dtype=torch.float64)).to(dtype)
    cu = torch.tensor(offsets) if offsets is not None else None
    g = None
    if gates:
        g = gate_cumsum(gen, B, T, H * gva, chunk_size, cu, log2)
    return k, beta, g, cu


CONFIGS = {
    "t65_bt64": dict(B=2, T=65, H=2, K=64),
    "t63_bt32_gva2": dict(B=1, T=63, H=2, K=37, gva=2, chunk_size=32),
    "t300_bt16_log2": dict(B=1, T=300, H=1, K=128, chunk_size=16, log2=True),
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
    k, beta, g, cu = make(dtype=dtype, **cfg)
    got = recops.chunk_scaled_dot_kkt(k, beta, g, cu, bt, log2)
    want = peer(k, beta, g, cu, bt, log2)
    assert got.dtype == torch.float32 and got.shape == want.shape
    scale = max(1.0, want.abs().max().item()) if want.numel() else 1.0
    torch.testing.assert_close(got.double(), want, rtol=0, atol=TOL[dtype] * scale)
    if want.numel():
        assert (got[want == 0] == 0).all()  # the upper triangle and tail columns are exact zeros


def test_opcheck():
    k, beta, g, cu = make(**CONFIGS["varlen_empty"])
    torch.library.opcheck(torch.ops.recops.chunk_scaled_dot_kkt.default, (k, beta, g, cu, 16, False))
    k, beta, g, _ = make(**CONFIGS["t65_bt64"], dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.recops.chunk_scaled_dot_kkt.default,
                          (k, beta, None, None, 64, True))


def test_compile_matches_eager():
    def f(k, beta, g, offsets):
        A = recops.chunk_scaled_dot_kkt(k, beta, g, offsets, chunk_size=16)
        return A * 2.0 + 1.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for seed, offsets in enumerate([[0, 20, 20, 53], [0, 7, 40, 41, 90]]):
        k, beta, g, cu = make(1, 0, 2, 16, gva=2, offsets=offsets, chunk_size=16, seed=seed)
        torch.testing.assert_close(compiled(k, beta, g, cu), f(k, beta, g, cu), rtol=0, atol=0)


def test_forward_only():
    k, beta, g, _ = make(1, 10, 1, 8)
    with pytest.raises(RuntimeError, match="k"):
        recops.chunk_scaled_dot_kkt(k.requires_grad_(True), beta, g)
    with torch.no_grad():  # as inside fla's GDN forward
        recops.chunk_scaled_dot_kkt(k, beta, g)


def test_noncontiguous_inputs_are_copied():
    k = torch.randn(1, 40, 2, 32)[:, :, :, ::2]
    beta = torch.rand(1, 40, 8)[:, :, ::2]
    g = -torch.rand(1, 40, 4).cumsum(1)
    got = recops.chunk_scaled_dot_kkt(k, beta, g, chunk_size=32)
    torch.testing.assert_close(got.double(), peer(k, beta, g, None, 32), rtol=0, atol=1e-5)


def test_bad_input_names_the_argument():
    k, beta, g, _ = make(1, 10, 2, 8)
    with pytest.raises(RuntimeError, match="chunk_size=128 must be 16, 32 or 64"):
        recops.chunk_scaled_dot_kkt(k, beta, g, chunk_size=128)
    with pytest.raises(RuntimeError, match="beta's HV=3 must be a multiple of k's H=2"):
        recops.chunk_scaled_dot_kkt(k, torch.rand(1, 10, 3))
    with pytest.raises(RuntimeError, match="packed input \\(seq_offsets\\) requires B=1"):
        recops.chunk_scaled_dot_kkt(torch.randn(2, 10, 2, 8), torch.rand(2, 10, 2), None,
                                    torch.tensor([0, 10]))


# ---- recops.compat.fla.chunk_scaled_dot_kkt_fwd and fla-core -------------------------------------


def test_fla_dropin_matches_peer():
    # fla's g is the log2-unit chunk-local cumsum (its kernel applies exp2).
    k, beta, g, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    got = fla_compat.chunk_scaled_dot_kkt_fwd(k, g=g, beta=beta, cu_seqlens=cu)
    torch.testing.assert_close(got.double(), peer(k, beta, g, cu, 64, True), rtol=0, atol=2e-6)
    got16 = fla_compat.chunk_scaled_dot_kkt_fwd(k, g, beta, cu, 64, torch.bfloat16, None)
    assert got16.dtype == torch.bfloat16
    torch.testing.assert_close(got16, got.bfloat16())
    k, beta, _, _ = make(2, 50, 2, 16, gva=2, gates=False)
    got = fla_compat.chunk_scaled_dot_kkt_fwd(k, beta=beta, chunk_size=32)
    torch.testing.assert_close(got.double(), peer(k, beta, None, None, 32), rtol=0, atol=2e-6)
    with pytest.raises(ValueError, match="beta"):
        fla_compat.chunk_scaled_dot_kkt_fwd(k)


def test_against_fla_core():
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    try:
        from fla.ops.common.chunk_scaled_dot_kkt import chunk_scaled_dot_kkt_fwd
    except Exception as e:  # not installed, or no Triton
        pytest.skip(f"fla-core's chunk_scaled_dot_kkt is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's chunk_scaled_dot_kkt_fwd is a Triton kernel and needs a GPU")
    k, beta, g, cu = make(**CONFIGS["varlen_spec"], dtype=torch.bfloat16)
    want = chunk_scaled_dot_kkt_fwd(k.cuda(), g=g.cuda(), beta=beta.cuda(),
                                    cu_seqlens=cu.cuda()).cpu()
    got = recops.chunk_scaled_dot_kkt(k, beta, g, cu, 64, True)
    torch.testing.assert_close(got, want, rtol=1e-3, atol=1e-3)  # fla's dot may run in tf32/bf16
