"""jagged2_dense_elementwise_mul through PyTorch: the formula on random data (fp64 products
rounded once), N_b above max_seq_len, the y-requires-grad refusal, opcheck, gradcheck,
torch.compile and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(sides, max_len, dtype=torch.float64, device="cpu", index_dtype=torch.int64):
    lengths = torch.tensor(sides, dtype=torch.int64)
    offsets = torch.zeros(len(sides) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths ** 2, 0)
    x = torch.randn(int(offsets[-1]), dtype=torch.float64).to(dtype).to(device)
    y = torch.randn(max_len, max_len, dtype=torch.float64).to(dtype).to(device)
    return x, y, lengths.to(index_dtype).to(device), offsets.to(index_dtype).to(device)


def torch_mul(x, y, lengths, offsets, max_len):
    out = torch.zeros(x.numel(), dtype=torch.float64)
    off = offsets.cpu().tolist()
    for b, N in enumerate(lengths.cpu().tolist()):
        n = min(N, max_len)
        block = x.cpu().double()[off[b]:off[b + 1]].view(N, N)
        res = torch.zeros(N, N, dtype=torch.float64)
        res[:n, :n] = block[:n, :n] * y.cpu().double()[:n, :n]
        out[off[b]:off[b + 1]] = res.flatten()
    return out.to(x.dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_len", [0, 1, 6, 20])
def test_matches_formula(device, dtype, index_dtype, max_len):
    torch.manual_seed(max_len)
    x, y, lengths, offsets = make([0, 3, 17, 1, 0, 9, 6], max_len, dtype, device, index_dtype)
    out = recops.jagged2_dense_elementwise_mul(x, y, lengths, offsets, max_len)
    assert out.shape == x.shape and out.dtype == dtype
    assert torch.equal(out.cpu(), torch_mul(x, y, lengths, offsets, max_len))


def test_row_stride_is_the_side():
    # N = 3 > max_seq_len = 2: window row 1 starts at element 3 (SLL's stride would take 2).
    x = torch.arange(9, dtype=torch.float32)
    y = torch.ones(2, 2)
    out = recops.jagged2_dense_elementwise_mul(x, y, torch.tensor([3]), torch.tensor([0, 9]), 2)
    assert out.tolist() == [0.0, 1.0, 0.0, 3.0, 4.0, 0.0, 0.0, 0.0, 0.0]


def test_strided_inputs():
    x, y, lengths, offsets = make([4, 0, 5], 4, torch.float32)
    xs = torch.zeros(x.numel(), 2)
    xs[:, 1] = x
    ys = torch.zeros(4, 7)
    ys[:, 2:6] = y
    out = recops.jagged2_dense_elementwise_mul(xs[:, 1], ys[:, 2:6], lengths, offsets, 4)
    assert torch.equal(out, torch_mul(x, y, lengths, offsets, 4))


@pytest.mark.parametrize("device", DEVICES)
def test_backward(device):
    x, y, lengths, offsets = make([4, 0, 2, 5], 3, torch.float64, device)
    x.requires_grad_(True)
    out = recops.jagged2_dense_elementwise_mul(x, y, lengths, offsets, 3)
    grad = torch.randn_like(out)
    (dx,) = torch.autograd.grad(out, x, grad)
    assert torch.equal(dx.cpu(), torch_mul(grad, y, lengths, offsets, 3))


def test_y_requiring_grad_is_refused():
    x, y, lengths, offsets = make([2, 3], 3)
    with pytest.raises(RuntimeError, match="y requires grad, but y is a constant"):
        recops.jagged2_dense_elementwise_mul(x.requires_grad_(True), y.requires_grad_(True),
                                             lengths, offsets, 3)
    with pytest.raises(RuntimeError, match="y requires grad"):
        recops.jagged2_dense_elementwise_mul(x.detach(), y, lengths, offsets, 3)
    with torch.no_grad():  # nothing recorded: accepted
        recops.jagged2_dense_elementwise_mul(x, y, lengths, offsets, 3)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, y, lengths, offsets = make([3, 0, 5], 4, torch.float32, device)
    torch.library.opcheck(torch.ops.recops.jagged2_dense_elementwise_mul.default,
                          (x.requires_grad_(True), y, lengths, offsets, 4))
    torch.library.opcheck(torch.ops.recops.jagged2_dense_elementwise_mul_bwd.default,
                          (torch.randn_like(x), x.detach(), y, lengths, offsets, 4))


def test_gradcheck():
    x, y, lengths, offsets = make([2, 0, 4, 1], 3)
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: recops.jagged2_dense_elementwise_mul(v, y, lengths, offsets, 3), (x,))


def test_compile_dynamic():
    fn = torch.compile(lambda x, y, l, o, m: recops.jagged2_dense_elementwise_mul(x, y, l, o, m),
                       fullgraph=True, dynamic=True)
    for sides, m in [([2, 3], 4), ([1, 4, 0, 2], 3)]:
        x, y, lengths, offsets = make(sides, m, torch.float32)
        assert torch.equal(fn(x, y, lengths, offsets, m), torch_mul(x, y, lengths, offsets, m))


def test_errors():
    x, y, lengths, offsets = make([2, 3], 3)
    with pytest.raises(RuntimeError, match="but seq_lengths\\[1\\]=2"):
        recops.jagged2_dense_elementwise_mul(x, y, torch.tensor([2, 2]), offsets, 3)
    with pytest.raises(RuntimeError, match="y must be \\[max_seq_len, max_seq_len\\] = \\[4, 4\\]"):
        recops.jagged2_dense_elementwise_mul(x, y, lengths, offsets, 4)
    with pytest.raises(RuntimeError, match="max_seq_len=-1 must be >= 0"):
        recops.jagged2_dense_elementwise_mul(x, y, lengths, offsets, -1)
    with pytest.raises(RuntimeError, match="x must be fp64, fp32, fp16 or bf16"):
        recops.jagged2_dense_elementwise_mul(x.long(), y.long(), lengths, offsets, 3)
