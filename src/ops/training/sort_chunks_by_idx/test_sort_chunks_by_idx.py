"""sort_chunks_by_idx through PyTorch: Megatron's torch.split/cat formula, the backward as the
inverse permutation, opcheck, gradcheck and the refusals. Collected by `pytest src/ops`
(scripts/test_all.sh)."""

import pytest
import torch

import recops

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def torch_sort_chunks(x, split_sizes, sorted_idx):
    parts = torch.split(x, split_sizes.tolist(), dim=0)
    return torch.cat([parts[i] for i in sorted_idx.tolist()], dim=0)


def random_chunks(T, C, gen, idx_dtype=torch.int64):
    cuts = torch.sort(torch.randint(0, T + 1, (C - 1,), generator=gen)).values
    bounds = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.tensor([T])])
    return bounds.diff().to(idx_dtype), torch.randperm(C, generator=gen).to(idx_dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int32])
@pytest.mark.parametrize("T,C", [(0, 3), (1, 1), (63, 256), (97, 13)])
@pytest.mark.parametrize("idx_dtype", [torch.int32, torch.int64])
def test_matches_split_cat(device, dtype, T, C, idx_dtype):
    gen = torch.Generator().manual_seed(T * 1000 + C)
    x = (torch.randn(T, 5, generator=gen) * 100).to(dtype).to(device)
    probs = torch.rand(T, generator=gen).to(device)
    s, k = random_chunks(T, C, gen, idx_dtype)
    s, k = s.to(device), k.to(device)
    out, pp = recops.sort_chunks_by_idx(x, s, k, probs)
    assert torch.equal(out, torch_sort_chunks(x, s, k))
    assert torch.equal(pp, torch_sort_chunks(probs, s, k))
    out2, none = recops.sort_chunks_by_idx(x, s, k)
    assert torch.equal(out2, out) and none.numel() == 0


@pytest.mark.parametrize("with_probs", [True, False])
def test_backward_is_the_inverse_permutation(with_probs):
    gen = torch.Generator().manual_seed(7)
    s, k = random_chunks(50, 9, gen)
    x = torch.randn(50, 4, dtype=torch.float64, requires_grad=True)
    p = torch.rand(50, dtype=torch.float64, requires_grad=True) if with_probs else None
    out, pp = recops.sort_chunks_by_idx(x, s, k, p)
    gy = torch.randn_like(out)
    loss = (out * gy).sum() + ((pp * torch.arange(50.0)).sum() if with_probs else 0)
    loss.backward()
    # the spec: the backward equals sort_chunks_by_idx(grad, split_sizes[sorted_idx], argsort)
    inv = torch.argsort(k)
    assert torch.equal(x.grad, torch_sort_chunks(gy, s[k], inv))
    if with_probs:
        assert torch.equal(p.grad, torch_sort_chunks(torch.arange(50.0, dtype=torch.float64),
                                                     s[k], inv))


def test_gradcheck():
    s = torch.tensor([2, 0, 3, 1])
    k = torch.tensor([3, 1, 0, 2])
    x = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    p = torch.rand(6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: recops.sort_chunks_by_idx(a, s, k, b), (x, p))
    assert torch.autograd.gradcheck(lambda a: recops.sort_chunks_by_idx(a, s, k)[0], (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    s = torch.tensor([3, 1, 4], device=device)
    k = torch.tensor([2, 0, 1], device=device, dtype=torch.int32)
    x = torch.randn(8, 6, device=device, requires_grad=True)
    p = torch.rand(8, device=device, requires_grad=True)
    torch.library.opcheck(torch.ops.recops.sort_chunks_by_idx.default, (x, s, k, p))
    torch.library.opcheck(torch.ops.recops.sort_chunks_by_idx.default, (x, s, k, None))
    torch.library.opcheck(torch.ops.recops.sort_chunks_by_idx_bwd.default,
                          (torch.randn(8, 6, device=device), s, k, torch.rand(8, device=device)))


def test_noncontiguous_input_is_copied():
    x = torch.randn(6, 8)[:, ::2]
    s, k = torch.tensor([1, 5]), torch.tensor([1, 0])
    assert torch.equal(recops.sort_chunks_by_idx(x, s, k)[0], torch_sort_chunks(x, s, k))


def test_bad_values_name_the_argument_and_rule():
    x = torch.randn(10, 2)
    with pytest.raises(RuntimeError, match="split_sizes must sum to T=10"):
        recops.sort_chunks_by_idx(x, torch.tensor([3, 3]), torch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match=r"sorted_idx must be a permutation of 0..C-1"):
        recops.sort_chunks_by_idx(x, torch.tensor([5, 5]), torch.tensor([1, 1]))
    with pytest.raises(RuntimeError, match=r"split_sizes\[0\]=-1 must be >= 0"):
        recops.sort_chunks_by_idx(x, torch.tensor([-1, 11]), torch.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="split_sizes must be int32 or int64"):
        recops.sort_chunks_by_idx(x, torch.tensor([5.0, 5.0]), torch.tensor([1, 0]))
    with pytest.raises(RuntimeError, match=r"probs must be contiguous \[T\] with T=10"):
        recops.sort_chunks_by_idx(x, torch.tensor([5, 5]), torch.tensor([1, 0]), torch.rand(9))
