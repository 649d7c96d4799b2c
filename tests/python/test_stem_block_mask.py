"""The Stem block-mask helpers (recops.stem.to_dense_block_mask / to_flex_block_mask) validate
their arguments (issue 21): out-of-range ids and lengths, wrong dtypes, shapes, devices and
scalars are a TypeError or ValueError naming the helper, the argument and the rule, where they
used to be dropped silently (an id = Kmax, a length > Kmax), counted twice (a duplicate id in the
FlexAttention mask) or fail deep inside torch."""

import pytest
import torch

from recops import stem

I32 = torch.int32
KMAX = 9


def _selection():
    """B = 1, Nq = 2, Qmax = 3, Kmax = 9: one row (0, 1, 2) selects 0, 5, 8, 2; the rest empty."""
    idx = torch.full((1, 2, 3, KMAX), -1, dtype=I32)
    n = torch.zeros(1, 2, 3, dtype=I32)
    idx[0, 1, 2, :4] = torch.tensor([0, 5, 8, 2], dtype=I32)
    n[0, 1, 2] = 4
    return idx, n


def _lens(lq=300, lk=1000):
    return torch.tensor([lq], dtype=I32), torch.tensor([lk], dtype=I32)


def test_valid_selection_still_accepted():
    idx, n = _selection()
    mask = stem.to_dense_block_mask(idx, n)
    assert mask[0, 1, 2].tolist() == [1, 0, 1, 0, 0, 1, 0, 0, 1] and int(mask.sum()) == 4
    # Entries past the length are ignored by the dense mask, whatever they hold.
    idx[0, 1, 2, 6] = 1000
    assert torch.equal(stem.to_dense_block_mask(idx, n), mask)
    idx[0, 1, 2, 6] = -1
    bm = stem.to_flex_block_mask(idx, n, *_lens(), block_size=128)
    assert bm.shape == (1, 2, 3 * 128, KMAX * 128)
    # An int64 selection and int64 lengths are integers too.
    stem.to_flex_block_mask(idx.long(), n.long(), *(x.long() for x in _lens()), causal=False)


@pytest.mark.parametrize("fn", ["to_dense_block_mask", "to_flex_block_mask"])
@pytest.mark.parametrize("bad_id", [KMAX, KMAX + 5, -1, -3])
def test_id_out_of_range_in_prefix(fn, bad_id):
    idx, n = _selection()
    idx[0, 1, 2, 3] = bad_id
    args = (idx, n) if fn == "to_dense_block_mask" else (idx, n, *_lens())
    with pytest.raises(ValueError, match=rf"{fn}: sparse_indices\[0, 1, 2, 3\] = {bad_id} is in "
                       rf"the valid prefix \(slot < sparse_seq_len = 4\) and must be a key block "
                       rf"id in \[0, Kmax = 9\)"):
        getattr(stem, fn)(*args)


@pytest.mark.parametrize("fn", ["to_dense_block_mask", "to_flex_block_mask"])
@pytest.mark.parametrize("length", [KMAX + 1, -1])
def test_length_out_of_range(fn, length):
    idx, n = _selection()
    n[0, 0, 1] = length
    args = (idx, n) if fn == "to_dense_block_mask" else (idx, n, *_lens())
    with pytest.raises(ValueError, match=rf"{fn}: sparse_seq_len\[0, 0, 1\] = {length} must be in "
                       rf"\[0, Kmax = 9\]"):
        getattr(stem, fn)(*args)


@pytest.mark.parametrize("fn", ["to_dense_block_mask", "to_flex_block_mask"])
def test_types_shapes_and_devices(fn):
    idx, n = _selection()
    f = getattr(stem, fn)
    extra = () if fn == "to_dense_block_mask" else _lens()
    with pytest.raises(TypeError, match=rf"{fn}: sparse_indices must have an integer dtype "
                       r".*got torch.float32"):
        f(idx.float(), n, *extra)
    with pytest.raises(TypeError, match=rf"{fn}: sparse_seq_len must have an integer dtype "
                       r".*got torch.bool"):
        f(idx, n.bool(), *extra)
    with pytest.raises(TypeError, match=rf"{fn}: sparse_indices must be a torch.Tensor, got "
                       r"NoneType"):
        f(None, n, *extra)
    with pytest.raises(ValueError, match=rf"{fn}: sparse_indices must be 4-D \[B, Nq, Qmax, "
                       r"Kmax\], got shape \[2, 3, 9\]"):
        f(idx[0], n, *extra)
    with pytest.raises(ValueError, match=rf"{fn}: sparse_seq_len must have shape \[B, Nq, Qmax\] "
                       r"= \[1, 2, 3\] .*got \[1, 2, 2\]"):
        f(idx, n[:, :, :2], *extra)
    with pytest.raises(ValueError, match=rf"{fn}: sparse_seq_len is on meta while "
                       r"sparse_indices is on cpu"):
        f(idx, n.to("meta"), *extra)


def test_flex_duplicate_id_refused():
    # FlexAttention walks kv_indices[:count]: a repeated block would count its keys twice.
    idx, n = _selection()
    idx[0, 1, 2, 3] = 5
    with pytest.raises(ValueError, match=r"to_flex_block_mask: sparse_indices\[0, 1, 2\] holds "
                       r"id 5 more than once in its valid prefix; ids must be unique"):
        stem.to_flex_block_mask(idx, n, *_lens())


@pytest.mark.parametrize("value", [KMAX, -2, 1000])
def test_flex_entries_past_the_length_must_be_ids(value):
    # from_kv_blocks gets every entry (-1 becomes 0), so one past the length must still be an id.
    idx, n = _selection()
    idx[0, 0, 0, 5] = value
    with pytest.raises(ValueError, match=rf"to_flex_block_mask: sparse_indices\[0, 0, 0, 5\] = "
                       rf"{value} is past the valid prefix and must be -1 or an id in "
                       rf"\[0, Kmax = 9\)"):
        stem.to_flex_block_mask(idx, n, *_lens())


@pytest.mark.parametrize("which,lens,match", [
    ("q", [3 * 128 + 1], r"q_seq_lens\[0\] = 385 must be in \[0, Qmax·block_size = 384\]"),
    ("q", [-1], r"q_seq_lens\[0\] = -1 must be in \[0, Qmax·block_size = 384\]"),
    ("kv", [KMAX * 128 + 1], r"kv_seq_lens\[0\] = 1153 must be in \[0, Kmax·block_size = 1152\]"),
    ("kv", [300, 300], r"kv_seq_lens must have B = 1 entries \(sparse_indices' batch\), got 2"),
])
def test_flex_lengths_checked(which, lens, match):
    idx, n = _selection()
    lq, lk = _lens()
    t = torch.tensor(lens, dtype=I32)
    lq, lk = (t, lk) if which == "q" else (lq, t)
    with pytest.raises(ValueError, match="to_flex_block_mask: " + match):
        stem.to_flex_block_mask(idx, n, lq, lk)


def test_flex_length_types():
    idx, n = _selection()
    lq, lk = _lens()
    with pytest.raises(TypeError, match=r"to_flex_block_mask: q_seq_lens must have an integer "
                       r"dtype .*got torch.float32"):
        stem.to_flex_block_mask(idx, n, lq.float(), lk)
    with pytest.raises(TypeError, match=r"to_flex_block_mask: kv_seq_lens must be a torch.Tensor, "
                       r"got list"):
        stem.to_flex_block_mask(idx, n, lq, [1000])
    with pytest.raises(ValueError, match=r"to_flex_block_mask: kv_seq_lens is on meta while "
                       r"sparse_indices is on cpu"):
        stem.to_flex_block_mask(idx, n, lq, lk.to("meta"))


@pytest.mark.parametrize("kw,exc,match", [
    ({"block_size": 0}, ValueError, r"block_size=0 must be >= 1"),
    ({"block_size": -128}, ValueError, r"block_size=-128 must be >= 1"),
    ({"block_size": 128.0}, TypeError, r"block_size must be an int, got float"),
    ({"block_size": True}, TypeError, r"block_size must be an int, got bool"),
    ({"causal": 1}, TypeError, r"causal must be a bool, got int"),
    ({"causal": None}, TypeError, r"causal must be a bool, got NoneType"),
])
def test_flex_scalars_checked(kw, exc, match):
    idx, n = _selection()
    with pytest.raises(exc, match="to_flex_block_mask: " + match):
        stem.to_flex_block_mask(idx, n, *_lens(), **kw)


def test_meta_tensors_give_shapes_without_reading_values():
    idx, n = _selection()
    mask = stem.to_dense_block_mask(idx.to("meta"), n.to("meta"))
    assert mask.shape == (1, 2, 3, KMAX) and mask.device.type == "meta"
