"""The permute ops through PyTorch (permute_1D_sparse_data, permute_2D_sparse_data): the torch
formula on random data, opcheck, the output size rules, forward-only, torch.compile and the
errors. Not collected itself (the leading underscore): each op's test_<op>.py imports these tests
and sets TWO_D, which the `two_d` fixture reads."""

import contextlib

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
B = 3  # segments per row of the 2-D op's lengths


@pytest.fixture
def two_d(request):
    """The op under test: the importing test module's TWO_D."""
    return request.module.TWO_D


def ops(two_d):
    """(the Python wrapper, the raw op) of the op under test."""
    name = "permute_2D_sparse_data" if two_d else "permute_1D_sparse_data"
    return getattr(recops, name), getattr(torch.ops.recops, name)


def rows_of(two_d, lengths):
    """lengths as the op's lengths argument: [T] or [T/B, B]."""
    t = torch.tensor(lengths)
    return t.reshape(-1, B) if two_d else t


def torch_permute(permute, lengths, values, weights=None):
    """Output segment (i, b) = input segment (permute[i], b), segments in row-major order of
    lengths ([T] or [T, B]); plain torch on the CPU."""
    lengths, permute = lengths.cpu(), permute.cpu().long()
    cols = lengths.shape[1] if lengths.dim() == 2 else 1
    off = [0] + torch.cumsum(lengths.reshape(-1).long(), 0).tolist()
    segs = [t * cols + b for t in permute.tolist() for b in range(cols)]
    idx = torch.tensor([r for s in segs for r in range(off[s], off[s + 1])], dtype=torch.long)
    w = weights.cpu()[idx] if weights is not None else None
    return lengths[permute], values.cpu()[idx], w


def make(two_d, T, max_len, E=(), dtype=torch.float32, len_dtype=torch.int64, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(0, max_len, (T, B) if two_d else (T,), generator=g).to(len_dtype)
    n = int(lengths.sum())
    values = (torch.randn((n, *E), generator=g, dtype=torch.float64) * 50).to(dtype)
    weights = torch.rand(n, generator=g)
    return lengths, values, weights


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.uint8, torch.bool])
@pytest.mark.parametrize("len_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("perm_dtype", [torch.int32, torch.int64])
def test_matches_formula(two_d, device, dtype, len_dtype, perm_dtype):
    fn, op = ops(two_d)
    lengths, values, weights = make(two_d, 53, 3, dtype=dtype, len_dtype=len_dtype)
    permute = torch.randint(0, 53, (71,), generator=torch.Generator().manual_seed(1)).to(perm_dtype)
    want = torch_permute(permute, lengths, values, weights)
    rows = want[1].shape[0]
    dev = lambda t: t.to(device)
    got = fn(dev(permute), dev(lengths), dev(values), dev(weights), rows)
    for g, w in zip(got, want):
        assert g.device.type == device and torch.equal(g.cpu(), w)
    assert got[0].dtype == len_dtype
    got = op(dev(permute), dev(lengths), dev(values), None, rows)
    assert torch.equal(got[1].cpu(), want[1]) and got[2].numel() == 0


def test_trailing_dims_strided_and_host_rows(two_d):
    fn, op = ops(two_d)
    lengths, values, weights = make(two_d, 17, 5, E=(3, 2))
    strided = torch.zeros(values.shape[0], 5, 2)[:, 1:4]
    strided.copy_(values)
    weights2 = torch.rand(values.shape[0], 4)
    permute = torch.tensor([16, 0, 3, 3, 9])
    got = fn(permute, lengths, strided, weights2)  # rows read here
    want = torch_permute(permute, lengths, values, weights2)
    assert all(torch.equal(g, w) for g, w in zip(got, want))


@pytest.mark.parametrize("device", DEVICES)
def test_empty(two_d, device):
    fn, op = ops(two_d)
    lengths, values, weights = make(two_d, 5, 4)
    empty = torch.empty(0, dtype=torch.int64, device=device)
    pl, pv, pw = op(empty, lengths.to(device), values.to(device), weights.to(device), 0)
    assert pl.shape == ((0, B) if two_d else (0,)) and pv.shape == (0,) and pw.shape == (0,)
    no_rows = torch.empty((0, B) if two_d else (0,), dtype=torch.int64, device=device)
    pl, pv, pw = op(empty, no_rows, torch.empty(0, 3, device=device), None, 0)
    assert pl.shape == no_rows.shape and pv.shape == (0, 3)
    if two_d:  # lengths [T, 0] with T past memory: empty, so nothing may be sized by T
        huge = torch.empty(2**40, 0, dtype=torch.int64, device=device)
        perm = torch.tensor([2**40 - 1, 0], device=device)
        pl, pv, pw = op(perm, huge, torch.empty(0, 3, device=device), None, None)
        assert pl.shape == (2, 0) and pv.shape == (0, 3)
        with pytest.raises(RuntimeError, match="permuted_lengths_sum|permuted lengths are empty"):
            op(perm, huge, torch.empty(0, 3, device=device), None, 5)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(two_d, device):
    fn, op = ops(two_d)
    lengths, values, weights = make(two_d, 9, 4)
    permute = torch.tensor([8, 2, 2, 0])
    rows = int(lengths[permute].sum())
    args = [t.to(device) for t in (permute, lengths, values, weights)]
    torch.library.opcheck(op.default, (*args, rows))
    torch.library.opcheck(op.default, (*args[:3], None, rows))


def test_forward_only(two_d):
    fn, op = ops(two_d)
    lengths, values, weights = make(two_d, 4, 3)
    with pytest.raises(RuntimeError, match="requires"):
        fn(torch.tensor([1]), lengths, values,
                                      weights.requires_grad_(True))


def test_meta_needs_rows(two_d):
    fn, op = ops(two_d)
    lengths, values, _ = make(two_d, 4, 3)
    with pytest.raises(RuntimeError, match="permuted_lengths_sum must be given"):
        op(torch.tensor([1], device="meta"), lengths.to("meta"), values.to("meta"))
    pl, pv, pw = op(torch.tensor([1, 2], device="meta"), lengths.to("meta"), values.to("meta"),
                    None, 5)
    assert pl.shape == ((2, B) if two_d else (2,)) and pv.shape == (5,) and pw.shape == (0,)


def test_errors_name_the_argument(two_d):
    fn, op = ops(two_d)
    lengths, values, _ = make(two_d, 4, 3, seed=3)
    n = values.shape[0]
    with pytest.raises(RuntimeError, match=r"_sparse_data: permute\[1\]=4 is out of range"):
        fn(torch.tensor([0, 4]), lengths, values)
    with pytest.raises(RuntimeError, match=r"lengths\[1\]=-1 is negative"):
        fn(torch.tensor([0]), rows_of(two_d, [n + 1, -1, 0]), values)
    with pytest.raises(RuntimeError, match=f"lengths sum to {n + 1} but values.size"):
        fn(torch.tensor([0]), rows_of(two_d, [n, 1, 0]), values)
    with pytest.raises(RuntimeError, match="the permuted lengths sum to"):
        fn(torch.tensor([0]), lengths, values, None, 10**6)
    with pytest.raises(RuntimeError, match="permute must be int32 or int64"):
        fn(torch.tensor([0.0]), lengths, values)
    with pytest.raises(RuntimeError, match="weights must be"):
        fn(torch.tensor([0]), lengths, values,
                                      torch.ones(n, dtype=torch.int32))


def test_compile_dynamic_no_recompiles(two_d):
    fn, op = ops(two_d)
    """torch.compile(fullgraph=True, dynamic=True) with permuted_lengths_sum given: one graph
    over varying T, P and N, equal to eager."""
    import torch._dynamo

    def model(permute, lengths, values, weights, rows):
        _, v, w = fn(permute, lengths, values, weights, rows)
        return v * 2, w + 1

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    for i, (T, P) in enumerate([(7, 5), (13, 20), (30, 9)]):
        lengths, values, weights = make(two_d, T, 4, seed=i)
        permute = torch.randint(0, T, (P,), generator=torch.Generator().manual_seed(i))
        rows = int(lengths[permute].sum())
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else contextlib.nullcontext()
        with ctx:
            got = compiled(permute, lengths, values, weights, rows)
        want = model(permute, lengths, values, weights, rows)
        assert all(torch.equal(g, w) for g, w in zip(got, want))
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def test_compile_without_rows(two_d):
    """Issue 21: permuted_lengths_sum omitted under torch.compile(fullgraph=True, dynamic=True):
    the fake kernel (the op folder's fake.py) gives the rows an unbacked size; two input sets
    with different sums, equal to eager. opcheck without the argument too."""
    import torch._dynamo

    fn, op = ops(two_d)

    def model(permute, lengths, values, weights):
        pl, v, w = fn(permute, lengths, values, weights)
        return pl + 1, v * 2, w + 1

    torch._dynamo.reset()
    compiled = torch.compile(model, fullgraph=True, dynamic=True, backend="aot_eager")
    sums = set()
    for i, (T, P) in enumerate([(7, 5), (13, 20)]):
        lengths, values, weights = make(two_d, T, 4, E=(3,), seed=10 + i)
        permute = torch.randint(0, T, (P,), generator=torch.Generator().manual_seed(i))
        got = compiled(permute, lengths, values, weights)
        want = model(permute, lengths, values, weights)
        assert all(torch.equal(g, w) for g, w in zip(got, want))
        torch.testing.assert_close(got[1].cpu() / 2, torch_permute(permute, lengths, values)[1])
        sums.add(got[1].shape[0])
        torch.library.opcheck(op.default, (permute, lengths, values, weights))
        torch.library.opcheck(op.default, (permute, lengths, values))
    assert len(sums) == 2  # the data-dependent size differed between the two sets
