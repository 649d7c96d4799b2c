"""jagged_jagged_bmm and jagged_jagged_bmm_bwd through PyTorch: the torch formula in fp64 on random
jagged data (empty sequences and truncation included), opcheck (schema, fake/Meta, autograd
registration), gradcheck in fp64 and the errors (torch.compile over both bmm ops: jagged_dense_bmm's test).
Collected by `pytest src/ops` (scripts/test_all.sh)."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def jagged_pair(lengths, M, N, dtype=torch.float32, device="cpu", offsets_dtype=torch.int64):
    offsets = torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0)
    total = int(offsets[-1])
    x = torch.randn(total, M, dtype=torch.float64).to(dtype).to(device)
    y = torch.randn(total, N, dtype=torch.float64).to(dtype).to(device)
    return x, y, offsets.to(offsets_dtype).to(device)


def spans(offsets, max_L):
    off = offsets.tolist()
    return [(off[b], min(off[b + 1] - off[b], max_L)) for b in range(len(off) - 1)]


def torch_jj(x, y, offsets, max_L):
    """z[b] = sum_{l < n_b} x(b, l)^T y(b, l); in fp64."""
    return torch.stack([x[s:s + n].double().T @ y[s:s + n].double()
                        for s, n in spans(offsets, max_L)]
                       or [torch.zeros(x.shape[1], y.shape[1], dtype=torch.float64)])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_L", [0, 1, 9, 100])
def test_matches_formula(device, dtype, offsets_dtype, max_L):
    torch.manual_seed(max_L + 1)
    x, y, offsets = jagged_pair([0, 3, 17, 1, 0, 40, 9], 6, 5, dtype, device, offsets_dtype)
    tol = TOL[dtype] * 4
    z = recops.jagged_jagged_bmm(x, y, offsets, max_L)
    assert z.shape == (7, 6, 5) and z.dtype == dtype
    torch.testing.assert_close(z.double(), torch_jj(x, y, offsets, max_L).to(device), atol=tol,
                               rtol=tol)
    grad = torch.randn_like(z)
    dx, dy = torch.ops.recops.jagged_jagged_bmm_bwd(grad, x, y, offsets, max_L)
    want_dx = torch.zeros_like(x, dtype=torch.float64)
    want_dy = torch.zeros_like(y, dtype=torch.float64)
    for b, (s, n) in enumerate(spans(offsets, max_L)):
        want_dx[s:s + n] = y[s:s + n].double() @ grad[b].double().T
        want_dy[s:s + n] = x[s:s + n].double() @ grad[b].double()
    torch.testing.assert_close(dx.double(), want_dx, atol=tol, rtol=tol)
    torch.testing.assert_close(dy.double(), want_dy, atol=tol, rtol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_empty_sequences_give_zero_blocks(device):
    x, y, offsets = jagged_pair([0, 4, 0], 3, 2, device=device)
    z = recops.jagged_jagged_bmm(x, y, offsets, 8)
    assert (z[0] == 0).all() and (z[2] == 0).all()
    z0 = recops.jagged_jagged_bmm(x, y, offsets, 0)
    assert (z0 == 0).all()


def test_row_strided_inputs():
    x, y, offsets = jagged_pair([5, 0, 12], 6, 4)
    rows = torch.randn(x.shape[0], 9)[:, :6]  # row stride 9: used as is
    rows.copy_(x)
    torch.testing.assert_close(recops.jagged_jagged_bmm(rows, y, offsets, 10),
                               recops.jagged_jagged_bmm(x, y, offsets, 10))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, y, offsets = jagged_pair([3, 0, 6], 4, 5, device=device)
    x.requires_grad_(True)
    y.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.jagged_jagged_bmm.default, (x, y, offsets, 5))
    grad = torch.randn(3, 4, 5, device=device)
    torch.library.opcheck(torch.ops.recops.jagged_jagged_bmm_bwd.default,
                          (grad, x.detach(), y.detach(), offsets, 5))


def test_gradcheck():
    x, y, offsets = jagged_pair([3, 0, 6, 2], 3, 4, torch.float64)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: recops.jagged_jagged_bmm(a, b, offsets, 4), (x, y))


def test_errors_name_the_argument():
    x, y, offsets = jagged_pair([2, 3], 3, 4)
    with pytest.raises(RuntimeError, match="jagged_jagged_bmm: x_values must be fp64, fp32, fp16"):
        recops.jagged_jagged_bmm(x.int(), y.int(), offsets, 4)
    with pytest.raises(RuntimeError, match=r"y_values \(fp16\) must have the dtype of x_values"):
        recops.jagged_jagged_bmm(x, y.half(), offsets, 4)
    with pytest.raises(RuntimeError, match="jagged_jagged_bmm: y_values .* must have x_values' rows"):
        recops.jagged_jagged_bmm(x, y[:4], offsets, 4)
    with pytest.raises(RuntimeError, match="jagged_jagged_bmm: max_seq_len=-1 must be >= 0"):
        recops.jagged_jagged_bmm(x, y, offsets, -1)
    with pytest.raises(RuntimeError, match=r"jagged_jagged_bmm: seq_offsets\[2\]=4"):
        recops.jagged_jagged_bmm(x, y, torch.tensor([0, 2, 4]), 4)
    with pytest.raises(RuntimeError, match="jagged_jagged_bmm_bwd: grad must be z's shape"):
        torch.ops.recops.jagged_jagged_bmm_bwd(torch.zeros(3, 3, 4), x, y, offsets, 4)

