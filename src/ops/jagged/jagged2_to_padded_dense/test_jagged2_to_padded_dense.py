"""jagged2_to_padded_dense through PyTorch: the formula on random data, N_b above max_length,
opcheck, gradcheck, torch.compile and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(sides, dtype=torch.float64, device="cpu", offsets_dtype=torch.int64):
    offsets = torch.zeros(len(sides) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(torch.tensor(sides, dtype=torch.int64) ** 2, 0)
    n = int(offsets[-1])
    if dtype.is_floating_point:
        values = torch.randn(n, dtype=torch.float64).to(dtype)
    else:
        values = torch.randint(0, 100, (n,)).to(dtype)
    return values.to(device), offsets.to(offsets_dtype).to(device)


def torch_to_dense(values, offsets, max_length, padding_value=0.0):
    off = offsets.cpu().tolist()
    out = torch.full((len(off) - 1, max_length, max_length), padding_value, dtype=torch.float64)
    for b in range(len(off) - 1):
        N = int(round((off[b + 1] - off[b]) ** 0.5))
        n = min(N, max_length)
        block = values.cpu().double()[off[b]:off[b + 1]].view(N, N)
        out[b, :n, :n] = block[:n, :n]
    return out.to(values.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64,
                                   torch.bool])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_length", [0, 1, 6, 20])
def test_matches_formula(device, dtype, offsets_dtype, max_length):
    torch.manual_seed(max_length)
    values, offsets = make([0, 3, 17, 1, 0, 9, 6], dtype, device, offsets_dtype)
    pad = 1.0 if dtype in (torch.bool, torch.int64) else -3.5
    out = recops.jagged2_to_padded_dense(values, offsets, max_length, pad)
    assert out.shape == (7, max_length, max_length) and out.dtype == dtype
    assert torch.equal(out.cpu(), torch_to_dense(values, offsets, max_length, pad))


def test_row_stride_is_the_side():
    # N = 3 > max_length = 2: row 1 of the window starts at element 3, not 2 (SLL's stride).
    values = torch.arange(9, dtype=torch.float32)
    out = recops.jagged2_to_padded_dense(values, torch.tensor([0, 9]), 2)
    assert out.tolist() == [[[0.0, 1.0], [3.0, 4.0]]]


@pytest.mark.parametrize("device", DEVICES)
def test_backward_window_and_zeros(device):
    values, offsets = make([4, 0, 2, 5], torch.float64, device)
    values.requires_grad_(True)
    out = recops.jagged2_to_padded_dense(values, offsets, 3)
    grad = torch.randn_like(out)
    (g,) = torch.autograd.grad(out, values, grad)
    ref = values.detach().clone().requires_grad_(True)
    (g_ref,) = torch.autograd.grad(torch_to_dense(ref, offsets, 3), ref, grad.cpu())
    assert torch.equal(g.cpu(), g_ref.cpu())  # g_ref lives on ref's device


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    values, offsets = make([3, 0, 5], torch.float32, device)
    torch.library.opcheck(torch.ops.recops.jagged2_to_padded_dense.default,
                          (values.requires_grad_(True), offsets, 4, 0.5))
    grad = torch.randn(3, 4, 4, device=device)
    torch.library.opcheck(torch.ops.recops.jagged2_to_padded_dense_bwd.default,
                          (grad, values.detach(), offsets, 4, 0.5))


def test_gradcheck():
    values, offsets = make([2, 0, 4, 1])
    values.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: recops.jagged2_to_padded_dense(v, offsets, 3, 0.0), (values,))


def test_compile_dynamic():
    fn = torch.compile(lambda v, o, m: recops.jagged2_to_padded_dense(v, o, m), fullgraph=True,
                       dynamic=True)
    for sides, m in [([2, 3], 4), ([1, 4, 0, 2], 3)]:
        values, offsets = make(sides, torch.float32)
        assert torch.equal(fn(values, offsets, m), torch_to_dense(values, offsets, m))


def test_errors():
    values, _ = make([2, 3])
    with pytest.raises(RuntimeError, match="is not a perfect square"):
        recops.jagged2_to_padded_dense(values, torch.tensor([0, 4, 9, 13]), 3)
    with pytest.raises(RuntimeError, match="max_length=-1 must be >= 0"):
        recops.jagged2_to_padded_dense(values, torch.tensor([0, 4, 13]), -1)
    with pytest.raises(RuntimeError, match="values.size\\(0\\) \\(total\\) is 13"):
        recops.jagged2_to_padded_dense(values, torch.tensor([0, 4, 12]), 3)
    with pytest.raises(RuntimeError, match="padding_value"):
        recops.jagged2_to_padded_dense(values.long(), torch.tensor([0, 4, 13]), 3, 0.5)
