"""Stem sparse prefill on the GPU (stem_indexer.md §13), one process, same run:

* ceilings: the bf16 8192^3 matmul rate and the device copy rate (bytes read + written);
* the indexer against its floor = causal scoring FLOPs at the measured matmul rate + output bytes
  at the measured copy rate, at B=8, Nq=64, Nk=8, 128K tokens (Df=2048, metadata supplied, both
  precisions) and at B=1 for the lengths of --indexer-lengths (default 32K, 128K, 512K);
* stem_prepare alone at B=8, 128K tokens, Nq=64, Nk=8, D=128 (bytes against the copy rate);
* prepare -> metadata -> indexer -> block_sparse_attention against dense causal SDPA (the faster
  of the flash and cuDNN backends, K/V expanded to Nq heads outside the timing) on the same
  inputs, B=1, Nq=64, Nk=8, D=128, at --lengths (default 32K and 128K), with each stage also
  timed alone and the attention's throughput over the block pairs the indexer kept.

--bsa-rows-per-warp 16|32 runs block_sparse_attention (cuda_sm80_fa, D = 128) with that tune
configuration at every size (a tuning file in a temporary folder, named by RECOPS_TUNING_FILE
before the first call, holding the committed entries of the other ops); the records say so.

CUDA events, warm-up, median of --reps. JSON: a list of performance.md records (op, impl,
backend, device, shape, dtype, phase, time_ms, tflops, gbps, frac_*_ceiling, ceilings, peer,
peer_time_ms, speedup_vs_peer, max_err_vs_peer, commit, date) plus this script's extra fields.
"""

import argparse
import datetime
import json
import os

import torch
import torch.nn.functional as F

import recops  # noqa: F401  (loads torch.ops.recops)
from recops import stem

from common import ceilings as measure_ceilings  # noqa: E402  (bench/common.py)
from common import force_tuning  # noqa: E402
from common import median_ms  # noqa: E402


def timed(fn, reps, warm=2):
    return median_ms(fn, "cuda", reps, warm)


def causal_pairs(Qb, Kb):
    return sum(max(0, min(Kb, Kb - Qb + i + 1)) for i in range(Qb))


def record(op, impl, shape, ms, ceil, **extra):
    r = {"op": op, "impl": impl, "backend": "cuda", "device": torch.cuda.get_device_name(0),
         "shape": shape, "dtype": "bf16", "phase": "fwd", "time_ms": ms, "tflops": None,
         "gbps": None, "frac_flops_ceiling": None, "frac_bw_ceiling": None,
         "ceilings": {"bf16_matmul_tflops": ceil[0], "copy_gbps": ceil[1]}, "peer": None,
         "peer_time_ms": None, "speedup_vs_peer": None, "max_err_vs_peer": None,
         "commit": os.environ.get("RECOPS_COMMIT", "unknown"),
         "date": datetime.date.today().isoformat()}
    r.update(extra)
    if r["tflops"] is not None:
        r["frac_flops_ceiling"] = r["tflops"] / ceil[0]
    if r["gbps"] is not None:
        r["frac_bw_ceiling"] = r["gbps"] / ceil[1]
    return r


def bench_indexer(B, Nq, Nk, L, Df, ceil, reps, precs):
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
    in_bytes = qf.numel() * 2 + kf.numel() * 2 + vb.numel() * 4
    floor_ms = flops / (ceil[0] * 1e9) + out_bytes / (ceil[1] * 1e6)
    rows = []
    for prec in precs:
        fn = lambda: stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta,
                                       topk_score_precision=prec)
        ms = timed(fn, reps)
        rows.append(record(
            "stem_indexer", INDEXER_IMPL,
            {"B": B, "Nq": Nq, "Nk": Nk, "L": L, "Df": Df, "prec": prec, "meta": 1}, ms, ceil,
            tflops=flops / ms / 1e9, gbps=(in_bytes + out_bytes) / ms / 1e6, floor_ms=floor_ms,
            x_floor=ms / floor_ms, flops=flops, out_bytes=out_bytes))
    del qf, kf, vb
    return rows


def bench_prepare(B, Nq, Nk, L, reps, ceil):
    """stem_prepare alone at B sequences of L tokens (packed), bytes = inputs + outputs."""
    D, Bs = 128, 128
    g = torch.Generator(device="cuda").manual_seed(2)
    q = torch.randn(B * L, Nq, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(B * L, Nk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(B * L, Nk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    cu = torch.arange(0, B + 1, dtype=torch.int32, device="cuda") * L
    lens = torch.full((B,), L, dtype=torch.int32, device="cuda")
    nb = (L + Bs - 1) // Bs
    fn = lambda: stem.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu, max_q_blocks=nb,
                                   max_kv_blocks=nb)
    ms = timed(fn, reps, 1)
    nbytes = (q.numel() + k.numel() + v.numel()) * 2 + (B * Nq * nb + B * Nk * nb) * 16 * D * 2 \
        + B * Nk * nb * 4
    del q, k, v
    return record("stem_prepare", "cuda_sm80", {"B": B, "Nq": Nq, "Nk": Nk, "D": D, "L": L},
                  ms, ceil, gbps=nbytes / ms / 1e6, bytes=nbytes)


# The implementation the library dispatches to for this pipeline's attention (D = 128, Bs = 128,
# contiguous token-major bf16 rows): cuda_sm90 on compute capability 9.0, else cuda_sm80_fa.
BSA_IMPL = "cuda_sm80_fa"
# The stem_indexer implementation the library dispatches to: cuda_sm90 (the Hopper scoring GEMM)
# on compute capability 9.0 for these contiguous shapes, else cuda_sm80.
INDEXER_IMPL = "cuda_sm80"


def force_bsa_rows_per_warp(n):
    """rows_per_warp=n for block_sparse_attention at D=128 in every tile-count bucket."""
    global BSA_IMPL
    force_tuning("block_sparse_attention", "cuda_sm80_fa",
                 [{"dtype": dt, "bucket": "D=128,tiles=2^%d" % k, "config": {"rows_per_warp": n}}
                  for k in range(0, 32, 2) for dt in ("bf16", "fp16")])
    BSA_IMPL = "cuda_sm80_fa(rows_per_warp=%d)" % n


def bench_pipeline(Nq, Nk, L, reps, ceil):
    D, Bs = 128, 128
    g = torch.Generator(device="cuda").manual_seed(1)
    q = torch.randn(L, Nq, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(L, Nk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(L, Nk, D, device="cuda", dtype=torch.bfloat16, generator=g)
    cu = torch.tensor([0, L], dtype=torch.int32, device="cuda")
    lens = torch.tensor([L], dtype=torch.int32, device="cuda")
    nb = (L + Bs - 1) // Bs

    def prepare():
        return stem.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu, max_q_blocks=nb,
                                 max_kv_blocks=nb)

    def metadata(Df):
        return stem.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=Df)

    def sparse():
        qf, kf, vb = prepare()
        meta = metadata(qf.shape[-1])
        idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
        out, _ = stem.block_sparse_attention(q, k, v, idx, sl, cu_seqlens_q=cu, kv_seq_lens=lens,
                                             cu_seqlens_kv=cu)
        return out

    t_sparse = timed(sparse, reps, 1)
    # Each stage alone, on the same inputs.
    qf, kf, vb = prepare()
    meta = metadata(qf.shape[-1])
    idx, sl = stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
    t_prep = timed(prepare, reps, 1)
    t_meta = timed(lambda: metadata(qf.shape[-1]), reps, 1)
    t_idx = timed(lambda: stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta), reps, 1)
    attn = lambda: stem.block_sparse_attention(q, k, v, idx, sl, cu_seqlens_q=cu,
                                               kv_seq_lens=lens, cu_seqlens_kv=cu)
    t_attn = timed(attn, reps, 1)
    out_sparse = attn()[0]
    del qf, kf, vb
    kept = int(sl.sum().item())
    total = Nq * causal_pairs(nb, nb)
    # Attention FLOPs over the kept block pairs: 4·D per (query, key) pair, a diagonal block
    # counted half (the causal mask inside it), the rest full.
    diag_pairs = Nq * nb
    attn_flops = 4 * D * Bs * Bs * (kept - diag_pairs + diag_pairs / 2)
    dense_flops = 4 * D * Nq * L * (L + 1) / 2
    del idx, sl
    qd = q.transpose(0, 1).unsqueeze(0)
    kd = k.transpose(0, 1).unsqueeze(0).repeat_interleave(Nq // Nk, dim=1)
    vd = v.transpose(0, 1).unsqueeze(0).repeat_interleave(Nq // Nk, dim=1)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    t_dense, best, out_dense = None, None, None
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
        try:
            with sdpa_kernel(backend):
                fn = lambda: F.scaled_dot_product_attention(qd, kd, vd, is_causal=True)
                t = timed(fn, reps, 1)
                if out_dense is None:
                    out_dense = fn()
        except RuntimeError as e:  # backend unavailable for this shape
            print(f"SDPA {backend}: {str(e)[:200]}")
            continue
        if t_dense is None or t < t_dense:
            t_dense, best = t, str(backend)
    err = None
    if out_dense is not None:
        od = out_dense[0].transpose(0, 1).float()
        err = float((out_sparse.float() - od).norm() / od.norm())
    del qd, kd, vd, out_dense
    shape = {"B": 1, "Nq": Nq, "Nk": Nk, "D": D, "L": L, "bs": Bs}
    rows = [record(
        "stem_pipeline", "stem_prepare+stem_indexer_metadata+stem_indexer+block_sparse_attention" + (
            "" if BSA_IMPL == "cuda_sm80_fa" else " " + BSA_IMPL),
        shape, t_sparse, ceil, peer=f"torch SDPA causal ({best})", peer_time_ms=t_dense,
        speedup_vs_peer=(t_dense / t_sparse) if t_dense else None, max_err_vs_peer=err,
        max_err_note="relative L2 of the sparse output against dense attention (the selection "
        "approximates dense)", stage_ms={"stem_prepare": t_prep, "stem_indexer_metadata": t_meta,
                                         "stem_indexer": t_idx, "block_sparse_attention": t_attn},
        kept_block_pairs=kept, causal_block_pairs=total, kept_fraction=kept / total,
        dense_tflops=(dense_flops / t_dense / 1e9) if t_dense else None)]
    rows.append(record(
        "block_sparse_attention", BSA_IMPL, dict(shape, selection="stem_indexer"), t_attn,
        ceil, tflops=attn_flops / t_attn / 1e9, flops=attn_flops, kept_fraction=kept / total))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--pipeline-reps", type=int, default=5)
    ap.add_argument("--lengths", default="32768,131072")
    ap.add_argument("--indexer-batch", type=int, default=8)
    ap.add_argument("--indexer-lengths", default="32768,131072,524288")
    ap.add_argument("--prepare-batch", type=int, default=8)
    ap.add_argument("--bsa-rows-per-warp", type=int, default=0)
    args = ap.parse_args()
    if args.bsa_rows_per_warp:
        force_bsa_rows_per_warp(args.bsa_rows_per_warp)
    global BSA_IMPL, INDEXER_IMPL
    if torch.cuda.get_device_capability() == (9, 0):
        INDEXER_IMPL = "cuda_sm90"
        BSA_IMPL = "cuda_sm90"  # --bsa-rows-per-warp tunes cuda_sm80_fa, which does not run here
    c = measure_ceilings("cuda")
    ceil = (c["bf16_matmul_tflops"], c["copy_gbps"])
    print(f"ceilings: bf16 matmul {ceil[0]:.0f} TFLOP/s, copy {ceil[1]:.0f} GB/s", flush=True)
    results = []

    def show_idx(r):
        s = r["shape"]
        print(f"stem_indexer B={s['B']} L={s['L']} prec={s['prec']}: {r['time_ms']:.3f} ms, "
              f"floor {r['floor_ms']:.3f} ms ({r['x_floor']:.2f}x), {r['tflops']:.0f} TFLOP/s",
              flush=True)

    def save():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)

    if args.indexer_batch > 0:
        for r in bench_indexer(args.indexer_batch, 64, 8, 131072, 2048, ceil, args.reps, (1, 2)):
            show_idx(r)
            results.append(r)
        torch.cuda.empty_cache()
        save()
    if args.prepare_batch > 0:
        r = bench_prepare(args.prepare_batch, 64, 8, 131072, max(5, args.reps // 2), ceil)
        print(f"stem_prepare B={args.prepare_batch} L=131072: {r['time_ms']:.3f} ms, "
              f"{r['gbps']:.0f} GB/s ({r['frac_bw_ceiling']:.2f} of copy)", flush=True)
        results.append(r)
        torch.cuda.empty_cache()
        save()
    for L in [int(x) for x in args.indexer_lengths.split(",") if x]:
        for r in bench_indexer(1, 64, 8, L, 2048, ceil, max(5, args.reps // 2), (1,)):
            show_idx(r)
            results.append(r)
        torch.cuda.empty_cache()
        save()
    for L in [int(x) for x in args.lengths.split(",") if x]:
        rows = bench_pipeline(64, 8, L, args.pipeline_reps, ceil)
        r = rows[0]
        st = " ".join(f"{k}={v:.2f}" for k, v in r["stage_ms"].items())
        print(f"pipeline L={L}: sparse {r['time_ms']:.2f} ms ({st}), dense {r['peer_time_ms']} ms "
              f"({r['peer']}), speedup {r['speedup_vs_peer']}, kept {r['kept_fraction']:.3f}, "
              f"rel err vs dense {r['max_err_vs_peer']}, attention {rows[1]['tflops']:.0f} TFLOP/s",
              flush=True)
        results.extend(rows)
        torch.cuda.empty_cache()
        save()
    save()


if __name__ == "__main__":
    main()
