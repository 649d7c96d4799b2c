"""Shared by the scripts in bench/ (and scripts/kernel_bench.py): the timing method of
performance.md (warm-up, then the median of repeated runs; CUDA events on the GPU, wall time on the
CPU), the two ceilings re-measured in the same run as any figure reported, forced tune
configurations for timing one configuration by hand, and the commit and JSON file of a run."""

import glob
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import torch


def median_ms(fn, device="cpu", reps=20, warmup=2):
    """Median milliseconds of fn() over `reps` runs after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    if device == "cuda":
        torch.cuda.synchronize()
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
    else:
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def copy_gbps(device="cuda", nbytes=1 << 30, reps=20):
    """Device-to-device copy bandwidth, bytes read + written."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device).random_()
    dst = torch.empty_like(src)
    ms = median_ms(lambda: dst.copy_(src), device, reps, 3)
    return 2 * nbytes / ms / 1e6


def matmul_tflops(device="cuda", n=8192, reps=20):
    """bf16 dense matmul throughput on random data."""
    a = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device)
    ms = median_ms(lambda: a @ b, device, reps, 3)
    return 2 * n**3 / ms / 1e9


def ceilings(device="cuda"):
    """{"copy_gbps", "bf16_matmul_tflops"} measured now."""
    return {"copy_gbps": round(copy_gbps(device), 1),
            "bf16_matmul_tflops": round(matmul_tflops(device), 1)}


def force_tuning(op, impl, entries):
    """Points RECOPS_TUNING_FILE (read by the library on its first tuned call, so call this before
    any op runs) at a temporary tuning file holding the committed entries of this device for every
    other op plus `entries` for `op`/`impl`: dicts with "dtype", "bucket" and "config"."""
    here = os.path.dirname(os.path.abspath(__file__))
    device = torch.cuda.get_device_name(0)
    kept = []
    for f in glob.glob(os.path.join(here, "..", "tuning", "*.json")):
        with open(f) as fh:
            doc = json.load(fh)
        if doc.get("device") == device:
            kept += [e for e in doc["entries"] if e["op"] != op]
    kept += [dict(e, op=op, impl=impl) for e in entries]
    path = os.path.join(tempfile.mkdtemp(), "forced.json")
    with open(path, "w") as fh:
        json.dump({"schema": "recops-tuning", "version": 1, "device": device, "backend": "cuda",
                   "entries": kept}, fh)
    os.environ["RECOPS_TUNING_FILE"] = path
    return path


def git_commit():
    """$RECOPS_COMMIT when set (the device's copy of the tree carries stale git metadata, so
    scripts/device.sh passes the commit), else the repository's HEAD, 12 hex digits ("unknown"
    outside a git checkout)."""
    if os.environ.get("RECOPS_COMMIT"):
        return os.environ["RECOPS_COMMIT"]
    root = Path(__file__).resolve().parents[1]
    return subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                          capture_output=True, text=True).stdout.strip() or "unknown"


def write_records(path, records):
    """Writes the records (performance.md) to the JSON file `path`, its folder created."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(records, indent=1) + "\n")
    print(f"wrote {path}")
