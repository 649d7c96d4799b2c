"""Empty inputs through every jagged op's public Python function and the compat wrappers
(recops.compat.fbgemm / sll / torchrec) on the CPU (issue 21: an empty input is valid). Each op
runs on three layouts: B = 0, B = 3 with every sequence empty, and B = 3 with one empty sequence
among non-empty ones (the control that the inputs are right). Outputs must have the shapes the
op's contract gives, hold no unwritten values (the empty parts are 0, or the padding), and the
backward of the differentiable ones must run and give zeros where nothing was read."""

import pytest
import torch

import recops
from recops.compat import fbgemm, sll

LAYOUTS = {"b0": [], "all_empty": [0, 0, 0], "one_empty": [2, 0, 3]}
F32 = torch.float32


def _off(lengths, dtype=torch.int64):
    return torch.tensor([0] + torch.tensor(lengths, dtype=torch.int64).cumsum(0).tolist(),
                        dtype=dtype)


def _rand(*shape, grad=False):
    g = torch.Generator().manual_seed(sum(shape) + len(shape))
    t = torch.rand(*shape, generator=g, dtype=torch.float64).to(F32) + 0.5
    return t.requires_grad_(grad)


def _backward(out, *inputs):
    """Sum of the outputs backward; returns the inputs' gradients (zeros where none came)."""
    outs = [o for o in (out if isinstance(out, (tuple, list)) else [out])
            if isinstance(o, torch.Tensor) and o.is_floating_point() and o.requires_grad]
    loss = sum(o.double().sum() for o in outs)
    grads = torch.autograd.grad(loss, inputs, allow_unused=True) if outs else [None] * len(inputs)
    return [torch.zeros_like(x) if g is None else g for x, g in zip(inputs, grads)]


def _zero_where_empty(t, L, value=0):
    """Every entry of t[b] equals `value` for each empty sequence b."""
    for b, n in enumerate(L):
        if n == 0:
            assert torch.all(t[b] == value), (b, t[b])


def _square_offsets(lengths):
    return _off([n * n for n in lengths])


# ---- one function per op: (lengths) -> checks --------------------------------------------------

def op_jagged_to_padded_dense(L):
    B, S = len(L), max(L, default=0)
    v = _rand(sum(L), 4, grad=True)
    out = recops.jagged_to_padded_dense(v, _off(L), S, padding_value=-1.0)
    assert out.shape == (B, S, 4)
    for b, n in enumerate(L):
        assert torch.all(out[b, n:] == -1.0)
    assert torch.equal(fbgemm.jagged_to_padded_dense(v, [_off(L)], [S], -1.0), out)
    assert fbgemm.jagged_2d_to_dense(v, _off(L), S).shape == (B, S, 4)
    assert fbgemm.jagged_1d_to_dense(v[:, 0].contiguous(), _off(L), S).shape == (B, S)
    (g,) = _backward(out, v)
    assert g.shape == v.shape


def op_dense_to_jagged(L):
    B, S = len(L), max(L, default=0)
    d = _rand(B, S, 3, grad=True)
    out = recops.dense_to_jagged(d, _off(L))
    assert out.shape == (sum(L), 3)
    values, offsets = fbgemm.dense_to_jagged(d, [_off(L)])
    assert torch.equal(values, out) and torch.equal(offsets[0], _off(L))
    (g,) = _backward(out, d)
    for b, n in enumerate(L):
        assert torch.all(g[b, n:] == 0)


def op_cumsum(L):
    t = torch.tensor(L, dtype=torch.int64)
    assert torch.equal(recops.complete_cumsum(t), _off(L))
    assert recops.exclusive_cumsum(t).shape == (len(L),)
    assert recops.inclusive_cumsum(t).shape == (len(L),)
    assert torch.equal(fbgemm.asynchronous_complete_cumsum(t), _off(L))
    assert fbgemm.asynchronous_exclusive_cumsum(t).shape == (len(L),)
    assert fbgemm.asynchronous_inclusive_cumsum(t).shape == (len(L),)


def op_expand_1d_jagged_to_dense(L):
    v = torch.arange(1, sum(L) + 1, dtype=torch.int64)
    out = recops.expand_1d_jagged_to_dense(v, _off(L), 4)
    assert out.shape == (len(L), 4)
    _zero_where_empty(out, L, 0)


def op_jagged_softmax(L):
    S = max(L, default=0)
    v = _rand(sum(L), 2, grad=True)
    out = recops.jagged_softmax(v, _off(L), S)
    assert out.shape == v.shape
    assert fbgemm.jagged_softmax(v, _off(L), S)[0].shape == v.shape
    assert sll.sll_jagged_softmax(v, _off(L), S).shape == v.shape
    _backward(out, v)


def op_jagged_dense_elementwise(L):
    B, S = len(L), max(L, default=0)
    x = _rand(sum(L), 3, grad=True)
    y = _rand(B, S, 3, grad=True)
    add = recops.jagged_dense_elementwise_add(x, _off(L), y)
    mul = recops.jagged_dense_elementwise_mul(x, _off(L), y)
    assert add.shape == x.shape and mul.shape == x.shape
    assert fbgemm.jagged_dense_elementwise_add(x, [_off(L)], y).shape == (B, S, 3)
    assert fbgemm.jagged_dense_elementwise_add_jagged_output(x, [_off(L)], y)[0].shape == x.shape
    assert fbgemm.jagged_dense_elementwise_mul(x, [_off(L)], y)[0].shape == x.shape
    assert sll.sll_jagged_dense_elementwise_add(x, _off(L), y, S).shape == x.shape
    gx, gy = _backward(mul, x, y)
    for b, n in enumerate(L):
        assert torch.all(gy[b, n:] == 0)


def op_jagged_dense_bmm(L):
    B, S = len(L), max(L, default=0)
    x = _rand(sum(L), 3, grad=True)
    y = _rand(B, 3, 5, grad=True)
    z = recops.jagged_dense_bmm(x, _off(L), y, S)
    assert z.shape == (sum(L), 5)
    assert fbgemm.jagged_dense_bmm(x, _off(L), y, S)[0].shape == z.shape
    assert sll.sll_jagged_dense_bmm(x, y, _off(L), S, False).shape == z.shape
    gx, gy = _backward(z, x, y)
    _zero_where_empty(gy, L, 0)


def op_jagged_jagged_bmm(L):
    S = max(L, default=0)
    x = _rand(sum(L), 3, grad=True)
    y = _rand(sum(L), 4, grad=True)
    z = recops.jagged_jagged_bmm(x, y, _off(L), S)
    assert z.shape == (len(L), 3, 4)
    _zero_where_empty(z, L, 0)
    assert fbgemm.jagged_jagged_bmm(x, y, _off(L), S).shape == z.shape
    assert sll.sll_jagged_jagged_bmm(x, y, _off(L), S, False).shape == z.shape
    _backward(z, x, y)


def op_batched_dense_vec_jagged_2d_mul(L):
    B, H, D = len(L), 2, 3
    v = _rand(B * H, max(L, default=0) + 1, grad=True)
    a = _rand(sum(L), H * D, grad=True)
    out = fbgemm.batched_dense_vec_jagged_2d_mul(v, a, _off(L))
    # B = 0 leaves H unknown: H = 1, [0, H·D], as FBGEMM's CPU op answers
    assert out.shape == ((B * H, D) if B else (0, H * D))
    _backward(out, v, a)


def op_jagged_dense_flash_attention(L):
    B, S, D, T = len(L), max(L, default=0), 4, 3
    q, v = _rand(sum(L), D, grad=True), _rand(sum(L), D, grad=True)
    k = _rand(B, D, T, grad=True)
    bias = _rand(B, S, T, grad=True)
    out = recops.jagged_dense_flash_attention(q, k, v, bias, _off(L), S)
    assert out.shape == (B, T, D)
    for b, n in enumerate(L):
        if n == 0:
            assert torch.all(out[b] == 0)  # an empty sequence gives 0 (jagged_ops.md §4)
    assert sll.sll_jagged_dense_flash_attention(q, k, v, bias, _off(L), S).shape == out.shape
    _backward(out, q, k, v, bias)


def op_multi_head_jagged_flash_attention(L):
    S = max(L, default=0)
    q, k, v = (_rand(2, sum(L), 4, grad=True) for _ in range(3))
    out = recops.multi_head_jagged_flash_attention(q, k, v, _off(L), S)
    assert out.shape == q.shape
    assert sll.sll_multi_head_jagged_flash_attention(q, k, v, _off(L), S).shape == q.shape
    _backward(out, q, k, v)


def op_jagged2_to_padded_dense(L):
    S = max(L, default=0)
    x = _rand(sum(n * n for n in L), grad=True)
    out = recops.jagged2_to_padded_dense(x, _square_offsets(L), S, padding_value=7.0)
    assert out.shape == (len(L), S, S)
    for b, n in enumerate(L):
        if n == 0:
            assert torch.all(out[b] == 7.0)
    assert sll.sll_jagged2_to_padded_dense(x, _square_offsets(L), S, 7.0).shape == out.shape
    _backward(out, x)


def op_jagged2_softmax(L):
    S = max(L, default=0)
    x = _rand(sum(n * n for n in L), grad=True)
    for tr in (False, True):
        out = recops.jagged2_softmax(x, _square_offsets(L), S, tr)
        assert out.shape == x.shape
        assert sll.sll_jagged2_softmax(x, _off(L), _square_offsets(L), S, tr).shape == x.shape
        _backward(out, x)


def op_jagged2_dense_elementwise_mul(L):
    S = max(L, default=0)
    x = _rand(sum(n * n for n in L), grad=True)
    y = _rand(S, S)
    lengths = torch.tensor(L, dtype=torch.int64)
    out = recops.jagged2_dense_elementwise_mul(x, y, lengths, _square_offsets(L), S)
    assert out.shape == x.shape
    assert sll.sll_jagged_dense_elementwise_mul_jagged_out(
        x, y, lengths, _square_offsets(L), S).shape == x.shape
    _backward(out, x)


def op_array_jagged_bmm_jagged_out(L):
    S = max(L, default=0)
    x = _rand(sum(n * n for n in L), grad=True)
    y = _rand(sum(L), 3, grad=True)
    lengths = torch.tensor(L, dtype=torch.int64)
    z = recops.array_jagged_bmm_jagged_out(x, y, lengths, _square_offsets(L), _off(L), S)
    assert z.shape == y.shape
    assert sll.sll_array_jagged_bmm_jagged_out(
        x, y, lengths * lengths, _square_offsets(L), lengths, _off(L), lengths, _off(L),
        S).shape == y.shape
    _backward(z, x, y)


def op_jagged_jagged_bmm_jagged_out(L):
    S = max(L, default=0)
    x, y = _rand(sum(L), 3, grad=True), _rand(sum(L), 3, grad=True)
    lengths = torch.tensor(L, dtype=torch.int64)
    total = sum(n * n for n in L)
    z = recops.jagged_jagged_bmm_jagged_out(x, y, lengths, _off(L), _square_offsets(L), total, S)
    assert z.shape == (total,)
    assert sll.sll_jagged_jagged_bmm_jagged_out(
        x, y, lengths, _off(L), lengths, _off(L), lengths * lengths, _square_offsets(L),
        S).shape == z.shape
    _backward(z, x, y)


def op_concat_2d_jagged(L):
    B = len(L)
    a = _rand(sum(L), 2, grad=True)
    b = _rand(B, 3, 2, grad=True)
    out = recops.concat_2d_jagged(a, _off(L), b, None, 0, False)
    assert out.shape == (sum(L) + 3 * B, 2)
    d = _rand(B, 1)
    c, c_off = sll.sll_dense_jagged_cat_jagged_out(d.reshape(-1), a[:, 0].detach().contiguous(),
                                                   _off(L), max(L, default=0))
    assert c.shape == (sum(L) + B,) and torch.equal(c_off, _off([n + 1 for n in L]))
    _backward(out, a, b)


def op_concat_1d_jagged(L):
    B = len(L)
    a = _rand(sum(L), grad=True)
    b = _rand(2 * sum(L), grad=True)
    values, offsets = recops.concat_1d_jagged(a, _off(L), b, _off([2 * n for n in L]))
    assert values.shape == (3 * sum(L),) and torch.equal(offsets, _off([3 * n for n in L]))
    d = _rand(B, grad=True)  # a dense [B] part: one scalar per sample
    values, offsets = recops.concat_1d_jagged(d, None, a, _off(L))
    assert values.shape == (sum(L) + B,) and torch.equal(offsets, _off([n + 1 for n in L]))
    _backward(values, d, a)


def op_segment_sum_csr(L):
    seg = _off(L)
    values = _rand(2 * sum(L))
    out = recops.segment_sum_csr(2, seg, values)
    assert out.shape == (len(L),)
    _zero_where_empty(out, L, 0)
    assert torch.equal(fbgemm.segment_sum_csr(2, seg, values), out)


def op_jagged_index_select(L):
    B = len(L)
    v = _rand(sum(L), 3, grad=True)
    lengths = torch.tensor(L, dtype=torch.int64)
    for idx in ([], list(range(B))[::-1] * 2):
        idx = torch.tensor(idx, dtype=torch.int64)
        rows = sum(L[i] for i in idx.tolist())
        out, out_len = recops.jagged_index_select(v, lengths, idx)  # rows computed on the host
        assert out.shape == (rows, 3) and torch.equal(out_len, lengths[idx])
        assert fbgemm.jagged_index_select(v, lengths, idx)[0].shape == out.shape
        (g,) = _backward(out, v)
        assert g.shape == v.shape


def op_keyed_jagged_index_select_dim1(L):
    F_, B = 2, len(L)
    lengths = torch.tensor(L * F_, dtype=torch.int64)
    values = _rand(int(lengths.sum()), grad=True)
    weights = _rand(int(lengths.sum()))
    for idx in ([], list(range(B))):
        idx = torch.tensor(idx, dtype=torch.int64)
        if B == 0:
            continue  # batch_size must be >= 1 (the KJT stride); B = 0 is the empty key list
        out = recops.keyed_jagged_index_select_dim1(values, lengths, _off(lengths.tolist()), idx,
                                                    B, weights)
        assert out[1].shape == (F_ * idx.numel(),)
        fb = fbgemm.keyed_jagged_index_select_dim1(values, lengths, _off(lengths.tolist()), idx, B,
                                                   weights)
        assert len(fb) == 3 and torch.equal(fb[0], out[0])
        _backward(out[0], values)
    # No keys at all: lengths [0], any batch size.
    empty = torch.zeros(0, dtype=torch.int64)
    out = recops.keyed_jagged_index_select_dim1(_rand(0), empty, _off([]),
                                                torch.tensor([0, 1]), 2)
    assert out[0].shape == (0,) and out[1].shape == (0,)


def op_permute_sparse_data(L):
    T = len(L)
    lengths = torch.tensor(L, dtype=torch.int64)
    values = _rand(sum(L), 2)
    weights = _rand(sum(L))
    for perm in ([], list(range(T))[::-1]):
        perm = torch.tensor(perm, dtype=torch.int64)
        pl, pv, pw = recops.permute_1D_sparse_data(perm, lengths, values, weights)
        assert torch.equal(pl, lengths[perm]) and pv.shape[0] == int(lengths[perm].sum())
        fb = fbgemm.permute_1D_sparse_data(perm, lengths, values, weights)
        assert torch.equal(fb[1], pv)
        # 2-D: T features of B = 2 samples, and T features of B = 0 samples.
        for B in (2, 0):
            l2 = lengths.repeat_interleave(B).reshape(T, B) if B else torch.zeros(T, 0,
                                                                                  dtype=torch.int64)
            v2 = _rand(int(l2.sum()))
            pl2, pv2, _ = recops.permute_2D_sparse_data(perm, l2, v2)
            assert pl2.shape == (perm.numel(), B) and pv2.shape == (int(l2[perm].sum()),)
            assert torch.equal(fbgemm.permute_2D_sparse_data(perm, l2, v2)[1], pv2)


def op_offsets_range(L):
    off = _off(L)[:-1]
    assert fbgemm.offsets_range(off, sum(L)).shape == (sum(L),)


def op_stacked_jagged_to_dense(L):
    B = len(L)
    lengths = torch.tensor([L, L], dtype=torch.int64).reshape(2, B)
    values = _rand(2 * sum(L))
    outs = fbgemm.stacked_jagged_1d_to_dense(values, lengths, [0, sum(L), 2 * sum(L)], [4, 4])
    assert [o.shape for o in outs] == [(B, 4), (B, 4)]


OPS = {name[3:]: fn for name, fn in sorted(globals().items()) if name.startswith("op_")}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("op", sorted(OPS))
def test_empty(op, layout):
    OPS[op](LAYOUTS[layout])


def test_every_jagged_op_is_swept():
    """Each op of the jagged family (its torch.ops.recops name) is reached by a function above:
    a new op must be added here."""
    import inspect
    from pathlib import Path

    text = inspect.getsource(inspect.getmodule(test_empty))
    folders = Path(__file__).resolve().parents[2] / "src" / "ops" / "jagged"
    names = {p.name for p in folders.iterdir() if p.is_dir() and p.name != "common"}
    names = (names - {"cumsum"}) | {"complete_cumsum", "exclusive_cumsum", "inclusive_cumsum"}
    missing = sorted(n for n in names if f"recops.{n}(" not in text)
    assert not missing, missing


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_torchrec_compat(layout):
    pytest.importorskip("torchrec", reason="torchrec is not installed in this venv")
    from torchrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor

    from recops.compat import torchrec as rt

    L = LAYOUTS[layout]
    B = len(L)
    jt = JaggedTensor(values=_rand(sum(L)), lengths=torch.tensor(L, dtype=torch.int64))
    assert rt.to_padded_dense(jt).shape == (B, max(L, default=0))
    lengths = torch.tensor(L * 2, dtype=torch.int64)
    kjt = KeyedJaggedTensor(keys=["a", "b"], values=_rand(int(lengths.sum())), lengths=lengths,
                            weights=_rand(int(lengths.sum())), stride=B)
    if B:  # torchrec's own KeyedJaggedTensor.to_dict fails for stride 0 (IndexError, 1.8.0)
        dense = rt.kjt_to_padded_dense(kjt, max_lengths=3)
        assert [d.shape for d in dense.values()] == [(B, 3), (B, 3)]
    assert rt.kjt_permute(kjt, [1, 1, 0]).lengths().shape == (3 * B,)
    assert rt.kjt_permute(kjt, []).values().shape == (0,)
    if B:
        sel = rt.kjt_index_select_dim1(kjt, torch.tensor([], dtype=torch.int64))
        assert sel.values().shape == (0,) and sel.stride() == 0
        sel = rt.kjt_index_select_dim1(kjt, torch.arange(B))
        assert torch.equal(sel.values(), kjt.values())
