"""keyed_jagged_index_select_dim1 and its _bwd through PyTorch: the formula (fp64) on random
KJTs with weights, opcheck, gradcheck in fp64 and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(lengths, dtype=torch.float32, device="cpu", len_dtype=torch.int64):
    lengths = torch.tensor(lengths, dtype=len_dtype)
    offsets = torch.zeros(len(lengths) + 1, dtype=len_dtype)
    offsets[1:] = torch.cumsum(lengths, 0)
    values = torch.randn(int(offsets[-1]), dtype=torch.float64).to(dtype)
    return values.to(device), lengths.to(device), offsets.to(device)


def torch_select(values, lengths, indices, B):
    off = [0] + torch.cumsum(lengths.cpu().long(), 0).tolist()
    F = lengths.numel() // B
    segs = [f * B + i for f in range(F) for i in indices.cpu().tolist()]
    parts = [values.cpu()[off[s]:off[s + 1]] for s in segs]
    out = torch.cat(parts) if parts else values.cpu()[:0]
    return out, lengths.cpu()[torch.tensor(segs, dtype=torch.long)]


def torch_select_bwd(grad, lengths, indices, B, total):
    off = [0] + torch.cumsum(lengths.cpu().long(), 0).tolist()
    F = lengths.numel() // B
    gv = torch.zeros(total, dtype=torch.float64)
    pos = 0
    for f in range(F):
        for i in indices.cpu().tolist():
            s = f * B + i
            n = off[s + 1] - off[s]
            gv[off[s]:off[s] + n] += grad.cpu().double()[pos:pos + n]
            pos += n
    return gv


LENGTHS = [0, 3, 1, 5, 2, 0, 4, 0, 7, 1, 2, 3]  # 3 keys x batch 4


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("len_dtype", [torch.int32, torch.int64])
def test_matches_formula(device, dtype, len_dtype):
    torch.manual_seed(1)
    values, lengths, offsets = make(LENGTHS, dtype, device, len_dtype)
    indices = torch.tensor([3, 1, 1, 0, 3], device=device)
    weights = torch.randn(values.numel(), dtype=torch.float32, device=device)
    want, want_len = torch_select(values, lengths, indices, 4)
    out, out_len, out_w = recops.keyed_jagged_index_select_dim1(
        values, lengths, offsets, indices, 4, weights, want.numel())
    assert torch.equal(out.cpu(), want) and torch.equal(out_len.cpu(), want_len)
    assert torch.equal(out_w.cpu(), torch_select(weights, lengths, indices, 4)[0])
    grad = torch.randn(out.shape, dtype=torch.float64).to(dtype).to(device)
    gv = torch.ops.recops.keyed_jagged_index_select_dim1_bwd(
        grad, values, lengths, offsets, indices, 4, None, want.numel())
    tol = {torch.float64: 1e-12, torch.float32: 1e-6, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(gv.double().cpu(),
                               torch_select_bwd(grad, lengths, indices, 4, values.numel()),
                               atol=tol, rtol=tol)


def test_without_weights_and_host_rows():
    values, lengths, offsets = make(LENGTHS)
    indices = torch.tensor([2, 0])
    out, out_len, out_w = recops.keyed_jagged_index_select_dim1(values, lengths, offsets, indices, 4)
    assert out_w.numel() == 0
    assert torch.equal(out, torch_select(values, lengths, indices, 4)[0])


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    values, lengths, offsets = make(LENGTHS, device=device)
    indices = torch.tensor([3, 1, 1], device=device)
    rows = torch_select(values, lengths, indices, 4)[0].numel()
    weights = torch.randn(values.numel(), device=device)
    values.requires_grad_(True)
    torch.library.opcheck(torch.ops.recops.keyed_jagged_index_select_dim1.default,
                          (values, lengths, offsets, indices, 4, weights, rows))
    torch.library.opcheck(torch.ops.recops.keyed_jagged_index_select_dim1_bwd.default,
                          (torch.randn(rows, device=device), values.detach(), lengths, offsets,
                           indices, 4, None, rows))


def test_gradcheck():
    values, lengths, offsets = make(LENGTHS, torch.float64)
    indices = torch.tensor([3, 1, 1, 0])
    rows = torch_select(values, lengths, indices, 4)[0].numel()
    values.requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda t: recops.keyed_jagged_index_select_dim1(t, lengths, offsets, indices, 4, None,
                                                        rows)[0], (values,))


def test_errors_name_the_argument():
    values, lengths, offsets = make(LENGTHS)
    op = recops.keyed_jagged_index_select_dim1
    with pytest.raises(RuntimeError, match=r"indices\[0\]=4 is out of range"):
        op(values, lengths, offsets, torch.tensor([4]), 4)
    with pytest.raises(RuntimeError, match="must be a multiple of batch_size=5"):
        op(values, lengths, offsets, torch.tensor([0]), 5)
    with pytest.raises(RuntimeError, match="offsets must be the complete cumsum of lengths"):
        op(values, lengths.flip(0), offsets, torch.tensor([0]), 4)
    with pytest.raises(RuntimeError, match="weights must be 1-D"):
        op(values, lengths, offsets, torch.tensor([0]), 4, torch.ones(3))


def test_compile_dynamic_no_recompiles():
    """torch.compile(fullgraph=True, dynamic=True) with selected_lengths_sum given: one graph over
    varying keys, K and totals; forward and backward equal to eager."""
    import contextlib

    import torch._dynamo

    def model(v, lengths, offsets, indices, rows):
        return recops.keyed_jagged_index_select_dim1(v, lengths, offsets, indices, 4, None,
                                                     rows)[0] * 3.0

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    cases = [(LENGTHS, [3, 1, 1]), (LENGTHS[:8], [0, 2]), (LENGTHS + [1, 2, 0, 5], [1, 3, 3, 2])]
    for i, (lengths, idx) in enumerate(cases):
        torch.manual_seed(i)
        values, lengths, offsets = make(lengths, torch.float64)
        indices = torch.tensor(idx)
        rows = torch_select(values, lengths, indices, 4)[0].numel()
        v1 = values.clone().requires_grad_(True)
        v2 = values.clone().requires_grad_(True)
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(v1, lengths, offsets, indices, rows)
        want = model(v2, lengths, offsets, indices, rows)
        torch.testing.assert_close(got, want)
        g = torch.randn_like(want)
        got.backward(g)
        want.backward(g)
        torch.testing.assert_close(v1.grad, v2.grad)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_compile_without_selected_lengths_sum():
    """Issue 21: selected_lengths_sum omitted under torch.compile(fullgraph=True, dynamic=True):
    the fake kernel (fake.py) gives R an unbacked size; two input sets with different R, forward
    (with weights) and backward equal to eager. opcheck without the argument too."""
    import torch._dynamo

    def model(v, lengths, offsets, indices, weights):
        out, out_len, out_w = recops.keyed_jagged_index_select_dim1(v, lengths, offsets, indices,
                                                                    4, weights)
        return out * 3.0, out_len + 1, out_w * 2.0

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    rows = set()
    for i, (lengths, idx) in enumerate([(LENGTHS, [3, 1, 1]), (LENGTHS + [1, 2, 0, 5], [0, 2])]):
        torch.manual_seed(20 + i)
        values, lengths, offsets = make(lengths, torch.float64)
        indices = torch.tensor(idx)
        weights = torch.randn(values.numel())
        v1 = values.clone().requires_grad_(True)
        v2 = values.clone().requires_grad_(True)
        got = compiled(v1, lengths, offsets, indices, weights)
        want = model(v2, lengths, offsets, indices, weights)
        for g, w in zip(got, want):
            assert torch.equal(g, w)
        torch.testing.assert_close(got[0] / 3.0, torch_select(values, lengths, indices, 4)[0])
        rows.add(got[0].shape[0])
        g = torch.randn_like(want[0])
        got[0].backward(g)
        want[0].backward(g)
        assert torch.equal(v1.grad, v2.grad)
        torch.library.opcheck(torch.ops.recops.keyed_jagged_index_select_dim1.default,
                              (values.requires_grad_(True), lengths, offsets, indices, 4, weights))
        torch.library.opcheck(torch.ops.recops.keyed_jagged_index_select_dim1.default,
                              (values.detach(), lengths, offsets, indices, 4))
    assert len(rows) == 2  # the data-dependent size differed between the two sets


def test_meta_without_selected_lengths_sum_names_it():
    values, lengths, offsets = make(LENGTHS)
    with pytest.raises(RuntimeError, match="selected_lengths_sum must be given"):
        torch.ops.recops.keyed_jagged_index_select_dim1(
            values.to("meta"), lengths.to("meta"), offsets.to("meta"),
            torch.tensor([1], device="meta"), 4)
