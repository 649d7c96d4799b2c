"""torch.nested jagged-layout tensors (issue 17 item 3): the conversions and the jagged-in ops take
one in place of (values, seq_offsets); jagged outputs come back nested with the same offsets.
Each is compared with the plain call on the nested tensor's values() and offsets(), forward and
backward."""

import pytest
import torch

import recops


def _nt(dtype=torch.float64, D=3, lens=(3, 0, 5, 1), seed=0):
    g = torch.Generator().manual_seed(seed)
    parts = [torch.randn(n, D, generator=g, dtype=dtype) for n in lens]
    return torch.nested.nested_tensor(parts, layout=torch.jagged, requires_grad=True)


def _plain(nt):
    return nt.values().detach().clone().requires_grad_(), nt.offsets()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_jagged_to_padded_dense(dtype):
    nt = _nt(dtype)
    v, off = _plain(nt)
    got = recops.jagged_to_padded_dense(nt, max_seq_len=4, padding_value=-1.0)
    want = recops.jagged_to_padded_dense(v, off, 4, -1.0)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    g = torch.randn_like(want)
    got.backward(g)
    want.backward(g)
    torch.testing.assert_close(nt.grad.values(), v.grad, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["jagged_dense_elementwise_add", "jagged_dense_elementwise_mul"])
def test_elementwise_returns_nested(name):
    fn = getattr(recops, name)
    nt = _nt()
    v, off = _plain(nt)
    y = torch.randn(4, 6, 3, dtype=torch.float64)
    got = fn(nt, y=y)
    want = fn(v, off, y)
    assert got.is_nested and got.layout == torch.jagged
    assert torch.equal(got.offsets(), off)
    torch.testing.assert_close(got.values(), want, rtol=0, atol=0)
    got.values().sum().backward()
    want.sum().backward()
    torch.testing.assert_close(nt.grad.values(), v.grad, rtol=0, atol=0)


def test_softmax_returns_nested():
    nt = _nt(D=2)
    v, off = _plain(nt)
    got = recops.jagged_softmax(nt, max_seq_len=3)
    want = recops.jagged_softmax(v, off, 3)
    assert got.is_nested
    torch.testing.assert_close(got.values(), want, rtol=0, atol=0)
    (got.values() ** 2).sum().backward()
    (want ** 2).sum().backward()
    torch.testing.assert_close(nt.grad.values(), v.grad, rtol=0, atol=0)


def test_nested_errors_name_the_argument():
    nt = _nt()
    y = torch.randn(4, 6, 3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"jagged_dense_elementwise_add: seq_offsets is required "
                       r"unless x_values is a torch.nested tensor"):
        recops.jagged_dense_elementwise_add(torch.randn(4, 3), y=y)
    with pytest.raises(ValueError, match=r"carries its offsets; seq_offsets must be None"):
        recops.jagged_dense_elementwise_add(nt, torch.tensor([0, 1]), y)
    with pytest.raises(ValueError, match=r"only layout=torch.jagged is accepted"):
        recops.jagged_to_padded_dense(torch.nested.nested_tensor([torch.randn(2, 3)]),
                                      max_seq_len=2)
    with pytest.raises(TypeError, match=r"missing required argument: 'max_seq_len'"):
        recops.jagged_to_padded_dense(nt)
