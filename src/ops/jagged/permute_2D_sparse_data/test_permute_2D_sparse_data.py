"""permute_2D_sparse_data through PyTorch: the family's shared permute tests
(../common/_permute_pytest.py) with lengths [T, B], then the non-contiguous lengths the binding
copies. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _permute_pytest import *  # noqa: E402,F401,F403 (the tests and the `two_d` fixture)
from _permute_pytest import make, torch_permute  # noqa: E402

TWO_D = True


def test_transposed_lengths():
    lengths, values, weights = make(True, 6, 4)
    lt = lengths.t().contiguous().t()  # same values, column-major
    permute = torch.tensor([5, 0, 0, 2])
    got = torch.ops.recops.permute_2D_sparse_data(permute, lt, values, weights)
    want = torch_permute(permute, lengths, values, weights)
    assert all(torch.equal(g, w) for g, w in zip(got, want))
