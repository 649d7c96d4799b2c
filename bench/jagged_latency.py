#!/usr/bin/env python3
"""Small-shape latency of the jagged ops against an empty torch custom op (issue 17 item 5).

At S1 (B=128, max_L=128, D=128) and M0 the kernels move a few MB, so the call path decides the
time. For each op, on the inputs `bench/jagged_peers.py` builds for that shape, and for two
baselines on a tensor of the same device, this measures in one process:

- ``event_us``: the median of CUDA events around one call (how jagged_peers.py times; on the CPU
  the median wall time of one call);
- ``host_us``: host time per call over a loop of calls without a sync (the call path alone while
  the GPU keeps up);
- ``kernel_us`` (CUDA): device time per call from torch.profiler (sum of the kernels' durations);
- ``ratio_vs_empty``: event_us over the empty custom op's event_us (the issue's bar: at most 2).

Baselines: ``empty_custom_op``, a ``torch.library.custom_op`` whose body returns
``x.new_empty(0)`` (what a user-defined op costs through the dispatcher and Python), and
``aten_alias``, ``torch.ops.aten.alias`` (a C++ op that does no work).

    python bench/jagged_latency.py --device cuda --json out.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jagged_peers as jp  # noqa: E402

SHAPES = ["S1", "M0", "C1"]


@torch.library.custom_op("recops_bench::empty", mutates_args=())
def _empty(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(0)


@_empty.register_fake
def _(x):
    return x.new_empty(0)


def _sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def measure(fn, device, calls=200):
    """(event_us, host_us, kernel_us or None) of fn()."""
    for _ in range(20):
        fn()
    _sync(device)
    times = []
    if device == "cuda":
        for _ in range(calls):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
    else:
        for _ in range(calls):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    host = (time.perf_counter() - t0) / calls * 1e6
    _sync(device)
    kernel = None
    if device == "cuda":
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            for _ in range(50):
                fn()
            _sync(device)
        total = 0.0
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                total += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
        kernel = total / 50
    return statistics.median(times), host, kernel


class LatencyBench(jp.Bench):
    """Builds each op's inputs as jagged_peers.py does and times only our forward call."""

    def run(self, op, shape, dtype, args, ours, plains, exts, grad_pos=(), nbytes=None,
            flops=None):
        a = args[0]
        ev, host, kern = measure(lambda: ours(*a), self.device)
        return [dict(self.common, op=op, shape=dict(shape, id=self.sid), dtype=dtype, phase="fwd",
                     event_us=ev, host_us=host, kernel_us=kern)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"],
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--ops", default=",".join(jp.ALL_OPS))
    ap.add_argument("--dtype", default="bf16", choices=sorted(jp.DTYPES))
    ap.add_argument("--json", help="write the records here")
    args = ap.parse_args(argv)
    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but no CUDA device is visible")
    ops = args.ops.split(",")
    bad = [o for o in ops if o not in jp.ALL_OPS]
    if bad:
        ap.error(f"unknown ops {bad}")
    common = {"impl": "recops", "backend": device, "device": jp.device_name(device),
              "commit": jp.commit(),
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    timer = jp.Timer(device, min_runs=5, budget_s=0.1)
    # The peers are never called here; their lookup objects are built as jagged_peers.py does.
    bench = LatencyBench(device, timer, {}, None, jp.ext.TritonPeers([]), common, ["fwd"])

    x = torch.randn(128, 128, device=device)
    base = {}
    for name, fn in (("empty_custom_op", lambda: torch.ops.recops_bench.empty(x)),
                     ("aten_alias", lambda: torch.ops.aten.alias.default(x))):
        ev, host, kern = measure(fn, device)
        base[name] = ev
        print(f"{name:30} {'':6} event {ev:8.2f} us  host {host:8.2f} us", flush=True)
    records = [dict(common, op="baseline", peer=k, event_us=v) for k, v in base.items()]
    for op, sid in jp.plan(args.shapes.split(","), ops):
        for r in jp.run_one(bench, op, sid, args.dtype):
            r["ratio_vs_empty"] = r["event_us"] / base["empty_custom_op"]
            r["ratio_vs_alias"] = r["event_us"] / base["aten_alias"]
            records.append(r)
            k = f"kernel {r['kernel_us']:8.2f} us" if r["kernel_us"] is not None else ""
            print(f"{op:30} {sid:6} event {r['event_us']:8.2f} us  host {r['host_us']:8.2f} us  "
                  f"{k}  x{r['ratio_vs_empty']:.2f} of the empty custom op", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
