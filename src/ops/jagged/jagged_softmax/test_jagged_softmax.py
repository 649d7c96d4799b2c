"""jagged_softmax and jagged_softmax_bwd through PyTorch: the torch formula on random jagged data
(truncation included), opcheck (schema, fake/Meta, autograd registration), gradcheck in fp64, the
special values and the errors. Collected by `pytest src/ops` (scripts/test_all.sh)."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(lengths, H, dtype=torch.float32, device="cpu", offsets_dtype=torch.int64, scale=1.0,
         one_d=False):
    lengths = torch.tensor(lengths, dtype=torch.int64)
    offsets = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(lengths, 0)
    total = int(offsets[-1])
    shape = (total,) if one_d else (total, H)
    values = (torch.randn(shape, dtype=torch.float64) * scale).to(dtype).to(device)
    return values, offsets.to(offsets_dtype).to(device)


def per_sequence(fn, offsets, max_L, *tensors):
    """Applies fn to the valid rows (l < n_b) of each sequence of the fp64 2-D views of tensors;
    truncated rows are 0."""
    views = [t.double().reshape(t.shape[0], -1) for t in tensors]
    out = torch.zeros_like(views[0])
    off = offsets.tolist()
    for b in range(len(off) - 1):
        s, n = off[b], min(off[b + 1] - off[b], max_L)
        if n > 0:
            out[s:s + n] = fn(*[v[s:s + n] for v in views])
    return out.reshape(tensors[0].shape)


def softmax_cols(x):
    p = torch.softmax(x, dim=0)
    p[:, torch.isneginf(x).all(0)] = 0  # an all -inf column gives 0
    return p


def torch_softmax(values, offsets, max_L):
    return per_sequence(softmax_cols, offsets, max_L, values)


def torch_softmax_bwd(grad, y, offsets, max_L):
    return per_sequence(lambda g, yy: yy * (g - (g * yy).sum(0, keepdim=True)), offsets, max_L,
                        grad, y)


TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_L", [0, 1, 9, 100])
def test_matches_formula(device, dtype, offsets_dtype, max_L):
    torch.manual_seed(max_L)
    values, offsets = make([0, 3, 17, 1, 0, 40, 9], 5, dtype, device, offsets_dtype)
    y = recops.jagged_softmax(values, offsets, max_L)
    tol = TOL[dtype]
    torch.testing.assert_close(y.double(), torch_softmax(values, offsets, max_L).to(device),
                               atol=tol, rtol=tol)
    grad = torch.randn_like(values)
    dx = torch.ops.recops.jagged_softmax_bwd(grad, y, offsets, max_L)
    torch.testing.assert_close(dx.double(), torch_softmax_bwd(grad, y, offsets, max_L).to(device),
                               atol=tol, rtol=tol)


@pytest.mark.parametrize("device", DEVICES)
def test_truncated_rows_are_zero_and_one_d_values(device):
    values, offsets = make([5, 12, 2], 1, torch.float32, device, one_d=True)
    y = recops.jagged_softmax(values, offsets, 4)
    assert y.shape == values.shape
    assert (y[4:5] == 0).all() and (y[9:17] == 0).all()
    torch.testing.assert_close(y.double(), torch_softmax(values, offsets, 4).to(device))


@pytest.mark.parametrize("device", DEVICES)
def test_special_values(device):
    values, offsets = make([6, 4], 3, torch.float32, device)
    values[:6, 0] = float("-inf")   # an all -inf column: 0
    values[6, 1] = float("nan")     # a NaN: its column NaN
    values[:6, 2] = float("-inf")
    values[3, 2] = 2.0              # one finite entry among -inf: 1 there, 0 elsewhere
    y = recops.jagged_softmax(values, offsets, 10)
    assert (y[:6, 0] == 0).all()
    assert torch.isnan(y[6:, 1]).all() and not torch.isnan(y[:6, 1]).any()
    assert y[3, 2] == 1 and (y[:3, 2] == 0).all() and (y[4:6, 2] == 0).all()


@pytest.mark.parametrize("device", DEVICES)
def test_fp16_large_magnitude(device):
    values, offsets = make([50, 30], 4, torch.float16, device, scale=1e4)
    y = recops.jagged_softmax(values, offsets, 64)
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y.double(), torch_softmax(values, offsets, 64).to(device),
                               atol=2e-3, rtol=2e-3)


def test_noncontiguous_rows():
    values, offsets = make([7, 0, 11], 8)
    wide = torch.randn(values.shape[0], 16)
    wide[:, ::2] = values
    strided = wide[:, ::2]  # last stride 2: the binding copies
    rows = torch.randn(values.shape[0], 12)[:, :8]  # row stride 12: used as is
    rows.copy_(values)
    for v in (strided, rows):
        torch.testing.assert_close(recops.jagged_softmax(v, offsets, 9),
                                   recops.jagged_softmax(values, offsets, 9))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    values, offsets = make([3, 0, 6], 4, device=device)
    values.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.jagged_softmax.default, (values, offsets, 5))
    y = recops.jagged_softmax(values.detach(), offsets, 5)
    torch.library.opcheck(torch.ops.recops.jagged_softmax_bwd.default,
                          (torch.randn_like(y), y, offsets, 5))


def test_gradcheck():
    values, offsets = make([3, 0, 6, 2], 3, torch.float64)
    values.requires_grad_(True)
    assert torch.autograd.gradcheck(lambda t: recops.jagged_softmax(t, offsets, 4), (values,))


def test_backward_matches_torch_autograd():
    values, offsets = make([4, 9], 2, torch.float64)
    v1 = values.clone().requires_grad_(True)
    v2 = values.clone().requires_grad_(True)
    g = torch.randn_like(values)
    (recops.jagged_softmax(v1, offsets, 6) * g).sum().backward()
    parts = [torch.softmax(v2[0:4], 0), torch.softmax(v2[4:10], 0), v2[10:13] * 0]
    (torch.cat(parts) * g).sum().backward()
    torch.testing.assert_close(v1.grad, v2.grad)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_backward_uses_the_saved_output(dtype):
    """The backward uses the forward's saved y (no second forward): writing y in place before the
    backward is caught by autograd's version check, as for torch.softmax; the 16-bit backward
    (fp32 products, a two-float dot) equals the fp64 formula rounded once, extremes included."""
    values, offsets = make([4, 9], 70, dtype)
    v = values.clone().requires_grad_(True)
    y = recops.jagged_softmax(v, offsets, 6)
    with torch.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(torch.ones_like(y))
    g = torch.randn(values.shape).to(dtype)
    yy = torch.rand(values.shape).to(dtype)
    if dtype == torch.bfloat16:  # products past fp32's range, and an infinite grad
        yy[:, 6], g[:, 6], g[2, 3] = 1e30, 1e20, float("inf")
    got = torch.ops.recops.jagged_softmax_bwd(g, yy, offsets, 6)
    want = torch.zeros(values.shape, dtype=torch.float64)
    for a, e in [(0, 4), (4, 10)]:
        gd, yd = g[a:e].double(), yy[a:e].double()
        want[a:e] = yd * (gd - (gd * yd).sum(0))
    torch.testing.assert_close(got, want.to(dtype), rtol=0 if dtype != torch.float32 else 1e-6,
                               atol=0, equal_nan=True)


def test_errors_name_the_argument():
    values, offsets = make([2, 3], 2)
    with pytest.raises(RuntimeError, match="jagged_softmax: values must be fp64, fp32, fp16 or bf16"):
        recops.jagged_softmax(values.int(), offsets, 4)
    with pytest.raises(RuntimeError, match="jagged_softmax: max_seq_len=-1 must be >= 0"):
        recops.jagged_softmax(values, offsets, -1)
    with pytest.raises(RuntimeError, match=r"jagged_softmax: seq_offsets must be int32 or int64"):
        recops.jagged_softmax(values, offsets.float(), 4)
    with pytest.raises(RuntimeError, match=r"jagged_softmax: values must be \[total_L, H\]"):
        recops.jagged_softmax(values.reshape(5, 2, 1), offsets, 4)
    with pytest.raises(RuntimeError, match="non-decreasing"):
        recops.jagged_softmax(values, torch.tensor([0, 4, 2, 5]).clamp(max=5), 4)
    with pytest.raises(RuntimeError, match=r"jagged_softmax: seq_offsets\[2\]=4"):
        recops.jagged_softmax(values, torch.tensor([0, 2, 4]), 4)
    with pytest.raises(RuntimeError, match="jagged_softmax_bwd: grad"):
        torch.ops.recops.jagged_softmax_bwd(values[:4], values, offsets, 4)


def test_compile_dynamic_no_recompiles():
    """torch.compile(fullgraph=True, dynamic=True): one graph over varying B, total_L and max_L;
    forward and backward (the hook's recompute and the _bwd op) equal to eager."""
    import contextlib

    import torch._dynamo

    def model(v, off, max_L):
        return recops.jagged_softmax(v, off, max_L) * 3.0

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (lengths, max_L) in enumerate([([5, 0, 9, 3], 6), ([2, 11, 7, 1, 4, 8], 9),
                                          ([13, 3, 6], 12)]):
        torch.manual_seed(i)
        values, offsets = make(lengths, 3)
        v1 = values.clone().requires_grad_(True)
        v2 = values.clone().requires_grad_(True)
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(v1, offsets, max_L)
        want = model(v2, offsets, max_L)
        torch.testing.assert_close(got, want)
        g = torch.randn_like(want)
        got.backward(g)
        want.backward(g)
        torch.testing.assert_close(v1.grad, v2.grad)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
