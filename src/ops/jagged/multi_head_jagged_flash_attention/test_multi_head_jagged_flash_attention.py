"""multi_head_jagged_flash_attention through PyTorch (jagged_ops.md §2.10): the padded torch
reference (pad, -inf on padded keys, softmax / max_L, unpad) on random data in fp64, the _fwd
statistics, the _bwd op against autograd of that reference, opcheck, gradcheck, the SLL adapter
and the refusals. Collected by `pytest src/ops`."""

import pytest
import torch

import recops
from recops.compat import sll
from recops.testing import assert_accurate

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
OPS = torch.ops.recops


def offsets_of(lengths, device="cpu", dtype=torch.int64):
    off = torch.zeros(len(lengths) + 1, dtype=dtype)
    off[1:] = torch.tensor(lengths, dtype=dtype).cumsum(0)
    return off.to(device)


def padded_reference(q, k, v, lengths, max_l, dt=torch.float64):
    """out [H, total_L, D] and lse [H, total_L] from a padded torch composition in `dt` (fp64:
    the golden; fp32: the plain same-precision run of the `double` accuracy standard)."""
    H, total, D = q.shape
    out = torch.zeros(H, total, D, dtype=dt, device=q.device)
    lse = torch.full((H, total), float("-inf"), dtype=dt, device=q.device)
    if max_l == 0 or total == 0:
        return out, lse
    B = len(lengths)
    qp = torch.zeros(H, B, max_l, D, dtype=dt, device=q.device)
    kp, vp = qp.clone(), qp.clone()
    o = 0
    for b, L in enumerate(lengths):
        n = min(L, max_l)
        qp[:, b, :n] = q[:, o:o + n].to(dt)
        kp[:, b, :n] = k[:, o:o + n].to(dt)
        vp[:, b, :n] = v[:, o:o + n].to(dt)
        o += L
    s = qp @ kp.transpose(-1, -2)  # [H, B, max_l, max_l]
    n_b = torch.tensor([min(L, max_l) for L in lengths], device=q.device)
    key_ok = torch.arange(max_l, device=q.device)[None, :] < n_b[:, None]  # [B, max_l]
    s = s.masked_fill(~key_ok[None, :, None, :], float("-inf"))
    ls = torch.logsumexp(s, -1)
    p = torch.softmax(s, -1) / max_l
    op = p.nan_to_num(0.0) @ vp
    o = 0
    for b, L in enumerate(lengths):
        n = min(L, max_l)
        out[:, o:o + n] = op[:, b, :n]
        lse[:, o:o + n] = ls[:, b, :n]
        o += L
    return out, lse


def make(lengths, H, D, dtype=torch.float64, device="cpu", seed=0):
    g = torch.Generator().manual_seed(seed)
    total = sum(lengths)
    q, k, v = (torch.rand(H, total, D, generator=g, dtype=torch.float64) * 2 - 1 for _ in range(3))
    return [t.to(device=device, dtype=dtype) for t in (q, k, v)]


CASES = [
    ([5, 0, 3, 17], 2, 16, 16),   # mixed, one truncated
    ([40, 7, 33, 0, 65], 4, 64, 32),  # L_b > max_L
    ([9, 4], 1, 80, 100),  # max_L above every length
    ([5, 0, 3], 2, 8, 0),  # max_L = 0: zeros
    ([5, 0, 3, 1], 2, 8, 1),  # max_L = 1
    ([], 2, 8, 4),  # B = 0
    ([3, 11, 1], 8, 256, 12),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("lengths,H,D,max_l", CASES)
def test_matches_padded_reference(device, lengths, H, D, max_l):
    q, k, v = make(lengths, H, D, torch.float32, device)
    off = offsets_of(lengths, device)
    gold, gold_lse = padded_reference(q, k, v, lengths, max_l)
    out, lse = OPS.multi_head_jagged_flash_attention_fwd(q, k, v, off, max_l)
    torch.testing.assert_close(out.double(), gold, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(lse.double(), gold_lse, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(recops.multi_head_jagged_flash_attention(q, k, v, off, max_l), out)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype,tol", [(torch.float16, 4e-3), (torch.bfloat16, 3e-2)])
def test_low_precision(device, dtype, tol):
    lengths, H, D, max_l = [12, 30, 0, 7], 2, 32, 20
    q, k, v = make(lengths, H, D, dtype, device, seed=3)
    off = offsets_of(lengths, device, torch.int32)
    gold, _ = padded_reference(q, k, v, lengths, max_l)
    out = recops.multi_head_jagged_flash_attention(q, k, v, off, max_l)
    assert out.dtype == dtype
    torch.testing.assert_close(out.double() * max_l, gold * max_l, atol=tol, rtol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_very_negative_rows_are_finite(device):
    lengths, H, D, max_l = [6, 9], 2, 16, 8
    q, k, v = make(lengths, H, D, torch.float32, device, seed=4)
    k[..., 0] = 1.0
    q[:, ::2, 0] = -300.0  # every valid score of these rows is below -100
    off = offsets_of(lengths, device)
    out = recops.multi_head_jagged_flash_attention(q, k, v, off, max_l)
    assert torch.isfinite(out).all()
    gold, _ = padded_reference(q, k, v, lengths, max_l)
    torch.testing.assert_close(out.double(), gold, atol=2e-5, rtol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("lengths,H,D,max_l", CASES[:5])
def test_backward_matches_autograd_of_reference(device, lengths, H, D, max_l):
    # The CUDA kernels take fp32/fp16/bf16: there the gradients of fp32 inputs are judged by the
    # accuracy standard's `double` rule against the fp64 golden, with autograd of the same
    # composition run in fp32 as the plain computation. The CPU runs fp64 (near-exact match).
    dtype = torch.float64 if device == "cpu" else torch.float32
    q, k, v = make(lengths, H, D, dtype, device, seed=5)
    off = offsets_of(lengths, device)
    grad = torch.rand(H, sum(lengths), D, generator=torch.Generator().manual_seed(9),
                      dtype=torch.float64) - 0.5

    def autograd_of_reference(dt):
        qr, kr, vr = (t.to(dt).requires_grad_() for t in (q, k, v))
        gold, _ = padded_reference(qr, kr, vr, lengths, max_l, dt)
        if not gold.requires_grad:  # max_L = 0: the reference is constant zeros
            return [torch.zeros_like(qr) for _ in range(3)]
        w = torch.autograd.grad(gold, (qr, kr, vr), grad.to(device, dt), allow_unused=True)
        return [torch.zeros_like(qr) if x is None else x for x in w]

    want = autograd_of_reference(torch.float64)
    qa, ka, va = (t.clone().requires_grad_() for t in (q, k, v))
    out = recops.multi_head_jagged_flash_attention(qa, ka, va, off, max_l)
    got = torch.autograd.grad(out, (qa, ka, va), grad.to(device, dtype))
    if dtype == torch.float64:
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w, atol=1e-10, rtol=1e-8)
        return
    plain = autograd_of_reference(torch.float32)
    for name, g, w, p in zip(("dq", "dk", "dv"), got, want, plain):
        assert_accurate(g, w, torch.float32, plain=p, name=name)


def test_gradcheck():
    lengths, max_l = [3, 0, 5, 2], 4
    q, k, v = (t.requires_grad_() for t in make(lengths, 2, 3, seed=6))
    off = offsets_of(lengths)
    assert torch.autograd.gradcheck(
        lambda a, b, c: recops.multi_head_jagged_flash_attention(a, b, c, off, max_l), (q, k, v))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    lengths, max_l = [4, 0, 6], 5
    q, k, v = make(lengths, 2, 8, torch.float32, device, seed=7)
    off = offsets_of(lengths, device)
    args = (q.requires_grad_(), k.requires_grad_(), v.requires_grad_(), off, max_l)
    torch.library.opcheck(OPS.multi_head_jagged_flash_attention.default, args)
    qd, kd, vd = (t.detach() for t in (q, k, v))
    torch.library.opcheck(OPS.multi_head_jagged_flash_attention_fwd.default,
                          (qd, kd, vd, off, max_l))
    out, lse = OPS.multi_head_jagged_flash_attention_fwd(qd, kd, vd, off, max_l)
    torch.library.opcheck(OPS.multi_head_jagged_flash_attention_bwd.default,
                          (torch.randn_like(out), qd, kd, vd, off, out, lse, max_l))


@pytest.mark.parametrize("device", DEVICES)
def test_noncontiguous_equals_contiguous(device):
    lengths, max_l = [7, 3, 12], 10
    q, k, v = make(lengths, 3, 24, torch.float32, device, seed=8)
    off = offsets_of(lengths, device)
    want = recops.multi_head_jagged_flash_attention(q, k, v, off, max_l)
    # [total_L, H, D] storage viewed head-major: row and head strides both non-dense
    qt, kt, vt = (t.transpose(0, 1).contiguous().transpose(0, 1) for t in (q, k, v))
    assert not qt.is_contiguous()
    torch.testing.assert_close(recops.multi_head_jagged_flash_attention(qt, kt, vt, off, max_l),
                               want)


@pytest.mark.parametrize("device", DEVICES)
def test_sll_adapter(device):
    lengths, max_l = [7, 0, 19], 16
    q, k, v = make(lengths, 4, 32, torch.float32, device, seed=9)
    off = offsets_of(lengths, device)
    torch.testing.assert_close(
        sll.sll_multi_head_jagged_flash_attention(q, k, v, off, max_l),
        recops.multi_head_jagged_flash_attention(q, k, v, off, max_l, False))
    # keyword use with SLL's argument names
    out = sll.sll_multi_head_jagged_flash_attention(q_weights=q, k_weights=k, v_weights=v,
                                                    offsets=off, max_seq_len=max_l)
    gold, _ = padded_reference(q, k, v, lengths, max_l)
    torch.testing.assert_close(out.double(), gold, atol=2e-5, rtol=1e-4)


def test_refusals_name_the_argument():
    q, k, v = make([2, 3], 2, 4, torch.float32)
    off = offsets_of([2, 3])
    with pytest.raises(RuntimeError, match="k .* must have q's shape and dtype"):
        recops.multi_head_jagged_flash_attention(q, k[:, :4], v, off, 3)
    with pytest.raises(RuntimeError, match="v .* must have q's shape and dtype"):
        recops.multi_head_jagged_flash_attention(q, k, v.half(), off, 3)
    with pytest.raises(RuntimeError, match="max_seq_len=-1 must be >= 0"):
        recops.multi_head_jagged_flash_attention(q, k, v, off, -1)
    with pytest.raises(RuntimeError, match="q must be \\[H, total_L, D\\]"):
        recops.multi_head_jagged_flash_attention(q[0], k[0], v[0], off, 3)
    with pytest.raises(RuntimeError, match="must be non-decreasing"):
        recops.multi_head_jagged_flash_attention(q, k, v, torch.tensor([0, 4, 3, 5]), 3)
    with pytest.raises(RuntimeError, match="q must be fp64, fp32, fp16 or bf16"):
        recops.multi_head_jagged_flash_attention(q.int(), k.int(), v.int(), off, 3)


def test_compile_dynamic_without_recompiling():
    torch._dynamo.reset()
    calls = []

    def backend(gm, example_inputs):
        calls.append(1)
        return gm

    def f(q, k, v, off, max_l):
        out = recops.multi_head_jagged_flash_attention(q, k, v, off, max_l)
        return out.sum()

    cf = torch.compile(f, fullgraph=True, dynamic=True, backend=backend)
    for lengths in ([3, 5, 2], [7, 1, 4, 9, 2], [6, 6]):
        q, k, v = (t.requires_grad_() for t in make(lengths, 2, 8, torch.float32, seed=10))
        off = offsets_of(lengths)
        got = cf(q, k, v, off, 8)
        got.backward()
        want = f(*(t.detach() for t in (q, k, v)), off, 8)
        torch.testing.assert_close(got.detach(), want)
    assert len(calls) == 1, f"recompiled: {len(calls)} graphs"
