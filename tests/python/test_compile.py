"""torch.compile(fullgraph=True, dynamic=True) over the ops with varying B, total_L and max_L:
one graph, no recompilation, forward and backward equal to eager."""

import os

import pytest
import torch
import torch._dynamo

import recops
from recops import testing


def _inputs(B, max_len, E, seed, device):
    lengths = testing.make_lengths({"gen": "uniform", "B": B, "max": max_len}, seed)
    lengths[0] = max(lengths[0], 2)  # keep total_L >= 2: sizes 0 and 1 specialise in dynamo
    offsets = torch.tensor(testing.offsets_from_lengths(lengths), device=device)
    values = testing.generate_values((offsets[-1].item(), E), "fp32", seed + 1).to(device)
    return values, offsets


def _model(values, offsets, max_seq_len):
    dense = recops.jagged_to_padded_dense(values, offsets, max_seq_len, -1.0)
    y = torch.tanh(dense) * 2.0
    back = recops.dense_to_jagged(y, offsets, values.shape[0])
    lengths = offsets[1:] - offsets[:-1]
    new_offsets = recops.complete_cumsum(lengths)
    incl = recops.inclusive_cumsum(lengths)
    excl = recops.exclusive_cumsum(lengths)
    return back, new_offsets, incl - excl


_SHAPES = [(5, 9, 13), (9, 17, 6), (13, 33, 21)]  # (B, max length, max_seq_len): B, total_L vary


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_no_recompiles(device, backend):
    if backend == "inductor" and device == "cpu" and not os.environ.get("RECOPS_TEST_INDUCTOR_CPU"):
        # aot_eager already traces our ops (fake kernels, autograd, dynamic shapes) exactly as
        # inductor does; inductor's CPU codegen for the surrounding tanh/mul adds about a minute
        # of C++ compilation on a cold cache. RECOPS_TEST_INDUCTOR_CPU=1 runs it.
        pytest.skip("inductor on the CPU: set RECOPS_TEST_INDUCTOR_CPU=1 (slow cold compile)")
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    compiled = torch.compile(_model, fullgraph=True, dynamic=True, backend=backend)
    for i, (B, max_len, max_l) in enumerate(_SHAPES):
        values, offsets = _inputs(B, max_len, 8, 100 + i, device)
        v_eager = values.clone().requires_grad_(True)
        v_comp = values.clone().requires_grad_(True)
        ctx = torch._dynamo.config.patch(error_on_recompile=True) if i > 0 else _null()
        with ctx:
            got = compiled(v_comp, offsets, max_l)
        want = _model(v_eager, offsets, max_l)
        for a, b in zip(got, want):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
        got[0].sum().backward()
        want[0].sum().backward()
        torch.testing.assert_close(v_comp.grad, v_eager.grad, rtol=1e-6, atol=1e-6)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == 1


def _null():
    import contextlib

    return contextlib.nullcontext()


def test_compile_dense_to_jagged_without_total_L(device):
    """total_L omitted: the fake kernel returns an unbacked size (jagged_ops.md §2.2)."""
    torch._dynamo.reset()

    def f(dense, offsets):
        return recops.dense_to_jagged(dense, offsets) * 3.0

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(f, fullgraph=True, dynamic=True, backend="aot_eager")
        for i, (B, S) in enumerate([(4, 6), (7, 3)]):
            lengths = testing.make_lengths({"gen": "uniform", "B": B, "max": 8}, 7 + i)
            offsets = torch.tensor(testing.offsets_from_lengths(lengths), device=device)
            dense = testing.generate_values((B, S, 5), "fp32", 30 + i).to(device)
            torch.testing.assert_close(compiled(dense, offsets), f(dense, offsets), rtol=0, atol=0)
