"""recops.compat.fbgemm against the canonical ops, on the cases' samples."""

import pytest
import torch

from recops import testing
from recops.compat import fbgemm


def _samples(op):
    return [pytest.param(s, id=s.name) for s in testing.sample_inputs(op, "cpu")
            if s.args[0].dtype != torch.float8_e4m3fn and not testing.torch_cannot_hold(s)][:12]


def _same(a, b):
    assert a.shape == b.shape and a.dtype == b.dtype
    torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("s", _samples("jagged_to_padded_dense"))
def test_jagged_to_padded_dense(s):
    values, off, max_l = s.args
    pad = s.kwargs.get("padding_value", 0.0)
    want = torch.ops.recops.jagged_to_padded_dense(values, off, max_l, pad)
    _same(fbgemm.jagged_to_padded_dense(values, [off], [max_l], pad), want)
    if values.dim() == 2 and pad == 0.0:
        _same(fbgemm.jagged_2d_to_dense(values, off, max_l), want)
    finite_integral = pad == pad and abs(pad) != float("inf") and pad == int(pad)
    if values.dim() == 1 and finite_integral:
        _same(fbgemm.jagged_1d_to_dense(values, off, max_l, int(pad)), want)


@pytest.mark.parametrize("s", _samples("dense_to_jagged"))
def test_dense_to_jagged(s):
    dense, off = s.args
    total_L = s.kwargs.get("total_L")
    values, offsets = fbgemm.dense_to_jagged(dense, [off], total_L)
    _same(values, torch.ops.recops.dense_to_jagged(dense, off, total_L))
    assert len(offsets) == 1 and offsets[0] is off


@pytest.mark.parametrize("name", ["complete", "exclusive", "inclusive"])
def test_cumsum(name):
    t = testing.generate_values((37,), "int64", 5, value_range=(0, 64))
    got = getattr(fbgemm, f"asynchronous_{name}_cumsum")(t)
    _same(got, getattr(torch.ops.recops, f"{name}_cumsum")(t))


def test_more_than_one_jagged_dim_is_refused():
    v = torch.zeros(3, 2)
    off = torch.tensor([0, 3])
    with pytest.raises(ValueError, match="exactly one jagged dimension"):
        fbgemm.jagged_to_padded_dense(v, [off, off], [3, 3])
