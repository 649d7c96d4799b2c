# src/ops: each op folder's Python tests (test_*.py beside the op), collected by
# `pytest tests/python src/ops` (scripts/test_all.sh). The template's placeholders are not an op.
import sys
from pathlib import Path

_PY = Path(__file__).resolve().parents[2] / "python"
if str(_PY) not in sys.path:
    sys.path.insert(0, str(_PY))

collect_ignore_glob = ["_template/*"]

# Triton before TensorFlow (tests/python/conftest.py says why), when src/ops runs on its own.
try:
    import triton  # noqa: F401
except ImportError:
    pass
