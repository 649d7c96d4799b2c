#!/usr/bin/env python3
"""Times recops' jagged conversions and cumsum family against their peers in one run.

Peers, timed in the same process on the same inputs: the plain PyTorch composition (the fastest of
a few honest formulations, named in the record) and FBGEMM's op when fbgemm_gpu is importable.
Ceilings are re-measured in the same run (performance.md): copy bandwidth (a 1 GiB device copy on
CUDA, a large host copy on the CPU) and the bf16 matmul rate (8192^3, CUDA only). Outputs of all
sides are compared; the records carry exactly the fields of performance.md.

    python bench/jagged_peers.py --device cpu            # reduced shapes, about a minute on 2 cores
    python bench/jagged_peers.py --device cuda --json out.json

Byte floor (jagged_ops.md §6.1): inputs only where the math reads them (truncated rows and padded
dense positions not counted), each output byte once, the offsets once.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

if "--thp" in sys.argv:
    # torch's CPU allocator backs allocations of 2 MiB and more with transparent huge pages; read
    # at the first allocation, so it is set before torch loads. Fresh outputs of tens of MiB
    # otherwise cost more in page faults than in copying, on both sides alike.
    os.environ["THP_MEM_ALLOC_ENABLE"] = "1"

import torch  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
import recops  # noqa: E402
from recops import testing  # noqa: E402

L2_BYTES = 50 * 2**20  # H200 L2; inputs smaller than this are rotated among copies


def _llc_bytes() -> int:
    """The CPU's last-level cache (sysfs), for rotating CPU inputs likewise."""
    try:
        txt = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
        return int(txt.rstrip("K")) * 1024 if txt.endswith("K") else int(txt)
    except (OSError, ValueError):
        return 32 * 2**20

# ---- shapes (jagged_ops.md §6.3) -----------------------------------------------------------------
CONV_SHAPES = {
    "S1": dict(B=128, max_L=128, D=128, gen="uniform"),
    "S2": dict(B=128, max_L=128, D=512, gen="uniform"),
    "S3": dict(B=1024, max_L=1024, D=256, gen="skewed"),
    "S4": dict(B=2048, max_L=25, D=512, gen="range", lo=19, hi=25),
    "S5": dict(B=140472, max_L=320, D=64, gen="skewed"),
    # CPU variant of the headline shape: same lengths law, an eighth of the bytes.
    "S3r": dict(B=256, max_L=512, D=256, gen="skewed"),
}
CUMSUM_SHAPES = {
    "C1": dict(shape=(409600,), dtype=torch.int32, hi=63),
    "C2": dict(shape=(2048, 1024), dtype=torch.int64, hi=1023),
    "C3": dict(shape=(2**28,), dtype=torch.int64, hi=1023),
    "C3r": dict(shape=(2**24,), dtype=torch.int64, hi=1023),
}
DEFAULTS = {
    "cuda": (["S1", "S2", "S3", "S4", "S5"], ["C1", "C2", "C3"]),
    "cpu": (["S1", "S2", "S3r", "S4"], ["C1", "C2", "C3r"]),
}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


# ---- timing ----------------------------------------------------------------------------------------
class Timer:
    def __init__(self, device: str, min_runs: int, budget_s: float):
        self.device, self.min_runs, self.budget_s = device, min_runs, budget_s

    def __call__(self, fn, rotations: int = 1) -> float:
        """Median milliseconds of fn(i) over runs, i rotating over input copies."""
        for i in range(2):
            fn(i % rotations)
        if self.device == "cuda":
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn(0)
            torch.cuda.synchronize()
            est = time.perf_counter() - t0
            runs = max(self.min_runs, min(200, int(self.budget_s / max(est, 1e-6))))
            starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
            ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
            for k in range(runs):
                starts[k].record()
                fn(k % rotations)
                ends[k].record()
            torch.cuda.synchronize()
            return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
        times = []
        deadline = time.perf_counter() + self.budget_s
        while len(times) < self.min_runs or (time.perf_counter() < deadline and len(times) < 200):
            t0 = time.perf_counter()
            fn(len(times) % rotations)
            times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def many(self, fns: dict, rotations: int = 1) -> dict:
        """Median milliseconds of each function. On the CPU the functions are timed round-robin,
        one call each per round, so that load from other processes (a shared host) hits every
        side alike and the ratios hold; on CUDA each is timed with events in turn."""
        if self.device == "cuda":
            return {k: self(f, rotations) for k, f in fns.items()}
        for f in fns.values():
            for i in range(2):
                f(i % rotations)
        times = {k: [] for k in fns}
        deadline = time.perf_counter() + self.budget_s * len(fns)
        r = 0
        while r < self.min_runs or (time.perf_counter() < deadline and r < 200):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f(r % rotations)
                times[k].append((time.perf_counter() - t0) * 1e3)
            r += 1
        return {k: statistics.median(v) for k, v in times.items()}


def measure_ceilings(device: str, timer: Timer) -> dict:
    out = {}
    if device == "cuda":
        n = 2**30
        src = torch.empty(n, dtype=torch.uint8, device="cuda").random_(0, 255)
        dst = torch.empty_like(src)
        ms = timer(lambda i: dst.copy_(src))
        out["copy_gbps"] = 2 * n / ms / 1e6
        del src, dst
        a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        ms = timer(lambda i: a @ b)
        out["bf16_matmul_tflops"] = 2 * 8192**3 / ms / 1e9
        del a, b
        torch.cuda.empty_cache()
    else:
        n = 512 * 2**20
        src = torch.empty(n, dtype=torch.uint8).random_(0, 255)
        dst = torch.empty_like(src)
        ms = timer(lambda i: dst.copy_(src))
        out["copy_gbps"] = 2 * n / ms / 1e6
        out["bf16_matmul_tflops"] = None
    return out


# ---- plain PyTorch peers ---------------------------------------------------------------------------
# Every peer starts from (values or dense, offsets) as our op does: index building is timed too.
def to_dense_masked(values, offsets, max_L, pad):
    """Padded tensor + boolean-mask index_put of the valid rows (FBGEMM's benchmark reference)."""
    B = offsets.numel() - 1
    out = torch.full((B, max_L, *values.shape[1:]), pad, dtype=values.dtype, device=values.device)
    lengths = (offsets[1:] - offsets[:-1]).clamp(max=max_L)
    pos = torch.arange(max_L, device=values.device)
    mask = pos[None, :] < lengths[:, None]
    out[mask] = values[(offsets[:-1, None] + pos[None, :])[mask]]
    return out


def to_dense_index_copy(values, offsets, max_L, pad):
    """Padded tensor + index_copy_ of the valid jagged rows to their flat dense rows."""
    B = offsets.numel() - 1
    total_L = values.shape[0]
    out = torch.full((B * max_L, *values.shape[1:]), pad, dtype=values.dtype, device=values.device)
    lengths = offsets[1:] - offsets[:-1]
    b = torch.repeat_interleave(torch.arange(B, device=values.device), lengths,
                                output_size=total_L)
    l = torch.arange(total_L, device=values.device) - offsets[:-1][b]
    keep = l < max_L
    out.index_copy_(0, (b * max_L + l)[keep], values[keep])
    return out.view(B, max_L, *values.shape[1:])


def to_jagged_masked(dense, offsets, total_L):
    """Zeros + mask gather of the valid dense positions, scattered to their jagged rows."""
    B, S = dense.shape[:2]
    out = torch.zeros((total_L, *dense.shape[2:]), dtype=dense.dtype, device=dense.device)
    lengths = offsets[1:] - offsets[:-1]
    pos = torch.arange(S, device=dense.device)
    mask = pos[None, :] < lengths[:, None]
    rows = (offsets[:-1, None] + pos[None, :])[mask]
    out[rows] = dense[mask]
    return out


def to_jagged_index(dense, offsets, total_L):
    """Row index gather: dense[b(r), l(r)] for every jagged row r, zeroed where l >= S."""
    B, S = dense.shape[:2]
    lengths = offsets[1:] - offsets[:-1]
    b = torch.repeat_interleave(torch.arange(B, device=dense.device), lengths,
                                output_size=total_L)
    l = torch.arange(total_L, device=dense.device) - offsets[:-1][b]
    flat = dense.reshape(B * S, *dense.shape[2:])
    if S == 0:
        return torch.zeros((total_L, *dense.shape[2:]), dtype=dense.dtype, device=dense.device)
    keep = l < S
    rows = torch.where(keep, b * S + l, torch.zeros_like(l))
    out = flat.index_select(0, rows)
    if not bool(keep.all()):
        out[~keep] = 0
    return out


def cumsum_plain(kind, t):
    if kind == "complete_cumsum":
        return torch.nn.functional.pad(torch.cumsum(t, -1, dtype=t.dtype), (1, 0))
    flat = t.reshape(-1)
    c = torch.cumsum(flat, 0, dtype=t.dtype)
    return (c - flat if kind == "exclusive_cumsum" else c).reshape(t.shape)


def fbgemm_ops():
    try:
        import fbgemm_gpu  # noqa: F401
    except Exception as e:  # not installed anywhere we run: recorded, not fatal
        print(f"# fbgemm_gpu not importable ({type(e).__name__}); FBGEMM peer skipped",
              file=sys.stderr)
        return None
    return torch.ops.fbgemm


# ---- records -----------------------------------------------------------------------------------------
def max_err(a, b) -> float:
    if a.shape != b.shape:
        return math.inf
    if a.numel() == 0:
        return 0.0
    return float((a.double() - b.double()).abs().max())


def commit() -> str:
    try:
        return subprocess.check_output(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                                       text=True, stderr=subprocess.DEVNULL).strip()
    except Exception:
        return os.environ.get("RECOPS_COMMIT", "unknown")


def device_name(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ({torch.get_num_threads()} threads)"
    except OSError:
        pass
    return "cpu"


def make_record(base, ceilings, time_ms, nbytes, peer, peer_ms, err):
    gbps = nbytes / time_ms / 1e6 if time_ms > 0 else None
    return {
        **base,
        "time_ms": time_ms,
        "tflops": None,  # data movement: no FLOP convention
        "gbps": gbps,
        "frac_flops_ceiling": None,
        "frac_bw_ceiling": gbps / ceilings["copy_gbps"] if gbps else None,
        "ceilings": ceilings,
        "peer": peer,
        "peer_time_ms": peer_ms,
        "speedup_vs_peer": peer_ms / time_ms if peer_ms and time_ms > 0 else None,
        "max_err_vs_peer": err,
    }


def _rotations(nbytes_in: int, device: str) -> int:
    cache = L2_BYTES if device == "cuda" else _llc_bytes()
    if nbytes_in >= cache:
        return 1
    return min(16, math.ceil(2 * cache / max(nbytes_in, 1)))


def bench_conversions(sid, spec, dtype_name, device, timer, ceilings, fb, common):
    dtype = DTYPES[dtype_name]
    es = torch.tensor([], dtype=dtype).element_size()
    B, max_L, D = spec["B"], spec["max_L"], spec["D"]
    lspec = {"gen": spec["gen"], "B": B, "max": max_L}
    if spec["gen"] == "range":
        lspec.update(lo=spec["lo"], hi=spec["hi"])
    lengths = testing.make_lengths(lspec, 2024)
    offsets = torch.tensor(testing.offsets_from_lengths(lengths), device=device)
    total_L = int(offsets[-1])
    n_valid = sum(min(x, max_L) for x in lengths)
    gen = torch.Generator(device=device).manual_seed(17)
    shape = {"B": B, "max_L": max_L, "D": D, "total_L": total_L, "lengths": spec["gen"]}
    off_bytes = offsets.numel() * offsets.element_size()
    records = []

    # -- jagged_to_padded_dense: reads n_valid rows, writes B*max_L rows
    rot = _rotations(total_L * D * es, device)
    values = [(torch.rand(total_L, D, device=device, generator=gen) * 2 - 1).to(dtype)
              for _ in range(rot)]
    nbytes = (n_valid * D + B * max_L * D) * es + off_bytes
    base = dict(common, op="jagged_to_padded_dense", shape=shape, dtype=dtype_name, phase="fwd")
    ours_fn = lambda i: torch.ops.recops.jagged_to_padded_dense(values[i], offsets, max_L, 0.0)  # noqa: E731
    peers = {"torch_plain:masked_index_put": lambda i: to_dense_masked(values[i], offsets, max_L, 0.0),
             "torch_plain:index_copy": lambda i: to_dense_index_copy(values[i], offsets, max_L, 0.0)}
    ours_ms, best = _time_with_peers(ours_fn, peers, timer, rot)
    ours = ours_fn(0)
    records.append(make_record(base, ceilings, ours_ms, nbytes, best[0], best[1],
                               max_err(ours, peers[best[0]](0))))
    if fb is not None:
        f = lambda i: fb.jagged_to_padded_dense(values[i], [offsets], [max_L], 0.0)  # noqa: E731
        records.append(make_record(base, ceilings, ours_ms, nbytes, "fbgemm", timer(f, rot),
                                   max_err(ours, f(0))))
    del values, ours
    _free(device)

    # -- dense_to_jagged: dense [B, max_L, D]; reads n_valid rows, writes total_L rows
    rot = _rotations(B * max_L * D * es, device)
    dense = [(torch.rand(B, max_L, D, device=device, generator=gen) * 2 - 1).to(dtype)
             for _ in range(rot)]
    nbytes = (n_valid * D + total_L * D) * es + off_bytes
    base = dict(common, op="dense_to_jagged", shape=shape, dtype=dtype_name, phase="fwd")
    ours_fn = lambda i: torch.ops.recops.dense_to_jagged(dense[i], offsets, total_L)  # noqa: E731
    peers = {"torch_plain:masked_gather": lambda i: to_jagged_masked(dense[i], offsets, total_L),
             "torch_plain:index_select": lambda i: to_jagged_index(dense[i], offsets, total_L)}
    ours_ms, best = _time_with_peers(ours_fn, peers, timer, rot)
    ours = ours_fn(0)
    records.append(make_record(base, ceilings, ours_ms, nbytes, best[0], best[1],
                               max_err(ours, peers[best[0]](0))))
    if fb is not None:
        f = lambda i: fb.dense_to_jagged(dense[i], [offsets], total_L)[0]  # noqa: E731
        records.append(make_record(base, ceilings, ours_ms, nbytes, "fbgemm", timer(f, rot),
                                   max_err(ours, f(0))))
    del dense, ours
    _free(device)
    return records


def _time_with_peers(ours_fn, peers, timer, rot):
    """Our median and the fastest plain composition's (name, median), timed together."""
    times = timer.many({"ours": ours_fn, **peers}, rot)
    ours_ms = times.pop("ours")
    name = min(times, key=times.get)
    return ours_ms, (name, times[name])


def _free(device):
    if device == "cuda":
        torch.cuda.empty_cache()


def bench_cumsum(cid, spec, device, timer, ceilings, fb, common):
    shape, dtype = spec["shape"], spec["dtype"]
    n = math.prod(shape)
    es = torch.tensor([], dtype=dtype).element_size()
    rot = _rotations(n * es, device)
    gen = torch.Generator(device=device).manual_seed(5)
    ts = [torch.randint(0, spec["hi"] + 1, shape, device=device, dtype=dtype, generator=gen)
          for _ in range(rot)]
    dname = {torch.int32: "int32", torch.int64: "int64"}[dtype]
    records = []
    for kind in ("complete_cumsum", "exclusive_cumsum", "inclusive_cumsum"):
        out_n = n + (math.prod(shape[:-1]) if kind == "complete_cumsum" else 0)
        nbytes = (n + out_n) * es
        base = dict(common, op=kind, shape={"dims": list(shape)}, dtype=dname, phase="fwd")
        op = getattr(torch.ops.recops, kind)
        ours_fn = lambda i, op=op: op(ts[i])  # noqa: E731
        peer = lambda i, kind=kind: cumsum_plain(kind, ts[i])  # noqa: E731
        ours_ms, (pname, peer_ms) = _time_with_peers(ours_fn, {"torch_plain:cumsum": peer}, timer, rot)
        ours = ours_fn(0)
        records.append(make_record(base, ceilings, ours_ms, nbytes, pname, peer_ms,
                                   max_err(ours, peer(0))))
        if fb is not None and (kind != "complete_cumsum" or len(shape) == 1 or device == "cuda"):
            f = lambda i, kind=kind: getattr(fb, "asynchronous_" + kind)(ts[i])  # noqa: E731
            try:
                records.append(make_record(base, ceilings, ours_ms, nbytes, "fbgemm",
                                           timer(f, rot), max_err(ours, f(0))))
            except Exception as e:  # FBGEMM's CPU cumsum takes 1-D only, for one
                print(f"# fbgemm {kind} {cid}: {e}", file=sys.stderr)
    del ts
    _free(device)
    return records


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shapes", help="comma-separated ids (default per device: "
                    + "; ".join(f"{d}: {','.join(a + b)}" for d, (a, b) in DEFAULTS.items()) + ")")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--json", help="write the records here (default bench/results/<device>/...)")
    ap.add_argument("--thp", action="store_true",
                    help="CPU: THP_MEM_ALLOC_ENABLE=1 for every side (huge-page-backed outputs)")
    ap.add_argument("--budget", type=float, default=None, help="seconds of timing per function")
    args = ap.parse_args(argv)

    device = args.device
    if device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but no CUDA device is visible")
    if device == "cpu":
        torch.set_num_threads(os.cpu_count() or 1)
    conv_ids, cum_ids = DEFAULTS[device]
    if args.shapes:
        ids = args.shapes.split(",")
        conv_ids = [i for i in ids if i in CONV_SHAPES]
        cum_ids = [i for i in ids if i in CUMSUM_SHAPES]
        unknown = [i for i in ids if i not in CONV_SHAPES and i not in CUMSUM_SHAPES]
        if unknown:
            ap.error(f"unknown shape ids {unknown}")
    budget = args.budget if args.budget is not None else (0.3 if device == "cuda" else 0.6)
    timer = Timer(device, min_runs=20 if device == "cuda" else 5, budget_s=budget)

    ceilings = measure_ceilings(device, timer)
    now = datetime.datetime.now(datetime.timezone.utc)
    common = {"impl": "recops", "backend": device, "device": device_name(device),
              "commit": commit(), "date": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    fb = fbgemm_ops()
    records = []
    for sid in conv_ids:
        recs = bench_conversions(sid, CONV_SHAPES[sid], args.dtype, device, timer, ceilings, fb, common)
        for r in recs:
            r["shape"]["id"] = sid
        records += recs
        _print(records[-len(recs):])
    for cid in cum_ids:
        recs = bench_cumsum(cid, CUMSUM_SHAPES[cid], device, timer, ceilings, fb, common)
        for r in recs:
            r["shape"]["id"] = cid
        records += recs
        _print(recs)

    path = Path(args.json) if args.json else (
        ROOT / "bench" / "results" / ("h200" if "H200" in common["device"] else device)
        / f"jagged_peers_{now.strftime('%Y%m%d')}_{common['commit']}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1) + "\n")
    print(f"# ceilings: copy {ceilings['copy_gbps']:.1f} GB/s"
          + (f", bf16 matmul {ceilings['bf16_matmul_tflops']:.0f} TFLOP/s"
             if ceilings.get("bf16_matmul_tflops") else "") + f"; wrote {path}")
    return 0


def _print(recs):
    for r in recs:
        s = r["shape"]
        sh = s.get("id", "") + " " + ",".join(f"{k}={v}" for k, v in s.items() if k != "id")
        print(f"{r['op']:24} {sh:60} {r['dtype']:5} ours {r['time_ms']:9.4f} ms "
              f"{r['gbps'] or 0:8.1f} GB/s ({(r['frac_bw_ceiling'] or 0) * 100:5.1f}%)  "
              f"{r['peer']:30} {r['peer_time_ms']:9.4f} ms  x{r['speedup_vs_peer'] or 0:6.2f}  "
              f"err {r['max_err_vs_peer']:g}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
