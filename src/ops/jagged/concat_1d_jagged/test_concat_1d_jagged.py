"""concat_1d_jagged / concat_1d_jagged_bwd / split_1d_jagged through PyTorch: a plain-torch peer
on random data, opcheck, gradcheck (fp64), torch.compile vs eager, non-contiguous inputs, the
errors, and the compat names (recops.compat.gr, recops.compat.sll) against the upstream ops where
they are importable. Collected by `pytest src/ops`."""

import pytest
import torch

import recops
from recops.compat import gr, sll

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _offsets(lengths, dtype=torch.int64):
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    return torch.cat([lengths.new_zeros(1), lengths.cumsum(0)]).to(dtype)


def _samples(values, offsets):
    """A part's samples: jagged (offsets) or dense [B] / [B, S] (offsets None)."""
    if offsets is None:
        return list((values if values.dim() == 2 else values[:, None]).unbind(0))
    o = offsets.tolist()
    return [values[o[i]:o[i + 1]] for i in range(len(o) - 1)]


def peer(va, oa, vb, ob):
    """The plain-torch composition: per sample torch.cat, offsets from the lengths."""
    pieces, lengths = [], []
    for a, b in zip(_samples(va, oa), _samples(vb, ob)):
        pieces += [a, b]
        lengths.append(len(a) + len(b))
    odt = oa.dtype if oa is not None else ob.dtype if ob is not None else torch.int64
    values = torch.cat(pieces) if pieces else va.new_zeros(0)
    return values, _offsets(lengths, odt)


def _part(kind, B, maxlen, dtype, gen, odt=torch.int64):
    if kind == "vector":
        data, off = torch.randn(B, generator=gen), None
    elif kind == "dense":
        data, off = torch.randn(B, maxlen, generator=gen), None
    else:
        lengths = torch.randint(0, maxlen + 1, (B,), generator=gen)
        data, off = torch.randn(int(lengths.sum()), generator=gen), _offsets(lengths, odt)
    if not dtype.is_floating_point:
        data = (data * 1000).to(dtype)
    return data.to(dtype), off


KINDS = [("jagged", "jagged"), ("vector", "jagged"), ("jagged", "vector"), ("dense", "jagged"),
         ("jagged", "dense"), ("dense", "vector")]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kinds", KINDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.int32])
@pytest.mark.parametrize("odt", [torch.int32, torch.int64])
@pytest.mark.parametrize("B", [0, 1, 13])
def test_matches_peer(device, kinds, dtype, odt, B):
    gen = torch.Generator().manual_seed(B * 31 + len(kinds[0]))
    va, oa = _part(kinds[0], B, 6, dtype, gen, odt)
    vb, ob = _part(kinds[1], B, 4, dtype, gen, odt)
    want_v, want_o = peer(va, oa, vb, ob)
    va, oa, vb, ob = (None if t is None else t.to(device) for t in (va, oa, vb, ob))
    values, offsets = recops.concat_1d_jagged(va, oa, vb, ob)
    assert values.dtype == dtype and torch.equal(values.cpu(), want_v)
    assert offsets.dtype == want_o.dtype and torch.equal(offsets.cpu(), want_o)
    ga, gb = recops.split_1d_jagged(values, oa, ob, va.shape, vb.shape)
    assert torch.equal(ga, va) and torch.equal(gb, vb)


def test_skewed_and_empty_samples():
    gen = torch.Generator().manual_seed(1)
    la = [0, 0, 20000, 1, 0, 3, 0]  # one sample over the CPU path's 16384-element chunk
    lb = [5, 0, 0, 17000, 0, 0, 2]
    va = torch.randn(sum(la), generator=gen)
    vb = torch.randn(sum(lb), generator=gen)
    got = recops.concat_1d_jagged(va, _offsets(la), vb, _offsets(lb))
    want = peer(va, _offsets(la), vb, _offsets(lb))
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_noncontiguous_parts():
    gen = torch.Generator().manual_seed(3)
    va = torch.randn(40, generator=gen)[::2]
    oa = _offsets([3, 0, 7, 0, 0, 10])
    vb = torch.randn(6, 8, generator=gen)[:, ::3]  # dense [6, 3], strides (8, 3)
    got = recops.concat_1d_jagged(va, oa, vb, None)
    want = peer(va, oa, vb, None)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    g = torch.randn(2 * got[0].numel(), generator=gen)[::2]
    ga, gb = torch.ops.recops.concat_1d_jagged_bwd(g, va, oa, vb, None)
    assert torch.equal(ga, recops.split_1d_jagged(g.contiguous(), oa, None, 20, (6, 3))[0])
    assert gb.shape == (6, 3) and gb.is_contiguous()


def test_chain_of_three():
    gen = torch.Generator().manual_seed(4)
    parts = [_part("jagged", 5, 4, torch.float32, gen) for _ in range(3)]
    v, o = recops.concat_1d_jagged(*parts[0], *parts[1])
    v, o = recops.concat_1d_jagged(v, o, *parts[2])
    s = [_samples(*p) for p in parts]
    want = torch.cat([torch.cat([s[0][b], s[1][b], s[2][b]]) for b in range(5)])
    assert torch.equal(v, want)
    lengths = [sum(len(s[k][b]) for k in range(3)) for b in range(5)]
    assert torch.equal(o, _offsets(lengths))


def _sample(kind_a="jagged"):
    gen = torch.Generator().manual_seed(5)
    va, oa = _part(kind_a, 4, 5, torch.float64, gen)
    vb, ob = _part("jagged", 4, 4, torch.float64, gen)
    return va, oa, vb, ob


@pytest.mark.parametrize("kind_a", ["jagged", "vector", "dense"])
def test_opcheck(kind_a):
    va, oa, vb, ob = _sample(kind_a)
    va.requires_grad_(True)
    vb.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.concat_1d_jagged.default, (va, oa, vb, ob))
    grad = torch.randn(va.numel() + vb.numel(), dtype=torch.float64)
    torch.library.opcheck(torch.ops.recops.concat_1d_jagged_bwd.default,
                          (grad, va.detach(), oa, vb.detach(), ob))


@pytest.mark.parametrize("kind_a", ["jagged", "vector", "dense"])
def test_gradcheck(kind_a):
    va, oa, vb, ob = _sample(kind_a)
    va.requires_grad_(True)
    vb.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: recops.concat_1d_jagged(a, oa, b, ob)[0],
                                    (va, vb))


def test_split_gradcheck():
    va, oa, vb, ob = _sample("vector")
    v = peer(va, oa, vb, ob)[0].requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: recops.split_1d_jagged(x, oa, ob, va.shape, vb.numel()), (v,))


def test_backward_keeps_no_input_data():
    va, oa, vb, ob = _sample()
    va.requires_grad_(True)
    vb.requires_grad_(True)
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        values, offsets = recops.concat_1d_jagged(va, oa, vb, ob)
    floating = [t for t in packed if t.is_floating_point()]
    assert floating and all(t.untyped_storage().nbytes() <= 8 for t in floating)
    assert not offsets.requires_grad
    g = torch.randn_like(values)
    values.backward(g)
    ga, gb = recops.split_1d_jagged(g, oa, ob, va.numel(), vb.numel())
    assert torch.equal(va.grad, ga) and torch.equal(vb.grad, gb)


def test_double_backward_raises():
    va, oa, vb, ob = _sample()
    va.requires_grad_(True)
    values, _ = recops.concat_1d_jagged(va, oa, vb, ob)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad((values * values).sum(), va, create_graph=True)


def test_errors():
    va, oa, vb, ob = _sample()
    with pytest.raises(RuntimeError, match="values_a must be 1-D \\[total_L\\] when offsets_a"):
        recops.concat_1d_jagged(va[:, None], oa, vb, ob)
    with pytest.raises(RuntimeError, match="values_b must be dense \\[B\\] or \\[B, S\\]"):
        recops.concat_1d_jagged(va, oa, torch.zeros(4, 1, 1, dtype=va.dtype), None)
    with pytest.raises(RuntimeError, match="batch sizes differ: 4 samples in values_a/offsets_a, "
                                           "3 in values_b/offsets_b"):
        recops.concat_1d_jagged(va, oa, torch.zeros(3, dtype=va.dtype), None)
    with pytest.raises(RuntimeError, match="values_b \\(fp32\\) must have values_a's dtype"):
        recops.concat_1d_jagged(va, oa, vb.float(), ob)
    with pytest.raises(RuntimeError, match="offsets_b \\(int32\\) must have offsets_a's dtype"):
        recops.concat_1d_jagged(va, oa, vb, ob.int())
    with pytest.raises(RuntimeError, match="offsets_a must be int32 or int64"):
        recops.concat_1d_jagged(va, oa.float(), vb, ob)
    bad = oa.clone()
    bad[-1] += 1
    with pytest.raises(RuntimeError, match="offsets_a\\[4\\]=.* but values_a.size\\(0\\) is"):
        recops.concat_1d_jagged(va, bad, vb, ob)
    with pytest.raises(RuntimeError, match="grad must be \\["):
        torch.ops.recops.concat_1d_jagged_bwd(torch.zeros(1, dtype=va.dtype), va, oa, vb, ob)
    with pytest.raises(ValueError, match="shape_a must be \\[T\\] for a jagged part"):
        recops.split_1d_jagged(va, oa, ob, (2, 3), vb.numel())


def test_int32_offsets_overflow_is_refused_before_allocating():
    # A dense [2, 2^30] part of zero strides (no memory) and one element in part B: 2^31 + 1
    # output elements cannot be indexed by int32 offsets; the shape function says so.
    huge = torch.zeros(1, dtype=torch.uint8).as_strided((2, 2 ** 30), (0, 0))
    vb = torch.zeros(1, dtype=torch.uint8)
    ob = torch.tensor([0, 0, 1], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="more than int32 offsets can hold"):
        recops.concat_1d_jagged(huge, None, vb, ob)


def test_compile_dynamic_matches_eager_without_recompiling():
    from torch._dynamo.testing import CompileCounterWithBackend

    counter = CompileCounterWithBackend("inductor")
    f = torch.compile(lambda a, oa, b, ob: recops.concat_1d_jagged(a, oa, b, ob),
                      backend=counter, fullgraph=True, dynamic=True)
    for B in (3, 5, 8):
        gen = torch.Generator().manual_seed(B)
        va, oa = _part("jagged", B, 6, torch.float32, gen)
        vb, ob = _part("jagged", B, 6, torch.float32, gen)
        got, eager = f(va, oa, vb, ob), recops.concat_1d_jagged(va, oa, vb, ob)
        assert torch.equal(got[0], eager[0]) and torch.equal(got[1], eager[1])
    assert counter.frame_count == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.uint8, torch.float64])
def test_cuda_matches_cpu_skewed_strided_misaligned(dtype):
    """The CUDA kernel's paths: 16-byte units and element gathers (a source that starts at an odd
    element), long and empty samples, strided parts and grad, int32 offsets; forward and split."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gen = torch.Generator().manual_seed(5)
    la = [0, 0, 20000, 1, 0, 3, 0, 37, 4096, 5]
    lb = [5, 0, 0, 17000, 0, 0, 2, 64, 1, 0]
    for odt in (torch.int32, torch.int64):
        va = (torch.randn(sum(la) + 1, generator=gen) * 50).to(dtype)[1:]  # odd start
        vb = (torch.randn(2 * sum(lb), generator=gen) * 50).to(dtype)[::2]  # stride 2
        oa, ob = _offsets(la, odt), _offsets(lb, odt)
        want = recops.concat_1d_jagged(va, oa, vb, ob)
        got = recops.concat_1d_jagged(va.cuda(), oa.cuda(), vb.cuda(), ob.cuda())
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])
        g = (torch.randn(2 * want[0].numel(), generator=gen) * 50).to(dtype)[::2]
        want_g = recops.split_1d_jagged(g, oa, ob, va.shape, vb.shape)
        got_g = recops.split_1d_jagged(g.cuda(), oa.cuda(), ob.cuda(), va.shape, vb.shape)
        assert all(torch.equal(x.cpu(), y) for x, y in zip(got_g, want_g))
        dense = (torch.randn(len(la), 7, generator=gen) * 50).to(dtype)[:, 1:6]  # [B, 5] strided
        want = recops.concat_1d_jagged(dense, None, vb, ob)
        got = recops.concat_1d_jagged(dense.cuda(), None, vb.cuda(), ob.cuda())
        assert torch.equal(got[0].cpu(), want[0]) and torch.equal(got[1].cpu(), want[1])


# ---- compat names, and the upstream ops where importable ----

def test_gr_concat_1d_jagged_jagged():
    gen = torch.Generator().manual_seed(11)
    ll = torch.tensor([2, 0, 3, 1], dtype=torch.int32)
    lr = torch.tensor([0, 4, 1, 2], dtype=torch.int32)
    vl = torch.randint(-100, 100, (int(ll.sum()),), generator=gen)
    vr = torch.randint(-100, 100, (int(lr.sum()),), generator=gen)
    got = gr.concat_1d_jagged_jagged(ll, vl, lr, vr)
    assert torch.equal(got, peer(vl, _offsets(ll), vr, _offsets(lr))[0])
    hstu = getattr(torch.ops, "hstu", None)
    if hstu is not None and hasattr(hstu, "concat_1d_jagged_jagged"):
        assert torch.equal(got, hstu.concat_1d_jagged_jagged(ll, vl, lr, vr))


@pytest.mark.parametrize("max_seq_len", [100, 2])
@pytest.mark.parametrize("odt", [torch.int32, torch.int64])
def test_sll_dense_jagged_cat_jagged_out(max_seq_len, odt):
    gen = torch.Generator().manual_seed(9)
    a = torch.randn(5, generator=gen)
    lengths = [3, 0, 1, 4, 2]
    b_offsets = _offsets(lengths, odt)
    b = torch.randn(int(b_offsets[-1]), generator=gen)
    c, c_offsets = sll.sll_dense_jagged_cat_jagged_out(a, b, b_offsets, max_seq_len)
    kept = torch.cat([b[int(b_offsets[i]):int(b_offsets[i + 1])][:max_seq_len]
                      for i in range(5)])
    cut = [min(n, max_seq_len) for n in lengths]
    trimmed = torch.cat([torch.cat([s, s.new_zeros(n - len(s))])
                         for s, n in zip(_samples(kept, _offsets(cut)), lengths)])
    want_c, want_o = peer(a, None, trimmed, b_offsets)
    assert torch.equal(c, want_c) and torch.equal(c_offsets, want_o)
    assert c_offsets.dtype == odt


def test_sll_against_fbgemm_gpu():
    pytest.importorskip("fbgemm_gpu.sll", reason="fbgemm_gpu.sll is not installed")
    gen = torch.Generator().manual_seed(12)
    for B in (1, 7, 40):
        lengths = torch.randint(0, 9, (B,), generator=gen)
        b_offsets = _offsets(lengths)
        a = torch.randn(B, generator=gen)
        b = torch.randn(int(b_offsets[-1]), generator=gen)
        want = torch.ops.fbgemm.sll_dense_jagged_cat_jagged_out(a, b, b_offsets, 9)
        got = sll.sll_dense_jagged_cat_jagged_out(a, b, b_offsets, 9)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    # B = 0: SLL's CPU op fails (torch.cat of an empty list); recops returns the empty result.
    empty, zero = torch.zeros(0), torch.zeros(1, dtype=torch.int64)
    with pytest.raises((RuntimeError, ValueError)):
        torch.ops.fbgemm.sll_dense_jagged_cat_jagged_out(empty, empty, zero, 9)
    c, c_offsets = sll.sll_dense_jagged_cat_jagged_out(empty, empty, zero, 9)
    assert c.numel() == 0 and c_offsets.tolist() == [0]
