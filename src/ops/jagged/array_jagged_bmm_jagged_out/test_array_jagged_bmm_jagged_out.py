"""array_jagged_bmm_jagged_out through PyTorch: the torch formula on random data, N_b above
max_seq_len (row stride N_b), the backward against the formula, opcheck, gradcheck,
torch.compile and the errors. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch

import recops

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _jagged2_bmm_pytest import DEVICES, DTYPES, close, make, torch_array, torch_outer  # noqa: E402

OP = torch.ops.recops.array_jagged_bmm_jagged_out
SIDES = [0, 3, 17, 1, 0, 9, 6]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_len", [0, 1, 6, 20])
def test_matches_formula(device, dtype, index_dtype, max_len):
    torch.manual_seed(max_len)
    x, _, y, lengths, offsets, sq_offsets = make(SIDES, 5, dtype, device, index_dtype)
    z = recops.array_jagged_bmm_jagged_out(x, y, lengths, sq_offsets, offsets, max_len)
    assert z.shape == y.shape and z.dtype == dtype
    close(z, torch_array(x, y, lengths, offsets, sq_offsets, max_len), dtype)


def test_row_stride_is_the_side():
    # N = 3 > max_seq_len = 2: x's window row 1 starts at element 3 (SLL's stride would take 2).
    x = torch.arange(9, dtype=torch.float32)
    y = torch.ones(3, 1)
    z = recops.array_jagged_bmm_jagged_out(x, y, torch.tensor([3]), torch.tensor([0, 9]),
                                           torch.tensor([0, 3]), 2)
    assert z.flatten().tolist() == [0.0 + 1.0, 3.0 + 4.0, 0.0]


def test_strided_inputs():
    x, _, y, lengths, offsets, sq_offsets = make([4, 0, 5], 3, torch.float32)
    xs = torch.zeros(x.numel(), 2)
    xs[:, 1] = x
    ys = torch.zeros(y.shape[0], 7)
    ys[:, 2:5] = y
    z = recops.array_jagged_bmm_jagged_out(xs[:, 1], ys[:, 2:5], lengths, sq_offsets, offsets, 4)
    assert torch.equal(z, recops.array_jagged_bmm_jagged_out(x, y, lengths, sq_offsets, offsets, 4))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("max_len", [2, 20])
def test_backward(device, max_len):
    x, _, y, lengths, offsets, sq_offsets = make([4, 0, 2, 5], 3, torch.float64, device)
    x.requires_grad_(True)
    y.requires_grad_(True)
    z = recops.array_jagged_bmm_jagged_out(x, y, lengths, sq_offsets, offsets, max_len)
    grad = torch.randn_like(z)
    dx, dy = torch.autograd.grad(z, (x, y), grad)
    close(dx, torch_outer(grad, y, lengths, offsets, sq_offsets, max_len), torch.float64)
    close(dy, torch_array(x, grad, lengths, offsets, sq_offsets, max_len, transpose=True),
          torch.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, _, y, lengths, offsets, sq_offsets = make([3, 0, 5], 4, torch.float32, device)
    args = (x.requires_grad_(True), y.requires_grad_(True), lengths, sq_offsets, offsets, 4)
    torch.library.opcheck(OP.default, args)
    torch.library.opcheck(torch.ops.recops.array_jagged_bmm_jagged_out_bwd.default,
                          (torch.randn_like(y), x.detach(), y.detach(), lengths, sq_offsets,
                           offsets, 4))


def test_gradcheck():
    x, _, y, lengths, offsets, sq_offsets = make([2, 0, 4, 1], 3)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b: recops.array_jagged_bmm_jagged_out(a, b, lengths, sq_offsets, offsets, 3),
        (x, y))


def test_compile_dynamic():
    fn = torch.compile(lambda *a: recops.array_jagged_bmm_jagged_out(*a), fullgraph=True,
                       dynamic=True)
    for sides, m in [([2, 3], 4), ([1, 4, 0, 2], 3)]:
        x, _, y, lengths, offsets, sq_offsets = make(sides, 3, torch.float32)
        assert torch.equal(fn(x, y, lengths, sq_offsets, offsets, m),
                           recops.array_jagged_bmm_jagged_out(x, y, lengths, sq_offsets, offsets, m))


def test_errors():
    x, _, y, lengths, offsets, sq_offsets = make([2, 3], 3)
    f = recops.array_jagged_bmm_jagged_out
    with pytest.raises(RuntimeError, match="x_offsets\\[2\\]-x_offsets\\[1\\]=9 but seq_lengths"):
        f(x, y, torch.tensor([2, 2]), sq_offsets, offsets, 3)
    with pytest.raises(RuntimeError, match="y_offsets\\[2\\]-y_offsets\\[1\\]=2 but seq_lengths"):
        f(x, y[:4], lengths, sq_offsets, torch.tensor([0, 2, 4]), 3)
    with pytest.raises(RuntimeError, match="max_seq_len=-1 must be >= 0"):
        f(x, y, lengths, sq_offsets, offsets, -1)
    with pytest.raises(RuntimeError, match="y must be fp64, fp32, fp16 or bf16"):
        f(x.long(), y.long(), lengths, sq_offsets, offsets, 3)
    with pytest.raises(RuntimeError, match="x must be 1-D \\[sum N_b\\^2\\] of y's dtype"):
        f(x.float(), y, lengths, sq_offsets, offsets, 3)


def test_compat_sll():
    from recops.compat import sll
    x, _, y, lengths, offsets, sq_offsets = make([3, 0, 5], 4, torch.float32)
    got = sll.sll_array_jagged_bmm_jagged_out(x, y, lengths ** 2, sq_offsets, lengths, offsets,
                                              lengths, offsets, 4)
    assert torch.equal(got, recops.array_jagged_bmm_jagged_out(x, y, lengths, sq_offsets,
                                                               offsets, 4))
