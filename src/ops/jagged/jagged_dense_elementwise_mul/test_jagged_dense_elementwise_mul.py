"""jagged_dense_elementwise_mul through PyTorch (jagged_ops.md §2.4(a)): the family's shared tests
(../common/_jagged_dense_ew_pytest.py) run on this op, then its backward op's formula and opcheck.
Collected by `pytest src/ops`."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _jagged_dense_ew_pytest import *  # noqa: E402,F401,F403 (the tests and the `op` fixture)
from _jagged_dense_ew_pytest import DEVICES, _expected, _sample  # noqa: E402

OP = "jagged_dense_elementwise_mul"


@pytest.mark.parametrize("device", DEVICES)
def test_bwd_formula_and_opcheck(device):
    x, offsets, y = _sample([3, 0, 7, 1], 5, (4,), torch.float32, device)
    grad = torch.randn_like(x)
    dx, dy = torch.ops.recops.jagged_dense_elementwise_mul_bwd(grad, x, offsets, y)
    dx_ref = _expected(OP, grad.cpu(), offsets.cpu(), y.cpu())
    dy_ref = torch.zeros_like(y.cpu())
    for b in range(offsets.numel() - 1):
        s, e = int(offsets[b]), int(offsets[b + 1])
        n = min(e - s, y.size(1))
        dy_ref[b, :n] = grad.cpu()[s:s + n] * x.cpu()[s:s + n]
    torch.testing.assert_close(dx.cpu(), dx_ref, rtol=0, atol=0)
    torch.testing.assert_close(dy.cpu(), dy_ref, rtol=0, atol=0)
    torch.library.opcheck(torch.ops.recops.jagged_dense_elementwise_mul_bwd.default,
                          (grad, x, offsets, y))
