"""Bad inputs raise errors that name the op, the argument and the broken rule (jagged_ops.md §1.2),
and empty inputs give correctly shaped results."""

import pytest
import torch

import recops


def _t(x, device, dtype=torch.int64):
    return torch.tensor(x, dtype=dtype, device=device)


def _raises(match):
    return pytest.raises(RuntimeError, match=match)


def test_offsets_contents(device):
    v = torch.zeros(5, 2, device=device)
    j2d = recops.jagged_to_padded_dense
    with _raises(r"jagged_to_padded_dense: seq_offsets\[0\]=1; offsets must start at 0"):
        j2d(v, _t([1, 3, 5], device), 4)
    with _raises(r"jagged_to_padded_dense: seq_offsets\[2\]=2 < seq_offsets\[1\]=4; "
                 r"offsets must be non-decreasing"):
        j2d(v, _t([0, 4, 2, 5], device), 4)
    with _raises(r"jagged_to_padded_dense: seq_offsets\[2\]=4 but .*total_L.* is 5; "
                 r"the last offset must equal it"):
        j2d(v, _t([0, 2, 4], device), 4)
    d = torch.zeros(2, 3, 2, device=device)
    with _raises(r"dense_to_jagged: seq_offsets\[1\]=3 < seq_offsets\[0\]=0|"
                 r"dense_to_jagged: seq_offsets\[0\]=3; offsets must start at 0"):
        recops.dense_to_jagged(d, _t([3, 3, 5], device), 5)
    with _raises(r"dense_to_jagged: seq_offsets\[2\]=5 but total_L.* is 4; "
                 r"the last offset must equal it"):
        recops.dense_to_jagged(d, _t([0, 2, 5], device), 4)


def test_offsets_dtype_and_rank(device):
    v = torch.zeros(5, 2, device=device)
    with _raises(r"jagged_to_padded_dense: seq_offsets must be int32 or int64, got fp32"):
        recops.jagged_to_padded_dense(v, _t([0, 2, 5], device, torch.float32), 4)
    with _raises(r"jagged_to_padded_dense: seq_offsets must be 1-D \[B\+1\], got 2-D"):
        recops.jagged_to_padded_dense(v, _t([[0, 2], [3, 5]], device), 4)
    with _raises(r"jagged_to_padded_dense: seq_offsets must have at least one element"):
        recops.jagged_to_padded_dense(v[:0], _t([], device), 4)
    with _raises(r"jagged_to_padded_dense: values must have at least 1 dim"):
        recops.jagged_to_padded_dense(torch.zeros((), device=device), _t([0], device), 4)
    with _raises(r"dense_to_jagged: dense must have at least 2 dims"):
        recops.dense_to_jagged(torch.zeros(3, device=device), _t([0, 1, 2, 3], device))
    with _raises(r"dense_to_jagged: dense.size\(0\)=2 but seq_offsets has 4 elements"):
        recops.dense_to_jagged(torch.zeros(2, 3, device=device), _t([0, 1, 2, 3], device))
    with _raises(r"jagged_to_padded_dense: values has dtype ComplexFloat"):
        recops.jagged_to_padded_dense(torch.zeros(2, 2, dtype=torch.complex64, device=device),
                                      _t([0, 2], device), 2)


def test_negative_max_seq_len(device):
    with _raises(r"jagged_to_padded_dense: max_seq_len=-1 must be >= 0"):
        recops.jagged_to_padded_dense(torch.zeros(3, 2, device=device), _t([0, 3], device), -1)


def test_padding_value_for_integer_values(device):
    with _raises(r"jagged_to_padded_dense: padding_value"):
        recops.jagged_to_padded_dense(torch.zeros(3, 2, dtype=torch.int32, device=device),
                                      _t([0, 3], device), 4, 0.5)


def test_cumsum_errors(device):
    with _raises(r"complete_cumsum: t must be int32 or int64, got fp32"):
        recops.complete_cumsum(torch.zeros(3, device=device))
    with _raises(r"complete_cumsum: t must be 1-D \[n\] or 2-D \[R, n\], got 3-D"):
        recops.complete_cumsum(torch.zeros(2, 2, 2, dtype=torch.int64, device=device))
    with _raises(r"out \(out_dtype\) must be int32 or int64, got fp32"):
        recops.complete_cumsum(_t([1, 2], device), torch.float32)
    big = _t([2**30, 2**30, 2**30], device, torch.int32)
    with _raises(r"complete_cumsum: .*does not fit the int32 output"):
        recops.complete_cumsum(big)
        torch.cuda.synchronize() if device == "cuda" else None
    assert recops.complete_cumsum(big, torch.int64).tolist() == [0, 2**30, 2**31, 3 * 2**30]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_tensors_on_different_devices():
    v = torch.zeros(5, 2, device="cuda")
    with _raises(r"jagged_to_padded_dense: values is on cuda:0 but seq_offsets is on cpu; "
                 r"all tensors must be on one device"):
        recops.jagged_to_padded_dense(v, torch.tensor([0, 2, 5]), 4)
    with _raises(r"dense_to_jagged: dense is on cuda:0 but seq_offsets is on cpu"):
        recops.dense_to_jagged(torch.zeros(2, 3, 2, device="cuda"), torch.tensor([0, 2, 5]), 5)


def test_empty_inputs(device):
    # B = 0
    out = recops.jagged_to_padded_dense(torch.zeros(0, 3, device=device), _t([0], device), 4)
    assert out.shape == (0, 4, 3)
    out = recops.dense_to_jagged(torch.zeros(0, 4, 3, device=device), _t([0], device))
    assert out.shape == (0, 3)
    # all-zero lengths
    out = recops.jagged_to_padded_dense(torch.zeros(0, 2, device=device), _t([0, 0, 0], device),
                                        3, 5.0)
    assert out.shape == (2, 3, 2) and bool((out == 5.0).all())
    out = recops.dense_to_jagged(torch.ones(2, 3, 2, device=device), _t([0, 0, 0], device))
    assert out.shape == (0, 2)
    # D = 0
    out = recops.jagged_to_padded_dense(torch.zeros(5, 0, device=device), _t([0, 2, 5], device), 4)
    assert out.shape == (2, 4, 0)
    out = recops.dense_to_jagged(torch.zeros(2, 4, 0, device=device), _t([0, 2, 5], device))
    assert out.shape == (5, 0)
    # S = 0 with total_L > 0: every row is 0 (deviation 1)
    out = recops.dense_to_jagged(torch.zeros(2, 0, 3, device=device), _t([0, 2, 5], device))
    assert out.shape == (5, 3) and bool((out == 0).all())
    # cumsum of nothing
    assert recops.complete_cumsum(_t([], device)).tolist() == [0]
    assert recops.complete_cumsum(torch.zeros(3, 0, dtype=torch.int64, device=device)).shape == (3, 1)
    assert recops.exclusive_cumsum(_t([], device)).shape == (0,)


def test_non_contiguous_views(device):
    base = torch.arange(40.0, device=device).reshape(10, 4)
    off = _t([0, 3, 3, 5], device)
    # Row-strided slice: passes through with its strides.
    v = base[::2]  # [5, 4], row stride 8
    torch.testing.assert_close(recops.jagged_to_padded_dense(v, off, 4),
                               recops.jagged_to_padded_dense(v.contiguous(), off, 4), rtol=0, atol=0)
    # Last dim not unit-stride: copied once.
    vt = base[:5].t().contiguous().t()  # [5, 4] with strides (1, 5)
    torch.testing.assert_close(recops.jagged_to_padded_dense(vt, off, 4),
                               recops.jagged_to_padded_dense(vt.contiguous(), off, 4), rtol=0, atol=0)
    dense = torch.arange(120.0, device=device).reshape(3, 10, 4)[:, ::2]  # [3, 5, 4]
    torch.testing.assert_close(recops.dense_to_jagged(dense, off),
                               recops.dense_to_jagged(dense.contiguous(), off), rtol=0, atol=0)
    # Strided offsets.
    off2 = _t([0, 9, 3, 9, 3, 9, 5], device)[::2]
    torch.testing.assert_close(recops.jagged_to_padded_dense(v, off2, 4),
                               recops.jagged_to_padded_dense(v, off, 4), rtol=0, atol=0)
