"""`recops report` on the committed H200 results: bench/plot.py draws the PNGs and writes the
Markdown and HTML summaries (matplotlib, with this interpreter through RECOPS_PYTHON)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import recops_binary

pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]


def _timing_records(path):
    data = json.loads(Path(path).read_text())
    return isinstance(data, list) and data and all(isinstance(r, dict) and "op" in r and "time_ms" in r for r in data)


def test_report_on_h200_results(tmp_path):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary: build it (make build) or set RECOPS_BIN")
    # The timing records (bench, peers, kernels); the folder also holds accuracy records (check,
    # compare) that a report does not take.
    results = sorted(str(p) for p in (ROOT / "bench" / "results" / "h200").glob("*.json") if _timing_records(p))
    assert results
    env = dict(os.environ, RECOPS_PYTHON=sys.executable)
    proc = subprocess.run([binary, "report", *results, "--out", str(tmp_path), "--cases-dir", str(ROOT)],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    pngs = {p.name for p in tmp_path.glob("*.png")}
    assert {"speedup_vs_peer.png", "fraction_of_ceiling.png", "throughput_jagged_to_padded_dense.png"} <= pngs
    for name in pngs:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "README.md").read_text()
    assert "](speedup_vs_peer.png)" in md and "| jagged_to_padded_dense | S3 |" in md
    assert "<img src='fraction_of_ceiling.png'" in (tmp_path / "index.html").read_text()


def test_report_rejects_a_file_that_is_not_a_list(tmp_path):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary")
    bad = tmp_path / "bad.json"
    bad.write_text('{"op": "x"}')
    env = dict(os.environ, RECOPS_PYTHON=sys.executable)
    proc = subprocess.run([binary, "report", str(bad), "--out", str(tmp_path / "out"), "--cases-dir", str(ROOT)],
                          env=env, capture_output=True, text=True)
    # The file is skipped and named; with nothing left to plot the report fails, without a
    # traceback and without blaming matplotlib.
    assert proc.returncode == 1 and "skipping" in proc.stderr and "not a JSON list" in proc.stderr
    assert "no records with a time" in proc.stderr
    assert "Traceback" not in proc.stderr and "matplotlib" not in proc.stderr
