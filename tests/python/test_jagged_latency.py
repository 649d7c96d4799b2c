"""bench/jagged_latency.py's CPU smoke test: two ops through its timing and record path (the lead
runs it on the H200 with scripts/device.d/latency.sh)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_jagged_latency_cpu(tmp_path):
    out = tmp_path / "lat.json"
    cmd = [sys.executable, str(ROOT / "bench" / "jagged_latency.py"), "--device", "cpu",
           "--shapes", "S1,C1", "--ops", "dense_to_jagged,inclusive_cumsum", "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert res.returncode == 0, res.stderr[-3000:]
    recs = json.loads(out.read_text())
    assert {r.get("peer") for r in recs if r["op"] == "baseline"} == {"empty_custom_op",
                                                                      "aten_alias"}
    ops = [r for r in recs if r["op"] != "baseline"]
    assert {(r["op"], r["shape"]["id"]) for r in ops} == {("dense_to_jagged", "S1"),
                                                          ("inclusive_cumsum", "C1")}
    for r in ops:
        assert r["event_us"] > 0 and r["host_us"] > 0 and r["kernel_us"] is None
        assert r["ratio_vs_empty"] > 0


def test_jagged_latency_rejects_unknown_op():
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "jagged_latency.py"), "--device",
                          "cpu", "--ops", "nope"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "unknown ops" in res.stderr
