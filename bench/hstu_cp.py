#!/usr/bin/env python3
"""HSTU context parallelism on two GPUs (issue 22): recops.distributed.hstu_attn_cp over NCCL
against recops.hstu_attn on one GPU, same inputs: B=1, one sequence of 65536 tokens, H=4,
d=dv=128, bf16, causal; forward+backward times, the output's and gradients' largest difference,
and the exposed communication time (GPU time the compute stream waited for the ring's transfers,
from CUDA events around each wait; summed over the steps of one fwd+bwd, rank 0).

FLOP convention (hstu_attention.md §6): valid score entries only, fwd = 2 (d + dv) per entry per
head, fwd+bwd = 3.5 x fwd. Needs two CUDA devices; with fewer it says so and exits 2.

    python3 bench/hstu_cp.py [--json out.json] [--seq-len 65536] [--iters 5]
"""
import argparse
import json
import os
import socket
import sys

import torch


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _time(fn, iters):
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def _worker(rank, world, port, args, results):
    import torch.distributed as dist

    import recops
    from recops import distributed as D

    torch.cuda.set_device(rank)
    dev = f"cuda:{rank}"
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, device_id=torch.device(dev))
    L, H, d = args.seq_len, 4, 128
    g = torch.Generator().manual_seed(0)
    q, k, v, dout = (torch.randn(L, H, d, generator=g).to(dev, torch.bfloat16) for _ in range(4))
    off = torch.tensor([0, L], device=dev)
    rec = {}
    if rank == 0:  # the single-GPU op
        leaves = [t.clone().requires_grad_(True) for t in (q, k, v)]

        def single():
            for t in leaves:
                t.grad = None
            recops.hstu_attn(*leaves, off, off, L, L).backward(dout)

        rec["single_gpu_fwd_bwd_ms"] = _time(single, args.iters)
        ref = [recops.hstu_attn(*leaves, off, off, L, L).detach()] + [t.grad for t in leaves]
    dist.barrier()
    ql, meta = D.cp_shard(q, off)
    loc = [ql.requires_grad_(True)] + [meta.shard(t).requires_grad_(True) for t in (k, v)]
    dl = meta.shard(dout)

    def cp():
        for t in loc:
            t.grad = None
        D.hstu_attn_cp(*loc, meta).backward(dl)

    cp_ms = _time(cp, args.iters)
    D._timing_events = []
    cp()
    torch.cuda.synchronize()
    exposed = sum(a.elapsed_time(b) for a, b in D._timing_events)
    D._timing_events = None
    got = [D.cp_unshard(D.hstu_attn_cp(*loc, meta).detach(), meta)]
    got += [D.cp_unshard(t.grad, meta) for t in loc]
    if rank == 0:
        valid = L * (L + 1) // 2 * H
        fwd_flop = 2 * (d + d) * valid
        rec.update(cp_fwd_bwd_ms=cp_ms, exposed_comm_ms=exposed,
                   speedup=rec["single_gpu_fwd_bwd_ms"] / cp_ms,
                   cp_tflops=3.5 * fwd_flop / cp_ms / 1e9,
                   single_tflops=3.5 * fwd_flop / rec["single_gpu_fwd_bwd_ms"] / 1e9,
                   max_abs_diff={n: float((a.float() - b.float()).abs().max())
                                 for n, a, b in zip(("out", "dq", "dk", "dv"), got, ref)},
                   shape=dict(B=1, L=L, H=H, d=d, dtype="bf16", mask="causal", world=world),
                   flop_convention="valid entries; fwd 2(d+dv) per entry per head; fwd+bwd 3.5x",
                   device=torch.cuda.get_device_name(0))
        results["record"] = rec
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--seq-len", type=int, default=65536)
    ap.add_argument("--iters", type=int, default=5)
    args = ap.parse_args()
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2:
        print(f"hstu_cp.py: needs 2 CUDA devices for the 2-GPU NCCL run, found {n}; nothing run.",
              file=sys.stderr)
        return 2
    import torch.distributed as dist
    import torch.multiprocessing as mp

    if not dist.is_nccl_available():
        print("hstu_cp.py: this torch has no NCCL; nothing run.", file=sys.stderr)
        return 2
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # no NVLink multicast (the lender's rule)
    results = mp.Manager().dict()
    mp.spawn(_worker, args=(2, _free_port(), args, results), nprocs=2, join=True)
    rec = dict(results["record"])
    print(json.dumps(rec, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([rec], fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
