"""concat_2d_jagged / concat_2d_jagged_bwd / split_2d_jagged through PyTorch: the torch formula
on random data, opcheck, gradcheck (fp64), non-contiguous inputs, the errors, and the compat
names (recops.compat.sll, recops.compat.gr). Collected by `pytest src/ops`."""

import pytest
import torch

import recops
from recops.compat import gr, sll

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _offsets(lengths, dtype=torch.int64, device="cpu"):
    lengths = torch.as_tensor(lengths, dtype=torch.int64)
    return torch.cat([lengths.new_zeros(1), lengths.cumsum(0)]).to(dtype=dtype, device=device)


def _parts(values, offsets):
    """Sample list of a side: jagged (offsets) or dense [B, S, D] (offsets None)."""
    if offsets is None:
        return list(values.unbind(0))
    o = offsets.tolist()
    return [values[o[i]:o[i + 1]] for i in range(len(o) - 1)]


def formula(va, oa, vb, ob, k=0, is_replace=False):
    out = []
    for a, b in zip(_parts(va, oa), _parts(vb, ob)):
        if is_replace:
            r = min(len(a), len(b))
            out += [a[:len(a) - r], b[len(b) - r:]]
        else:
            kk = min(k, len(b))
            out += [b[:kk], a, b[kk:]]
    D = va.size(-1)
    return torch.cat(out) if out else va.new_zeros(0, D)


def _side(kind, B, D, maxlen, dtype, device, gen, odt=torch.int64):
    if kind == "dense":
        return torch.randn(B, maxlen, D, generator=gen).to(dtype).to(device), None
    lengths = torch.randint(0, maxlen + 1, (B,), generator=gen)
    total = int(lengths.sum())
    return (torch.randn(total, D, generator=gen).to(dtype).to(device),
            _offsets(lengths, odt, device))


CONFIGS = [("jagged", "jagged", 0, False), ("jagged", "jagged", 2, False),
           ("jagged", "jagged", 0, True), ("dense", "jagged", 0, False),
           ("jagged", "dense", 3, False), ("jagged", "dense", 0, True),
           ("dense", "dense", 1, False)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kinds", CONFIGS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("B", [0, 1, 13])
def test_matches_formula(device, kinds, dtype, B):
    ka, kb, k, rep = kinds
    gen = torch.Generator().manual_seed(B * 7 + k)
    va, oa = _side(ka, B, 5, 6, dtype if dtype != torch.int32 else torch.float32, device, gen)
    vb, ob = _side(kb, B, 5, 4, dtype if dtype != torch.int32 else torch.float32, device, gen)
    if dtype == torch.int32:
        va, vb = (va * 100).to(dtype), (vb * 100).to(dtype)
    out = recops.concat_2d_jagged(va, oa, vb, ob, k, rep)
    want = formula(va, oa, vb, ob, k, rep)
    assert torch.equal(out, want)
    rows_a = va.size(0) if oa is not None else 0
    rows_b = vb.size(0) if ob is not None else 0
    if B > 0 and (oa is not None or ob is not None):
        ga, gb = recops.split_2d_jagged(out, oa, ob, rows_a, rows_b,
                                        va.size(1) if oa is None else None,
                                        vb.size(1) if ob is None else None, k, rep)
        if not rep:
            assert torch.equal(ga, va) and torch.equal(gb, vb)


def test_replace_zeroes_what_it_dropped():
    va = torch.arange(12.).reshape(6, 2)
    oa = _offsets([4, 2])
    vb = -torch.arange(1., 7.).reshape(3, 2)
    ob = _offsets([1, 2])
    out = recops.concat_2d_jagged(va, oa, vb, ob, is_replace=True)
    want = torch.cat([va[:3], vb[:1], vb[1:3]])
    assert torch.equal(out, want)
    ga, gb = torch.ops.recops.concat_2d_jagged_bwd(torch.ones_like(out), va, oa, vb, ob, 0, True)
    assert ga[:, 0].tolist() == [1, 1, 1, 0, 0, 0] and gb[:, 0].tolist() == [1, 1, 1]


def test_noncontiguous_rows():
    gen = torch.Generator().manual_seed(3)
    va = torch.randn(20, 8, generator=gen)[:, ::2]
    oa = _offsets([3, 0, 7, 0, 0, 10])
    vb = torch.randn(6, 8, 4, generator=gen)[:, ::2]
    out = recops.concat_2d_jagged(va, oa, vb, None, 1)
    assert torch.equal(out, formula(va, oa, vb, None, 1))


def _sample():
    gen = torch.Generator().manual_seed(5)
    va, oa = _side("jagged", 4, 3, 5, torch.float64, "cpu", gen)
    vb, ob = _side("jagged", 4, 3, 4, torch.float64, "cpu", gen)
    return va, oa, vb, ob


@pytest.mark.parametrize("k,rep", [(0, False), (2, False), (0, True)])
def test_opcheck(k, rep):
    va, oa, vb, ob = _sample()
    va.requires_grad_(True)
    vb.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.concat_2d_jagged.default, (va, oa, vb, ob, k, rep))
    out = formula(va.detach(), oa, vb.detach(), ob, k, rep)
    torch.library.opcheck(torch.ops.recops.concat_2d_jagged_bwd.default,
                          (torch.randn_like(out), va.detach(), oa, vb.detach(), ob, k, rep))
    vd = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.concat_2d_jagged.default, (va, oa, vd, None, k, rep))


@pytest.mark.parametrize("k,rep", [(0, False), (1, False), (0, True)])
def test_gradcheck(k, rep):
    va, oa, vb, ob = _sample()
    va.requires_grad_(True)
    vb.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: recops.concat_2d_jagged(a, oa, b, ob, k, rep),
                                     (va, vb))
    vd = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: recops.concat_2d_jagged(a, oa, b, None, k, rep),
                                    (va, vd))


def test_split_gradcheck():
    va, oa, vb, ob = _sample()
    v = formula(va, oa, vb, ob, 1).requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda x: recops.split_2d_jagged(x, oa, ob, va.size(0), vb.size(0), None, None, 1), (v,))


def test_errors():
    va, oa, vb, ob = _sample()
    with pytest.raises(RuntimeError, match="n_prefix_from_right=-1 must be >= 0"):
        recops.concat_2d_jagged(va, oa, vb, ob, -1)
    with pytest.raises(RuntimeError, match="is_replace=True needs n_prefix_from_right=0"):
        recops.concat_2d_jagged(va, oa, vb, ob, 1, True)
    with pytest.raises(RuntimeError, match="values_b's row width D=2 must equal values_a's D=3"):
        recops.concat_2d_jagged(va, oa, vb[:, :2], ob)
    with pytest.raises(RuntimeError, match="batch sizes differ"):
        recops.concat_2d_jagged(va, oa, torch.zeros(3, 2, 3, dtype=va.dtype), None)
    with pytest.raises(RuntimeError, match="must have values_a's dtype"):
        recops.concat_2d_jagged(va, oa, vb.float(), ob)
    with pytest.raises(RuntimeError, match="must have offsets_a's dtype"):
        recops.concat_2d_jagged(va, oa, vb, ob.int())
    with pytest.raises(RuntimeError, match="values_b must be dense \\[B, S, D\\]"):
        recops.concat_2d_jagged(va, oa, vb, None)
    bad = oa.clone()
    bad[-1] += 1
    with pytest.raises(RuntimeError, match="offsets_a"):
        recops.concat_2d_jagged(va, bad, vb, ob)


def test_compile_dynamic():
    f = torch.compile(lambda a, oa, b, ob: recops.concat_2d_jagged(a, oa, b, ob, 1),
                      fullgraph=True, dynamic=True)
    for B in (3, 5):
        gen = torch.Generator().manual_seed(B)
        va, oa = _side("jagged", B, 4, 6, torch.float32, "cpu", gen)
        vb, ob = _side("jagged", B, 4, 6, torch.float32, "cpu", gen)
        assert torch.equal(f(va, oa, vb, ob), formula(va, oa, vb, ob, 1))


# ---- compat names ----

@pytest.mark.parametrize("max_seq_len", [100, 2])
def test_sll_dense_jagged_cat_jagged_out(max_seq_len):
    gen = torch.Generator().manual_seed(9)
    a = torch.randn(5, generator=gen)
    lengths = [3, 0, 1, 4, 2]
    b_offsets = _offsets(lengths)
    b = torch.randn(int(b_offsets[-1]), generator=gen)
    c, c_offsets = sll.sll_dense_jagged_cat_jagged_out(a, b, b_offsets, max_seq_len)
    want = []
    for i, n in enumerate(lengths):
        seg = b[int(b_offsets[i]):int(b_offsets[i + 1])].clone()
        seg[max_seq_len:] = 0
        want += [a[i:i + 1], seg]
    assert torch.equal(c, torch.cat(want))
    assert torch.equal(c_offsets, b_offsets + torch.arange(6))


def test_gr_names():
    va, oa, vb, ob = _sample()
    out = gr.concat_2D_jagged(max_seq_len=9, values_left=va, values_right=vb,
                              max_len_left=5, max_len_right=4, offsets_left=oa,
                              offsets_right=ob)
    assert torch.equal(out, formula(va, oa, vb, ob))
    left, right = gr.split_2D_jagged(max_seq_len=9, values=out, max_len_left=5, max_len_right=4,
                                     offsets_left=oa, offsets_right=ob)
    assert torch.equal(left, va) and torch.equal(right, vb)
    vd = torch.randn(4, 2, 3, dtype=torch.float64)
    out = gr.concat_2D_jagged(9, vd.reshape(8, 3), vb, 2, 4, None, ob)
    assert torch.equal(out, formula(vd, None, vb, ob))
    left, right = gr.split_2D_jagged(9, out, max_len_left=2, max_len_right=4,
                                     offsets_right=ob)
    assert torch.equal(left, vd.reshape(8, 3)) and torch.equal(right, vb)


def test_gr_concat_1d_jagged_jagged():
    gen = torch.Generator().manual_seed(11)
    ll = torch.tensor([2, 0, 3, 1], dtype=torch.int32)
    lr = torch.tensor([0, 4, 1, 2], dtype=torch.int32)
    vl = torch.randn(int(ll.sum()), generator=gen)
    vr = torch.randn(int(lr.sum()), generator=gen)
    got = gr.concat_1d_jagged_jagged(ll, vl, lr, vr)
    want = formula(vl[:, None], _offsets(ll), vr[:, None], _offsets(lr)).reshape(-1)
    assert torch.equal(got, want)


def test_backward_keeps_no_input_data():
    va, oa, vb, ob = _sample()
    va.requires_grad_(True)
    vd = torch.randn(4, 2, 3, dtype=torch.float64, requires_grad=True)
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = recops.concat_2d_jagged(va, oa, vd, None, 1)
    floating = [t for t in packed if t.is_floating_point()]
    assert floating and all(t.untyped_storage().nbytes() <= 3 * 8 for t in floating)
    out.backward(torch.ones_like(out))
    assert torch.equal(va.grad, torch.ones_like(va)) and torch.equal(vd.grad, torch.ones_like(vd))


def test_double_backward_raises():
    va, oa, vb, ob = _sample()
    va.requires_grad_(True)
    out = recops.concat_2d_jagged(va, oa, vb, ob)
    with pytest.raises(RuntimeError, match="double backward is not supported"):
        torch.autograd.grad((out * out).sum(), va, create_graph=True)
