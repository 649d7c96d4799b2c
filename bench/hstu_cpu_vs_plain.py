"""HSTU attention forward on the CPU: recops.hstu_attn against the plain PyTorch composition
(padded einsum, materialised [B, H, S, S] scores, silu, tril mask, einsum, / S), same process,
same inputs, median of repeated runs after warm-up. The issue-3 target shape by default.

    PYTHONPATH=python python bench/hstu_cpu_vs_plain.py [--B 8 --S 1024 --H 4 --d 128 --reps 7]
"""

import argparse
import time

import torch

import recops


def median_ms(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[reps // 2] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=8)
    ap.add_argument("--S", type=int, default=1024)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
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
        tp, to = median_ms(plain, a.reps), median_ms(ours, a.reps)
        gf = 2 * 2 * d * valid / 1e9
        print(f"{str(dt):15s} plain {tp:8.1f} ms   recops {to:8.1f} ms ({gf / to * 1e3:.0f} GFLOP/s)"
              f"   speedup {tp / to:.2f}x   max|diff| {err:.2e}")


if __name__ == "__main__":
    main()
