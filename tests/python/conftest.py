# tests/python: the binding's contract (tests against plain PyTorch, opcheck, gradcheck,
# torch.compile, errors). `import recops` must find python/recops (the Makefile's .pth file, or
# PYTHONPATH=python) and librecops_torch.so (build/lib, next to the package, or RECOPS_TORCH_LIB).
import sys
from pathlib import Path

import pytest
import torch

# Triton before TensorFlow: with tensorflow-cpu 2.21 loaded first, a later `import triton`
# (torch.compile's inductor imports it) segfaults in its extension module's load; the other
# order works. The
# single-process suite happened to import triton first; with one pytest-xdist worker per core a
# worker may run test_tensorflow.py first. Seen at 07cd727 with and without OpenBLAS.
try:
    import triton  # noqa: F401
except ImportError:
    pass

_PY = Path(__file__).resolve().parents[2] / "python"
if str(_PY) not in sys.path:
    sys.path.insert(0, str(_PY))

import recops  # noqa: E402,F401

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_generate_tests(metafunc):
    if "device" in metafunc.fixturenames:
        metafunc.parametrize("device", DEVICES)


@pytest.fixture(autouse=True)
def _validate_on_cuda():
    # Offsets contents are checked on CUDA only with validation on (jagged_ops.md §1.2); the
    # suite wants the CPU's errors on every backend.
    recops.set_validate(True)
    yield
