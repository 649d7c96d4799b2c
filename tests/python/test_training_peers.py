"""bench/training_peers.py's CPU smoke test: --device cpu --quick runs every training op through
its timing and record path (the lead runs the real shapes on the H200), and each peer that cannot
import here is recorded with its error instead of stopping the run."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_training_peers_quick_cpu(tmp_path):
    out = tmp_path / "tp.json"
    # torch.compile is left out: compiling a dozen graphs takes minutes on a CPU.
    cmd = [sys.executable, str(ROOT / "bench" / "training_peers.py"), "--device", "cpu",
           "--quick", "--peers", "eager,liger,fla,quack", "--budget", "0.005",
           "--peers-dir", str(tmp_path / "no_peers"), "--json", str(out)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert res.returncode == 0, res.stderr[-3000:]
    recs = json.loads(out.read_text())
    ops = {r["op"] for r in recs}
    assert ops == {"rms_norm", "rms_norm_rstd", "l2norm", "rms_norm_gated", "clipped_swiglu",
                   "sort_chunks_by_idx", "fused_cross_entropy", "chunk_loss", "inplace_rope_",
                   "chunk_local_cumsum", "mhc_sinkhorn", "mhc_pre_bmm", "mhc_post",
                   "chunk_gated_delta_rule", "chunk_kda"}
    for r in recs:
        assert r["phase"] in ("fwd", "fwd_bwd") and r["time_ms"] > 0
        assert r["gbps"] > 0 and r["frac_bw_ceiling"] > 0 and r["ceilings"]["copy_gbps"] > 0
        if r.get("peer_error"):
            assert r["peer_time_ms"] is None
        else:
            assert r["peer_time_ms"] > 0 and r["max_err_vs_peer"] < 1e-3, r
    peers = {r["peer"].split(":")[0] for r in recs}
    assert {"torch_eager", "liger", "fla", "quack"} <= peers
    quack = [r for r in recs if r["peer"].startswith("quack")]
    if importlib.util.find_spec("quack") is None:
        assert quack and all("not carried: size" in r["peer_error"] for r in quack)
    fwd_bwd = {r["op"] for r in recs if r["phase"] == "fwd_bwd"}
    assert fwd_bwd == ops - {"inplace_rope_"}  # in place: forward only (its backward is itself)
