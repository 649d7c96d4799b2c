"""The jagged-dense elementwise ops through PyTorch (jagged_ops.md §2.3, §2.4(a)): the torch
formula on random data, opcheck (schema, fake/Meta, autograd registration), gradcheck in fp64,
non-contiguous inputs and the errors. Not collected itself (the leading underscore): each op's
test_<op>.py imports these tests and sets OP, which the `op` fixture reads."""

import pytest
import torch

import recops


@pytest.fixture
def op(request):
    """The op under test: the importing test module's OP."""
    return request.module.OP


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _offsets(lengths, device, dtype=torch.int64):
    o = torch.zeros(len(lengths) + 1, dtype=dtype)
    o[1:] = torch.tensor(lengths, dtype=dtype).cumsum(0)
    return o.to(device)


def _expected(op, x, offsets, y):
    """The card's formula, row by row, in fp64."""
    out = torch.zeros_like(x, dtype=torch.float64)
    S = y.size(1)
    for b in range(offsets.numel() - 1):
        s, e = int(offsets[b]), int(offsets[b + 1])
        for l in range(e - s):
            xv = x[s + l].double()
            if op == "jagged_dense_elementwise_add":
                out[s + l] = xv + y[b, l].double() if l < S else xv
            elif l < S:
                out[s + l] = xv * y[b, l].double()
    return out.to(x.dtype)


def _sample(lengths, S, E, dtype, device, off_dtype=torch.int64):
    offsets = _offsets(lengths, device, off_dtype)
    total_L = int(sum(lengths))
    x = torch.randn((total_L, *E), dtype=dtype, device=device)
    y = torch.randn((len(lengths), S, *E), dtype=dtype, device=device)
    return x, offsets, y


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("off_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("lengths,S,E", [([3, 0, 7, 1], 5, (4,)), ([2, 9], 0, (3,)), ([], 4, (2,)),
                                         ([0, 0], 3, (2,)), ([5, 1, 6], 4, (2, 3)), ([4, 2], 6, ())])
def test_matches_formula(device, dtype, off_dtype, lengths, S, E, op):
    x, offsets, y = _sample(lengths, S, E, dtype, device, off_dtype)
    out = getattr(recops, op)(x, offsets, y)
    torch.testing.assert_close(out.cpu(), _expected(op, x.cpu(), offsets.cpu(), y.cpu()), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device, op):
    x, offsets, y = _sample([3, 0, 7, 1], 5, (4,), torch.float32, device)
    x.requires_grad_(True)
    y.requires_grad_(True)
    torch.library.opcheck(getattr(torch.ops.recops, op).default, (x, offsets, y))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck(device, op):
    x, offsets, y = _sample([3, 0, 6, 1], 4, (2,), torch.float64, device)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: getattr(recops, op)(a, offsets, b), (x, y))


def test_noncontiguous_inputs(op):
    x, offsets, y = _sample([3, 2, 5], 4, (6,), torch.float32, "cpu")
    xs = torch.randn(x.size(0), 12)[:, ::2]
    ys = torch.randn(3, 8, 6)[:, ::2]
    torch.testing.assert_close(getattr(recops, op)(xs, offsets, ys),
                               _expected(op, xs, offsets, ys), rtol=0, atol=0)


def test_errors_name_the_argument_and_rule(op):
    x, offsets, y = _sample([2, 3], 4, (2,), torch.float32, "cpu")
    with pytest.raises(RuntimeError, match=op + r".*y's batch must be B"):
        getattr(recops, op)(x, offsets, y[:1])
    with pytest.raises(RuntimeError, match=op + r".*must share one dtype"):
        getattr(recops, op)(x, offsets, y.half())
    with pytest.raises(RuntimeError, match=op + r".*offsets must be non-decreasing"):
        getattr(recops, op)(x, torch.tensor([0, 4, 3]), y)
    with pytest.raises(RuntimeError, match=op + r".*the last offset must equal it"):
        getattr(recops, op)(x, torch.tensor([0, 2, 4]), y)
