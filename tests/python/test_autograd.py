"""Gradients of the two conversions: gradcheck in float64 on the cases' samples, the backward
formulas (each conversion's backward is the other one), no gradient for offsets, and double
backward raising."""

import pytest
import torch

import recops
from recops import testing

import reference

_MAX_GRADCHECK_NUMEL = 600  # finite differences cost one forward per input element


def _fp64_samples(op):
    out = []
    seen = set()
    for s in testing.sample_inputs(op, "cpu"):
        x = s.args[0]
        if not x.dtype.is_floating_point or x.dtype == torch.float8_e4m3fn:
            continue
        if testing.torch_cannot_hold(s):  # gradcheck allocates the output contiguously
            continue
        if x.numel() > _MAX_GRADCHECK_NUMEL or (s.case_id, s.offsets_dtype) in seen:
            continue
        seen.add((s.case_id, s.offsets_dtype))
        out.append(pytest.param(s, id=s.name))
    return out


def _as_fp64(s, device):
    x = s.args[0].detach().to(device=device, dtype=torch.float64).requires_grad_(True)
    return (x,) + tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in s.args[1:])


@pytest.mark.parametrize("sample", _fp64_samples("jagged_to_padded_dense"))
def test_gradcheck_jagged_to_padded_dense(sample, device):
    args = _as_fp64(sample, device)
    pad = sample.kwargs.get("padding_value", 0.0)
    if pad != pad or abs(pad) == float("inf"):
        pad = 0.0  # finite differences need finite outputs
    assert torch.autograd.gradcheck(
        lambda v: recops.jagged_to_padded_dense(v, args[1], args[2], pad), (args[0],))


@pytest.mark.parametrize("sample", _fp64_samples("dense_to_jagged"))
def test_gradcheck_dense_to_jagged(sample, device):
    args = _as_fp64(sample, device)
    total_L = sample.kwargs.get("total_L")
    assert torch.autograd.gradcheck(
        lambda d: recops.dense_to_jagged(d, args[1], total_L), (args[0],))


def _case(lengths, E, device, dtype=torch.float32):
    offsets = torch.tensor(testing.offsets_from_lengths(lengths), device=device)
    values = testing.generate_values((offsets[-1].item(), *E), "fp32", 11).to(device, dtype)
    return values, offsets


def test_backward_formulas(device):
    # Sequence 1 (length 6) is truncated by max_L = 4; its rows 4, 5 get zero gradient.
    values, offsets = _case([2, 6, 0, 3], [3], device)
    v = values.clone().requires_grad_(True)
    out = recops.jagged_to_padded_dense(v, offsets, 4, 7.0)
    g = testing.generate_values(tuple(out.shape), "fp32", 12).to(device)
    out.backward(g)
    assert torch.equal(v.grad, reference.dense_to_jagged(g, offsets, values.shape[0]))
    assert torch.equal(v.grad[2 + 4: 2 + 6], torch.zeros(2, 3, device=device))

    dense = testing.generate_values((4, 5, 3), "fp32", 13).to(device).requires_grad_(True)
    out = recops.dense_to_jagged(dense, offsets)
    g = testing.generate_values(tuple(out.shape), "fp32", 14).to(device)
    out.backward(g)
    assert torch.equal(dense.grad, reference.jagged_to_padded_dense(g, offsets, 5, 0.0))


def test_offsets_and_scalars_get_no_gradient(device):
    values, offsets = _case([2, 3], [2], device)
    v = values.clone().requires_grad_(True)
    out = torch.ops.recops.jagged_to_padded_dense(v, offsets, 3, 0.0)
    (grad_v,) = torch.autograd.grad(out.sum(), (v,))
    assert grad_v.shape == v.shape
    assert not offsets.requires_grad


@pytest.mark.parametrize("op", ["jagged_to_padded_dense", "dense_to_jagged"])
def test_double_backward_raises(op, device):
    values, offsets = _case([2, 3, 1], [2], device, torch.float64)
    if op == "jagged_to_padded_dense":
        x = values.clone().requires_grad_(True)
        fn = lambda t: recops.jagged_to_padded_dense(t, offsets, 3)  # noqa: E731
    else:
        x = torch.randn(3, 4, 2, dtype=torch.float64, device=device, requires_grad=True)
        fn = lambda t: recops.dense_to_jagged(t, offsets)  # noqa: E731
    out = fn(x)
    g = torch.ones_like(out, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{op}: double backward is not supported"):
        (gx,) = torch.autograd.grad(out, x, g, create_graph=True)
        torch.autograd.grad(gx.sum(), g)


def test_cumsum_is_not_differentiable(device):
    t = torch.tensor([1, 2, 3], device=device)
    out = recops.complete_cumsum(t)
    assert not out.requires_grad
