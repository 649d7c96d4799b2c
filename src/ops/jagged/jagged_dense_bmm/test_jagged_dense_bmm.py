"""jagged_dense_bmm and jagged_dense_bmm_bwd through PyTorch: the torch formula in fp64 on random
jagged data (truncation included), opcheck (schema, fake/Meta, autograd registration), gradcheck
in fp64, transposed and row-strided operands, torch.compile(dynamic) and the errors. Collected by
`pytest src/ops` (scripts/test_all.sh)."""

import contextlib

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def make(lengths, K, N, dtype=torch.float32, device="cpu", offsets_dtype=torch.int64):
    lengths = torch.tensor(lengths, dtype=torch.int64)
    offsets = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    x = torch.randn(int(offsets[-1]), K, dtype=torch.float64).to(dtype).to(device)
    y = torch.randn(len(lengths), K, N, dtype=torch.float64).to(dtype).to(device)
    return x, offsets.to(offsets_dtype).to(device), y


def torch_jd(x, offsets, y, max_L):
    """z(b, l) = x(b, l) @ y[b] for l < n_b, else 0; in fp64."""
    z = torch.zeros(x.shape[0], y.shape[2], dtype=torch.float64, device=x.device)
    off = offsets.tolist()
    for b in range(len(off) - 1):
        s, n = off[b], min(off[b + 1] - off[b], max_L)
        z[s:s + n] = x[s:s + n].double() @ y[b].double()
    return z


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_L", [0, 1, 9, 100])
def test_matches_formula(device, dtype, offsets_dtype, max_L):
    torch.manual_seed(max_L)
    x, offsets, y = make([0, 3, 17, 1, 0, 40, 9], 7, 5, dtype, device, offsets_dtype)
    tol = TOL[dtype] * 4
    z = recops.jagged_dense_bmm(x, offsets, y, max_L)
    assert z.shape == (x.shape[0], 5) and z.dtype == dtype
    torch.testing.assert_close(z.double(), torch_jd(x, offsets, y, max_L), atol=tol, rtol=tol)
    grad = torch.randn_like(z)
    dx, dy = torch.ops.recops.jagged_dense_bmm_bwd(grad, x, offsets, y, max_L)
    torch.testing.assert_close(dx.double(), torch_jd(grad, offsets, y.transpose(1, 2), max_L),
                               atol=tol, rtol=tol)
    want_dy = torch.zeros_like(y, dtype=torch.float64)
    off = offsets.tolist()
    for b in range(len(off) - 1):
        s, n = off[b], min(off[b + 1] - off[b], max_L)
        want_dy[b] = x[s:s + n].double().T @ grad[s:s + n].double()
    torch.testing.assert_close(dy.double(), want_dy, atol=tol, rtol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_transposed_and_row_strided_operands(device):
    x, offsets, y = make([5, 0, 12], 6, 4, device=device)
    want = recops.jagged_dense_bmm(x, offsets, y, 10)
    yt = y.transpose(1, 2).contiguous().transpose(1, 2)  # strides (K*N, 1, K): used as is
    rows = torch.randn(x.shape[0], 9, device=device)[:, :6]  # row stride 9: used as is
    rows.copy_(x)
    torch.testing.assert_close(recops.jagged_dense_bmm(x, offsets, yt, 10), want)
    torch.testing.assert_close(recops.jagged_dense_bmm(rows, offsets, y, 10), want)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    x, offsets, y = make([3, 0, 6], 4, 5, device=device)
    x.requires_grad_(True)
    y.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.jagged_dense_bmm.default, (x, offsets, y, 5))
    grad = torch.randn(x.shape[0], 5, device=device)
    torch.library.opcheck(torch.ops.recops.jagged_dense_bmm_bwd.default,
                          (grad, x.detach(), offsets, y.detach(), 5))


def test_gradcheck():
    x, offsets, y = make([3, 0, 6, 2], 3, 4, torch.float64)
    x.requires_grad_(True)
    y.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: recops.jagged_dense_bmm(a, offsets, b, 4), (x, y))


def test_backward_matches_torch_autograd():
    x, offsets, y = make([4, 9, 0], 3, 2, torch.float64)
    x1, y1 = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    x2, y2 = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
    g = torch.randn(x.shape[0], 2, dtype=torch.float64)
    (recops.jagged_dense_bmm(x1, offsets, y1, 6) * g).sum().backward()
    parts = [x2[0:4] @ y2[0], x2[4:10] @ y2[1], x2[10:13] @ y2[1] * 0]
    (torch.cat(parts) * g).sum().backward()
    torch.testing.assert_close(x1.grad, x2.grad)
    torch.testing.assert_close(y1.grad, y2.grad)


def test_errors_name_the_argument():
    x, offsets, y = make([2, 3], 3, 4)
    with pytest.raises(RuntimeError, match="jagged_dense_bmm: x_values must be fp64, fp32, fp16"):
        recops.jagged_dense_bmm(x.int(), offsets, y.int(), 4)
    with pytest.raises(RuntimeError, match=r"jagged_dense_bmm: y \(fp16\) must have the dtype of x_values"):
        recops.jagged_dense_bmm(x, offsets, y.half(), 4)
    with pytest.raises(RuntimeError, match=r"jagged_dense_bmm: y must be \[B, K, N\] = \[2, 3, N\]"):
        recops.jagged_dense_bmm(x, offsets, y[:1], 4)
    with pytest.raises(RuntimeError, match="jagged_dense_bmm: max_seq_len=-1 must be >= 0"):
        recops.jagged_dense_bmm(x, offsets, y, -1)
    with pytest.raises(RuntimeError, match="non-decreasing"):
        recops.jagged_dense_bmm(x, torch.tensor([0, 4, 2]).clamp(max=5), y, 4)
    with pytest.raises(RuntimeError, match=r"jagged_dense_bmm: seq_offsets\[2\]=4"):
        recops.jagged_dense_bmm(x, torch.tensor([0, 2, 4]), y, 4)
    with pytest.raises(RuntimeError, match="jagged_dense_bmm_bwd: grad must be z's shape"):
        torch.ops.recops.jagged_dense_bmm_bwd(x, x, offsets, y, 4)


def test_compile_dynamic_no_recompiles():
    """torch.compile(fullgraph=True, dynamic=True): one graph over varying B, total_L and max_L;
    forward and backward (both bmm ops and their backward ops) equal to eager."""
    import torch._dynamo

    def model(x, off, y, max_L):
        z = recops.jagged_dense_bmm(x, off, y, max_L)
        return recops.jagged_jagged_bmm(z, x, off, max_L) * 3.0

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (lengths, max_L) in enumerate([([5, 0, 9, 3], 6), ([2, 11, 7, 1, 4, 8], 9),
                                          ([13, 3, 6], 12)]):
        torch.manual_seed(i)
        x, offsets, y = make(lengths, 11, 10)
        x1, y1 = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        x2, y2 = x.clone().requires_grad_(True), y.clone().requires_grad_(True)
        ctx = (torch._dynamo.config.patch(error_on_recompile=True) if i > 0
               else contextlib.nullcontext())
        with ctx:
            got = compiled(x1, offsets, y1, max_L)
        want = model(x2, offsets, y2, max_L)
        torch.testing.assert_close(got, want)
        g = torch.randn_like(want)
        got.backward(g)
        want.backward(g)
        torch.testing.assert_close(x1.grad, x2.grad)
        torch.testing.assert_close(y1.grad, y2.grad)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
