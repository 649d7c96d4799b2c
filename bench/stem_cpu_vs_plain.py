"""The Stem pipeline on the CPU: recops (stem_prepare -> stem_indexer_metadata -> stem_indexer ->
block_sparse_attention) against a plain PyTorch composition of the same pipeline (strided view-sums,
a batched score matmul with a stable sort for the top-K, dense SDPA with the token mask) and against
dense causal SDPA, same process, same inputs, median of repeated runs after a warm-up.

    PYTHONPATH=python python bench/stem_cpu_vs_plain.py [--L 4096 --Nq 8 --Nk 2 --D 128 --reps 5]
        [--json bench/results/cpu/stem_cpu_<date>_<commit>.json]

Records carry the fields of performance.md (time, peer, speedup; no ceilings on the CPU).
"""

import argparse
import datetime
import math
import platform

import numpy as np
import torch
import torch.nn.functional as F

import recops
from common import git_commit, median_ms, write_records


def budget(P, i, alpha=1.0):
    f = np.float32
    Ks = P if P < 56 else int(math.floor(f(f(P) * f(0.2 if P < 160 else 0.1)))) + 30
    p, delta = i, P - Ks  # Qb == Kb: p = i
    if p < Ks or delta <= 1:
        return Ks
    t = f(f(p - Ks) / f(delta - 1))
    d = f(f(f(Ks) * f(alpha)) - f(Ks))
    return min(max(int(math.floor(f(float(t) * float(d) + float(Ks)))), 1), Ks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--L", type=int, default=4096)
    ap.add_argument("--Nq", type=int, default=8)
    ap.add_argument("--Nk", type=int, default=2)
    ap.add_argument("--D", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    commit = git_commit()
    L, Nq, Nk, D, Bs = a.L, a.Nq, a.Nk, a.D, 128
    G, Qb = Nq // Nk, (L + Bs - 1) // Bs
    torch.manual_seed(0)
    q = torch.randn(L, Nq, D).bfloat16()
    k = torch.randn(L, Nk, D).bfloat16()
    v = torch.randn(L, Nk, D).bfloat16()
    cu, lens = torch.tensor([0, L], dtype=torch.int32), torch.tensor([L], dtype=torch.int32)

    def ours():
        qf, kf, vb = recops.stem_prepare(q, k, v, cu, lens, cu_seqlens_kv=cu)
        meta = recops.stem_indexer_metadata(lens, lens, Nq, Nk, dim_qkflat=qf.shape[-1])
        idx, n = recops.stem_indexer(qf, kf, vb, lens, lens, metadata=meta)
        return recops.block_sparse_attention(q, k, v, idx, n, cu_seqlens_q=cu, kv_seq_lens=lens,
                                             cu_seqlens_kv=cu)[0]

    Kb = Qb
    i_ = torch.arange(Qb)[:, None]
    j_ = torch.arange(Kb)[None, :]
    V = i_ + 1
    forced = (j_ < torch.clamp(V, max=4)) | ((j_ >= V - 4) & (j_ < V))
    cand = (j_ < V) & ~forced
    K = torch.tensor([min(budget(Qb, i), int(cand[i].sum())) for i in range(Qb)])
    tok = torch.arange(L)

    def plain():
        pad = Qb * Bs - L
        qp = F.pad(q.float(), (0, 0, 0, 0, 0, pad)).view(Qb, Bs // 16, 16, Nq, D).sum(1)
        kp = F.pad(k.float(), (0, 0, 0, 0, 0, pad)).view(Kb, Bs // 16, 16, Nk, D).sum(1).flip(1)
        qf = qp.permute(2, 0, 1, 3).reshape(Nq, Qb, 16 * D).bfloat16().float()
        kf = kp.permute(2, 0, 1, 3).reshape(Nk, Kb, 16 * D).bfloat16().float()
        vv = F.pad(v.float(), (0, 0, 0, 0, 0, pad))
        m = vv.norm(dim=-1).view(Kb * 8, 16, Nk).amax(1)
        ell = torch.log(m + 1e-6)
        z = (ell - ell.mean(0)) / (ell.std(0) + 1e-6)
        vb = (0.3 * z.clamp_min(0)).view(Kb, 8, Nk).mean(1).T  # [Nk, Kb]
        s = qf @ kf.repeat_interleave(G, 0).transpose(1, 2) / 64 + vb.repeat_interleave(G, 0)[:, None]
        key = s.masked_fill(~cand, -math.inf)
        order = torch.argsort(key, dim=-1, descending=True, stable=True)
        rank = torch.empty_like(order).scatter_(-1, order, torch.arange(Kb).expand_as(order))
        sel = forced | (cand & (rank < K[:, None]))  # [Nq, Qb, Kb]
        allowed = sel[:, tok // Bs][:, :, tok // Bs] & (tok[None, :] <= tok[:, None])
        return F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1),
                                              v.transpose(0, 1), attn_mask=allowed,
                                              enable_gqa=True).transpose(0, 1)

    def dense():
        return F.scaled_dot_product_attention(q.transpose(0, 1), k.transpose(0, 1),
                                              v.transpose(0, 1), is_causal=True,
                                              enable_gqa=True).transpose(0, 1)

    err = (ours().float() - plain().float()).abs().max().item()
    t_ours, t_plain, t_dense = (median_ms(f, reps=a.reps, warmup=1) for f in (ours, plain, dense))
    kept = sum(min(int(V[i]), 8) + int(K[i]) for i in range(Qb)) / (Qb * (Qb + 1) / 2)
    print(f"L={L} Nq={Nq} Nk={Nk} D={D} bf16, {torch.get_num_threads()} threads, "
          f"{100 * kept:.1f}% of causal block pairs kept")
    print(f"recops pipeline {t_ours:8.1f} ms   plain pipeline {t_plain:8.1f} ms "
          f"({t_plain / t_ours:.2f}x)   dense causal SDPA {t_dense:8.1f} ms "
          f"({t_dense / t_ours:.2f}x)   max|diff| vs plain {err:.2e}")
    base = {"op": "stem_pipeline", "impl": "recops (best available CPU impls)", "backend": "cpu",
            "device": platform.processor() or platform.machine(),
            "shape": {"B": 1, "L": L, "Nq": Nq, "Nk": Nk, "D": D, "causal": True},
            "dtype": "bf16", "phase": "fwd", "time_ms": t_ours, "tflops": None, "gbps": None,
            "frac_flops_ceiling": None, "frac_bw_ceiling": None, "ceilings": {},
            "threads": torch.get_num_threads(), "commit": commit,
            "date": datetime.date.today().isoformat()}
    records = [dict(base, peer="plain_pytorch_pipeline", peer_time_ms=t_plain,
                    speedup_vs_peer=t_plain / t_ours, max_err_vs_peer=err),
               dict(base, peer="dense_causal_sdpa", peer_time_ms=t_dense,
                    speedup_vs_peer=t_dense / t_ours, max_err_vs_peer=None)]
    if a.json:
        write_records(a.json, records)


if __name__ == "__main__":
    main()
