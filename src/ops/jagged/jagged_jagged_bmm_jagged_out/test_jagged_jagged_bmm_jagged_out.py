"""jagged_jagged_bmm_jagged_out through PyTorch: the torch formula on random data, N_b above
max_seq_len (row stride N_b), the backward against the formula, opcheck, gradcheck,
torch.compile and the errors. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch

import recops

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _jagged2_bmm_pytest import DEVICES, DTYPES, close, make, torch_array, torch_outer  # noqa: E402

OP = torch.ops.recops.jagged_jagged_bmm_jagged_out
SIDES = [0, 3, 17, 1, 0, 9, 6]


def call(x, y, lengths, offsets, sq_offsets, max_len):
    return recops.jagged_jagged_bmm_jagged_out(x, y, lengths, offsets, sq_offsets,
                                               int(sq_offsets[-1]), max_len)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_len", [0, 1, 6, 20])
def test_matches_formula(device, dtype, index_dtype, max_len):
    torch.manual_seed(max_len)
    _, x, y, lengths, offsets, sq_offsets = make(SIDES, 5, dtype, device, index_dtype)
    z = call(x, y, lengths, offsets, sq_offsets, max_len)
    assert z.shape == (int(sq_offsets[-1]),) and z.dtype == dtype
    close(z, torch_outer(x, y, lengths, offsets, sq_offsets, max_len), dtype)


def test_row_stride_is_the_side():
    # N = 3 > max_seq_len = 2: rows of the block are 3 apart, the window is its top-left 2 x 2.
    x = torch.tensor([[1.0], [2.0], [3.0]])
    z = recops.jagged_jagged_bmm_jagged_out(x, x, torch.tensor([3]), torch.tensor([0, 3]),
                                            torch.tensor([0, 9]), 9, 2)
    assert z.tolist() == [1.0, 2.0, 0.0, 2.0, 4.0, 0.0, 0.0, 0.0, 0.0]


def test_strided_inputs():
    _, x, y, lengths, offsets, sq_offsets = make([4, 0, 5], 3, torch.float32)
    xs = torch.zeros(x.shape[0], 6)
    xs[:, 1:4] = x
    z = call(xs[:, 1:4], y, lengths, offsets, sq_offsets, 4)
    assert torch.equal(z, call(x, y, lengths, offsets, sq_offsets, 4))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("max_len", [2, 20])
def test_backward(device, max_len):
    _, x, y, lengths, offsets, sq_offsets = make([4, 0, 2, 5], 3, torch.float64, device)
    x.requires_grad_(True)
    y.requires_grad_(True)
    z = call(x, y, lengths, offsets, sq_offsets, max_len)
    grad = torch.randn_like(z)
    dx, dy = torch.autograd.grad(z, (x, y), grad)
    close(dx, torch_array(grad, y, lengths, offsets, sq_offsets, max_len), torch.float64)
    close(dy, torch_array(grad, x, lengths, offsets, sq_offsets, max_len, transpose=True),
          torch.float64)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    _, x, y, lengths, offsets, sq_offsets = make([3, 0, 5], 4, torch.float32, device)
    t = int(sq_offsets[-1])
    torch.library.opcheck(OP.default, (x.requires_grad_(True), y.requires_grad_(True), lengths,
                                       offsets, sq_offsets, t, 4))
    torch.library.opcheck(torch.ops.recops.jagged_jagged_bmm_jagged_out_bwd.default,
                          (torch.randn(t, device=device), x.detach(), y.detach(), lengths,
                           offsets, sq_offsets, t, 4))


def test_gradcheck():
    _, x, y, lengths, offsets, sq_offsets = make([2, 0, 4, 1], 3)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda a, b: call(a, b, lengths, offsets, sq_offsets, 3), (x, y))


def test_compile_dynamic():
    fn = torch.compile(lambda *a: recops.jagged_jagged_bmm_jagged_out(*a), fullgraph=True,
                       dynamic=True)
    for sides, m in [([2, 3], 4), ([1, 4, 0, 2], 3)]:
        _, x, y, lengths, offsets, sq_offsets = make(sides, 3, torch.float32)
        t = int(sq_offsets[-1])
        assert torch.equal(fn(x, y, lengths, offsets, sq_offsets, t, m),
                           call(x, y, lengths, offsets, sq_offsets, m))


def test_errors():
    _, x, y, lengths, offsets, sq_offsets = make([2, 3], 3)
    f = recops.jagged_jagged_bmm_jagged_out
    with pytest.raises(RuntimeError, match="z_offsets\\[2\\]-z_offsets\\[1\\]=9 but seq_lengths"):
        f(x, y, torch.tensor([2, 2]), offsets, sq_offsets, 13, 3)
    with pytest.raises(RuntimeError, match="z_offsets\\[2\\]=13"):
        f(x, y, lengths, offsets, sq_offsets, 12, 3)
    with pytest.raises(RuntimeError, match="total_z=-1 must be >= 0"):
        f(x, y, lengths, offsets, sq_offsets, -1, 3)
    with pytest.raises(RuntimeError, match="max_seq_len=-1 must be >= 0"):
        f(x, y, lengths, offsets, sq_offsets, 13, -1)
    with pytest.raises(RuntimeError, match="y must be like x"):
        f(x, y[:, :2], lengths, offsets, sq_offsets, 13, 3)


def test_compat_sll():
    from recops.compat import sll
    _, x, y, lengths, offsets, sq_offsets = make([3, 0, 5], 4, torch.float32)
    got = sll.sll_jagged_jagged_bmm_jagged_out(x, y, lengths, offsets, lengths, offsets,
                                               lengths ** 2, sq_offsets, 4)
    assert torch.equal(got, call(x, y, lengths, offsets, sq_offsets, 4))
    with pytest.raises(ValueError, match="y_offsets must equal x_offsets"):
        sll.sll_jagged_jagged_bmm_jagged_out(x, y, lengths, offsets, lengths, offsets.flip(0),
                                             lengths ** 2, sq_offsets, 4)
