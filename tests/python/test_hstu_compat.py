# hstu_attn's upstream call forms (recops.compat.nvidia in each released order, fbgemm_hstu, the
# seed's mxrec names) against recops.hstu_attn on random data; torch.compile without max lengths;
# empty batches, zero heads and target_group_size 0. CPU.
import pytest
import torch

import recops
from recops.compat import fbgemm_hstu, mxrec, nvidia


def problem(lengths=(5, 0, 9), Hq=2, Hk=1, d=8, delta=0, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    lk = [x + delta for x in lengths]
    oq = torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist())
    ok = torch.tensor([0] + torch.tensor(lk).cumsum(0).tolist())
    mk = lambda *s: (torch.rand(*s, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)  # noqa
    q, k, v = mk(int(oq[-1]), Hq, d), mk(int(ok[-1]), Hk, d), mk(int(ok[-1]), Hk, d)
    return q, k, v, oq, ok, max(lengths), max(lk)


def canonical(q, k, v, oq, ok, Sq, Sk, scale=None, **kw):
    kw.setdefault("window", (-1, -1))
    kw.setdefault("alpha", 1.0)
    return recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, silu_scale=1.0 / (scale or Sq), **kw)


def test_nvidia_released_order_and_aliases():
    q, k, v, oq, ok, Sq, Sk = problem(Hq=2, Hk=2, delta=1, seed=1)
    C, T = torch.tensor([1, 0, 2]), torch.tensor([2, 0, 3])
    want = canonical(q, k, v, oq, ok, Sq, Sk, scale=7, num_contexts=C, num_targets=T,
                     target_group_size=2, window=(-1, 0), alpha=0.5)
    got = nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, C, T, 2, (-1, 0), 0.5, None,
                                       False, None, None, None, None, None, None, 7)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    cu_t = torch.cat([torch.zeros(1, dtype=T.dtype), T.cumsum(0)])
    got = nvidia.hstu_attn_varlen_func(q=q, k=k, v=v, seq_offsets_q=oq, seq_offsets_k=ok,
                                       max_seqlen_q=Sq, max_seqlen_k=Sk, num_contexts=C,
                                       seq_offsets_t=cu_t, target_group_size=2,
                                       window_size=(-1, 0), alpha=0.5, scaling_seqlen=7)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_nvidia_newest_order():
    q, k, v, oq, ok, Sq, Sk = problem(seed=2)
    T = torch.tensor([1, 0, 4])
    want = canonical(q, k, v, oq, ok, Sq, Sk, scale=11, num_targets=T, window=(-1, 0))
    got = nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, None, None, Sq, Sk, 11, None, T, 1,
                                       (-1, 0), 1.0, None, False, None, None, None, None, None,
                                       -1)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got = nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, seqused_q=None, max_seqlen_q=Sq,
                                       max_seqlen_k=Sk, scaling_seqlen=11, num_targets=T,
                                       window_size=(-1, 0), quant_mode=-1)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_nvidia_qkvpacked():
    """hstu_attn_qkvpacked_func: qkv [total, 3, heads, d] gives what the three tensors give to
    hstu_attn_varlen_func, and its gradient comes back packed."""
    q, k, v, oq, ok, Sq, Sk = problem(Hq=2, Hk=2, seed=6)
    qkv = torch.stack([q, k, v], dim=1).requires_grad_()
    T = torch.tensor([1, 0, 2])
    got = nvidia.hstu_attn_qkvpacked_func(qkv, oq, oq, Sq, Sq, None, T, 1, (-1, 0), 0.5)
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    want = nvidia.hstu_attn_varlen_func(q2, k2, v2, oq, oq, Sq, Sq, None, T, 1, (-1, 0), 0.5)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    dy = torch.randn(got.shape, generator=torch.Generator().manual_seed(7), dtype=got.dtype)
    (dqkv,) = torch.autograd.grad(got, qkv, dy)
    torch.testing.assert_close(dqkv, torch.stack(torch.autograd.grad(want, (q2, k2, v2), dy), 1),
                               rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match=r"qkv must be \[total, 3, heads, head_dim\]"):
        nvidia.hstu_attn_qkvpacked_func(q, oq, oq, Sq, Sq)


def test_nvidia_seqused_is_a_compacted_batch():
    q, k, v, oq, ok, Sq, Sk = problem(lengths=(6, 3, 9), Hq=2, Hk=1, delta=2, seed=3)
    used_q, used_k = torch.tensor([4, 0, 9]), torch.tensor([5, 2, 11])
    for t in (q, k, v):
        t.requires_grad_(True)
    got = nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, used_q, used_k, Sq, Sk,
                                       window_size=(-1, 0))
    # The same problem built by hand: the used rows of every sequence, then zeros elsewhere.
    rq = torch.cat([torch.arange(int(oq[b]), int(oq[b]) + int(used_q[b])) for b in range(3)])
    rk = torch.cat([torch.arange(int(ok[b]), int(ok[b]) + int(used_k[b])) for b in range(3)])
    cq = torch.cat([torch.zeros(1, dtype=torch.int64), used_q.cumsum(0)])
    ck = torch.cat([torch.zeros(1, dtype=torch.int64), used_k.cumsum(0)])
    part = canonical(q[rq], k[rk], v[rk], cq, ck, Sq, Sk, window=(-1, 0))
    want = torch.zeros_like(got)
    want[rq] = part
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got.sum().backward()
    assert q.grad[[i for i in range(q.shape[0]) if i not in rq.tolist()]].abs().sum() == 0
    with pytest.raises(ValueError, match="seqused_q"):
        nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, torch.tensor([7, 0, 0]), None, Sq, Sk)


def test_nvidia_refusals():
    q, k, v, oq, ok, Sq, Sk = problem()
    with pytest.raises(NotImplementedError, match="quant_mode"):
        nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, None, None, Sq, Sk, quant_mode=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'softmax_scale'"):
        nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, softmax_scale=1.0)
    with pytest.raises(TypeError, match="max_seqlen_k"):
        nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, Sq)
    with pytest.raises(TypeError, match="got multiple values for argument 'cu_seqlens_q'"):
        nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, seq_offsets_q=oq)
    with pytest.raises(TypeError, match="takes at most 21 positional arguments, got 22"):
        nvidia.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, *([None] * 15))


def test_fbgemm_hstu():
    q, k, v, oq, ok, Sq, Sk = problem(Hq=2, Hk=2, delta=1, seed=4)
    C, T = torch.tensor([1, 0, 2]), torch.tensor([2, 0, 3])
    rab = torch.randn(3, 2, Sq, Sk, dtype=torch.float64, requires_grad=True)
    got = fbgemm_hstu.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, C, T, 2, (-1, 0), 0.5, rab,
                                            True, True)
    want = canonical(q, k, v, oq, ok, Sq, Sk, num_contexts=C, num_targets=T,
                     target_group_size=2, window=(-1, 0), alpha=0.5, rab=rab)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    got.sum().backward()
    assert rab.grad is not None
    with pytest.raises(ValueError, match="is_delta_q"):
        fbgemm_hstu.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, None, None)
    with pytest.raises(NotImplementedError, match="descale_k"):
        fbgemm_hstu.hstu_attn_varlen_func(q, k, v, oq, ok, Sq, Sk, None, None, is_delta_q=True,
                                          descale_k=torch.ones(1))


def test_mxrec_names():
    q, k, v, oq, ok, Sq, Sk = problem(Hq=4, Hk=2, seed=5)
    T = torch.tensor([2, 0, 3])
    got = mxrec.hstu_jagged(q=q, k=k, v=v, mask=None, attn_bias=None, mask_type=0,
                            max_seq_len=Sq, max_seq_len_k=Sk, silu_scale=1.0 / 16,
                            seq_offset=oq, seq_offset_k=ok, num_target=T, target_group_size=2)
    want = recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_targets=T, target_group_size=2,
                            silu_scale=1.0 / 16)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    qd, kd, vd = (t[: 2 * 5].reshape(2, 5, t.shape[1], t.shape[2]) for t in (q, k, v))
    got = mxrec.hstu_dense(qd, kd, vd, mask_type=2, max_seq_len=5)
    want = recops.hstu_attn(qd, kd, vd, mask_type="none")
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    with pytest.raises(ValueError, match="mask_type"):
        mxrec.hstu_dense(qd, kd, vd, mask_type=4)


def test_target_group_size_zero_is_no_target_mask():
    q, k, v, oq, ok, Sq, Sk = problem(lengths=(7, 4, 9), seed=6)
    C, T = torch.tensor([1, 0, 2]), torch.tensor([3, 2, 4])
    got = recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_contexts=C, num_targets=T,
                           target_group_size=0)
    # Rule 5 never masks: the same as one group as long as every sequence.
    want = recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_contexts=C, num_targets=T,
                            target_group_size=Sk)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    m = recops.hstu_mask(6, num_targets=3, target_group_size=0)
    assert torch.equal(m, torch.ones(6, 6, dtype=torch.bool).tril())
    with pytest.raises(RuntimeError, match="target_group_size=-1"):
        recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, num_targets=T, target_group_size=-1)


def test_compile_without_max_lengths():
    import torch._dynamo.testing

    q, k, v, oq, ok, Sq, Sk = problem(dtype=torch.float32, seed=7)
    torch.testing.assert_close(recops.hstu_attn(q, k, v, oq, ok),
                               recops.hstu_attn(q, k, v, oq, ok, Sq, Sk), rtol=0, atol=0)
    count = torch._dynamo.testing.CompileCounter()
    f = torch.compile(lambda q, k, v, o: recops.hstu_attn(q, k, v, o), fullgraph=True,
                      backend=count)
    # One graph: the longest sequence (hence silu_scale = 1/max_seq_len_q) is read at run time.
    for lengths in ((2, 12), (7, 7), (1, 13)):
        o = torch.tensor([0, lengths[0], 14])
        x = q.new_ones(14, 2, 8) * 0.1
        torch.testing.assert_close(f(x, x, x, o), recops.hstu_attn(x, x, x, o, o, max(lengths),
                                                                   max(lengths)))
    assert count.frame_count == 1


@pytest.mark.parametrize("shape", [(0, 2, 8), (6, 0, 8)])
def test_empty_batch_and_zero_heads(shape):
    n = shape[0]
    off = torch.tensor([0, n]) if n else torch.tensor([0])
    q = torch.randn(*shape, requires_grad=True)
    k = torch.randn(*shape, requires_grad=True)
    v = torch.randn(*shape, requires_grad=True)
    out = recops.hstu_attn(q, k, v, off, off, n, n)
    assert out.shape == shape
    out.sum().backward()
    assert q.grad.shape == shape and k.grad.shape == shape
    # Strides of an empty tensor are arbitrary (here the last dim's is 2).
    e = torch.randn(0, 2, 16)[:, :, ::2]
    assert recops.hstu_attn(e, e, e, torch.tensor([0]), torch.tensor([0]), 0, 0).shape == (0, 2, 8)


def test_zero_query_heads_backward_gives_zeros():
    q = torch.randn(6, 0, 8, requires_grad=True)
    k = torch.randn(6, 2, 8, requires_grad=True)
    v = torch.randn(6, 2, 8, requires_grad=True)
    off = torch.tensor([0, 2, 6])
    out = recops.hstu_attn(q, k, v, off, off, 4, 4)
    assert out.shape == (6, 0, 8)
    out.sum().backward()
    assert torch.equal(k.grad, torch.zeros_like(k)) and torch.equal(v.grad, torch.zeros_like(v))
    # Strided outputs through the raw op: dk, dv filled with zeros on every element.
    dq, dk, dv, _ = torch.ops.recops.hstu_attn_bwd(torch.zeros(6, 0, 8), q.detach(), k.detach(),
                                                   v.detach(), off, off, 4, 4)
    assert torch.equal(dk, torch.zeros_like(k)) and dq.shape == (6, 0, 8)
