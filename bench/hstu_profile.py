#!/usr/bin/env python3
"""One HSTU forward (and, with --bwd, one backward) at B=32 S=4096 H=4 d=128 with 256 targets,
for a profiler (ncu / nsys) to look at: inputs made and warmed up first, then the profiled calls
inside an NVTX range "profiled".

    ncu --nvtx --nvtx-include "profiled/" --section SpeedOfLight python3 bench/hstu_profile.py
"""
import argparse

import torch

import recops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bwd", action="store_true")
    ap.add_argument("--B", type=int, default=32)
    ap.add_argument("--S", type=int, default=4096)
    ap.add_argument("--H", type=int, default=4)
    ap.add_argument("--targets", type=int, default=256)
    a = ap.parse_args()
    B, S, H, d = a.B, a.S, a.H, 128
    q, k, v = (torch.randn(B * S, H, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    off = torch.arange(0, B * S + 1, S, device="cuda", dtype=torch.int64)
    kw = {"num_targets": torch.full((B,), a.targets, device="cuda", dtype=torch.int64)}
    if a.bwd:
        q.requires_grad_(True)
        k.requires_grad_(True)
        v.requires_grad_(True)
    for _ in range(2):
        out = recops.hstu_attn(q, k, v, off, off, S, S, **kw)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("profiled")
    out = recops.hstu_attn(q, k, v, off, off, S, S, **kw)
    if a.bwd:
        out.backward(torch.randn_like(out))
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
