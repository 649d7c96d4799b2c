"""jagged2_softmax through PyTorch: torch.softmax per block window (rows and columns), N_b above
max_seq_len, -inf and NaN lines, the backward against autograd of the torch formula, opcheck,
gradcheck, torch.compile and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(sides, dtype=torch.float64, device="cpu", offsets_dtype=torch.int64, scale=3.0):
    offsets = torch.zeros(len(sides) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(torch.tensor(sides, dtype=torch.int64) ** 2, 0)
    x = (torch.randn(int(offsets[-1]), dtype=torch.float64) * scale).to(dtype)
    return x.to(device), offsets.to(offsets_dtype).to(device)


def torch_softmax(x, offsets, max_len, transpose):
    """The formula in fp64 with torch ops (differentiable in x)."""
    off = offsets.cpu().tolist()
    xd = x.cpu().double()
    parts = []
    for b in range(len(off) - 1):
        N = int(round((off[b + 1] - off[b]) ** 0.5))
        n = min(N, max_len)
        block = xd[off[b]:off[b + 1]].view(N, N)
        win = torch.softmax(block[:n, :n], dim=0 if transpose else 1)
        win = torch.where(torch.isneginf(block[:n, :n]).all(dim=0 if transpose else 1,
                                                             keepdim=True),
                          torch.zeros_like(win), win)
        full = torch.nn.functional.pad(win, (0, N - n, 0, N - n))
        parts.append(full.flatten())
    return torch.cat(parts) if parts else xd.new_zeros(0)


TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_len", [0, 1, 6, 40])
@pytest.mark.parametrize("transpose", [False, True])
def test_matches_formula(device, dtype, offsets_dtype, max_len, transpose):
    torch.manual_seed(max_len)
    x, offsets = make([0, 3, 17, 1, 0, 9, 33], dtype, device, offsets_dtype)
    out = recops.jagged2_softmax(x, offsets, max_len, transpose)
    assert out.shape == x.shape and out.dtype == dtype
    ref = torch_softmax(x, offsets, max_len, transpose)
    torch.testing.assert_close(out.cpu().double(), ref, atol=TOL[dtype], rtol=TOL[dtype])


def test_window_and_layout():
    # N = 3 > max_seq_len = 2: the window is x[0], x[1], x[3], x[4]; the rest is 0.
    x = torch.arange(9, dtype=torch.float64)
    out = recops.jagged2_softmax(x, torch.tensor([0, 9]), 2, False)
    e = torch.softmax(torch.tensor([0.0, 1.0], dtype=torch.float64), 0)
    assert torch.allclose(out, torch.tensor([e[0], e[1], 0, e[0], e[1], 0, 0, 0, 0],
                                            dtype=torch.float64))


def test_neg_inf_and_nan_lines():
    x, offsets = make([4])
    x = x.view(4, 4).clone()
    x[0, :] = float("-inf")
    x[2, 1] = float("nan")
    out = recops.jagged2_softmax(x.flatten(), offsets, 4, False).view(4, 4)
    assert torch.equal(out[0], torch.zeros(4, dtype=torch.float64))
    assert torch.isnan(out[2]).all() and not torch.isnan(out[1]).any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("transpose", [False, True])
def test_backward(device, transpose):
    x, offsets = make([4, 0, 2, 5], torch.float64, device)
    x.requires_grad_(True)
    out = recops.jagged2_softmax(x, offsets, 3, transpose)
    grad = torch.randn_like(out)
    (dx,) = torch.autograd.grad(out, x, grad)
    ref_x = x.detach().cpu().clone().requires_grad_(True)
    (dx_ref,) = torch.autograd.grad(torch_softmax(ref_x, offsets, 3, transpose), ref_x,
                                    grad.cpu())
    torch.testing.assert_close(dx.cpu(), dx_ref, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, offsets = make([3, 0, 5], torch.float32, device)
    torch.library.opcheck(torch.ops.recops.jagged2_softmax.default,
                          (x.requires_grad_(True), offsets, 4, True))
    y = recops.jagged2_softmax(x.detach(), offsets, 4, True)
    torch.library.opcheck(torch.ops.recops.jagged2_softmax_bwd.default,
                          (torch.randn_like(y), y, offsets, 4, True))


@pytest.mark.parametrize("transpose", [False, True])
def test_gradcheck(transpose):
    x, offsets = make([2, 0, 4, 1])
    x.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda v: recops.jagged2_softmax(v, offsets, 3, transpose), (x,))


def test_compile_dynamic():
    fn = torch.compile(lambda x, o, m: recops.jagged2_softmax(x, o, m, False), fullgraph=True,
                       dynamic=True)
    for sides, m in [([2, 3], 4), ([1, 4, 0, 2], 3)]:
        x, offsets = make(sides, torch.float64)
        torch.testing.assert_close(fn(x, offsets, m), torch_softmax(x, offsets, m, False))


def test_errors():
    x, _ = make([2, 3])
    with pytest.raises(RuntimeError, match="is not a perfect square"):
        recops.jagged2_softmax(x, torch.tensor([0, 4, 9, 13]), 3, False)
    with pytest.raises(RuntimeError, match="max_seq_len=-1 must be >= 0"):
        recops.jagged2_softmax(x, torch.tensor([0, 4, 13]), -1, False)
    with pytest.raises(RuntimeError, match="x.size\\(0\\) \\(total\\) is 13"):
        recops.jagged2_softmax(x, torch.tensor([0, 4, 12]), 3, False)
    with pytest.raises(RuntimeError, match="x must be fp64, fp32, fp16 or bf16"):
        recops.jagged2_softmax(x.long(), torch.tensor([0, 4, 13]), 3, False)
