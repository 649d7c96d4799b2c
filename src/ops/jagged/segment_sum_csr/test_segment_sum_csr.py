"""segment_sum_csr through PyTorch: the torch formula (fp64) on random data, opcheck (schema,
fake/Meta), forward-only refusal and the errors. Collected by `pytest src/ops`."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def make(lengths, batch_size, dtype=torch.float32, device="cpu", csr_dtype=torch.int64):
    csr = torch.zeros(len(lengths) + 1, dtype=torch.int64)
    csr[1:] = torch.cumsum(torch.tensor(lengths, dtype=torch.int64), 0)
    n = int(csr[-1]) * batch_size
    if dtype.is_floating_point:
        values = torch.randn(n, dtype=torch.float64).to(dtype)
    else:
        values = torch.randint(-1000, 1000, (n,), dtype=dtype)
    return csr.to(csr_dtype).to(device), values.to(device)


def torch_segment_sum(batch_size, csr, values):
    c = (csr.long() * batch_size).tolist()
    acc = torch.float64 if values.dtype.is_floating_point else torch.int64
    return torch.stack([values[c[i]:c[i + 1]].to(acc).sum() for i in range(len(c) - 1)]
                       + [torch.zeros((), dtype=acc)])[:-1]


TOL = {torch.float64: 1e-12, torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 8e-3}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16,
                                   torch.int32, torch.int64])
@pytest.mark.parametrize("csr_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("batch_size", [1, 3])
def test_matches_formula(device, dtype, csr_dtype, batch_size):
    torch.manual_seed(batch_size)
    csr, values = make([0, 3, 17, 1, 0, 40, 9], batch_size, dtype, device, csr_dtype)
    out = recops.segment_sum_csr(batch_size, csr, values)
    assert out.dtype == dtype and out.shape == (7,)
    want = torch_segment_sum(batch_size, csr.cpu(), values.cpu())
    if dtype.is_floating_point:
        tol = TOL[dtype]
        torch.testing.assert_close(out.double().cpu(), want, atol=tol, rtol=tol)
    else:
        assert torch.equal(out.cpu().long(), want)


def test_empty_and_noncontiguous():
    csr = torch.tensor([0])
    assert recops.segment_sum_csr(2, csr, torch.empty(0)).shape == (0,)
    csr, values = make([2, 0, 5], 2)
    wide = torch.zeros(values.numel(), 3)
    wide[:, 1] = values
    torch.testing.assert_close(recops.segment_sum_csr(2, csr, wide[:, 1]),
                               recops.segment_sum_csr(2, csr, values))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    csr, values = make([3, 0, 6], 2, device=device)
    torch.library.opcheck(torch.ops.recops.segment_sum_csr.default, (2, csr, values))


def test_forward_only():
    csr, values = make([3, 1], 1)
    with pytest.raises(RuntimeError, match="values"):
        recops.segment_sum_csr(1, csr, values.requires_grad_(True))


def test_errors_name_the_argument():
    csr, values = make([2, 3], 2)
    with pytest.raises(RuntimeError, match="segment_sum_csr: batch_size=0 must be >= 1"):
        recops.segment_sum_csr(0, csr, values)
    with pytest.raises(RuntimeError, match="segment_sum_csr: values must be fp64, fp32"):
        recops.segment_sum_csr(2, csr, values.bool())
    with pytest.raises(RuntimeError, match="segment_sum_csr: values must be 1-D"):
        recops.segment_sum_csr(2, csr, values.reshape(5, 2))
    with pytest.raises(RuntimeError, match="must be a multiple of batch_size=3"):
        recops.segment_sum_csr(3, csr, values)
    with pytest.raises(RuntimeError, match="non-decreasing"):
        recops.segment_sum_csr(2, torch.tensor([0, 4, 2, 5]), values)
    with pytest.raises(RuntimeError, match=r"segment_sum_csr: csr_seg\[2\]=4"):
        recops.segment_sum_csr(2, torch.tensor([0, 2, 4]), values)


def test_compile_dynamic_no_recompiles():
    """torch.compile(fullgraph=True, dynamic=True): one graph over varying S and N."""
    import contextlib

    import torch._dynamo

    def model(bs, csr, v):
        return recops.segment_sum_csr(bs, csr, v) * 2.0

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, lengths in enumerate([[3, 0, 5], [1, 2, 3, 4, 5], [7, 1]]):
        csr, values = make(lengths, 2)
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(2, csr, values)
        torch.testing.assert_close(got, model(2, csr, values))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1
