"""permute_1D_sparse_data through PyTorch: the family's shared permute tests
(../common/_permute_pytest.py) with lengths [T]. Collected by `pytest src/ops`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "common"))
from _permute_pytest import *  # noqa: E402,F401,F403 (the tests and the `two_d` fixture)

TWO_D = False
