"""jagged_index_select and jagged_index_select_bwd through PyTorch: the torch formula (fp64) on
random data, opcheck, gradcheck in fp64, the output size rules and the errors. Collected by
`pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(lengths, E, dtype=torch.float32, device="cpu", len_dtype=torch.int64):
    lengths = torch.tensor(lengths, dtype=len_dtype)
    total = int(lengths.sum())
    values = torch.randn((total, *E), dtype=torch.float64).to(dtype)
    return values.to(device), lengths.to(device)


def torch_select(values, lengths, indices):
    off = [0] + torch.cumsum(lengths.cpu().long(), 0).tolist()
    parts = [values.cpu()[off[i]:off[i + 1]] for i in indices.cpu().tolist()]
    out = torch.cat(parts) if parts else values.cpu()[:0]
    return out, lengths.cpu()[indices.cpu().long()]


def torch_select_bwd(grad, lengths, indices, total):
    off = [0] + torch.cumsum(lengths.cpu().long(), 0).tolist()
    gv = torch.zeros((total, *grad.shape[1:]), dtype=torch.float64)
    pos = 0
    for i in indices.cpu().tolist():
        n = off[i + 1] - off[i]
        gv[off[i]:off[i] + n] += grad.cpu().double()[pos:pos + n]
        pos += n
    return gv


TOL = {torch.float64: 1e-12, torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("len_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("idx_dtype", [torch.int32, torch.int64])
def test_matches_formula(device, dtype, len_dtype, idx_dtype):
    torch.manual_seed(0)
    values, lengths = make([0, 3, 17, 1, 0, 40, 9], (5,), dtype, device, len_dtype)
    indices = torch.tensor([5, 1, 1, 0, 6, 3, 5, 5], dtype=idx_dtype, device=device)
    rows = int(lengths.cpu()[indices.cpu().long()].sum())
    out, out_len = recops.jagged_index_select(values, lengths, indices, rows)
    want, want_len = torch_select(values, lengths, indices)
    assert torch.equal(out.cpu(), want) and torch.equal(out_len.cpu(), want_len)
    assert out_len.dtype == len_dtype
    grad = torch.randn(out.shape, dtype=torch.float64).to(dtype).to(device)
    gv = torch.ops.recops.jagged_index_select_bwd(grad, values, lengths, indices, rows)
    tol = TOL[dtype]
    torch.testing.assert_close(gv.double().cpu(),
                               torch_select_bwd(grad, lengths, indices, values.shape[0]),
                               atol=tol, rtol=tol)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("E", [(517,), (512,)])
def test_large_outputs_stream(dtype, E):
    """Outputs of 4 MiB or more are written with non-temporal stores on the CPU (select_cpu.cpp):
    rows that do not start 16-byte aligned (E = 517), sequences selected 0-3 times, -0 gradients
    (a single member's -0 becomes +0, the sum 0 + -0), compared with the formula rounded once."""
    torch.manual_seed(3)
    lengths = torch.randint(0, 80, (256,))
    total = int(lengths.sum())
    values = torch.randn((total, *E), dtype=torch.float64).to(dtype)
    indices = torch.cat([torch.arange(0, 256, 2), torch.arange(0, 128, 3), torch.tensor([5, 5, 7])])
    rows = int(lengths[indices].sum())
    out, _ = recops.jagged_index_select(values, lengths, indices, rows)
    assert min(rows, total) * E[0] * out.element_size() >= 4 << 20  # both outputs stream
    assert torch.equal(out, torch_select(values, lengths, indices)[0])
    grad = torch.randn(out.shape, dtype=torch.float64).to(dtype)
    grad[::7] = -0.0
    gv = torch.ops.recops.jagged_index_select_bwd(grad, values, lengths, indices, rows)
    want = torch_select_bwd(grad, lengths, indices, total)
    torch.testing.assert_close(gv, want.to(dtype), rtol=0, atol=0)
    assert not torch.signbit(gv[want == 0]).any()


def test_every_dtype_and_host_rows():
    values, lengths = make([2, 0, 3], (2,))
    indices = torch.tensor([2, 0, 2])
    for dt in (torch.int32, torch.int64, torch.uint8, torch.bool, torch.float16):
        v = (values * 10).to(dt)
        out, _ = recops.jagged_index_select(v, lengths, indices)  # rows computed on the host
        assert torch.equal(out, torch_select(v, lengths, indices)[0])


def test_noncontiguous_and_1d():
    values, lengths = make([4, 1, 6], (6,))
    indices = torch.tensor([2, 2, 0])
    strided = torch.randn(values.shape[0], 12)[:, ::2]
    strided.copy_(values)
    torch.testing.assert_close(recops.jagged_index_select(strided, lengths, indices)[0],
                               recops.jagged_index_select(values, lengths, indices)[0])
    v1 = values[:, 0].contiguous()
    assert torch.equal(recops.jagged_index_select(v1, lengths, indices)[0],
                       torch_select(v1, lengths, indices)[0])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    values, lengths = make([3, 0, 6], (4,), device=device)
    indices = torch.tensor([2, 0, 2], device=device)
    values.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.jagged_index_select.default,
                          (values, lengths, indices, 15))
    torch.library.opcheck(torch.ops.recops.jagged_index_select_bwd.default,
                          (torch.randn(15, 4, device=device), values.detach(), lengths, indices, 15))


def test_gradcheck():
    values, lengths = make([3, 0, 2, 4], (3,), torch.float64)
    indices = torch.tensor([3, 0, 3, 2, 0])
    values.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: recops.jagged_index_select(t, lengths, indices, 16)[0], (values,))


def test_cuda_or_meta_needs_rows():
    values, lengths = make([2, 3], (2,))
    with pytest.raises(RuntimeError, match="num_dense_output_rows .* must be given"):
        torch.ops.recops.jagged_index_select(values.to("meta"), lengths.to("meta"),
                                             torch.tensor([1], device="meta"))


def test_errors_name_the_argument():
    values, lengths = make([2, 3], (2,))
    with pytest.raises(RuntimeError, match=r"jagged_index_select: indices\[1\]=2 is out of range"):
        recops.jagged_index_select(values, lengths, torch.tensor([0, 2]))
    with pytest.raises(RuntimeError, match=r"seq_lengths\[1\]=-1 is negative"):
        recops.jagged_index_select(values, torch.tensor([6, -1]), torch.tensor([0]))
    with pytest.raises(RuntimeError, match="seq_lengths sum to 4 but values.size"):
        recops.jagged_index_select(values, torch.tensor([1, 3]), torch.tensor([0]))
    with pytest.raises(RuntimeError, match="the selected sequences hold 3 rows"):
        recops.jagged_index_select(values, lengths, torch.tensor([1]), 4)
    with pytest.raises(RuntimeError, match="jagged_index_select: indices must be int32 or int64"):
        recops.jagged_index_select(values, lengths, torch.tensor([1.0]))


def test_compile_dynamic_no_recompiles():
    """torch.compile(fullgraph=True, dynamic=True) with num_dense_output_rows given: one graph over
    varying B, K and total_L; forward and backward equal to eager."""
    import contextlib

    import torch._dynamo

    def model(v, lengths, indices, rows):
        return recops.jagged_index_select(v, lengths, indices, rows)[0] * 3.0

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    cases = [([5, 0, 9, 3], [3, 0]), ([2, 11, 7, 1, 4], [4, 1, 1, 2, 0, 0]), ([13, 3, 6], [2, 0])]
    for i, (lengths, idx) in enumerate(cases):
        torch.manual_seed(i)
        values, lengths = make(lengths, (3,), torch.float64)
        indices = torch.tensor(idx)
        rows = int(lengths[indices].sum())
        v1 = values.clone().requires_grad_(True)
        v2 = values.clone().requires_grad_(True)
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(v1, lengths, indices, rows)
        want = model(v2, lengths, indices, rows)
        torch.testing.assert_close(got, want)
        g = torch.randn_like(want)
        got.backward(g)
        want.backward(g)
        torch.testing.assert_close(v1.grad, v2.grad)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


@pytest.mark.parametrize("lengths,idx",
                         [([], []), ([2, 3, 0], []), ([0] * 37, list(range(0, 37, 3)))],
                         ids=["b0_k0", "k0", "all_empty"])
def test_empty_without_rows(lengths, idx):
    """Regression (issue 21): B = 0 and/or K = 0 without num_dense_output_rows raised "must be
    given for tensors without data" on the CPU (torch gives an empty tensor no storage); the size
    is 0 and known. The raw op, the wrapper, the FBGEMM form and the backward all return empties."""
    from recops.compat import fbgemm

    values, lengths_t = make(lengths, (3,))
    indices = torch.tensor(idx, dtype=torch.int64)
    for fn in (torch.ops.recops.jagged_index_select, recops.jagged_index_select,
               fbgemm.jagged_index_select):
        out, out_len = fn(values, lengths_t, indices)
        assert out.shape == (0, 3) and out.dtype == values.dtype
        assert torch.equal(out_len, torch.zeros(len(idx), dtype=torch.int64))
    v = values.clone().requires_grad_(True)
    out, _ = recops.jagged_index_select(v, lengths_t, indices)
    out.sum().backward()
    assert torch.equal(v.grad, torch.zeros_like(values))
    # Meta / fake tensors: K = 0 has a known size without data.
    if not idx:
        out, out_len = torch.ops.recops.jagged_index_select(
            values.to("meta"), lengths_t.to("meta"), indices.to("meta"))
        assert out.shape == (0, 3) and out_len.shape == (0,)


def test_b0_with_indices_names_the_index():
    """B = 0 with K > 0: every index is out of range; the error says so (it said the row count
    was missing)."""
    values, lengths = make([], (2,))
    with pytest.raises(RuntimeError, match=r"indices\[0\]=0 is out of range"):
        recops.jagged_index_select(values, lengths, torch.tensor([0]))


def test_compile_without_rows():
    """Issue 21: num_dense_output_rows omitted under torch.compile(fullgraph=True, dynamic=True):
    the fake kernel (fake.py) gives the rows an unbacked size; two input sets with different
    sums, forward and backward equal to eager. opcheck without the argument too."""
    import torch._dynamo

    def model(v, lengths, indices):
        out, out_len = recops.jagged_index_select(v, lengths, indices)
        return out * 3.0, out_len + 1

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    rows = set()
    for i, (lengths, idx) in enumerate([([2, 3, 0, 4, 1], [3, 1, 1]),
                                        ([5, 0, 2, 7, 1, 3, 2], [0, 6, 3, 3, 2])]):
        torch.manual_seed(30 + i)
        values, lengths = make(lengths, (3,), torch.float64)
        indices = torch.tensor(idx)
        v1 = values.clone().requires_grad_(True)
        v2 = values.clone().requires_grad_(True)
        got = compiled(v1, lengths, indices)
        want = model(v2, lengths, indices)
        for g, w in zip(got, want):
            assert torch.equal(g, w)
        torch.testing.assert_close(got[0] / 3.0, torch_select(values, lengths, indices)[0])
        rows.add(got[0].shape[0])
        g = torch.randn_like(want[0])
        got[0].backward(g)
        want[0].backward(g)
        assert torch.equal(v1.grad, v2.grad)
        torch.library.opcheck(torch.ops.recops.jagged_index_select.default,
                              (values.requires_grad_(True), lengths, indices))
    assert len(rows) == 2  # the data-dependent size differed between the two sets
