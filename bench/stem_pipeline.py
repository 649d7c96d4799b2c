"""Stem sparse prefill on the GPU (stem_indexer.md §13), one process, same run:

* ceilings: the bf16 8192^3 matmul rate and the device copy rate (bytes read + written);
* the indexer at B=8, Nq=64, Nk=8, 128K tokens (Df=2048, metadata supplied, both precisions)
  against its floor = causal scoring FLOPs at the measured matmul rate + output bytes at the
  measured copy rate;
* prepare -> metadata -> indexer -> block_sparse_attention against dense causal SDPA (the faster
  of the flash and cuDNN backends, K/V expanded to Nq heads outside the timing) on the same
  inputs, B=1, Nq=64, Nk=8, D=128, at the lengths given (default 32K and 128K; scaled down from
  the issue's B=8 so that the run fits in about a minute).

CUDA events, warm-up, median of --reps (20 for the ceilings and the indexer). JSON in
performance.md's format: {"device", "commit", "ceilings", "results": [...]}.
"""

import argparse
import json
import os

import torch
import torch.nn.functional as F

import recops  # noqa: F401  (loads torch.ops.recops)
from recops import stem

from common import ceilings as measure_ceilings  # noqa: E402  (bench/common.py)
from common import median_ms  # noqa: E402


def timed(fn, reps, warm=2):
    return median_ms(fn, "cuda", reps, warm)


def ceilings():
    c = measure_ceilings("cuda")
    return c["bf16_matmul_tflops"], c["copy_gbps"]


def causal_pairs(Qb, Kb):
    return sum(max(0, min(Kb, Kb - Qb + i + 1)) for i in range(Qb))


def bench_indexer(B, Nq, Nk, L, Df, tflops, gbs, reps):
    Bs = 128
    nb = L // Bs
    g = torch.Generator(device="cuda").manual_seed(0)
    qf = torch.randn(B, Nq, nb, Df, device="cuda", dtype=torch.bfloat16, generator=g)
    kf = torch.randn(B, Nk, nb, Df, device="cuda", dtype=torch.bfloat16, generator=g)
    vb = torch.randn(B, Nk, nb, device="cuda", dtype=torch.float32, generator=g) * 0.1
    lens = torch.full((B,), L, dtype=torch.int32, device="cuda")
    meta = stem.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=Df)
    flops = 2 * Df * B * Nq * causal_pairs(nb, nb)
    out_bytes = B * Nq * nb * nb * 4 + B * Nq * nb * 4
    floor_ms = flops / (tflops * 1e9) + out_bytes / (gbs * 1e6)
    rows = []
    for prec in (1, 2):
        fn = lambda: stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta,
                                       topk_score_precision=prec)
        ms = timed(fn, reps)
        rows.append({"name": f"stem_indexer_B{B}_Nq{Nq}_Nk{Nk}_L{L}_prec{prec}", "ms": ms,
                     "floor_ms": floor_ms, "x_floor": ms / floor_ms, "flops": flops,
                     "out_bytes": out_bytes, "tflops": flops / ms / 1e9})
    del qf, kf, vb
    return rows


def bench_pipeline(Nq, Nk, L, reps):
    D, Bs = 128, 128
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(L, Nq, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(L, Nk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(L, Nk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    cu = torch.tensor([0, L], dtype=torch.int32, device="cuda")
    lens = torch.tensor([L], dtype=torch.int32, device="cuda")
    nb = L // Bs
    meta_box = {}

    def sparse():
        qf, kf, vb = stem.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu, max_q_blocks=nb,
                                       max_kv_blocks=nb)
        meta = stem.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=qf.shape[-1])
        idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
        out, lse = stem.block_sparse_attention(q, k, v, idx, sl, cu_seqlens_q=cu,
                                               kv_seq_lens=lens, cu_seqlens_kv=cu)
        meta_box["sl"] = sl
        return out

    t_sparse = timed(sparse, reps, 1)
    kept = int(meta_box["sl"].sum().item())
    total = Nq * causal_pairs(nb, nb)
    qd = q.transpose(0, 1).unsqueeze(0)
    kd = k.transpose(0, 1).unsqueeze(0).repeat_interleave(Nq // Nk, dim=1)
    vd = v.transpose(0, 1).unsqueeze(0).repeat_interleave(Nq // Nk, dim=1)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    t_dense, best = None, None
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        try:
            with sdpa_kernel(backend):
                t = timed(lambda: F.scaled_dot_product_attention(qd, kd, vd, is_causal=True),
                          reps, 1)
        except RuntimeError as e:  # backend unavailable for this shape
            print(f"SDPA {backend}: {e}")
            continue
        if t_dense is None or t < t_dense:
            t_dense, best = t, str(backend)
    return {"name": f"pipeline_B1_Nq{Nq}_Nk{Nk}_D{D}_L{L}", "ms_sparse": t_sparse,
            "ms_dense": t_dense, "dense_backend": best,
            "speedup": (t_dense / t_sparse) if t_dense else None,
            "kept_block_pairs": kept, "causal_block_pairs": total,
            "kept_fraction": kept / total}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--pipeline-reps", type=int, default=5)
    ap.add_argument("--lengths", default="32768,131072")
    ap.add_argument("--indexer-batch", type=int, default=8)
    args = ap.parse_args()
    tflops, gbs = ceilings()
    print(f"ceilings: bf16 matmul {tflops:.0f} TFLOP/s, copy {gbs:.0f} GB/s")
    results = []
    for r in bench_indexer(args.indexer_batch, 64, 8, 131072, 2048, tflops, gbs, args.reps):
        print(f"{r['name']}: {r['ms']:.3f} ms, floor {r['floor_ms']:.3f} ms "
              f"({r['x_floor']:.2f}x), {r['tflops']:.0f} TFLOP/s")
        results.append(r)
    torch.cuda.empty_cache()
    for L in [int(x) for x in args.lengths.split(",") if x]:
        r = bench_pipeline(64, 8, L, args.pipeline_reps)
        print(f"{r['name']}: sparse {r['ms_sparse']:.2f} ms, dense {r['ms_dense']} ms "
              f"({r['dense_backend']}), speedup {r['speedup']}, kept {r['kept_fraction']:.3f}")
        results.append(r)
        torch.cuda.empty_cache()
    doc = {"device": torch.cuda.get_device_name(0),
           "commit": os.environ.get("RECOPS_COMMIT", "unknown"),
           "ceilings": {"bf16_matmul_tflops": tflops, "copy_gbs": gbs},
           "results": results}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
