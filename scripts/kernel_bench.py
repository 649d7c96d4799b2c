"""scripts/kernel_bench.py: time the CUDA kernels of the jagged conversions and cumsum through the
binding on the jagged_ops.md §6.3 shapes, against a device-to-device copy ceiling measured in the
same run; check each output against a plain PyTorch composition first (exact equality).

Run by scripts/device.sh on the GPU host (needs the built binding: PYTHONPATH=python). Writes a
JSON list of records with the fields of performance.md. Lengths are drawn with torch's generator
from a fixed seed (the §6.1 distributions, not the hash generator of docs/cases.md).

GB/s use the §6.1 byte floor: valid jagged rows read once, every output byte written once, the
offsets once; cumsum reads n inputs and writes its outputs once.
"""
import argparse
import datetime
import json
import math
import os
import sys

import torch

import recops

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from common import copy_gbps, git_commit, median_ms  # noqa: E402  (bench/common.py)


def time_ms(fn, iters=30, warmup=5):
    return median_ms(fn, "cuda", iters, warmup)


def copy_ceiling_gbps():
    return copy_gbps("cuda")


def lengths(kind, B, max_L, gen, lo=None, hi=None):
    if kind == "uniform":
        return torch.randint(0, max(max_L, 1), (B,), generator=gen)
    if kind == "range":
        return torch.randint(lo, hi + 1, (B,), generator=gen)
    if kind == "skewed":
        z = torch.randn(B, generator=gen, dtype=torch.float64)
        v = torch.exp(math.log(max_L / 4) + z).round().clamp(max=2 * max_L)
        return v.to(torch.int64)
    raise ValueError(kind)


def offsets_of(lens):
    return torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lens, 0)]).cuda()


def conversions(shape_id, B, max_L, D, kind, dtype, gen, lo=None, hi=None):
    lens = lengths(kind, B, max_L, gen, lo, hi)
    off = offsets_of(lens)
    total_L = int(lens.sum())
    es = torch.empty((), dtype=dtype).element_size()
    values = torch.randn(total_L, D, device="cuda").to(dtype)
    n_valid = int(lens.clamp(max=max_L).sum())
    b_idx = torch.repeat_interleave(torch.arange(B), lens).cuda()
    l_idx = torch.arange(total_L, device="cuda") - off[:-1].repeat_interleave(lens.cuda())
    keep = l_idx < max_L
    recs = []

    # jagged_to_padded_dense
    out = recops.jagged_to_padded_dense(values, off, max_L, 0.0)
    ref = torch.zeros(B, max_L, D, dtype=dtype, device="cuda")
    ref[b_idx[keep], l_idx[keep]] = values[keep]
    ok = torch.equal(out, ref)
    ms = time_ms(lambda: recops.jagged_to_padded_dense(values, off, max_L, 0.0))
    nbytes = n_valid * D * es + B * max_L * D * es + (B + 1) * 8
    recs.append(dict(op="jagged_to_padded_dense", shape=dict(id=shape_id, B=B, max_L=max_L, D=D,
                     lengths=kind, total_L=total_L), dtype=str(dtype).split(".")[-1],
                     time_ms=ms, bytes=nbytes, correct=ok))

    # dense_to_jagged (total_L given), S = max_L
    dense = ref
    out = recops.dense_to_jagged(dense, off, total_L)
    ref2 = torch.zeros(total_L, D, dtype=dtype, device="cuda")
    ref2[keep] = dense[b_idx[keep], l_idx[keep]]
    ok = torch.equal(out, ref2)
    ms = time_ms(lambda: recops.dense_to_jagged(dense, off, total_L))
    nbytes = n_valid * D * es + total_L * D * es + (B + 1) * 8
    recs.append(dict(op="dense_to_jagged", shape=dict(id=shape_id, B=B, S=max_L, D=D,
                     lengths=kind, total_L=total_L), dtype=str(dtype).split(".")[-1],
                     time_ms=ms, bytes=nbytes, correct=ok))
    return recs


def cumsums(gen):
    recs = []
    cases = [
        ("C1", "complete_cumsum", (409600,), torch.int32, 0, 64),
        ("C2", "complete_cumsum", (2048, 1024), torch.int64, 0, 1024),
        ("C3", "complete_cumsum", (1 << 28,), torch.int64, 0, 1024),
        ("C3x", "inclusive_cumsum", (1 << 28,), torch.int64, 0, 1024),
        ("R65536n16", "complete_cumsum", (65536, 16), torch.int64, 0, 64),
    ]
    for sid, op, shape, dtype, lo, hi in cases:
        t = torch.randint(lo, hi, shape, device="cuda", dtype=dtype)
        f = getattr(recops, op)
        out = f(t)
        if op == "complete_cumsum":
            body = torch.cumsum(t, dim=-1, dtype=torch.int64)
            ref = torch.cat([torch.zeros(*shape[:-1], 1, dtype=torch.int64, device="cuda"), body], -1)
        else:
            ref = torch.cumsum(t.flatten(), 0, dtype=torch.int64).view(shape)
        ok = torch.equal(out.to(torch.int64), ref)
        ms = time_ms(lambda: f(t))
        es = t.element_size()
        nbytes = t.numel() * es + out.numel() * out.element_size()
        recs.append(dict(op=op, shape=dict(id=sid, size=list(shape)), dtype=str(dtype).split(".")[-1],
                         time_ms=ms, bytes=nbytes, correct=ok))
    return recs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    ceiling = copy_ceiling_gbps()
    recs = []
    recs += conversions("S3", 1024, 1024, 256, "skewed", torch.bfloat16, gen)
    recs += conversions("S3_fp32", 1024, 1024, 256, "skewed", torch.float32, gen)
    recs += conversions("S1", 128, 128, 128, "uniform", torch.float16, gen)
    recs += conversions("S2", 128, 128, 512, "uniform", torch.float16, gen)
    recs += conversions("S4", 2048, 25, 512, "range", torch.bfloat16, gen, 19, 25)
    recs += conversions("S5", 140472, 320, 64, "skewed", torch.bfloat16, gen)
    recs += cumsums(gen)
    commit = git_commit()
    dev = torch.cuda.get_device_name()
    for r in recs:
        gbps = r["bytes"] / r["time_ms"] / 1e6
        r.update(impl="cuda_sm80", backend="cuda", device=dev, phase="fwd", tflops=None,
                 gbps=gbps, frac_flops_ceiling=None, frac_bw_ceiling=gbps / ceiling,
                 ceilings=dict(copy_gbps=ceiling, matmul_tflops=None), peer=None,
                 peer_time_ms=None, speedup_vs_peer=None, max_err_vs_peer=None, commit=commit,
                 date=datetime.date.today().isoformat())
    with open(args.json, "w") as fh:
        json.dump(recs, fh, indent=1)
    print(f"copy ceiling {ceiling:.0f} GB/s on {dev}")
    print(f"{'op':24} {'shape':10} {'dtype':9} {'ms':>9} {'GB/s':>7} {'frac':>5} ok")
    for r in recs:
        print(f"{r['op']:24} {r['shape']['id']:10} {r['dtype']:9} {r['time_ms']:9.4f} "
              f"{r['gbps']:7.0f} {r['frac_bw_ceiling']:5.2f} {r['correct']}")
    if not all(r["correct"] for r in recs):
        raise SystemExit("kernel_bench: some outputs differ from the PyTorch composition")


if __name__ == "__main__":
    main()
