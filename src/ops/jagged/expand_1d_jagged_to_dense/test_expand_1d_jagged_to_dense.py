"""expand_1d_jagged_to_dense through PyTorch: the formula on random data (every kind of dtype),
opcheck, forward-only refusal and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(lengths, dtype=torch.int64, device="cpu", offsets_dtype=torch.int64):
    offsets = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    offsets[1:] = torch.cumsum(torch.tensor(lengths, dtype=torch.int64), 0)
    n = int(offsets[-1])
    values = (torch.randn(n) * 100).to(dtype) if dtype != torch.int64 else torch.randint(0, 10**12, (n,))
    return values.to(device), offsets.to(offsets_dtype).to(device)


def torch_expand(values, offsets, max_len):
    off = offsets.cpu().tolist()
    out = torch.zeros(len(off) - 1, max_len, dtype=values.dtype)
    for b in range(len(off) - 1):
        seq = values.cpu()[off[b]:off[b + 1]]
        if seq.numel() == 0:
            continue
        n = min(seq.numel(), max_len)
        out[b, :n] = seq[:n]
        out[b, n:] = seq[-1]
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.bfloat16,
                                   torch.float16, torch.float64, torch.bool, torch.uint8])
@pytest.mark.parametrize("offsets_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("max_len", [0, 1, 5, 50])
def test_matches_formula(device, dtype, offsets_dtype, max_len):
    torch.manual_seed(max_len)
    values, offsets = make([0, 3, 17, 1, 0, 40, 5], dtype, device, offsets_dtype)
    out = recops.expand_1d_jagged_to_dense(values, offsets, max_len)
    assert out.shape == (7, max_len) and out.dtype == dtype
    assert torch.equal(out.cpu(), torch_expand(values, offsets, max_len))


def test_empty_values_and_strided():
    values, offsets = make([0, 0, 0])
    assert torch.equal(recops.expand_1d_jagged_to_dense(values, offsets, 4),
                       torch.zeros(3, 4, dtype=torch.int64))
    values, offsets = make([4, 0, 6])
    wide = torch.zeros(values.numel(), 3, dtype=values.dtype)
    wide[:, 1] = values
    assert torch.equal(recops.expand_1d_jagged_to_dense(wide[:, 1], offsets, 8),
                       torch_expand(values, offsets, 8))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    values, offsets = make([3, 0, 6], torch.float32, device)
    torch.library.opcheck(torch.ops.recops.expand_1d_jagged_to_dense.default, (values, offsets, 5))


def test_forward_only():
    values, offsets = make([3, 1], torch.float32)
    with pytest.raises(RuntimeError, match="values"):
        recops.expand_1d_jagged_to_dense(values.requires_grad_(True), offsets, 3)


def test_errors_name_the_argument():
    values, offsets = make([2, 3])
    with pytest.raises(RuntimeError, match="expand_1d_jagged_to_dense: max_len=-1 must be >= 0"):
        recops.expand_1d_jagged_to_dense(values, offsets, -1)
    with pytest.raises(RuntimeError, match="expand_1d_jagged_to_dense: values must be 1-D"):
        recops.expand_1d_jagged_to_dense(values.reshape(5, 1), offsets, 3)
    with pytest.raises(RuntimeError, match="non-decreasing"):
        recops.expand_1d_jagged_to_dense(values, torch.tensor([0, 4, 2, 5]), 3)
    with pytest.raises(RuntimeError, match=r"seq_offsets\[2\]=4"):
        recops.expand_1d_jagged_to_dense(values, torch.tensor([0, 2, 4]), 3)


def test_compile_dynamic_no_recompiles():
    """torch.compile(fullgraph=True, dynamic=True): one graph over varying B, total_L, max_len."""
    import contextlib

    import torch._dynamo

    def model(v, off, max_len):
        return recops.expand_1d_jagged_to_dense(v, off, max_len) + 1

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (lengths, max_len) in enumerate([([3, 0, 5], 4), ([1, 2, 3, 4, 5], 6), ([7, 1], 9)]):
        values, offsets = make(lengths)
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(values, offsets, max_len)
        assert torch.equal(got, model(values, offsets, max_len))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
