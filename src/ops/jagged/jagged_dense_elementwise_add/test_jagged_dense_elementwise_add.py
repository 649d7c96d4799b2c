"""jagged_dense_elementwise_add through PyTorch (jagged_ops.md §2.3): the family's shared tests
(../common/_jagged_dense_ew_pytest.py) run on this op. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _jagged_dense_ew_pytest import *  # noqa: E402,F401,F403 (the tests and the `op` fixture)

OP = "jagged_dense_elementwise_add"
