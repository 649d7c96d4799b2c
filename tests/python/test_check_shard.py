"""`recops check --shard K/N` (ctest splits a long family's quick check into N tests with it): the
N shards partition the selection, row for row, and a malformed K/N is refused naming the option."""

import json
import subprocess
from pathlib import Path

import pytest

from _cli import recops_binary

ROOT = Path(__file__).resolve().parents[2]
OPS = ["--op", "dense_to_jagged", "--op", "complete_cumsum", "--op", "l2norm"]


def _rows(binary, tmp_path, *extra):
    out = tmp_path / f"rows{len(list(tmp_path.iterdir()))}.json"
    proc = subprocess.run([binary, "check", "--backend", "cpu", "--quick", *OPS, *extra,
                           "--cases-dir", str(ROOT / "src" / "ops"), "--json", str(out), "-q"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())
    # each row says how long it took (what a shard plan is balanced by)
    assert all(isinstance(r["seconds"], float) and 0 <= r["seconds"] < 60 for r in rows)
    return [(r["op"], r["case"], r["dtype"], r["variant"], r["backend"]) for r in rows]


def test_shards_partition_the_selection(tmp_path):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary: build it (make build) or set RECOPS_BIN")
    whole = _rows(binary, tmp_path)
    assert len(whole) == len(set(whole)) and len(whole) > 100
    shards = [_rows(binary, tmp_path, "--shard", f"{k}/3") for k in (1, 2, 3)]
    seen = [row for shard in shards for row in shard]
    assert sorted(seen) == sorted(whole)  # every row once, in exactly one shard
    assert all(len(s) > len(whole) // 6 for s in shards), [len(s) for s in shards]
    assert _rows(binary, tmp_path, "--shard", "1/1") == whole


@pytest.mark.parametrize("bad", ["0/3", "4/3", "3", "a/b", "1/0", "1/3x", "-1/3"])
def test_bad_shard_is_refused(bad):
    binary = recops_binary()
    if binary is None:
        pytest.skip("no recops binary: build it (make build) or set RECOPS_BIN")
    proc = subprocess.run([binary, "check", "--op", "complete_cumsum", "--shard", bad],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "--shard must be K/N" in proc.stderr, proc.stderr
