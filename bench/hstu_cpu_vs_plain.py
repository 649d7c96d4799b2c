"""HSTU attention forward on the CPU: recops.hstu_attn against the plain PyTorch composition
(padded einsum, materialised [B, H, S, S] scores, silu, tril mask, einsum, / S), same process,
same inputs, median of repeated runs after warm-up. The issue-3 target shape by default.

    PYTHONPATH=python python bench/hstu_cpu_vs_plain.py [--B 8 --S 1024 --H 4 --d 128 --reps 7]
        [--json bench/results/cpu/hstu_cpu_<date>_<commit>.json]

The records carry the fields of performance.md plus `peak_extra_mib` / `peer_peak_extra_mib`: the
growth of the process's peak RSS during one call (VmHWM reset through /proc/self/clear_refs).
"""

import argparse
import datetime
import platform
from pathlib import Path

import torch

import recops
from common import git_commit, median_ms, write_records


def _status_kib(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def peak_extra_mib(fn):
    """Peak RSS growth of one call, in MiB (Linux: reset the high-water mark, call, read it)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return None
    before = _status_kib("VmRSS")
    out = fn()
    extra = (_status_kib("VmHWM") - before) / 1024
    del out
    return round(extra, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=8)
    ap.add_argument("--S", type=int, default=1024)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", help="write performance.md records here")
    a = ap.parse_args()
    commit = git_commit()
    records = []
    B, S, H, d = a.B, a.S, a.H, a.d
    torch.manual_seed(0)
    valid = B * H * S * (S + 1) // 2
    print(f"B={B} S={S} H={H} d={d} causal, {torch.get_num_threads()} threads; "
          f"FLOPs (spec §6): 2*(d+dv)*valid = {2 * 2 * d * valid / 1e9:.2f} GFLOP")
    for dt in (torch.bfloat16, torch.float32):
        q, k, v = (torch.randn(B * S, H, d, dtype=dt) for _ in range(3))
        off = torch.arange(0, B * S + 1, S)
        mask = torch.tril(torch.ones(S, S, dtype=torch.bool))

        def plain():
            qd, kd, vd = q.view(B, S, H, d), k.view(B, S, H, d), v.view(B, S, H, d)
            s = torch.einsum("bqhd,bkhd->bhqk", qd, kd) * (d ** -0.5)
            p = torch.nn.functional.silu(s) * mask
            return torch.einsum("bhqk,bkhd->bqhd", p, vd) / S

        def ours():
            return recops.hstu_attn(q, k, v, off, off, S, S)

        err = (ours().float().view(B, S, H, d) - plain().float()).abs().max().item()
        tp, to = median_ms(plain, reps=a.reps, warmup=1), median_ms(ours, reps=a.reps, warmup=1)
        mem_ours, mem_plain = peak_extra_mib(ours), peak_extra_mib(plain)
        gf = 2 * 2 * d * valid / 1e9
        print(f"{str(dt):15s} plain {tp:8.1f} ms   recops {to:8.1f} ms ({gf / to * 1e3:.0f} GFLOP/s)"
              f"   speedup {tp / to:.2f}x   max|diff| {err:.2e}"
              f"   peak extra MiB: recops {mem_ours} plain {mem_plain}")
        records.append({
            "op": "hstu_attn_fwd", "impl": "recops (best available CPU impl)", "backend": "cpu",
            "device": platform.processor() or platform.machine(),
            "shape": {"B": B, "S": S, "H": H, "Hk": H, "d": d, "dv": d, "lengths": "full",
                      "targets": 0, "contexts": 0, "mask": "causal"},
            "dtype": {torch.bfloat16: "bf16", torch.float32: "fp32"}[dt], "phase": "fwd",
            "time_ms": to, "tflops": gf / to, "gbps": None,
            "frac_flops_ceiling": None, "frac_bw_ceiling": None, "ceilings": {},
            "peer": "plain_pytorch", "peer_time_ms": tp, "speedup_vs_peer": tp / to,
            "max_err_vs_peer": err, "threads": torch.get_num_threads(),
            "peak_extra_mib": mem_ours, "peer_peak_extra_mib": mem_plain,
            "commit": commit, "date": datetime.date.today().isoformat()})
    if a.json:
        write_records(a.json, records)


if __name__ == "__main__":
    main()
