"""The recops CLI for the tests that run it (test_record.py, test_report.py)."""

import os
import shutil
from pathlib import Path


def recops_binary():
    """$RECOPS_BIN, <repo>/build/bin/recops or a `recops` on PATH; None when there is none."""
    root = Path(__file__).resolve().parents[2]
    for cand in (os.environ.get("RECOPS_BIN"), root / "build" / "bin" / "recops",
                 shutil.which("recops")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None
