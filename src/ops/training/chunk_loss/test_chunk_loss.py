"""chunk_loss through PyTorch: the torch composition (F.linear + F.cross_entropy with label
smoothing, times the token weight, plus the z-loss term) in fp64 against the op and its gradients,
opcheck, gradcheck, the ignored-row rules and the refusals. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import recops

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _ce_pytest import torch_ce  # noqa: E402

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
REDUCTIONS = ["none", "sum", "mean"]


def torch_loss(h, w, y, b, tw, ignore_index, eps, lam, cap, reduction):
    """training_ops.md §3.2: §3.1's loss (_ce_pytest.torch_ce) on F.linear's logits."""
    return torch_ce(F.linear(h, w, b), y, tw, ignore_index, eps, lam, cap, reduction)


def sample(n, d, v, device, dtype=torch.float64, seed=0, ignore_every=4, bias=True):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(n, d, generator=g, dtype=torch.float64).to(dtype).to(device)
    w = (torch.randn(v, d, generator=g, dtype=torch.float64) * 2 / d**0.5).to(dtype).to(device)
    b = torch.randn(v, generator=g, dtype=torch.float64).to(dtype).to(device) if bias else None
    y = torch.randint(0, v, (n,), generator=g)
    if ignore_every:
        y[::ignore_every] = -100
    tw = torch.rand(n, generator=g, dtype=torch.float64) + 0.5
    tw = tw.to(torch.float64 if dtype == torch.float64 else torch.float32).to(device)
    return h, w, y.to(device), b, tw


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("opts", [(0.0, 0.0, 0.0), (0.1, 1e-3, 0.0), (0.2, 0.0, 5.0)])
@pytest.mark.parametrize("chunks", [(0, 0), (8, 0), (16, 7)])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_torch_fp64(reduction, opts, chunks, weighted):
    eps, lam, cap = opts
    h, w, y, b, tw = sample(37, 11, 29, "cpu")
    tw = tw if weighted else None
    ins = [t.clone().requires_grad_() for t in (h, w, b)]
    loss, zl = recops.chunk_loss(ins[0], ins[1], y, ins[2], tw, label_smoothing=eps,
                                 z_loss_scale=lam, softcap=cap, reduction=reduction,
                                 token_chunk=chunks[0], vocab_chunk=chunks[1])
    ref_ins = [t.clone().requires_grad_() for t in (h, w, b)]
    ref, ref_z = torch_loss(ref_ins[0], ref_ins[1], y, ref_ins[2], tw, -100, eps, lam, cap,
                            reduction)
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(zl, ref_z)
    g = torch.randn_like(loss)
    loss.backward(g)
    ref.backward(g)
    for got, want in zip(ins, ref_ins):
        torch.testing.assert_close(got.grad, want.grad)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_low_precision_close_to_fp64(device, dtype, reduction):
    h, w, y, b, tw = sample(65, 24, 131, "cpu", seed=3)
    ref, _ = torch_loss(h, w, y, b, tw, -100, 0.1, 1e-3, 0.0, reduction)
    loss, _ = recops.chunk_loss(h.to(dtype).to(device), w.to(dtype).to(device), y.to(device),
                                b.to(dtype).to(device), tw.float().to(device), label_smoothing=0.1,
                                z_loss_scale=1e-3, reduction=reduction, token_chunk=16)
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(loss.cpu().double(), ref, rtol=tol, atol=tol)


def test_all_ignored_is_zero_not_nan():
    h, w, y, b, _ = sample(9, 5, 7, "cpu")
    y[:] = -100
    hr, wr = h.clone().requires_grad_(), w.clone().requires_grad_()
    loss, zl = recops.chunk_loss(hr, wr, y, b, reduction="mean")
    assert loss.item() == 0 and zl.item() == 0
    loss.backward()
    assert torch.count_nonzero(hr.grad) == 0 and torch.count_nonzero(wr.grad) == 0


def test_empty_rows():
    h, w, y, b, _ = sample(0, 5, 7, "cpu")
    wr = w.clone().requires_grad_()
    loss, _ = recops.chunk_loss(h, wr, y, b, reduction="sum")
    assert loss.item() == 0
    loss.backward()
    assert torch.count_nonzero(wr.grad) == 0
    none, _ = recops.chunk_loss(h, w, y, b, reduction="none")
    assert none.shape == (0,)


def test_int32_labels_and_accum_input():
    h, w, y, b, _ = sample(33, 8, 19, "cpu", dtype=torch.bfloat16)
    a, _ = recops.chunk_loss(h, w, y, b, reduction="sum")
    c, _ = recops.chunk_loss(h, w, y.to(torch.int32), b, reduction="sum",
                             accum_dtype=torch.bfloat16, token_chunk=4)
    torch.testing.assert_close(a, c)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_same_bits_run_to_run_on_any_thread_count(dtype):
    """training_ops.md §1: bit-identical from run to run, on 1 and on 3 threads alike (OpenBLAS,
    when the build uses it, runs single-threaded on fixed output slabs: README)."""
    h, w, y, b, tw = sample(200, 96, 1500, "cpu", dtype=dtype, seed=5)
    saved = torch.get_num_threads()

    def run():
        hr, wr, br = (t.clone().requires_grad_() for t in (h, w, b))
        loss, _ = recops.chunk_loss(hr, wr, y, br, tw.float(), z_loss_scale=1e-3,
                                    reduction="sum", token_chunk=64)
        loss.backward()
        return [loss.detach(), hr.grad, wr.grad, br.grad]

    out = {}
    try:
        for threads in (1, 3):
            torch.set_num_threads(threads)
            first, again = run(), run()
            for a, c in zip(first, again):
                assert torch.equal(a, c), threads
            out[threads] = first
    finally:
        torch.set_num_threads(saved)
    for a, c in zip(out[1], out[3]):
        assert torch.equal(a, c)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
@pytest.mark.parametrize("chunks", [(0, 0), (16, 0), (16, 40)])
def test_fwd_is_forward_and_unit_backward(device, dtype, reduction, chunks):
    """chunk_loss_fwd (what the forward runs when a gradient is needed) gives chunk_loss's loss and
    chunk_loss_bwd's gradients for grad_loss = 1, bit for bit on the CPU (one pass over the
    logits there; on CUDA the same launches in sequence)."""
    h, w, y, b, tw = sample(70, 24, 131, device, dtype=dtype, seed=7)
    kw = dict(token_chunk=chunks[0], vocab_chunk=chunks[1], label_smoothing=0.1,
              z_loss_scale=1e-3, softcap=3.0)
    red = {"sum": 1, "mean": 2}[reduction]
    loss, zl, dh, dw, db = torch.ops.recops.chunk_loss_fwd(h, w, y, b, tw.float(), reduction=red,
                                                           **kw)
    want_loss, want_z = torch.ops.recops.chunk_loss(h, w, y, b, tw.float(), reduction=red, **kw)
    one = torch.ones((), device=device)
    want = torch.ops.recops.chunk_loss_bwd(one, h, w, y, b, tw.float(), reduction=red, **kw)
    for got, exp in zip((loss, zl, dh, dw, db), (want_loss, want_z) + tuple(want)):
        assert torch.equal(got, exp)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_autograd_scales_the_forward_gradients(device, reduction):
    """The backward of recops.chunk_loss: the saved unit gradients times grad_loss ("sum",
    "mean"), chunk_loss_bwd's recomputation ("none"); both against chunk_loss_bwd with the same
    upstream gradient, weight frozen or not."""
    h, w, y, b, tw = sample(40, 16, 75, device, dtype=torch.float32, seed=9)
    for frozen in (False, True):
        hr, br = h.clone().requires_grad_(), b.clone().requires_grad_()
        wr = w.clone().requires_grad_(not frozen)
        loss, _ = recops.chunk_loss(hr, wr, y, br, tw, reduction=reduction, token_chunk=16)
        g = torch.rand_like(loss) + 0.5
        loss.backward(g)
        red = {"none": 0, "sum": 1, "mean": 2}[reduction]
        dh, dw, db = torch.ops.recops.chunk_loss_bwd(g, h, w, y, b, tw, reduction=red,
                                                     token_chunk=16)
        # g folded into G before the fp32 GEMMs (chunk_loss_bwd) or multiplied after them: a few
        # fp32 roundings apart, relative to each gradient's scale.
        def close(got, want):
            torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6 * want.abs().max().item())

        close(hr.grad, dh)
        close(br.grad, db)
        if frozen:
            assert wr.grad is None
        else:
            close(wr.grad, dw)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    h, w, y, b, tw = sample(7, 5, 6, device, dtype=torch.float32)
    args = (h.requires_grad_(), w.requires_grad_(), y, b.requires_grad_(), tw)
    torch.library.opcheck(torch.ops.recops.chunk_loss.default, args)
    torch.library.opcheck(torch.ops.recops.chunk_loss.default, args,
                          {"reduction": 0, "token_chunk": 2, "vocab_chunk": 4})
    g = torch.tensor(1.5, device=device)
    torch.library.opcheck(torch.ops.recops.chunk_loss_bwd.default,
                          (g, h.detach(), w.detach(), y, b.detach(), tw))
    for kw in ({}, {"reduction": 0}, {"reduction": 1, "vocab_chunk": 4}):
        torch.library.opcheck(torch.ops.recops.chunk_loss_fwd.default,
                              (h.detach(), w.detach(), y, b.detach(), tw), kw)
    torch.library.opcheck(torch.ops.recops.chunk_loss_fwd.default,
                          (h.detach(), w.detach(), y, None, tw))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gradcheck(reduction):
    h, w, y, b, tw = sample(6, 3, 5, "cpu", ignore_every=3)
    ins = [t.requires_grad_() for t in (h, w, b)]
    assert torch.autograd.gradcheck(
        lambda a, c, d: recops.chunk_loss(a, c, y, d, tw, label_smoothing=0.1, z_loss_scale=0.01,
                                          softcap=2.0, reduction=reduction, token_chunk=4,
                                          vocab_chunk=2)[0], ins)


def test_noncontiguous_hidden_is_copied():
    h, w, y, b, _ = sample(8, 12, 5, "cpu")
    ht = h[:, ::2]
    a, _ = recops.chunk_loss(ht, w[:, :6].contiguous(), y, b)
    ref, _ = torch_loss(ht, w[:, :6], y, b, None, -100, 0, 0, 0, "mean")
    torch.testing.assert_close(a, ref)


def test_refusals_name_the_argument():
    h, w, y, b, _ = sample(4, 3, 5, "cpu", ignore_every=0)
    with pytest.raises(RuntimeError, match=r"labels\[1\]=7 must be in \[0, V\) = \[0, 5\)"):
        recops.chunk_loss(h, w, torch.tensor([0, 7, 1, 2]), b)
    with pytest.raises(RuntimeError, match="weight must be contiguous \\[V, D\\]"):
        recops.chunk_loss(h, w[:, :2].contiguous(), y, b)
    with pytest.raises(RuntimeError, match="weight must have hidden's dtype"):
        recops.chunk_loss(h, w.float(), y, b)
    with pytest.raises(RuntimeError, match="bias must be contiguous \\[V\\] = \\[5\\]"):
        recops.chunk_loss(h, w, y, b[:4])
    with pytest.raises(RuntimeError, match="token_chunk=-3 must be >= 0"):
        recops.chunk_loss(h, w, y, b, token_chunk=-3)
    with pytest.raises(RuntimeError, match="accum_dtype must be None"):
        recops.chunk_loss(h, w, y, b, accum_dtype=torch.float16)
    with pytest.raises(ValueError, match="reduction"):
        recops.chunk_loss(h, w, y, b, reduction="avg")
