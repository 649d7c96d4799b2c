"""Where the CUDA stem_indexer's time goes (issue 5): per-kernel CUDA time of one call at the §13
shape (B=8, Nq=64, Nk=8, 128K tokens, Df=2048), from the PyTorch profiler, next to cuBLAS (torch)
doing the same scoring work as batched bf16 GEMMs in the same run:

* `full`: every (query block, key block) pair, [B·Nk] x [G·Qb, Df] x [Df, Kb] (2x the causal work);
* `causal_chunks`: query blocks in chunks of `--chunk`, each chunk against the key blocks its last
  row can see (what a causal GEMM through cuBLAS would cost; bf16 output).

--config "path=3,gemm_rows=128" runs cuda_sm80 with that tune configuration (a tuning file written
to a temporary folder and named by RECOPS_TUNING_FILE before the first call; --no-cublas skips the
cuBLAS comparison).

Usage: python3 bench/stem_indexer_split.py [--B 8] [--L 131072] [--config C] [--json OUT.json]
"""

import argparse
import json
import math
import os

import torch
from torch.profiler import ProfilerActivity, profile

import recops  # noqa: F401
from recops import stem

from common import force_tuning, median_ms  # noqa: E402  (bench/common.py)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--B", type=int, default=8)
    ap.add_argument("--L", type=int, default=131072)
    ap.add_argument("--Nq", type=int, default=64)
    ap.add_argument("--Nk", type=int, default=8)
    ap.add_argument("--Df", type=int, default=2048)
    ap.add_argument("--chunk", type=int, default=128)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json", default=None)
    ap.add_argument("--config", default=None)
    ap.add_argument("--no-cublas", action="store_true")
    a = ap.parse_args()
    B, Nq, Nk, Df, nb = a.B, a.Nq, a.Nk, a.Df, a.L // 128
    if a.config:
        cfg = {k: int(v) for k, v in (kv.split("=") for kv in a.config.split(","))}
        force_tuning("stem_indexer", "cuda_sm80",
                     [{"dtype": "bf16", "bucket": "Kmax=2^%d" % math.ceil(math.log2(nb)),
                       "config": cfg}])
    g = torch.Generator(device="cuda").manual_seed(0)
    qf = torch.randn(B, Nq, nb, Df, device="cuda", dtype=torch.bfloat16, generator=g)
    kf = torch.randn(B, Nk, nb, Df, device="cuda", dtype=torch.bfloat16, generator=g)
    vb = torch.randn(B, Nk, nb, device="cuda", dtype=torch.float32, generator=g) * 0.1
    lens = torch.full((B,), a.L, dtype=torch.int32, device="cuda")
    meta = stem.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=Df)
    call = lambda: stem.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
    out = {"shape": {"B": B, "Nq": Nq, "Nk": Nk, "L": a.L, "Df": Df},
           "commit": os.environ.get("RECOPS_COMMIT", "unknown"),
           "device": torch.cuda.get_device_name(0), "config": a.config or "default"}
    out["call_ms"] = median_ms(call, "cuda", a.reps, 2)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.reps):
            call()
        torch.cuda.synchronize()
    kernels = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t > 0:
            kernels[e.key] = {"ms_per_call": t / 1e3 / a.reps, "count": e.count}
    out["kernels"] = kernels
    if not a.no_cublas:
        cublas(out, qf, kf, B, Nq, Nk, Df, nb, a)
    print(json.dumps(out, indent=1))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


def cublas(out, qf, kf, B, Nq, Nk, Df, nb, a):
    """cuBLAS through torch on the same data (adds to `out`)."""
    G = Nq // Nk
    qv = qf.view(B * Nk, G * nb, Df)
    kv = kf.view(B * Nk, nb, Df)
    out["cublas_full_ms"] = median_ms(lambda: torch.bmm(qv, kv.transpose(1, 2)), "cuda", a.reps, 2)
    qh = qf.view(B * Nq, nb, Df)
    kh = kf.repeat_interleave(G, dim=1).view(B * Nq, nb, Df)

    def chunks():
        for c0 in range(0, nb, a.chunk):
            c1 = min(nb, c0 + a.chunk)
            torch.matmul(qh[:, c0:c1], kh[:, :c1].transpose(1, 2))

    out["cublas_causal_chunks_bf16out_ms"] = median_ms(chunks, "cuda", a.reps, 2)
    flops_causal = 2 * Df * B * Nq * sum(i + 1 for i in range(nb))
    out["causal_flops"] = flops_causal
    for k in ("cublas_full_ms", "cublas_causal_chunks_bf16out_ms"):
        out[k.replace("_ms", "_tflops_causal")] = flops_causal / out[k] / 1e9


if __name__ == "__main__":
    main()
