"""solve_tril through PyTorch: a plain-torch peer (torch.linalg.solve_triangular of I + A per chunk
block, fp64), opcheck, torch.compile against eager, the fla drop-in (``recops.compat.fla``)
against torch.linalg.inv per block, the forward-only refusal, bad input. Collected by
`pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops
from recops.compat import fla as fla_compat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _gdn_pytest import sequences  # noqa: E402


def kkt(B, T, H, BT, K=64, cu_seqlens=None, seed=0, gates=True):
    """A as GDN's chunk_scaled_dot_kkt makes it from fla's test data: l2-normalised keys,
    beta = sigmoid(U(0,1)), G the chunk cumsum of logsigmoid(U(0,1)); garbage above the diagonal
    (the op must not read it)."""
    gen = torch.Generator().manual_seed(seed)
    k = F.normalize(torch.randn(B, T, H, K, generator=gen, dtype=torch.float64), dim=-1)
    beta = torch.sigmoid(torch.rand(B, T, H, generator=gen, dtype=torch.float64))
    g = F.logsigmoid(torch.rand(B, T, H, generator=gen, dtype=torch.float64)) if gates else \
        torch.zeros(B, T, H, dtype=torch.float64)
    A = torch.rand(B, T, H, BT, generator=gen, dtype=torch.float64)  # the garbage
    for b, bos, eos in sequences(B, T, cu_seqlens):
        for s in range(bos, eos, BT):
            e = min(s + BT, eos)
            kc = k[b, s:e].transpose(0, 1)                        # [H, L, K]
            G = g[b, s:e].cumsum(0).transpose(0, 1)               # [H, L]
            blk = (kc @ kc.transpose(1, 2)) * torch.exp(G[:, :, None] - G[:, None, :])
            blk = blk * beta[b, s:e].transpose(0, 1)[:, :, None]
            L = e - s
            lower = torch.tril(torch.ones(L, L, dtype=torch.bool), -1)
            blk = torch.where(lower, blk, A[b, s:e, :, :L].transpose(0, 1))
            A[b, s:e, :, :L] = blk.transpose(0, 1)
    return A.float()


def peer(A, cu_seqlens=None, inverse=False):
    """(I + strictly_lower(A_c))^-1 per chunk block in fp64, by torch.linalg.solve_triangular
    (or torch.linalg.inv with ``inverse``); zero above the diagonal."""
    B, T, H, BT = A.shape
    out = torch.zeros(A.shape, dtype=torch.float64)
    for b, bos, eos in sequences(B, T, cu_seqlens):
        for s in range(bos, eos, BT):
            e = min(s + BT, eos)
            L = e - s
            M = torch.tril(A[b, s:e, :, :L].double().transpose(0, 1), -1) + torch.eye(L)
            eye = torch.eye(L, dtype=torch.float64).expand(H, L, L)
            X = torch.linalg.inv(M) if inverse else \
                torch.linalg.solve_triangular(M, eye, upper=False, unitriangular=True)
            out[b, s:e, :, :L] = X.transpose(0, 1)
    return out


CASES = [  # (B, T, H, BT, lengths)
    (2, 65, 3, 64, None),
    (1, 300, 2, 64, None),
    (3, 63, 2, 32, None),
    (2, 77, 4, 16, None),
    (1, 0, 3, 64, [57, 2, 5]),
    (1, 0, 2, 64, [0, 122, 0, 107, 171, 0]),
    (1, 0, 2, 16, [33, 0, 1, 50]),
]


def _make(B, T, H, BT, lengths, seed=0):
    cu = None
    if lengths is not None:
        cu = torch.tensor([0] + list(torch.tensor(lengths).cumsum(0).tolist()), dtype=torch.int32)
        T = int(cu[-1])
    return kkt(B, T, H, BT, cu_seqlens=cu, seed=seed), cu


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("out_dtype", [None, torch.float32, torch.bfloat16, torch.float64])
def test_matches_peer(case, out_dtype):
    A, cu = _make(*case)
    got = recops.solve_tril(A, cu, out_dtype=out_dtype)
    assert got.dtype == (out_dtype or torch.float32)
    want = peer(A, cu).to(got.dtype)
    tol = 1.6e-2 if out_dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(got, want, atol=tol, rtol=tol)


def test_unscaled_random_a():
    """A ~ U(-1, 1) unscaled at BT = 64: inverse entries grow to ~1e4, fp32 still within ~1e-6
    relative L2 of the fp64 inverse."""
    A = torch.rand(1, 128, 2, 64, generator=torch.Generator().manual_seed(3)) * 2 - 1
    got = recops.solve_tril(A).double()
    want = peer(A)
    assert ((got - want).norm() / want.norm()).item() < 1e-5


def test_opcheck():
    A, cu = _make(1, 0, 2, 32, [40, 0, 9])
    torch.library.opcheck(torch.ops.recops.solve_tril.default, (A, cu, None, None))
    torch.library.opcheck(torch.ops.recops.solve_tril.default,
                          (_make(2, 33, 2, 16, None)[0], None, torch.bfloat16, 16))


def test_compile_matches_eager():
    def f(a, off):
        return recops.solve_tril(a, off) * 2.0

    compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
    for lengths in ([30, 70], [5, 0, 64, 1]):
        A, cu = _make(1, 0, 3, 64, lengths, seed=len(lengths))
        torch.testing.assert_close(compiled(A, cu), f(A, cu), atol=0, rtol=0)


def test_empty():
    for shape in [(2, 0, 3, 64), (1, 5, 0, 16)]:
        assert recops.solve_tril(torch.zeros(shape)).shape == shape
    cu = torch.tensor([0, 0, 0])
    assert recops.solve_tril(torch.zeros(1, 0, 2, 32), cu).shape == (1, 0, 2, 32)


def test_forward_only():
    A = _make(1, 20, 2, 16, None)[0].requires_grad_()
    with pytest.raises(RuntimeError, match="solve_tril"):
        recops.solve_tril(A)


def test_bad_input():
    with pytest.raises(RuntimeError, match="must be 16, 32 or 64; got 48"):
        recops.solve_tril(torch.zeros(1, 4, 2, 48))
    with pytest.raises(RuntimeError, match="chunk_size=64 must equal A's last dim 32"):
        recops.solve_tril(torch.zeros(1, 4, 2, 32), chunk_size=64)
    with pytest.raises(RuntimeError, match="requires B=1"):
        recops.solve_tril(torch.zeros(2, 4, 2, 16), torch.tensor([0, 4]))


@pytest.mark.parametrize("output_dtype", [torch.float, None, torch.bfloat16])
def test_fla_dropin_matches_formula(output_dtype):
    A, cu = _make(1, 0, 4, 64, [100, 0, 28, 65])
    got = fla_compat.solve_tril(A, cu_seqlens=cu, output_dtype=output_dtype)
    assert got.dtype == (output_dtype or A.dtype)
    want = peer(A, cu, inverse=True).to(got.dtype)
    tol = 1.6e-2 if output_dtype == torch.bfloat16 else 1e-5
    torch.testing.assert_close(got, want, atol=tol, rtol=tol)
    got2 = fla_compat.solve_tril(A[:, :100], output_dtype=output_dtype)  # dense, B = 1
    torch.testing.assert_close(got2, peer(A[:, :100], inverse=True).to(got2.dtype), atol=tol,
                               rtol=tol)


@pytest.mark.parametrize("bt", [16, 32, 64])
def test_against_fla_core(bt):
    """fla-core's Triton kernel on the GPU against recops on the CPU (fla has no CPU path)."""
    mod = pytest.importorskip("fla.ops.utils.solve_tril", reason="fla-core is not installed")
    if not torch.cuda.is_available():
        pytest.skip("fla-core's solve_tril is a Triton kernel and needs a GPU")
    A, cu = _make(1, 0, 4, bt, [100, 0, 28, 65])
    want = mod.solve_tril(A.cuda(), cu_seqlens=cu.cuda()).cpu()
    got = recops.solve_tril(A, cu)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
