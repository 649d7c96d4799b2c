#!/usr/bin/env python3
"""HSTU attention on the GPU (issue 4): one run that re-measures the two ceilings (copy GB/s,
bf16 matmul TFLOP/s), times recops' forward, backward and forward+backward and plain PyTorch
(padded, materialised scores) on the same inputs, checks the outputs against each other, and
writes JSON records in the performance.md format.

FLOP convention (hstu_attention.md §6): only valid (unmasked) score entries count;
forward = 2 (d + dv) per valid entry per head, backward = 2.5 x forward, fwd_bwd = 3.5 x forward.

Meta's Triton HSTU kernel is not measured here yet (peer 'meta_triton' absent).

    python3 bench/hstu_cuda.py --json out.json [--quick]
"""
import argparse
import datetime
import json
import os
import sys
import traceback

import torch

import recops
from common import ceilings as measure_ceilings
from common import median_ms

DEV = "cuda"


def timeit(fn, warm=2, reps=7):
    return median_ms(fn, DEV, reps, warm)


def ceilings():
    return measure_ceilings(DEV)


def valid_entries(lengths, targets, contexts):
    """Valid score entries of causal HSTU masks (group size 1, no window), per head."""
    tot = 0
    for L, T, C in zip(lengths, targets, contexts):
        h = L - T
        C = min(C, h)
        tot += C * h  # context rows see contexts + history
        tot += sum(r + 1 for r in range(C, h))  # causal history rows
        tot += T * (h + 1)  # targets: history + themselves
    return tot


def make_lengths(B, S, kind, gen):
    if kind == "full":
        return [S] * B
    # skewed: same token count B*S, lengths spread over [S/8, 2S] (max 2S), longest few.
    total = B * S
    lo, hi = max(1, S // 8), 2 * S
    lens = []
    while sum(lens) < total:
        lens.append(int(torch.randint(lo, hi + 1, (1,), generator=gen)))
    over = sum(lens) - total
    lens[-1] -= over
    if lens[-1] < 1:
        lens.pop()
        lens[-1] += total - sum(lens)
    return lens


def plain_hstu(q, k, v, lengths, S, targets, contexts, alpha, scale):
    """Plain PyTorch: padded [B, H, S, S] scores, SiLU, mask, P V, / S."""
    B = len(lengths)
    H, d = q.shape[1], q.shape[2]
    off = [0]
    for L in lengths:
        off.append(off[-1] + L)
    qp = q.new_zeros(B, S, H, d)
    kp = k.new_zeros(B, S, H, d)
    vp = v.new_zeros(B, S, H, v.shape[2])
    for b, L in enumerate(lengths):
        qp[b, :L] = q[off[b] : off[b + 1]]
        kp[b, :L] = k[off[b] : off[b + 1]]
        vp[b, :L] = v[off[b] : off[b + 1]]
    idx = torch.arange(S, device=q.device)
    L_t = torch.tensor(lengths, device=q.device)
    T_t = torch.tensor(targets, device=q.device)
    C_t = torch.tensor(contexts, device=q.device)
    h = (L_t - T_t)[:, None, None]
    r = idx[None, :, None]
    c = idx[None, None, :]
    causal = c <= r
    tgt = (r >= h) & (c >= h) & (c != r)
    ctx = (r < C_t[:, None, None]) & (c < h)
    m = ((causal & ~tgt) | ctx) & (r < L_t[:, None, None]) & (c < L_t[:, None, None])

    def run():
        s = torch.einsum("bihd,bjhd->bhij", qp, kp) * alpha
        p = torch.nn.functional.silu(s) * m[:, None]
        o = torch.einsum("bhij,bjhd->bihd", p, vp) * scale
        return torch.cat([o[b, :L] for b, L in enumerate(lengths)])

    return run


def bench_shape(sh, gen, ceil, meta, with_plain):
    B, S, H, d, dv = sh["B"], sh["S"], sh["H"], sh["d"], sh["dv"]
    lengths = make_lengths(B, S, sh["lengths"], gen)
    Bn = len(lengths)
    max_len = max(lengths)
    nt = sh["targets"]
    ncx = sh["contexts"]
    targets = [min(nt, L) for L in lengths]
    contexts = [min(ncx, L - t) for L, t in zip(lengths, targets)]
    total = sum(lengths)
    dt = torch.bfloat16
    q = torch.randn(total, H, d, device=DEV, dtype=dt, generator=None)
    k = torch.randn(total, H, d, device=DEV, dtype=dt)
    v = torch.randn(total, H, dv, device=DEV, dtype=dt)
    off = torch.zeros(Bn + 1, dtype=torch.int64)
    off[1:] = torch.cumsum(torch.tensor(lengths), 0)
    off = off.to(DEV)
    kw = {}
    if nt:
        kw["num_targets"] = torch.tensor(targets, device=DEV, dtype=torch.int64)
    if ncx:
        kw["num_contexts"] = torch.tensor(contexts, device=DEV, dtype=torch.int64)
    alpha = 1.0 / d**0.5
    entries = valid_entries(lengths, targets, contexts) * H
    fwd_flops = 2 * (d + dv) * entries
    shape = dict(sh, B=Bn, S=max_len, Hk=H, total_tokens=total)
    recs = []

    # The forward runs cuda_sm80_fa where it serves (d, dv <= 128), the backward cuda_sm80.
    fwd_impl = "cuda_sm80_fa" if max(d, dv) <= 128 else "cuda_sm80"
    impls = {"fwd": fwd_impl, "bwd": "cuda_sm80", "fwd_bwd": f"{fwd_impl}+cuda_sm80"}

    def rec(phase, ms, flops, peer=None, peer_ms=None, err=None, extra=None):
        r = {
            "op": "hstu_attn",
            "impl": impls[phase],
            "backend": "cuda",
            "device": torch.cuda.get_device_name(),
            "shape": shape,
            "dtype": "bf16",
            "phase": phase,
            "time_ms": ms,
            "tflops": (flops / ms / 1e9) if ms else None,
            "gbps": None,
            "frac_flops_ceiling": (flops / ms / 1e9 / ceil["bf16_matmul_tflops"]) if ms else None,
            "frac_bw_ceiling": None,
            "ceilings": ceil,
            "peer": peer,
            "peer_time_ms": peer_ms,
            "speedup_vs_peer": (peer_ms / ms) if (peer_ms and ms) else None,
            "max_err_vs_peer": err,
            "flop_convention": "2*(d+dv) per valid entry per head; bwd 2.5x, fwd_bwd 3.5x",
        }
        r.update(meta)
        if extra:
            r.update(extra)
        recs.append(r)

    fwd = lambda: recops.hstu_attn(q, k, v, off, off, max_len, max_len, **kw)  # noqa: E731
    out = fwd()
    torch.cuda.synchronize()
    t_fwd = timeit(fwd)
    qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    dout = torch.randn_like(out)

    def fb():
        o = recops.hstu_attn(qg, kg, vg, off, off, max_len, max_len, **kw)
        o.backward(dout)

    t_fb = timeit(fb)
    t_bwd = max(t_fb - t_fwd, 1e-6)
    peer = peer_ms_f = peer_ms_fb = err = None
    if with_plain:
        try:
            run = plain_hstu(q, k, v, lengths, max_len, targets, contexts, alpha, 1.0 / max_len)
            ref = run()
            err = float((out.float() - ref.float()).abs().max())
            rel = float((out.float() - ref.float()).norm() / ref.float().norm())
            peer_ms_f = timeit(run, warm=1, reps=3)
            peer = "plain_pytorch"
            print(f"    plain pytorch: fwd {peer_ms_f:.2f} ms, max|ours-plain| {err:.3g} rel {rel:.3g}")
            del ref, run
        except torch.cuda.OutOfMemoryError:
            print("    plain pytorch: out of memory, skipped")
        torch.cuda.empty_cache()
    rec("fwd", t_fwd, fwd_flops, peer, peer_ms_f, err)
    rec("bwd", t_bwd, 2.5 * fwd_flops)
    rec("fwd_bwd", t_fb, 3.5 * fwd_flops, None, peer_ms_fb, None)
    print(
        f"  {json.dumps(sh)}: fwd {t_fwd:.3f} ms {fwd_flops / t_fwd / 1e9:.1f} TFLOP/s, "
        f"bwd {t_bwd:.3f} ms {2.5 * fwd_flops / t_bwd / 1e9:.1f}, "
        f"fwd+bwd {t_fb:.3f} ms {3.5 * fwd_flops / t_fb / 1e9:.1f}"
    )
    return recs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    meta = {
        "commit": os.environ.get("RECOPS_COMMIT", "unknown"),
        "date": datetime.date.today().isoformat(),
    }
    ceil = ceilings()
    print("ceilings:", ceil)
    base = dict(B=32, S=4096, H=4, d=128, dv=128, lengths="full", targets=0, contexts=0)
    shapes = [
        dict(base, targets=256),
        dict(base),
        dict(base, lengths="skewed", targets=256),
        dict(base, d=64, dv=64, targets=256),
        dict(base, d=256, dv=256, targets=256),
        dict(base, B=128, S=1024, targets=64),
        dict(base, B=16, S=8192, targets=256),
        dict(base, B=8, S=16384, targets=256),
        dict(base, targets=256, contexts=32),
    ]
    if a.quick:
        shapes = shapes[:3]
    gen = torch.Generator().manual_seed(0)
    recs = []
    for i, sh in enumerate(shapes):
        try:
            recs += bench_shape(sh, gen, ceil, meta, with_plain=sh["S"] <= 4096 and i < 4)
        except Exception:  # one shape failing must not lose the others
            traceback.print_exc()
            recs.append(dict(meta, op="hstu_attn", shape=sh, error=traceback.format_exc()[-400:]))
        torch.cuda.empty_cache()
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)
    print(f"wrote {len(recs)} records to {a.json}")


if __name__ == "__main__":
    sys.exit(main())
