"""recops.testing reproduces the C++ generators: fixed values computed with src/core/hash_rng.h."""

import numpy as np
import pytest
import torch

from recops import testing


def test_hash64_scalar_and_array_agree():
    idx = np.arange(1000, dtype=np.uint64)
    arr = testing.hash64_array(12345, idx)
    assert [int(x) for x in arr[:50]] == [testing.hash64(12345, i) for i in range(50)]


def test_uniform_ranges():
    u = testing.uniform01(7, np.arange(10000, dtype=np.uint64))
    assert u.min() >= 0.0 and u.max() < 1.0
    r = testing.uniform_int(7, np.arange(10000, dtype=np.uint64), -3, 4)
    assert r.min() == -3 and r.max() == 4


def test_round_to_dtype_is_single_rounding():
    # A value just above a bf16 tie: rounding through fp32 first would land on the tie and round
    # to even (down); a single rounding goes up.
    x = np.array([1.0 + 2.0**-8 + 2.0**-30])
    assert testing.round_to_dtype(x, "bf16")[0] == 1.0 + 2.0**-7
    assert float(torch.tensor(x).float().to(torch.bfloat16)) == 1.0


def test_length_generators():
    assert testing.make_lengths({"gen": "empty", "B": 3, "max": 4}, 0) == [0, 0, 0]
    assert testing.make_lengths({"gen": "all_max", "B": 2, "max": 4}, 0) == [4, 4]
    u = testing.make_lengths({"gen": "uniform", "B": 500, "max": 10}, 3)
    assert min(u) == 0 and max(u) == 9
    s = testing.make_lengths({"gen": "skewed", "B": 2000, "max": 1024}, 3)
    assert max(s) <= 2048 and 150 < sorted(s)[1000] < 400  # median about max/4
    r = testing.make_lengths({"gen": "range", "B": 300, "lo": 19, "hi": 25}, 3)
    assert min(r) == 19 and max(r) == 25


def test_rowpadded_values_layout():
    t = testing.rowpadded_values([4], [3], "fp32", 9, 1, row_pad=2)
    assert t.shape == (4, 3) and t.stride() == (5, 1)
    assert torch.equal(t, testing.rowpadded_values([4], [3], "fp32", 9, 1))


def test_assert_accurate_standard():
    # docs/spec/accuracy.md: the non-finite pattern always; single: mean rel <= T, max <= 10 T;
    # double: err(out) <= 2 err(plain) + T/8.
    from recops.testing import assert_accurate
    gold = torch.tensor([1.0, float("nan"), float("inf"), -2.0, 3.0], dtype=torch.float64)
    out = gold.float()
    assert_accurate(out, gold, torch.float32)
    for i, v in [(1, 0.0), (2, float("-inf")), (3, float("nan")), (4, float("inf"))]:
        bad = out.clone()
        bad[i] = v
        with pytest.raises(AssertionError, match="non-finite pattern"):
            assert_accurate(bad, gold, torch.float32)
    with pytest.raises(AssertionError, match="rel"):
        assert_accurate(out * (1 + 2e-3), gold, torch.float32)
    plain = gold.float() + 0.01
    assert_accurate(out + 0.005, gold, torch.float32, plain=plain)
    with pytest.raises(AssertionError, match="max-abs"):
        assert_accurate(out + 0.1, gold, torch.float32, plain=plain)


# ---- sample_inputs for every registered op (the CLI's recorded inputs) ------------------------

_CASES = 8  # per op: its first valid cases, every row compared with the CLI's own outputs


def _registered():
    import recops  # noqa: F401 (loads the binding)

    return testing.registered_ops()


@pytest.fixture(scope="module")
def _cli():
    if testing.cli_binary() is None:
        pytest.skip("no recops CLI: build it (build/bin/recops) or set RECOPS_BIN")


def _same(got, want, name):
    assert got.shape == want.shape and got.dtype == want.dtype, (name, got.shape, want.shape,
                                                                   got.dtype, want.dtype)
    if got.dtype == torch.float8_e4m3fn:
        got, want = got.view(torch.uint8), want.view(torch.uint8)
    torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True, msg=name)


@pytest.mark.parametrize("op", _registered())
def test_samples_reproduce_the_cli(op, _cli):
    # The mapping of the recorded inputs and the case's scalars onto the schema is right when
    # torch, on the sample, gives the outputs the CLI recorded with the same CPU implementation.
    samples = testing.sample_inputs(op, "cpu", max_cases=_CASES)
    gaps = testing.sample_gaps(op, max_cases=_CASES)
    if not samples:
        assert gaps or not list(testing.case_rows(op)), op
        pytest.skip("; ".join(f"{r}: {w}" for r, w in gaps) or "no valid row")
    if op in testing.OP_FOLDER:
        return  # built here; test_ops.py compares them with plain PyTorch
    for s in samples:
        rec = testing.recorded_outputs(s)
        if s.name in _BINDING_REFUSES:
            # A recorded failure must still fail; when it stops failing, delete its record.
            with pytest.raises(RuntimeError, match="tensors without data"):
                testing.call(s)
            continue
        for name, got, want in testing.recorded_pairs(s, testing.call(s)):
            if want is None:  # not produced by this call: the binding returns it empty
                assert got.numel() == 0, f"{s.name}: {name}"
            else:
                _same(got.detach(), want, f"{s.name}: {name}")


# Valid all-empty inputs the torch binding refuses, which the CLI runs: an empty CPU tensor's
# data pointer is null and the binding takes it for a tensor without data (Meta), whose
# data-dependent output size must then be given.
_BINDING_REFUSES: dict = {}  # none left: the all-empty rows run through the binding (issue 21)


def test_recorded_sample_fields(_cli):
    s = testing.sample_inputs("l2norm", "cpu", requires_grad=True, max_cases=1)[0]
    assert s.record is not None and s.record["case"] == s.case_id
    vals = testing.schema_values(s)
    names = [a.name for a in torch.ops.recops.l2norm.default._schema.arguments]
    assert names == ["x", "eps", "out_dtype"] and len(vals) == 3
    assert vals[0].requires_grad and vals[0].is_contiguous()
    assert not testing.sample_inputs("l2norm", "cpu", max_cases=1)[0].args[0].requires_grad
    # the differentiable arguments only: the backward's inputs take no gradient
    b = testing.sample_inputs("l2norm_bwd", "cpu", requires_grad=True, max_cases=1)[0]
    assert not any(isinstance(v, torch.Tensor) and v.requires_grad for v in b.args)
