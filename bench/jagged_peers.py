#!/usr/bin/env python3
"""Times recops' jagged ops against their peers in one run, forward and forward+backward.

Ops: the conversions, jagged_dense_elementwise_add / _mul, jagged_softmax, jagged_index_select
(memory-bound shapes S*), jagged_dense_bmm / jagged_jagged_bmm (M*), jagged_dense_flash_attention
(A*) / multi_head_jagged_flash_attention (H*), segment_sum_csr (G*), the cumsum family (C*),
concat_1d_jagged (K*) and permute_2D_sparse_data (P*) / permute_1D_sparse_data (Q*).
Ours is what a user calls, the public ``recops.<op>``; with --phases fwd_bwd also forward+backward
through autograd (``torch.autograd.grad``) where the op has a backward.

Peers, timed in the same process on the same inputs: the plain PyTorch composition (the fastest of
a few honest formulations, named in the record; bench/_jagged_peer_plain.py), FBGEMM's op when
fbgemm_gpu is importable, and the Triton kernels of FBGEMM, SLL and generative-recommenders
(bench/_jagged_peer_ext.py; CUDA only; `bash scripts/prepare_peers.sh` unpacks FBGEMM's and SLL's
sources, generative-recommenders is a carried .peers/ folder, see --peers-dir, --gr-dir). A peer that
fails to import, compile or run gets a record with `peer_error` and never stops the run. Ceilings
are re-measured in the same run (performance.md): copy bandwidth (a 1 GiB device copy on CUDA, a
large host copy on the CPU) and the bf16 matmul rate (8192^3, CUDA only). Outputs (gradients for
fwd_bwd) of all sides are compared; the records carry the fields of performance.md, memory-bound
ops as GB/s and a fraction of the copy ceiling, the bmms and attentions as TFLOP/s.

    python bench/jagged_peers.py --device cpu    # reduced shapes; about 25 min on 2 busy cores
    python bench/jagged_peers.py --device cuda --json out.json
    python bench/jagged_peers.py --ops jagged_softmax --shapes S3,S3h4 --phases fwd_bwd

Byte floor (jagged_ops.md §6.1): inputs only where the math reads them (truncated rows and padded
dense positions not counted), each output byte once, the offsets once; fwd_bwd counts the forward's
and the backward's. FLOPs (§6.1): 2·K·N·Σn_b for the bmms (n_b truncated at max_L), fwd_bwd 3x;
attention forward 4·D·T·Σn_b (jagged-dense) and 4·H·D·Σn_b² (multi-head), fwd_bwd 3.5x.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import statistics
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _jagged_peer_ext as ext  # noqa: E402
import _jagged_peer_plain as plain  # noqa: E402
from common import git_commit  # noqa: E402

L2_BYTES = 50 * 2**20  # H200 L2; inputs smaller than this are rotated among copies


def _llc_bytes() -> int:
    """The CPU's last-level cache (sysfs), for rotating CPU inputs likewise."""
    try:
        txt = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text().strip()
        return int(txt.rstrip("K")) * 1024 if txt.endswith("K") else int(txt)
    except (OSError, ValueError):
        return 32 * 2**20

# ---- shapes (jagged_ops.md §6.3) -----------------------------------------------------------------
# Memory-bound shapes (conversions, add, mul, softmax with H = D, index_select with K = B).
CONV_SHAPES = {
    "S1": dict(B=128, max_L=128, D=128, gen="uniform"),
    "S2": dict(B=128, max_L=128, D=512, gen="uniform"),
    "S3": dict(B=1024, max_L=1024, D=256, gen="skewed"),
    "S4": dict(B=2048, max_L=25, D=512, gen="range", lo=19, hi=25),
    "S5": dict(B=140472, max_L=320, D=64, gen="skewed"),
    # CPU variant of the headline shape: same lengths law, an eighth of the bytes.
    "S3r": dict(B=256, max_L=512, D=256, gen="skewed"),
    # §6.3: the softmax also with H = 4 columns.
    "S3h4": dict(B=1024, max_L=1024, D=4, gen="skewed", only=("jagged_softmax",)),
}
BMM_SHAPES = {  # K = N for jagged_dense_bmm, M = N for jagged_jagged_bmm
    "M0": dict(B=128, max_L=128, K=128, gen="uniform"),
    "M1": dict(B=1024, max_L=1024, K=256, gen="skewed"),
    "M2": dict(B=64, max_L=4096, K=1024, gen="all_max", only=("jagged_dense_bmm",)),
    "M3": dict(B=64, max_L=4096, K=1024, gen="all_max", only=("jagged_jagged_bmm",)),
    "M1r": dict(B=128, max_L=256, K=128, gen="skewed"),  # CPU variant of M1
}
# §6.3 A* (jagged_dense_flash_attention, lengths as its perf.yaml) and H* (the multi-head one).
# A1 and H1 are fp32 in the spec; like S1's fp16 they run in --dtype here.
_JD, _MH = ("jagged_dense_flash_attention",), ("multi_head_jagged_flash_attention",)
ATTN_SHAPES = {
    "A1": dict(B=10, max_L=100, D=64, T=30, gen="uniform", only=_JD),
    "A2": dict(B=1024, max_L=1024, D=128, T=64, gen="skewed", only=_JD),
    "A3": dict(B=1024, max_L=1024, D=256, T=32, gen="skewed", only=_JD),
    "H1": dict(B=10, max_L=100, H=8, D=32, gen="range", lo=1, hi=100, only=_MH),
    "H2": dict(B=1024, max_L=1024, H=4, D=64, gen="skewed", only=_MH),
    "H3": dict(B=32, max_L=4096, H=4, D=128, gen="skewed", only=_MH),
}
SEG_SHAPES = {  # segment_sum_csr (its perf.yaml: the spec names none)
    "G1": dict(S=409600, max=64, batch_size=1),  # a KJT's bags, §6.3 C1's sizes
    "G2": dict(S=4096, max=32768, batch_size=4),  # long segments, memory-bound
    "G2r": dict(S=256, max=32768, batch_size=4),  # CPU variant of G2
}
CUMSUM_SHAPES = {
    "C1": dict(shape=(409600,), dtype=torch.int32, hi=63),
    "C2": dict(shape=(2048, 1024), dtype=torch.int64, hi=1023),
    "C3": dict(shape=(2**28,), dtype=torch.int64, hi=1023),
    "C3r": dict(shape=(2**24,), dtype=torch.int64, hi=1023),
}
_P2, _P1 = ("permute_2D_sparse_data",), ("permute_1D_sparse_data",)
PERMUTE_SHAPES = {  # the ops' perf.yaml shapes: int64 ids, fp32 weights, int32 lengths (mean < 1)
    "P1": dict(T=400, B=1024, gen="uniform", max=2, weights=True, only=_P2),  # kjt_400x1024
    "P2": dict(T=1024, B=4096, gen="uniform", max=2, weights=True, only=_P2),  # ..._tiny
    "P3": dict(T=256, B=16384, gen="skewed", max=64, P=384, weights=False, only=_P2),
    "Q1": dict(S=4194304, gen="uniform", max=2, weights=True, only=_P1),  # kjt_4M_tiny
    "Q2": dict(S=65536, gen="skewed", max=256, P=98304, weights=True, only=_P1),  # skewed_64K
}
CONCAT_SHAPES = {  # concat_1d_jagged (its perf.yaml's S3 / S5_dense_prefix as 1-D parts)
    "K1": dict(B=1024, max_L=1024, max_L_b=1024, gen="skewed"),  # two jagged parts
    "K2": dict(B=140472, max_L=320, gen="skewed", dense_a=True),  # SLL: a dense [B] part A
    "K2r": dict(B=16384, max_L=320, gen="skewed", dense_a=True),  # CPU variant of K2
}
MEM_OPS = ["jagged_to_padded_dense", "dense_to_jagged", "jagged_dense_elementwise_add",
           "jagged_dense_elementwise_mul", "jagged_softmax", "jagged_index_select"]
BMM_OPS = ["jagged_dense_bmm", "jagged_jagged_bmm"]
ATTN_OPS = ["jagged_dense_flash_attention", "multi_head_jagged_flash_attention"]
CUMSUM_OPS = ["complete_cumsum", "exclusive_cumsum", "inclusive_cumsum"]
PERMUTE_OPS = ["permute_1D_sparse_data", "permute_2D_sparse_data"]
ALL_OPS = (MEM_OPS + BMM_OPS + ATTN_OPS + ["segment_sum_csr"] + CUMSUM_OPS
           + ["concat_1d_jagged"] + PERMUTE_OPS)
TABLES = [(CONV_SHAPES, MEM_OPS), (BMM_SHAPES, BMM_OPS), (ATTN_SHAPES, ATTN_OPS),
          (SEG_SHAPES, ["segment_sum_csr"]),
          (CUMSUM_SHAPES, CUMSUM_OPS), (CONCAT_SHAPES, ["concat_1d_jagged"]),
          (PERMUTE_SHAPES, PERMUTE_OPS)]
DEFAULTS = {
    "cuda": ["S1", "S2", "S3", "S4", "S5", "S3h4", "M0", "M1", "M2", "M3", "A1", "A2", "A3",
             "H1", "H2", "H3", "G1", "G2", "C1", "C2", "C3", "K1", "K2", "P1", "P2", "P3", "Q1",
             "Q2"],
    "cpu": ["S1", "S2", "S3r", "S4", "M0", "M1r", "A1", "H1", "G1", "G2r", "C1", "C2", "C3r",
            "K1", "K2r", "P1", "P2", "P3", "Q1", "Q2"],
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


# ---- records -----------------------------------------------------------------------------------------
def max_err(a, b) -> float:
    """Largest absolute difference (of each pair of gradients for fwd_bwd); inf on a shape clash."""
    if isinstance(a, (tuple, list)):
        return max((max_err(x, y) for x, y in zip(a, b)), default=0.0)
    if a.shape != b.shape:
        return math.inf
    if a.numel() == 0:
        return 0.0
    return float((a.double() - b.double()).abs().max())


def commit() -> str:
    """The run's commit (bench/common.py's git_commit: $RECOPS_COMMIT when set, else HEAD)."""
    return git_commit()


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


def make_record(base, ceilings, time_ms, peer, peer_ms, err, nbytes=None, flops=None, error=None):
    """One record of performance.md; nbytes for memory-bound ops, flops for the bmms."""
    gbps = nbytes / time_ms / 1e6 if nbytes is not None and time_ms > 0 else None
    tflops = flops / time_ms / 1e9 if flops is not None and time_ms > 0 else None
    mm = ceilings.get("bf16_matmul_tflops")
    rec = {
        **base,
        "time_ms": time_ms,
        "tflops": tflops,
        "gbps": gbps,
        "frac_flops_ceiling": tflops / mm if tflops and mm else None,
        "frac_bw_ceiling": gbps / ceilings["copy_gbps"] if gbps else None,
        "ceilings": ceilings,
        "peer": peer,
        "peer_time_ms": peer_ms,
        "speedup_vs_peer": peer_ms / time_ms if peer_ms and time_ms > 0 else None,
        "max_err_vs_peer": err,
    }
    if error is not None:
        rec["peer_error"] = error
    return rec


def _rotations(nbytes_in: int, device: str) -> int:
    cache = L2_BYTES if device == "cuda" else _llc_bytes()
    if nbytes_in >= cache:
        return 1
    return min(16, math.ceil(2 * cache / max(nbytes_in, 1)))


def _free(device):
    if device == "cuda":
        torch.cuda.empty_cache()


def _first(t):
    return t[0] if isinstance(t, (tuple, list)) else t


def _short(e: BaseException) -> str:
    msg = f"{type(e).__name__}: {e}".strip()
    return msg if len(msg) <= 600 else msg[:600] + " ..."


# Triton peers run past 2^31 elements without fault in an earlier H200 run (the others are not run
# there: one illegal memory access would stop every later measurement of the run).
TRITON_SIDES = ("fbgemm_triton", "sll_triton", "gr_triton")
TRITON_PAST_INT32 = {"fbgemm_triton:jagged_to_dense"}


def _largest(args):
    return max((a.numel() for a in args if isinstance(a, torch.Tensor)), default=0)


class Bench:
    """Runs one op on one shape against its peers, for each phase, and returns the records."""

    def __init__(self, device, timer, ceilings, fb, tri, common, phases):
        self.device, self.timer, self.ceilings = device, timer, ceilings
        self.fb, self.tri, self.common, self.phases = fb, tri, common, phases
        self.sid = ""  # the shape id being run, for messages

    def rand(self, shape, dtype, gen):
        return (torch.rand(shape, device=self.device, generator=gen) * 2 - 1).to(dtype)

    def time_all(self, fns, rot):
        """{name: median ms or the exception}; on the CPU round-robin when all of them run."""
        if self.device != "cuda":
            try:
                return self.timer.many(fns, rot)
            except Exception:  # one of them failed mid-run: time each alone below
                pass
        out = {}
        for k, f in fns.items():
            try:
                out[k] = self.timer(f, rot)
            except Exception as e:
                if k == "ours":
                    raise
                out[k] = e
        return out

    def run(self, op, shape, dtype, args, ours, plains, exts, grad_pos=(), nbytes=None,
            flops=None):
        """args: one tuple of the op's arguments per rotation. plains: {name: fn} (the fastest is
        reported); exts: {name: (fn, differentiable)}. nbytes / flops: {phase: amount}."""
        rot = len(args)
        records = []
        for phase in self.phases:
            if phase == "fwd_bwd" and not grad_pos:
                continue
            base = dict(self.common, op=op, shape=shape, dtype=dtype, phase=phase)
            if phase == "fwd":
                def call(fn):
                    return lambda i: _first(fn(*args[i]))
            else:
                leaves = [tuple(a.detach().requires_grad_() if k in grad_pos else a
                                for k, a in enumerate(t)) for t in args]
                with torch.no_grad():
                    g0 = _first(ours(*args[0]))
                gen = torch.Generator(device=self.device).manual_seed(29)
                grad_out = self.rand(g0.shape, g0.dtype, gen)
                del g0

                def call(fn):
                    def f(i):
                        out = _first(fn(*leaves[i]))
                        return torch.autograd.grad(out, [leaves[i][k] for k in grad_pos], grad_out)
                    return f
            ours_fn = call(ours)
            ref = ours_fn(0)
            fns, errs, failed = {"ours": ours_fn}, {}, {}
            sides = {**{k: (fn, True) for k, fn in plains.items()}, **exts}
            for name, (fn, diff) in sides.items():
                if phase == "fwd_bwd" and not diff:
                    continue
                if name.split(":")[0] in TRITON_SIDES and name not in TRITON_PAST_INT32 \
                        and _largest(args[0]) >= 2**31:
                    failed[name] = ("not run: an argument has >= 2^31 elements; FBGEMM's Triton "
                                    "dense_to_jagged made an illegal memory access at S5 on the "
                                    "H200 (0831ba4), which ends the process's CUDA context")
                    print(f"# {op} {self.sid} {phase}: peer {name} {failed[name]}", file=sys.stderr)
                    continue
                try:
                    f = call(fn)
                    errs[name] = max_err(ref, f(0))
                    fns[name] = f
                except Exception as e:
                    failed[name] = _short(e)
                    print(f"# {op} {self.sid} {phase}: peer {name} failed: "
                          f"{failed[name][:200]}", file=sys.stderr)
            del ref
            times = self.time_all(fns, rot)
            ours_ms = times.pop("ours")
            nb = nbytes.get(phase) if nbytes else None
            fl = flops.get(phase) if flops else None
            ok_plain = {k: t for k, t in times.items()
                        if k in plains and not isinstance(t, Exception)}
            if ok_plain:
                best = min(ok_plain, key=ok_plain.get)
                records.append(make_record(base, self.ceilings, ours_ms, best, ok_plain[best],
                                           errs[best], nb, fl))
            bad = [k for k in plains if k in failed or isinstance(times.get(k), Exception)]
            for name in bad + list(exts):
                if name in failed or isinstance(times.get(name), Exception):
                    err = failed.get(name) or _short(times[name])
                    records.append(make_record(base, self.ceilings, ours_ms, name, None, None,
                                               nb, fl, error=err))
                elif name in times:
                    records.append(make_record(base, self.ceilings, ours_ms, name, times[name],
                                               errs[name], nb, fl))
            del fns
            _free(self.device)
        return records


# ---- the ops --------------------------------------------------------------------------------------
def _lengths(spec, B, max_L):
    lspec = {"gen": spec["gen"], "B": B, "max": max_L}
    if spec["gen"] == "range":
        lspec.update(lo=spec["lo"], hi=spec["hi"])
    return testing.make_lengths(lspec, 2024)


def _batch(spec, device):
    """A shape's jagged batch: (offsets on the device, total_L, Σ min(L_b, max_L))."""
    lengths = _lengths(spec, spec["B"], spec["max_L"])
    offsets = torch.tensor(testing.offsets_from_lengths(lengths), device=device)
    return offsets, int(offsets[-1]), sum(min(x, spec["max_L"]) for x in lengths)


def bench_memory_bound(bench, op, spec, dtype_name):
    """The memory-bound ops on shape spec (B, max_L, D): GB/s by the §6.1 byte floor."""
    device = bench.device
    dtype = DTYPES[dtype_name]
    es = torch.tensor([], dtype=dtype).element_size()
    B, max_L, D = spec["B"], spec["max_L"], spec["D"]
    offsets, total_L, n_valid = _batch(spec, device)
    gen = torch.Generator(device=device).manual_seed(17)
    shape = {"B": B, "max_L": max_L, "D": D, "total_L": total_L, "lengths": spec["gen"]}
    off = offsets.numel() * offsets.element_size()
    jag, den = total_L * D * es, B * max_L * D * es  # bytes of a jagged / dense operand
    row = D * es

    def rows(n):
        return n * row

    if op == "jagged_to_padded_dense":
        rot = _rotations(jag, device)
        args = [(bench.rand((total_L, D), dtype, gen), offsets, max_L, 0.0) for _ in range(rot)]
        plains = {"torch_plain:masked_index_put": plain.to_dense_masked,
                  "torch_plain:index_copy": plain.to_dense_index_copy}
        nb = {"fwd": rows(n_valid) + den + off, "bwd": rows(n_valid + total_L) + off}
        return bench.run(op, shape, dtype_name, args, recops.jagged_to_padded_dense, plains,
                         ext.peers_to_dense(bench.fb, bench.tri), (0,), _fwd_bwd(nb))
    if op == "dense_to_jagged":
        rot = _rotations(den, device)
        args = [(bench.rand((B, max_L, D), dtype, gen), offsets, total_L) for _ in range(rot)]
        plains = {"torch_plain:masked_gather": plain.to_jagged_masked,
                  "torch_plain:index_select": plain.to_jagged_index}
        nb = {"fwd": rows(n_valid) + jag + off, "bwd": rows(n_valid) + den + off}
        return bench.run(op, shape, dtype_name, args, recops.dense_to_jagged, plains,
                         ext.peers_to_jagged(bench.fb, bench.tri), (0,), _fwd_bwd(nb))
    if op in ("jagged_dense_elementwise_add", "jagged_dense_elementwise_mul"):
        rot = _rotations(jag + den, device)
        args = [(bench.rand((total_L, D), dtype, gen), offsets, bench.rand((B, max_L, D), dtype, gen))
                for _ in range(rot)]
        if op.endswith("add"):
            # x read whole (rows past S pass through), y's valid rows; backward: dx is dout
            # itself, dy = dout padded.
            plains = {"torch_plain:index_where": plain.add_index,
                      "torch_plain:masked_index_add": plain.add_masked}
            nb = {"fwd": 2 * jag + rows(n_valid) + off, "bwd": rows(n_valid) + den + off}
            peers, fn = ext.peers_add(bench.fb, bench.tri), recops.jagged_dense_elementwise_add
        else:
            # x and y read on valid rows; backward reads grad, x, y there, writes dx and dy whole.
            plains = {"torch_plain:index_where": plain.mul_index,
                      "torch_plain:masked_index_put": plain.mul_masked}
            nb = {"fwd": rows(2 * n_valid) + jag + off, "bwd": rows(3 * n_valid) + jag + den + off}
            peers, fn = ext.peers_mul(bench.fb, bench.tri), recops.jagged_dense_elementwise_mul
        return bench.run(op, shape, dtype_name, args, fn, plains, peers, (0, 2), _fwd_bwd(nb))
    if op == "jagged_softmax":
        rot = _rotations(jag, device)
        args = [(bench.rand((total_L, D), dtype, gen), offsets, max_L) for _ in range(rot)]
        plains = {"torch_plain:padded_softmax": plain.softmax_padded,
                  "torch_plain:segment_reduce": plain.softmax_segment}
        nb = {"fwd": rows(n_valid) + jag + off, "bwd": rows(2 * n_valid) + jag + off}
        return bench.run(op, shape, dtype_name, args, recops.jagged_softmax, plains,
                         ext.peers_softmax(bench.fb, bench.tri), (0,), _fwd_bwd(nb))
    if op == "jagged_index_select":
        # K = B indices drawn uniformly (some sequences repeat), as the op's perf.yaml.
        lens = offsets[1:] - offsets[:-1]
        g = torch.Generator().manual_seed(7)
        indices = torch.randint(0, max(B, 1), (B,), generator=g).to(device)
        n_rows = int(lens[indices].sum())
        shape = dict(shape, K=B, rows=n_rows)
        rot = _rotations(jag, device)
        args = [(bench.rand((total_L, D), dtype, gen), lens, indices, n_rows) for _ in range(rot)]
        ints = B * 8 + B * (8 + 8)
        nb = {"fwd": rows(2 * n_rows) + ints, "bwd": rows(n_rows) + jag + ints}
        plains = {"torch_plain:index_select": plain.index_select_rows}
        return bench.run(op, shape, dtype_name, args, recops.jagged_index_select, plains,
                         ext.peers_index_select(bench.fb, bench.tri), (0,), _fwd_bwd(nb))
    raise ValueError(op)


def _fwd_bwd(amount):
    return {"fwd": amount["fwd"], "fwd_bwd": amount["fwd"] + amount["bwd"]}


def bench_bmm(bench, op, spec, dtype_name):
    """jagged_dense_bmm (x [total_L, K], y [B, K, N]) or jagged_jagged_bmm (x [total_L, M],
    y [total_L, N]) with K = N (M = N): TFLOP/s by 2·K·N·Σn_b (fwd_bwd 3x)."""
    device = bench.device
    dtype = DTYPES[dtype_name]
    B, max_L, K = spec["B"], spec["max_L"], spec["K"]
    offsets, total_L, n_valid = _batch(spec, device)
    gen = torch.Generator(device=device).manual_seed(23)
    es = torch.tensor([], dtype=dtype).element_size()
    flops = 2 * K * K * n_valid
    shape = {"B": B, "max_L": max_L, "total_L": total_L, "lengths": spec["gen"]}
    if op == "jagged_dense_bmm":
        shape.update(K=K, N=K)
        rot = _rotations((total_L * K + B * K * K) * es, device)
        args = [(bench.rand((total_L, K), dtype, gen), offsets, bench.rand((B, K, K), dtype, gen),
                 max_L) for _ in range(rot)]
        plains = {"torch_plain:padded_bmm": plain.dense_bmm_padded}
        if B <= 256:
            plains["torch_plain:matmul_per_sequence"] = plain.dense_bmm_loop
        peers, fn, grad_pos = ext.peers_dense_bmm(bench.fb, bench.tri), recops.jagged_dense_bmm, (0, 2)
    else:
        shape.update(M=K, N=K)
        rot = _rotations(2 * total_L * K * es, device)
        args = [(bench.rand((total_L, K), dtype, gen), bench.rand((total_L, K), dtype, gen),
                 offsets, max_L) for _ in range(rot)]
        plains = {"torch_plain:padded_bmm": plain.jagged_bmm_padded}
        if B <= 256:
            plains["torch_plain:matmul_per_sequence"] = plain.jagged_bmm_loop
        peers, fn, grad_pos = ext.peers_jagged_bmm(bench.fb, bench.tri), recops.jagged_jagged_bmm, (0, 1)
    return bench.run(op, shape, dtype_name, args, fn, plains, peers, grad_pos,
                     flops={"fwd": flops, "fwd_bwd": 3 * flops})


def bench_attention(bench, op, spec, dtype_name):
    """The two flash attentions: TFLOP/s by §6.1, forward 4·D·T·Σn_b (jagged-dense) or
    4·H·D·Σn_b² (multi-head), n_b truncated at max_L; fwd_bwd 3.5x (backward 2.5x forward)."""
    device = bench.device
    dtype = DTYPES[dtype_name]
    es = torch.tensor([], dtype=dtype).element_size()
    B, max_L, D = spec["B"], spec["max_L"], spec["D"]
    lengths = _lengths(spec, B, max_L)
    offsets = torch.tensor(testing.offsets_from_lengths(lengths), device=device)
    total_L = int(offsets[-1])
    n = [min(x, max_L) for x in lengths]
    gen = torch.Generator(device=device).manual_seed(37)
    shape = {"B": B, "max_L": max_L, "D": D, "total_L": total_L, "lengths": spec["gen"]}
    if op == "jagged_dense_flash_attention":
        T = spec["T"]
        shape["T"] = T
        flops = 4 * D * T * sum(n)
        rot = _rotations((2 * total_L * D + B * D * T + B * max_L * T) * es, device)
        args = [(bench.rand((total_L, D), dtype, gen), bench.rand((B, D, T), dtype, gen),
                 bench.rand((total_L, D), dtype, gen), bench.rand((B, max_L, T), dtype, gen),
                 offsets, max_L) for _ in range(rot)]
        plains = {"torch_plain:padded_softmax": plain.dense_flash_attention_padded}
        peers, fn, grad_pos = (ext.peers_dense_flash_attention(bench.fb, bench.tri),
                               recops.jagged_dense_flash_attention, (0, 1, 2, 3))
    else:
        H = spec["H"]
        shape["H"] = H
        flops = 4 * H * D * sum(x * x for x in n)
        rot = _rotations(3 * H * total_L * D * es, device)
        args = [tuple(bench.rand((H, total_L, D), dtype, gen) for _ in range(3)) + (offsets, max_L)
                for _ in range(rot)]
        plains = {"torch_plain:padded_softmax": plain.multi_head_flash_attention_padded}
        peers, fn, grad_pos = (ext.peers_multi_head_flash_attention(bench.fb, bench.tri),
                               recops.multi_head_jagged_flash_attention, (0, 1, 2))
    return bench.run(op, shape, dtype_name, args, fn, plains, peers, grad_pos,
                     flops={"fwd": flops, "fwd_bwd": 3.5 * flops})


def bench_segment_sum(bench, spec, dtype_name):
    """segment_sum_csr: csr_seg, values and out once each (every value belongs to a segment)."""
    device = bench.device
    dtype = DTYPES[dtype_name]
    S, bs = spec["S"], spec["batch_size"]
    seg_len = _lengths({"gen": "uniform"}, S, spec["max"])
    csr = torch.tensor(testing.offsets_from_lengths(seg_len), device=device)
    n = int(csr[-1]) * bs
    es = torch.tensor([], dtype=dtype).element_size()
    gen = torch.Generator(device=device).manual_seed(31)
    rot = _rotations(n * es, device)
    args = [(bs, csr, bench.rand((n,), dtype, gen)) for _ in range(rot)]
    shape = {"S": S, "batch_size": bs, "N": n, "lengths": "uniform"}
    nb = (n + S) * es + csr.numel() * csr.element_size()
    plains = {"torch_plain:segment_reduce": plain.segment_sum_reduce,
              "torch_plain:index_add_fp32": plain.segment_sum_index_add}
    return bench.run("segment_sum_csr", shape, dtype_name, args, recops.segment_sum_csr, plains,
                     ext.peers_segment_sum(bench.fb, bench.tri), nbytes={"fwd": nb})


def bench_cumsum(bench, kind, spec):
    device = bench.device
    shape, dtype = spec["shape"], spec["dtype"]
    n = math.prod(shape)
    es = torch.tensor([], dtype=dtype).element_size()
    rot = _rotations(n * es, device)
    gen = torch.Generator(device=device).manual_seed(5)
    args = [(torch.randint(0, spec["hi"] + 1, shape, device=device, dtype=dtype, generator=gen),)
            for _ in range(rot)]
    dname = {torch.int32: "int32", torch.int64: "int64"}[dtype]
    out_n = n + (math.prod(shape[:-1]) if kind == "complete_cumsum" else 0)
    plains = {"torch_plain:cumsum": lambda t, kind=kind: plain.cumsum_plain(kind, t)}
    peers = {}
    if bench.fb is not None:
        f = getattr(bench.fb, "asynchronous_" + kind)
        peers["fbgemm"] = (f, False)  # FBGEMM's CPU complete_cumsum takes 1-D only: recorded
    return bench.run(kind, {"dims": list(shape)}, dname, args, getattr(recops, kind), plains,
                     peers, nbytes={"fwd": (n + out_n) * es})


def bench_concat_1d(bench, spec, dtype_name):
    """concat_1d_jagged: every element read once and written once, the parts' offsets read and the
    output's written (fwd); fwd_bwd adds the split (grad read, both gradients written)."""
    device = bench.device
    dtype = DTYPES[dtype_name]
    es = torch.tensor([], dtype=dtype).element_size()
    B = spec["B"]
    gen = torch.Generator(device=device).manual_seed(23)
    ob, _, _ = _batch(spec, device)
    if spec.get("dense_a"):
        oa, Ta = None, B
    else:
        la = list(_lengths(spec, B, spec["max_L_b"]))[::-1]  # other lengths than B's
        oa = torch.tensor(testing.offsets_from_lengths(la), device=device)
        Ta = int(oa[-1])
    Tb = int(ob[-1])
    rot = _rotations((Ta + Tb) * es, device)
    args = [(bench.rand((Ta,), dtype, gen), oa, bench.rand((Tb,), dtype, gen), ob)
            for _ in range(rot)]
    oes = ob.element_size()
    offs = (B + 1) * oes * (1 if oa is None else 2)
    nb_fwd = 2 * (Ta + Tb) * es + offs + (B + 1) * oes
    shape = {"B": B, "max_L": spec["max_L"], "T_A": Ta, "T_B": Tb, "lengths": spec["gen"],
             "part_a": "dense [B]" if oa is None else "jagged"}
    lens = ob[1:] - ob[:-1]
    max_L = int(lens.max()) if B else 0
    return bench.run("concat_1d_jagged", shape, dtype_name, args, recops.concat_1d_jagged,
                     {"torch_plain:cat_gather": plain.concat_1d_gather},
                     ext.peers_concat_1d(bench.fb, bench.tri, oa is None, max_L), grad_pos=(0, 2),
                     nbytes={"fwd": nb_fwd, "fwd_bwd": nb_fwd + 2 * (Ta + Tb) * es + offs})


def bench_permute(bench, op, spec):
    """permute_1D / permute_2D_sparse_data: output segment i is input segment (1-D) or feature row
    (2-D) permute[i]; a shuffle of every segment or row, or P draws with repeats. Byte floor: every
    input once (permute, lengths, values, weights) and every output once. permute and lengths are
    int32 (a KJT's; FBGEMM's CPU op takes no int64 lengths), values int64 ids, weights fp32.
    On CUDA the output size is passed to every side; on the CPU each computes it."""
    device = bench.device
    two_d = op == "permute_2D_sparse_data"
    n_seg = spec["T"] * spec["B"] if two_d else spec["S"]
    rows = spec["T"] if two_d else spec["S"]
    lens = torch.tensor(testing.make_lengths({"gen": spec["gen"], "B": n_seg, "max": spec["max"]},
                                             2024), dtype=torch.int32, device=device)
    if two_d:
        lens = lens.reshape(spec["T"], spec["B"])
    gen = torch.Generator(device=device).manual_seed(37)
    if "P" in spec:
        perm = torch.randint(0, rows, (spec["P"],), device=device, generator=gen)
    else:
        perm = torch.randperm(rows, device=device, generator=gen)
    perm = perm.to(torch.int32)
    total = int(lens.sum())
    vals = torch.randint(0, 2**40, (total,), device=device, generator=gen)
    w = torch.rand(total, device=device, generator=gen) if spec["weights"] else None
    out_len = lens[perm]
    out_total = int(out_len.sum())
    # On CUDA every side gets the output size (permuted_lengths_sum), as a caller that must not
    # synchronise passes it (recops requires it there; FBGEMM would read it back with .item()).
    args = [(perm, lens, vals, w) + ((out_total,) if device == "cuda" else ())]
    per = 8 + (4 if w is not None else 0)
    nb = perm.numel() * 4 + lens.numel() * 4 + total * per + out_len.numel() * 4 + out_total * per
    shape = {"segments": n_seg, "permute": perm.numel(), "total": total, "out_total": out_total,
             "lengths": spec["gen"], "weights": w is not None,
             "permute_kind": "draws with repeats" if "P" in spec else "shuffle"}
    if two_d:
        shape.update(T=spec["T"], B=spec["B"])
    return bench.run(op, shape, "int64", args, getattr(recops, op),
                     {"torch_plain:gather": plain.permute_sparse_gather},
                     ext.peers_permute(bench.fb, op), nbytes={"fwd": nb})


def run_one(bench, op, sid, dtype_name):
    bench.sid = sid
    if sid in CONV_SHAPES:
        return bench_memory_bound(bench, op, CONV_SHAPES[sid], dtype_name)
    if sid in BMM_SHAPES:
        return bench_bmm(bench, op, BMM_SHAPES[sid], dtype_name)
    if sid in ATTN_SHAPES:
        return bench_attention(bench, op, ATTN_SHAPES[sid], dtype_name)
    if sid in SEG_SHAPES:
        return bench_segment_sum(bench, SEG_SHAPES[sid], dtype_name)
    if sid in CONCAT_SHAPES:
        return bench_concat_1d(bench, CONCAT_SHAPES[sid], dtype_name)
    if sid in PERMUTE_SHAPES:
        return bench_permute(bench, op, PERMUTE_SHAPES[sid])
    return bench_cumsum(bench, op, CUMSUM_SHAPES[sid])


def plan(ids, ops):
    """(op, shape id) pairs in table order: each shape with every selected op it applies to."""
    out = []
    for table, table_ops in TABLES:
        for sid in (i for i in ids if i in table):
            only = table[sid].get("only")
            out += [(op, sid) for op in table_ops if op in ops and (only is None or op in only)]
    return out


def start_device(ap, device: str) -> str:
    """Checks --device; the CPU gets every core."""
    if device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda but no CUDA device is visible")
    if device == "cpu":
        torch.set_num_threads(os.cpu_count() or 1)
    return device


def parse_phases(ap, text: str) -> list:
    phases = text.split(",")
    if not phases or any(p not in ("fwd", "fwd_bwd") for p in phases):
        ap.error("--phases takes fwd and/or fwd_bwd")
    return phases


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--shapes", help="comma-separated ids (default per device: "
                    + "; ".join(f"{d}: {','.join(v)}" for d, v in DEFAULTS.items()) + ")")
    ap.add_argument("--ops", help="comma-separated op names (default all: " + ",".join(ALL_OPS) + ")")
    ap.add_argument("--phases", default="fwd,fwd_bwd",
                    help="fwd and/or fwd_bwd (forward+backward through autograd), comma-separated")
    ap.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    ap.add_argument("--json", help="write the records here (default bench/results/<device>/...)")
    ap.add_argument("--thp", action="store_true",
                    help="CPU: THP_MEM_ALLOC_ENABLE=1 for every side (huge-page-backed outputs)")
    ap.add_argument("--budget", type=float, default=None, help="seconds of timing per function")
    ap.add_argument("--peers-dir", default=str(ROOT / ".peers" / "fbgemm_gpu_triton"),
                    help="FBGEMM + SLL Triton sources (scripts/prepare_peers.sh)")
    ap.add_argument("--gr-dir", default=str(ROOT / ".peers" / "generative-recommenders"),
                    help="generative-recommenders sources (its Triton jagged_dense_bmm)")
    args = ap.parse_args(argv)

    device = start_device(ap, args.device)
    known = {i for table, _ in TABLES for i in table}
    ids = args.shapes.split(",") if args.shapes else DEFAULTS[device]
    unknown = [i for i in ids if i not in known]
    if unknown:
        ap.error(f"unknown shape ids {unknown}")
    ops = args.ops.split(",") if args.ops else ALL_OPS
    bad = [o for o in ops if o not in ALL_OPS]
    if bad:
        ap.error(f"unknown ops {bad}")
    phases = parse_phases(ap, args.phases)
    budget = args.budget if args.budget is not None else (0.3 if device == "cuda" else 0.6)
    timer = Timer(device, min_runs=20 if device == "cuda" else 5, budget_s=budget)

    ceilings = measure_ceilings(device, timer)
    now = datetime.datetime.now(datetime.timezone.utc)
    common = {"impl": "recops", "backend": device, "device": device_name(device),
              "commit": commit(), "date": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    fb = ext.fbgemm_ops()  # before the .peers folders join sys.path (their stand-in fbgemm_gpu)
    tri = ext.TritonPeers([args.peers_dir, args.gr_dir])
    bench = Bench(device, timer, ceilings, fb, tri, common, phases)
    records = []
    path = write_records(records, "jagged_peers", args.json, common, now, ceilings)
    for op, sid in plan(ids, ops):
        recs = run_one(bench, op, sid, args.dtype)
        for r in recs:
            r["shape"]["id"] = sid
        records += recs
        _print(recs)
        # Written after every op and shape: a run stopped by its time limit keeps what it measured.
        write_records(records, "jagged_peers", args.json, common, now, ceilings)
    print(f"# ceilings: copy {ceilings['copy_gbps']:.1f} GB/s"
          + (f", bf16 matmul {ceilings['bf16_matmul_tflops']:.0f} TFLOP/s"
             if ceilings.get("bf16_matmul_tflops") else "") + f"; wrote {path}")
    return 0


def write_records(records, stem, json_arg, common, now, ceilings):
    """Writes the records to json_arg, else bench/results/<h200|device>/<stem>_<date>_<commit>.json;
    returns the path."""
    path = Path(json_arg) if json_arg else (
        ROOT / "bench" / "results" / ("h200" if "H200" in common["device"] else common["backend"])
        / f"{stem}_{now.strftime('%Y%m%d')}_{common['commit']}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=1) + "\n")
    return path


def _print(recs):
    for r in recs:
        s = r["shape"]
        sh = s.get("id", "") + " " + ",".join(f"{k}={v}" for k, v in s.items() if k != "id")
        rate = (f"{r['tflops']:8.2f} TFLOP/s" if r["tflops"] is not None
                else f"{r['gbps'] or 0:8.1f} GB/s ({(r['frac_bw_ceiling'] or 0) * 100:5.1f}%)")
        head = f"{r['op']:28} {r['phase']:7} {sh:60} {r['dtype']:5} ours {r['time_ms']:9.4f} ms {rate}  "
        if r.get("peer_error"):
            print(head + f"{r['peer']:38} failed: {r['peer_error'][:80]}", flush=True)
            continue
        print(head + f"{r['peer']:38} {r['peer_time_ms']:9.4f} ms  x{r['speedup_vs_peer'] or 0:6.2f}  "
              f"err {r['max_err_vs_peer']:g}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
