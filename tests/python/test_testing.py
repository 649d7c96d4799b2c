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
