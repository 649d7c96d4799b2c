#!/usr/bin/env python3
"""Times recops' training ops against their peers in one run, forward and forward+backward.

Ops (training_ops.md §6 shapes; --quick: small ones for a CPU smoke test): rms_norm (with and
without weight), rms_norm_rstd, l2norm, rms_norm_gated, clipped_swiglu, sort_chunks_by_idx and
fused_cross_entropy (the default mode, and precompute mode against Liger as §6 pairs them) and
chunk_loss (fused linear cross-entropy: Liger FLCE in both accumulation modes, fla, eager and
compiled F.linear + F.cross_entropy; TFLOP/s over 2·N·D·V forward and 6·N·D·V forward+backward, and
the peak extra memory of one forward+backward of each, `max_memory_allocated` minus what was
allocated before, in the record's shape as `peak_extra_mib`), inplace_rope_ (forward, in place;
fla's rotary on the trailing-slice view), chunk_local_cumsum (fla's), mhc_sinkhorn, mhc_pre_bmm
and mhc_post (Liger's mHC pre / post-res functions, comb as out_in), chunk_gated_delta_rule and
chunk_kda (fla's; TFLOP/s over the chunked algorithm's FLOPs). Ours is the public ``recops.<op>``; forward+backward goes through autograd (``torch.autograd.grad``).

Peers, timed in the same process on the same inputs: eager PyTorch of the reference formula,
``torch.compile`` of the same formula, Liger-Kernel and fla-core (pure Python + Triton: `bash
scripts/prepare_peers.sh` unpacks their wheels into .peers/training/, put on sys.path, see
--peers-dir) and quack-kernels when importable (not carried to the device: its
nvidia-cutlass-dsl wheels are past the carry limit; recorded as "not carried: size"). A peer that
fails to import, compile or run gets a record with `peer_error` and never stops the run.

The JSON layout, the timer, the ceilings (copy bandwidth re-measured in the same run) and the
records are those of bench/jagged_peers.py. Every op here is memory-bound: each record has GB/s
by the byte floors of §6 and the fraction of the copy ceiling (`frac_bw_ceiling`); fwd_bwd counts
the forward's and the backward's floors.

    python bench/training_peers.py --device cpu --quick          # smoke test, seconds
    python bench/training_peers.py --device cpu --peers eager,compile  # CPU_SHAPES, all cores
    python bench/training_peers.py --device cuda --json out.json  # §6 shapes on the H200
"""

from __future__ import annotations

import argparse
import math
import datetime
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import jagged_peers as jp  # noqa: E402  (puts python/ on sys.path and imports recops)

import recops  # noqa: E402

ROOT = jp.ROOT
INF = float("inf")

# ---- shapes (training_ops.md §6) ----------------------------------------------------------------
# Each op: a list of (shape id, parameters). "quick" rows are for --quick (any device).
SHAPES = {
    "rms_norm": [("N1", {"rows": 65536, "D": 4096, "weight": True}),
                 ("N1nw", {"rows": 65536, "D": 4096, "weight": False})],
    "rms_norm_rstd": [("R1", {"dims": [4, 8192, 16384]})],
    "l2norm": [("L1", {"rows": 1048576, "D": 128}), ("L2", {"rows": 65536, "D": 4096})],
    "rms_norm_gated": [("G1", {"rows": 1048576, "D": 128, "group_size": 0}),
                       ("G2", {"rows": 65536, "D": 4096, "group_size": 512})],
    "clipped_swiglu": [("W1", {"rows": 65536, "I": 2880, "interleaved": True}),
                       ("W2", {"rows": 65536, "I": 2048, "interleaved": False})],
    "sort_chunks_by_idx": [("S1", {"T": 65536, "D": 4096, "C": 256})],
    "fused_cross_entropy": [("E1", {"N": 16384, "V": 131072}), ("E2", {"N": 16384, "V": 256000}),
                            ("E3", {"N": 16384, "V": 32768})],
    "chunk_loss": [("C1", {"N": 16384, "D": 4096, "V": 131072}),
                   ("C2", {"N": 16384, "D": 4096, "V": 256000})],
    "inplace_rope_": [("P1", {"dims": [4, 8192, 64, 512], "R": 64}),
                      ("P2", {"dims": [4, 8192, 32, 128], "R": 128})],
    # The GDN gate cumsum (fp32 gates, as GDN keeps them): scalar [B, T, H] and KDA's vector
    # [B, T, H, K]; §6 names no shape for it, these are the GDN benchmark's T and H at a batch
    # large enough to measure bandwidth.
    # GDN (§6): B = 1, T = 8192, H = 16, K = V = 128; GVA HV = 32; varlen 8 x 1024 packed.
    "chunk_gated_delta_rule": [("D1", {"B": 1, "T": 8192, "H": 16, "HV": 16, "K": 128, "V": 128}),
                               ("D2", {"B": 1, "T": 8192, "H": 16, "HV": 32, "K": 128, "V": 128}),
                               ("D3", {"B": 1, "T": 8192, "H": 16, "HV": 16, "K": 128, "V": 128,
                                       "seqs": 8})],
    # KDA (§4.5, §6: the GDN shapes; KDA numbers are reported only): g per channel [B, T, HV, K].
    "chunk_kda": [("A1", {"B": 1, "T": 8192, "H": 16, "HV": 16, "K": 128, "V": 128}),
                  ("A3", {"B": 1, "T": 8192, "H": 16, "HV": 16, "K": 128, "V": 128, "seqs": 8})],
    "chunk_local_cumsum": [("U1", {"dims": [8, 8192, 32]}),
                           ("U2", {"dims": [1, 8192, 16, 128]})],
    "mhc_sinkhorn": [("H1", {"tokens": 65536, "n": 4})],
    "mhc_pre_bmm": [("M1", {"tokens": 65536, "n": 4, "C": 4096})],
    "mhc_post": [("M1", {"tokens": 65536, "n": 4, "C": 4096})],
}
# --device cpu without --quick: §6's shapes cut to a CPU run (performance.md: all cores, against
# plain PyTorch, i.e. the eager and compiled formulas, in the same run). The widths (D, V, K, I, R,
# C, n) are §6's; only the row, token and sequence counts are smaller, so that every op and peer
# runs in seconds on a few cores. chunk_loss keeps §6's D but a smaller V: its eager peer's logits
# GEMM alone would otherwise take minutes per call.
CPU_SHAPES = {
    "rms_norm": [("cN1", {"rows": 4096, "D": 4096, "weight": True}),
                 ("cN1nw", {"rows": 4096, "D": 4096, "weight": False})],
    "rms_norm_rstd": [("cR1", {"dims": [1, 512, 16384]})],
    "l2norm": [("cL1", {"rows": 65536, "D": 128}), ("cL2", {"rows": 4096, "D": 4096})],
    "rms_norm_gated": [("cG1", {"rows": 65536, "D": 128, "group_size": 0}),
                       ("cG2", {"rows": 4096, "D": 4096, "group_size": 512})],
    "clipped_swiglu": [("cW1", {"rows": 4096, "I": 2880, "interleaved": True}),
                       ("cW2", {"rows": 4096, "I": 2048, "interleaved": False})],
    "sort_chunks_by_idx": [("cS1", {"T": 4096, "D": 4096, "C": 256})],
    "fused_cross_entropy": [("cE1", {"N": 1024, "V": 131072}), ("cE3", {"N": 1024, "V": 32768})],
    "chunk_loss": [("cC1", {"N": 256, "D": 4096, "V": 32768})],
    "inplace_rope_": [("cP1", {"dims": [1, 1024, 64, 512], "R": 64}),
                      ("cP2", {"dims": [1, 2048, 32, 128], "R": 128})],
    "chunk_gated_delta_rule": [("cD1", {"B": 1, "T": 2048, "H": 16, "HV": 16, "K": 128,
                                        "V": 128}),
                               ("cD3", {"B": 1, "T": 2048, "H": 16, "HV": 16, "K": 128,
                                        "V": 128, "seqs": 8})],
    "chunk_kda": [("cA1", {"B": 1, "T": 2048, "H": 16, "HV": 16, "K": 128, "V": 128}),
                  ("cA3", {"B": 1, "T": 2048, "H": 16, "HV": 16, "K": 128, "V": 128, "seqs": 8})],
    "chunk_local_cumsum": [("cU1", {"dims": [8, 8192, 32]}),
                           ("cU2", {"dims": [1, 8192, 16, 128]})],
    "mhc_sinkhorn": [("cH1", {"tokens": 65536, "n": 4})],
    "mhc_pre_bmm": [("cM1", {"tokens": 4096, "n": 4, "C": 4096})],
    "mhc_post": [("cM1", {"tokens": 4096, "n": 4, "C": 4096})],
}
QUICK = {
    "rms_norm": [("qN", {"rows": 64, "D": 96, "weight": True}),
                 ("qNnw", {"rows": 64, "D": 96, "weight": False})],
    "rms_norm_rstd": [("qR", {"dims": [2, 16, 96]})],
    "l2norm": [("qL", {"rows": 64, "D": 96})],
    "rms_norm_gated": [("qG", {"rows": 64, "D": 96, "group_size": 0}),
                       ("qGg", {"rows": 64, "D": 96, "group_size": 32})],
    "clipped_swiglu": [("qW", {"rows": 64, "I": 48, "interleaved": True}),
                       ("qWc", {"rows": 64, "I": 48, "interleaved": False})],
    "sort_chunks_by_idx": [("qS", {"T": 256, "D": 64, "C": 16})],
    "fused_cross_entropy": [("qE", {"N": 64, "V": 500})],
    "chunk_loss": [("qC", {"N": 64, "D": 32, "V": 500})],
    "inplace_rope_": [("qP", {"dims": [2, 16, 4, 48], "R": 16})],
    "chunk_gated_delta_rule": [("qD", {"B": 2, "T": 100, "H": 2, "HV": 4, "K": 32, "V": 16}),
                               ("qDv", {"B": 1, "T": 150, "H": 2, "HV": 2, "K": 16, "V": 16,
                                        "seqs": 3})],
    "chunk_kda": [("qA", {"B": 2, "T": 100, "H": 2, "HV": 2, "K": 32, "V": 16}),
                  ("qAv", {"B": 1, "T": 150, "H": 2, "HV": 2, "K": 16, "V": 16, "seqs": 3})],
    "chunk_local_cumsum": [("qU", {"dims": [2, 128, 3]}), ("qUk", {"dims": [1, 192, 2, 8]})],
    "mhc_sinkhorn": [("qH", {"tokens": 64, "n": 4})],
    "mhc_pre_bmm": [("qM", {"tokens": 64, "n": 4, "C": 96})],
    "mhc_post": [("qM", {"tokens": 64, "n": 4, "C": 96})],
}
ALL_OPS = list(SHAPES)
ALL_PEERS = ["eager", "compile", "liger", "fla", "quack"]


# ---- the peers ------------------------------------------------------------------------------------
class Peers:
    """Imports each peer package once; a failure is kept as the message of its records."""

    def __init__(self, wanted, peers_dir):
        self.wanted = wanted
        if peers_dir and Path(peers_dir).is_dir() and peers_dir not in sys.path:
            sys.path.insert(0, peers_dir)
        self.mods, self.errors = {}, {}

    def get(self, name):
        if name in self.mods or name in self.errors:
            return self.mods.get(name)
        try:
            if name == "liger":
                from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction
                from liger_kernel.ops.rms_norm import LigerRMSNormFunction
                from liger_kernel.ops.swiglu import LigerSiLUMulFunction
                from liger_kernel.transformers.functional import liger_fused_linear_cross_entropy
                self.mods[name] = {"ce": LigerCrossEntropyFunction, "rms": LigerRMSNormFunction,
                                   "swiglu": LigerSiLUMulFunction,
                                   "flce": liger_fused_linear_cross_entropy}
            elif name == "fla":
                from fla.modules.fused_cross_entropy import FusedCrossEntropyLoss
                from fla.modules import FusedLinearCrossEntropyLoss
                from fla.modules.fused_norm_gate import rms_norm_gated
                from fla.modules.l2norm import l2norm
                from fla.modules.layernorm_gated import rmsnorm_fn
                self.mods[name] = {"l2norm": l2norm, "rms_norm_gated": rms_norm_gated,
                                   "rmsnorm_fn": rmsnorm_fn, "ce": FusedCrossEntropyLoss,
                                   "flce": FusedLinearCrossEntropyLoss}
            elif name == "liger_mhc":
                from liger_kernel.ops.mhc import LigerMHCPostResFunction, LigerMHCPreFunction
                self.mods[name] = {"pre": LigerMHCPreFunction, "post": LigerMHCPostResFunction}
            elif name == "fla_ops":
                from fla.modules.rotary import rotary_embedding
                from fla.ops.utils.cumsum import chunk_local_cumsum
                self.mods[name] = {"rotary": rotary_embedding, "cumsum": chunk_local_cumsum}
            elif name == "fla_gdn":
                from fla.ops.gated_delta_rule import chunk_gated_delta_rule
                self.mods[name] = {"gdn": chunk_gated_delta_rule}
            elif name == "fla_kda":
                from fla.ops.kda import chunk_kda
                self.mods[name] = {"kda": chunk_kda}
            elif name == "quack":
                try:
                    import quack  # noqa: F401
                except ImportError as e:
                    raise ImportError(f"not carried: size (nvidia-cutlass-dsl wheels are past the "
                                      f"64 MiB carry limit) [{e}]") from e
                from quack.cross_entropy import cross_entropy
                from quack.rmsnorm import rmsnorm
                self.mods[name] = {"ce": cross_entropy, "rms": rmsnorm}
            else:
                raise ValueError(name)
        except Exception as e:  # ImportError, or a Triton / CUDA failure at import
            self.errors[name] = jp._short(e)
        return self.mods.get(name)

    def add(self, exts, name, label, make, module=None):
        """exts[name:label] = (fn, differentiable); an import failure becomes a raising fn.
        module: the import group when it is not the peer's name (liger_mhc, fla_ops: imported
        apart so that a failure of one part leaves the others)."""
        if name not in self.wanted:
            return
        mod = self.get(module or name)
        err_key = module or name
        key = f"{name}:{label}"
        err = self.errors.get(err_key)
        if mod is not None:
            try:
                exts[key] = (make(mod), True)
                return
            except Exception as e:  # e.g. a module that fails to construct
                err = jp._short(e)

        def fail(*a, _err=err):
            raise RuntimeError(_err)
        exts[key] = (fail, True)


def _compiled(fn):
    """torch.compile of the reference formula, compiled lazily at its first (warm-up) call."""
    box = {}

    def f(*a):
        if "c" not in box:
            box["c"] = torch.compile(fn, dynamic=False)
        return box["c"](*a)
    return f


def _refs(bench, exts, plains, ref, peers):
    if "eager" in peers.wanted:
        plains["torch_eager"] = ref
    if "compile" in peers.wanted:
        exts["torch_compile"] = (_compiled(ref), True)


# ---- reference formulas (fp32 math, one rounding, as the ops) ------------------------------------
def ref_rms_norm(x, w, eps=1e-6):
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float() if w is not None else y).to(x.dtype)


def ref_rms_norm_rstd(x, eps=1e-6):
    xf = x.float()
    return torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)


def ref_l2norm(x, eps=1e-6):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + eps)).to(x.dtype)


def ref_rms_norm_gated(x, z, w, group_size=0, eps=1e-6):
    xf, zf = x.float(), z.float()
    D = x.shape[-1]
    gs = group_size or D
    xg = xf.view(*xf.shape[:-1], D // gs, gs)
    n = (xg * torch.rsqrt(xg.pow(2).mean(-1, keepdim=True) + eps)).view(xf.shape)
    return (n * w.float() * F.silu(zf)).to(x.dtype)


def ref_clipped_swiglu(x, interleaved, alpha=1.702, limit=7.0, beta=1.0):
    xf = x.float()
    if interleaved:
        g, u = xf[..., 0::2], xf[..., 1::2]
    else:
        g, u = xf.chunk(2, dim=-1)
    g = g.clamp(max=limit)
    u = u.clamp(-limit, limit)
    return (g * torch.sigmoid(alpha * g) * (u + beta)).to(x.dtype)


def ref_ce(logits, labels):
    return F.cross_entropy(logits.float(), labels)


# ---- the ops -----------------------------------------------------------------------------------------
def ref_lce(h, w, y):
    return F.cross_entropy(F.linear(h, w).float(), y)


def ref_rope_(x, cos, sin, R, inverse=False):
    """DeepSeek V4's interleaved RoPE of the trailing R channels, written into x (fp32 math)."""
    xr = x[..., x.shape[-1] - R:]
    x0, x1 = xr[..., 0::2].float(), xr[..., 1::2].float()
    shp = list(cos.shape[:-1]) + [1] * (x.dim() - 1 - cos.dim()) + [cos.shape[-1]]
    c, s = cos.float().view(shp), sin.float().view(shp)
    if inverse:
        s = -s
    y0, y1 = (x0 * c - x1 * s).to(x.dtype), (x1 * c + x0 * s).to(x.dtype)  # both before writing
    xr[..., 0::2] = y0
    xr[..., 1::2] = y1
    return x


def ref_chunk_local_cumsum(g, chunk_size=64):
    """fp32 sums within chunks of chunk_size along T (T a multiple of chunk_size)."""
    B, T = g.shape[:2]
    rest = g.shape[2:]
    return g.float().view(B, T // chunk_size, chunk_size, *rest).cumsum(2).view(B, T, *rest)


def ref_chunk_delta_rule(q, k, v, g, beta, offsets=None, chunk_size=64):
    """Plain-PyTorch chunked gated delta rule, the eager peer of chunk_gated_delta_rule (g the
    scalar gate [B, T, HV]) and chunk_kda (g per channel [B, T, HV, K]): per chunk of every
    sequence, all heads at once, the pair decays exp(G_i - G_j) formed exactly (no split
    exponent), A = strict lower beta_i k_i·(decay) k_j, (I + A)^-1 by a triangular solve, w and u,
    v_new = u - w S, o = (q e^G) S + Aqk v_new, S = e^{G_L} S + (k e^{G_L - G})^T v_new; fp32
    math, o rounded once to v's dtype, scale K^-0.5, no initial state. GVA repeats q, k over
    the HV / H value heads. Differentiable by autograd; written here, not taken from a peer."""
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    BT = chunk_size
    qf = q.float().repeat_interleave(HV // H, dim=2) * K ** -0.5
    kf = k.float().repeat_interleave(HV // H, dim=2)
    vf, bf, gf = v.float(), beta.float(), g.float()
    if gf.dim() == 3:
        gf = gf.unsqueeze(-1).expand(B, T, HV, K)
    incl = torch.ones(BT, BT, dtype=torch.bool, device=q.device).tril()
    strict = incl.tril(-1)
    eye = torch.eye(BT, device=q.device)
    if offsets is None:
        spans = [(b, 0, T) for b in range(B)]
    else:
        o_ = offsets.tolist()
        spans = [(0, o_[i], o_[i + 1]) for i in range(len(o_) - 1)]
    outs = [[] for _ in range(B)]
    for b, s, e in spans:
        S = qf.new_zeros(HV, K, V)
        for c0 in range(s, e, BT):
            c1 = min(c0 + BT, e)
            n = c1 - c0
            qc, kc = qf[b, c0:c1].transpose(0, 1), kf[b, c0:c1].transpose(0, 1)  # [HV, n, K]
            vc, bc = vf[b, c0:c1].transpose(0, 1), bf[b, c0:c1].transpose(0, 1)  # [HV, n, V]
            G = gf[b, c0:c1].transpose(0, 1).cumsum(1)  # [HV, n, K]
            diff = G[:, :, None, :] - G[:, None, :, :]  # [HV, i, j, K]
            E = torch.exp(diff.masked_fill(~incl[:n, :n, None], float("-inf")))
            Akk = torch.einsum("hic,hjc,hijc->hij", kc, kc, E) * bc[:, :, None]
            Akk = Akk.masked_fill(~strict[:n, :n], 0.0)
            Aqk = torch.einsum("hic,hjc,hijc->hij", qc, kc, E)
            Tinv = torch.linalg.solve_triangular(eye[:n, :n] + Akk, eye[:n, :n], upper=False)
            w = Tinv @ (kc * torch.exp(G) * bc[..., None])
            u = Tinv @ (vc * bc[..., None])
            v_new = u - w @ S
            outs[b].append(((qc * torch.exp(G)) @ S + Aqk @ v_new).transpose(0, 1))
            GL = G[:, -1:, :]  # [HV, 1, K]
            S = GL.transpose(1, 2).exp() * S + (kc * torch.exp(GL - G)).transpose(1, 2) @ v_new
    o = torch.stack([torch.cat(x, 0) if x else vf.new_zeros(0, HV, V) for x in outs], 0)
    return o.to(v.dtype)


def ref_mhc_sinkhorn(logits, iters=20, eps=1e-6):
    p = torch.softmax(logits, -1) + eps
    p = p / (p.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        p = p / (p.sum(-1, keepdim=True) + eps)
        p = p / (p.sum(-2, keepdim=True) + eps)
    return p


def ref_mhc_pre_bmm(h_pre, X):
    return (h_pre.unsqueeze(-1) * X.float()).sum(-2).to(X.dtype)


def ref_mhc_post_out_in(X, y, post, comb):
    """out_j = post_j * y + sum_i comb[j, i] * X_i (Liger's h_res layout)."""
    out = post.unsqueeze(-1) * y.float().unsqueeze(-2) + torch.matmul(comb, X.float())
    return out.to(X.dtype)


def _peak_extra_mib(fn, args, grad_pos, device):
    """MiB above what was allocated before one forward+backward of fn (CUDA only; else None)."""
    if device != "cuda":
        return None
    try:
        leaves = [a.detach().requires_grad_() if k in grad_pos else a for k, a in enumerate(args)]
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        out = fn(*leaves)
        out = out[0] if isinstance(out, (tuple, list)) else out
        grads = torch.autograd.grad(out, [leaves[k] for k in grad_pos], torch.ones_like(out))
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated() - base
        del out, grads, leaves
        return round(peak / 2**20, 1)
    except Exception as e:
        return jp._short(e)


def _es(dtype):
    return torch.tensor([], dtype=dtype).element_size()


def bench_op(bench, peers, op, sid, p, dtype_name):
    device, dtype = bench.device, jp.DTYPES[dtype_name]
    es = _es(dtype)
    gen = torch.Generator(device=device).manual_seed(11)
    exts, plains = {}, {}
    shape = dict(p)
    if op in ("rms_norm", "l2norm", "rms_norm_rstd"):
        dims = p.get("dims") or [p["rows"], p["D"]]
        n = 1
        for d in dims:
            n *= d
        rot = jp._rotations(n * es, device)
        w = bench.rand((dims[-1],), dtype, gen) + 1 if p.get("weight") else None
        args = [(bench.rand(dims, dtype, gen),) + ((w,) if op == "rms_norm" else ())
                for _ in range(rot)]
        grad = (0, 1) if w is not None else (0,)
        if op == "rms_norm":
            ours = recops.rms_norm
            _refs(bench, exts, plains, ref_rms_norm, peers)
            if "eager" in peers.wanted:
                plains["torch_F.rms_norm"] = lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6)
            peers.add(exts, "liger", "LigerRMSNormFunction",
                      lambda m: lambda x, w: m["rms"].apply(x, w, 1e-6, 0.0, "llama", False))
            peers.add(exts, "quack", "rmsnorm", lambda m: lambda x, w: m["rms"](x, w, eps=1e-6))
            nb = {"fwd": 2 * n * es, "bwd": 3 * n * es}
        elif op == "l2norm":
            ours = recops.l2norm
            _refs(bench, exts, plains, ref_l2norm, peers)
            peers.add(exts, "fla", "l2norm", lambda m: lambda x: m["l2norm"](x, 1e-6))
            nb = {"fwd": 2 * n * es, "bwd": 3 * n * es}
        else:
            ours = recops.rms_norm_rstd
            _refs(bench, exts, plains, ref_rms_norm_rstd, peers)
            nb = {"fwd": n * es, "bwd": 2 * n * es}
        return bench.run(op, shape, dtype_name, args, ours, plains, exts, grad, _fb(nb))
    if op == "rms_norm_gated":
        rows, D, gs = p["rows"], p["D"], p["group_size"]
        rot = jp._rotations(2 * rows * D * es, device)
        w = bench.rand((D,), dtype, gen) + 1
        args = [(bench.rand((rows, D), dtype, gen), bench.rand((rows, D), dtype, gen), w)
                for _ in range(rot)]

        def ours(x, z, w):
            return recops.rms_norm_gated(x, z, w, group_size=gs)

        _refs(bench, exts, plains, lambda x, z, w: ref_rms_norm_gated(x, z, w, gs), peers)
        if gs == 0:
            peers.add(exts, "fla", "rms_norm_gated",
                      lambda m: lambda x, z, w: m["rms_norm_gated"](x, z, w, None, "swish",
                                                                    eps=1e-6))
        else:
            peers.add(exts, "fla", "layernorm_gated.rmsnorm_fn",
                      lambda m: lambda x, z, w: m["rmsnorm_fn"](x, w, None, z=z, eps=1e-6,
                                                                group_size=gs))
        n = rows * D
        return bench.run(op, shape, dtype_name, args, ours, plains, exts, (0, 1, 2),
                         _fb({"fwd": 3 * n * es, "bwd": 5 * n * es}))
    if op == "clipped_swiglu":
        rows, I, il = p["rows"], p["I"], p["interleaved"]
        rot = jp._rotations(2 * rows * I * es, device)
        args = [(bench.rand((rows, 2 * I), dtype, gen) * 10,) for _ in range(rot)]

        def ours(x):
            return recops.clipped_swiglu(x, interleaved=il)

        _refs(bench, exts, plains, lambda x: ref_clipped_swiglu(x, il), peers)
        # Liger's SwiGLU (silu(a) * b, no clip) at equal bytes: reported, not the same function.
        peers.add(exts, "liger", "LigerSiLUMulFunction(equal bytes)",
                  lambda m: lambda x: m["swiglu"].apply(*x.chunk(2, dim=-1)))
        n = rows * I
        return bench.run(op, shape, dtype_name, args, ours, plains, exts, (0,),
                         _fb({"fwd": 3 * n * es, "bwd": 5 * n * es}))
    if op == "sort_chunks_by_idx":
        T, D, C = p["T"], p["D"], p["C"]
        g = torch.Generator().manual_seed(3)
        cuts = torch.sort(torch.randint(0, T + 1, (C - 1,), generator=g)).values
        sizes = torch.diff(torch.cat([torch.tensor([0]), cuts, torch.tensor([T])]))
        idx = torch.randperm(C, generator=g)
        split_list, idx_list = sizes.tolist(), idx.tolist()
        sizes_d, idx_d = sizes.to(device), idx.to(device)
        rot = jp._rotations(T * D * es, device)
        args = [(bench.rand((T, D), dtype, gen), sizes_d, idx_d) for _ in range(rot)]

        def split_cat(x, s, i):
            parts = torch.split(x, split_list)
            return torch.cat([parts[k] for k in idx_list])

        if "eager" in peers.wanted:
            plains["torch_split_cat"] = split_cat
        if "compile" in peers.wanted:
            exts["torch_compile"] = (_compiled(split_cat), True)
        n = T * D
        return bench.run(op, shape, dtype_name, args, recops.sort_chunks_by_idx, plains, exts,
                         (0,), _fb({"fwd": 2 * n * es, "bwd": 2 * n * es}))
    if op == "fused_cross_entropy":
        N, V = p["N"], p["V"]
        rot = jp._rotations(N * V * es, device)
        g = torch.Generator(device=device).manual_seed(5)
        args = [(bench.rand((N, V), dtype, gen) * 8,
                 torch.randint(0, V, (N,), device=device, generator=g)) for _ in range(rot)]
        s = N * V * es
        _refs(bench, exts, plains, ref_ce, peers)
        peers.add(exts, "quack", "cross_entropy",
                  lambda m: lambda x, y: m["ce"](x, y).mean())
        peers.add(exts, "fla", "FusedCrossEntropyLoss", lambda m: m["ce"]())
        recs = bench.run(op, dict(shape, mode="default"), dtype_name, args,
                         recops.fused_cross_entropy, plains, exts, (0,),
                         _fb({"fwd": s, "bwd": 2 * s}))
        # Precompute mode (the gradient written in the forward pass) against Liger, which works
        # the same way (§6); the floor: 2·N·V·s forward, ~0 backward with g = 1.
        exts = {}
        peers.add(exts, "liger", "LigerCrossEntropyFunction",
                  lambda m: lambda x, y: m["ce"].apply(x, y, None, -100, 0.0, 0.0, "mean",
                                                       None, False)[0])

        def ours_pre(x, y):
            return recops.fused_cross_entropy(x, y, precompute_grad=True)

        if not exts:
            return recs
        pre_shape, nb = dict(shape, mode="precompute"), {"fwd": 2 * s, "bwd": 0}
        try:
            ours_pre(*args[0])
        except RuntimeError as e:  # not there yet: Liger against the default mode, said so
            ours_pre, nb = recops.fused_cross_entropy, {"fwd": s, "bwd": 2 * s}
            pre_shape = dict(shape, mode="default", precompute_error=jp._short(e))
        return recs + bench.run(op, pre_shape, dtype_name, args, ours_pre, {}, exts, (0,),
                                _fb(nb))
    if op == "chunk_loss":
        N, D, V = p["N"], p["D"], p["V"]
        g = torch.Generator(device=device).manual_seed(5)
        # One rotation: the inputs (hidden, the LM head) are far larger than L2.
        args = [(bench.rand((N, D), dtype, gen), bench.rand((V, D), dtype, gen) * D**-0.5,
                 torch.randint(0, V, (N,), device=device, generator=g))]
        fl = {"fwd": 2 * N * D * V, "fwd_bwd": 6 * N * D * V}
        # Byte floor: hidden, the weight and the labels read once; the backward writes dh, dW.
        s = (N * D + V * D) * es
        nb = _fb({"fwd": s + N * 8, "bwd": 2 * s + N * 8})
        recs = []
        # (accumulation, ours, Liger's accum_dtype): §6 pairs recops' default (fp32 dW/db) with
        # Liger accum_dtype=float32, and recops accum_dtype=input with Liger's default.
        for acc, ours, liger_acc in (
                ("fp32", lambda h, w, y: recops.chunk_loss(h, w, y), torch.float32),
                ("input", lambda h, w, y: recops.chunk_loss(h, w, y, accum_dtype=h.dtype), None)):
            exts, plains = {}, {}
            if acc == "fp32":
                _refs(bench, exts, plains, ref_lce, peers)
                peers.add(exts, "fla", "FusedLinearCrossEntropyLoss",
                          lambda m: lambda h, w, y: m["flce"]()(h, y, w))
            peers.add(exts, "liger", f"LigerFusedLinearCrossEntropy(accum_dtype={liger_acc})",
                      lambda m, a=liger_acc: lambda h, w, y: m["flce"](h, w, y, accum_dtype=a))
            mem = {"ours": _peak_extra_mib(ours, args[0], (0, 1), device)}
            for name, fn in list(plains.items()) + [(k, f) for k, (f, _) in exts.items()]:
                mem[name] = _peak_extra_mib(fn, args[0], (0, 1), device)
            recs += bench.run(op, dict(shape, accum=acc, peak_extra_mib=mem), dtype_name, args,
                              ours, plains, exts, (0, 1), nb, fl)
        return recs
    if op == "inplace_rope_":
        return _bench_rope(bench, peers, op, p, dtype, dtype_name, gen)
    if op in ("chunk_gated_delta_rule", "chunk_kda"):
        return _bench_delta_rule(bench, peers, op, p, dtype, dtype_name, gen)
    if op == "chunk_local_cumsum":
        dims = p["dims"]
        n = 1
        for d in dims:
            n *= d
        # fp32 gates in and out (GDN keeps its gates in fp32), whatever --dtype says.
        rot = jp._rotations(n * 4, device)
        args = [(bench.rand(dims, torch.float32, gen) - 0.5,) for _ in range(rot)]

        def ours(g):
            return recops.chunk_local_cumsum(g, 64)

        _refs(bench, exts, plains, ref_chunk_local_cumsum, peers)
        peers.add(exts, "fla", "ops.utils.cumsum.chunk_local_cumsum",
                  lambda m: (lambda g: m["cumsum"](g, 64, output_dtype=torch.float32)),
                  module="fla_ops")
        for k in [k for k in exts if k.startswith("fla:")]:
            exts[k] = (exts[k][0], False)  # fla's cumsum has no autograd
        return bench.run(op, dict(shape, dtype_note="fp32 gates"), "fp32", args, ours, plains,
                         exts, (0,), _fb({"fwd": 2 * n * 4, "bwd": 2 * n * 4}))
    if op == "mhc_sinkhorn":
        N, nn = p["tokens"], p["n"]
        rot = jp._rotations(N * nn * nn * 4, device)
        args = [(bench.rand((N, nn, nn), torch.float32, gen) * 4,) for _ in range(rot)]
        _refs(bench, exts, plains, ref_mhc_sinkhorn, peers)
        b = N * nn * nn * 4
        return bench.run(op, shape, "fp32", args, recops.mhc_sinkhorn, plains, exts, (0,),
                         _fb({"fwd": 2 * b, "bwd": 3 * b}))
    if op in ("mhc_pre_bmm", "mhc_post"):
        N, nn, C = p["tokens"], p["n"], p["C"]
        rot = jp._rotations(N * nn * C * es, device)
        X = [bench.rand((N, nn, C), dtype, gen) for _ in range(rot)]
        if op == "mhc_pre_bmm":
            args = [(bench.rand((N, nn), torch.float32, gen), X[i]) for i in range(rot)]

            def ours(h, x):
                return recops.mhc_pre_bmm(h, x, out_dtype=x.dtype)

            _refs(bench, exts, plains, ref_mhc_pre_bmm, peers)
            peers.add(exts, "liger", "LigerMHCPreFunction",
                      lambda m: lambda h, x: m["pre"].apply(x, h), module="liger_mhc")
            # fwd: read X, write y; bwd: read dy and X, write dX (dh_pre is N·n fp32).
            nb = {"fwd": (nn + 1) * C * es * N, "bwd": (2 * nn + 1) * C * es * N}
            return bench.run(op, shape, dtype_name, args, ours, plains, exts, (0, 1), _fb(nb))
        args = [(X[i], bench.rand((N, C), dtype, gen), bench.rand((N, nn), torch.float32, gen),
                 bench.rand((N, nn, nn), torch.float32, gen) / nn) for i in range(rot)]

        def ours(x, y, post, comb):
            return recops.mhc_post(x, y, post, comb, comb_layout="out_in")

        _refs(bench, exts, plains, ref_mhc_post_out_in, peers)
        peers.add(exts, "liger", "LigerMHCPostResFunction",
                  lambda m: lambda x, y, post, comb: m["post"].apply(x, y, post, comb),
                  module="liger_mhc")
        # fwd: read X and y, write out; bwd: read dout, X and y, write dX and dy.
        nb = {"fwd": (2 * nn + 1) * C * es * N, "bwd": (3 * nn + 2) * C * es * N}
        return bench.run(op, shape, dtype_name, args, ours, plains, exts, (0, 1, 2, 3), _fb(nb))
    raise ValueError(op)


def _bench_rope(bench, peers, op, p, dtype, dtype_name, gen):
    """inplace_rope_ forward only (an in-place op: autograd through it needs a non-leaf, so the
    backward, the op inplace_rope_bwd, is the same kernel with inverse=True and is not timed
    apart). Every function rotates x in place; the errors are measured first on copies (the timed
    calls alias x, so the bench's own error column would compare x with itself)."""
    device = bench.device
    dims, R = p["dims"], p["R"]
    B, L = dims[0], dims[1]
    n = 1
    for d in dims:
        n *= d
    es = _es(dtype)
    rot = jp._rotations(n * es, device)
    xs = [bench.rand(dims, dtype, gen) for _ in range(rot)]
    ang = torch.rand((L, R // 2), generator=gen, device=device) * 6.2832
    cos, sin = torch.cos(ang), torch.sin(ang)
    args = [(xs[i], cos, sin) for i in range(rot)]
    plains, exts = {}, {}
    if "eager" in peers.wanted:
        plains["torch_eager"] = lambda x, c, s: ref_rope_(x, c, s, R)
    if "compile" in peers.wanted:
        exts["torch_compile"] = (_compiled(lambda x, c, s: ref_rope_(x, c, s, R)), False)
    peers.add(exts, "fla", "rotary_embedding(interleaved, inplace, slice view)",
              lambda m: lambda x, c, s: m["rotary"](x[..., x.shape[-1] - R:], c, s,
                                                   interleaved=True, inplace=True),
              module="fla_ops")
    for k in list(exts):
        exts[k] = (exts[k][0], False)
    # Errors against ours on copies of x (each function then writes its own copy).
    want = recops.inplace_rope_(xs[0].clone(), cos, sin)
    errs = {}
    for name, fn in list(plains.items()) + [(k, f) for k, (f, _) in exts.items()]:
        try:
            got = fn(xs[0].clone(), cos, sin)
            got = got if got.shape == want.shape else None
            errs[name] = jp.max_err(want, got) if got is not None else math.inf
        except Exception as e:  # the bench records the failure itself
            errs[name] = jp._short(e)
    recs = bench.run(op, dict(p), dtype_name, args, lambda x, c, s: recops.inplace_rope_(x, c, s),
                     plains, exts, (), _fb({"fwd": 2 * B * L * (n // (B * L * dims[-1])) * R * es,
                                            "bwd": 0}))
    for r in recs:
        if r.get("peer") in errs and not isinstance(errs[r["peer"]], str):
            r["max_err_vs_peer"] = errs[r["peer"]]
        r["shape"]["errors_measured_on_copies"] = True
    return recs


def _bench_delta_rule(bench, peers, op, p, dtype, dtype_name, gen):
    """The composed Gated DeltaNet (chunk_gated_delta_rule, training_ops.md §4.4; g [B, T, HV])
    or Kimi Delta Attention (chunk_kda, §4.5; g per channel [B, T, HV, K]) against fla-core's
    op of the same name on the same inputs, forward and forward+backward through autograd (dq,
    dk, dv, dg, dbeta). Inputs follow fla's conditioning (§5): q, k l2-normalised, g =
    logsigmoid(U(0,1)), beta = sigmoid(U(0,1)); varlen (seqs > 1) packs equal sequences into B = 1
    with seq_offsets / cu_seqlens. The eager peer is ref_chunk_delta_rule (chunked, plain PyTorch);
    no compiled one (torch.compile would unroll its chunk loop)."""
    device = bench.device
    B, T, H, HV, K, V = p["B"], p["T"], p["H"], p["HV"], p["K"], p["V"]
    kda = op == "chunk_kda"
    gK = K if kda else 1  # gate values per (position, value head)
    seqs = p.get("seqs", 0)
    offsets = None
    if seqs:
        offsets = torch.linspace(0, T, seqs + 1, device=device).round().to(torch.int64)
    rot = jp._rotations(B * T * (2 * H * K + HV * V + 4 * HV * gK) * _es(dtype), device)
    args = []
    for _ in range(rot):
        q = F.normalize(bench.rand((B, T, H, K), torch.float32, gen), dim=-1).to(dtype)
        k = F.normalize(bench.rand((B, T, H, K), torch.float32, gen), dim=-1).to(dtype)
        v = bench.rand((B, T, HV, V), dtype, gen)
        gshape = (B, T, HV, K) if kda else (B, T, HV)
        g = F.logsigmoid(torch.rand(gshape, generator=gen, device=device))
        beta = torch.sigmoid(torch.rand((B, T, HV), generator=gen, device=device)).to(dtype)
        args.append((q, k, v, g, beta))

    fn = recops.chunk_kda if kda else recops.chunk_gated_delta_rule

    def ours(q, k, v, g, beta):
        return fn(q, k, v, g, beta, seq_offsets=offsets)[0]

    plains, exts = {}, {}
    if "eager" in peers.wanted:  # compile would unroll the chunk loop: eager only
        plains["torch_eager"] = lambda q, k, v, g, beta: ref_chunk_delta_rule(q, k, v, g, beta,
                                                                              offsets)
    key, path = ("kda", "ops.kda.chunk_kda") if kda else (
        "gdn", "ops.gated_delta_rule.chunk_gated_delta_rule")
    peers.add(exts, "fla", path,
              lambda m: (lambda q, k, v, g, beta: m[key](q, k, v, g, beta,
                                                       cu_seqlens=offsets)[0]),
              module="fla_" + key)
    es = _es(dtype)
    # Bytes: the inputs read (g fp32) and o written (fwd); do read and the five gradients
    # written (bwd).
    io = B * T * (2 * H * K + 2 * HV * V) * es + B * T * HV * (4 * gK + es)
    # FLOPs of the chunked algorithm per (position, value head), BT = 64. GDN: kkt and solve
    # 2·64·K, w and u 2·64·(K + V), the state 4·K·V (v_new and the update), o 2·K·V + 2·64·(K + V).
    # KDA: Aqk and Akk 4·64·K, the inverse and w, u 2·64·(K + V), the state 4·K·V, o 2·K·V +
    # 2·64·V.
    if kda:
        fwd_fl = B * T * HV * (4 * 64 * K + 2 * 64 * (K + V) + 6 * K * V + 2 * 64 * V)
    else:
        fwd_fl = B * T * HV * (2 * 64 * K + 2 * 64 * (K + V) + 6 * K * V + 2 * 64 * (K + V))
    return bench.run(op, dict(p), dtype_name, args, ours, plains, exts, (0, 1, 2, 3, 4),
                     _fb({"fwd": io, "bwd": io + B * T * HV * V * es}),
                     {"fwd": fwd_fl, "fwd_bwd": 3 * fwd_fl})


def _fb(nb):
    return {"fwd": nb["fwd"], "fwd_bwd": nb["fwd"] + nb["bwd"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", choices=["cpu", "cuda"],
                    default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--quick", action="store_true", help="small shapes (a smoke test)")
    ap.add_argument("--ops", help="comma-separated op names (default all: " + ",".join(ALL_OPS) + ")")
    ap.add_argument("--peers", default=",".join(ALL_PEERS),
                    help="comma-separated peers to time (default all: " + ",".join(ALL_PEERS) + ")")
    ap.add_argument("--phases", default="fwd,fwd_bwd",
                    help="fwd and/or fwd_bwd (forward+backward through autograd), comma-separated")
    ap.add_argument("--dtype", default=None, choices=sorted(jp.DTYPES),
                    help="default bf16 on CUDA, fp32 on the CPU")
    ap.add_argument("--json", help="write the records here (default bench/results/<device>/...)")
    ap.add_argument("--budget", type=float, default=None, help="seconds of timing per function")
    ap.add_argument("--peers-dir", default=str(ROOT / ".peers" / "training"),
                    help="unpacked liger-kernel / fla-core wheels (scripts/prepare_peers.sh)")
    args = ap.parse_args(argv)

    device = jp.start_device(ap, args.device)
    ops = args.ops.split(",") if args.ops else ALL_OPS
    bad = [o for o in ops if o not in ALL_OPS]
    if bad:
        ap.error(f"unknown ops {bad}")
    wanted = [w for w in args.peers.split(",") if w]
    bad = [w for w in wanted if w not in ALL_PEERS]
    if bad:
        ap.error(f"unknown peers {bad} (known: {ALL_PEERS})")
    phases = jp.parse_phases(ap, args.phases)
    dtype_name = args.dtype or ("fp32" if device == "cpu" else "bf16")
    quick_cpu = args.quick and device == "cpu"
    budget = args.budget if args.budget is not None else (
        0.02 if quick_cpu else 0.3 if device == "cuda" else 0.6)
    timer = jp.Timer(device, min_runs=3 if quick_cpu else 20 if device == "cuda" else 5,
                     budget_s=budget)

    if quick_cpu:  # a small copy for the ceiling: the smoke test stays within seconds
        n = 64 * 2**20
        src = torch.empty(n, dtype=torch.uint8).random_(0, 255)
        dst = torch.empty_like(src)
        ceilings = {"copy_gbps": 2 * n / timer(lambda i: dst.copy_(src)) / 1e6,
                    "bf16_matmul_tflops": None}
        del src, dst
    else:
        ceilings = jp.measure_ceilings(device, timer)
    now = datetime.datetime.now(datetime.timezone.utc)
    common = {"impl": "recops", "backend": device, "device": jp.device_name(device),
              "commit": jp.commit(), "date": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
    peers = Peers(wanted, args.peers_dir)
    bench = jp.Bench(device, timer, ceilings, None, None, common, phases)
    table = QUICK if args.quick else CPU_SHAPES if device == "cpu" else SHAPES
    records = []
    for op in ops:
        for sid, p in table[op]:
            bench.sid = sid
            recs = bench_op(bench, peers, op, sid, p, dtype_name)
            for r in recs:
                r["shape"]["id"] = sid
            records += recs
            jp._print(recs)
            # After every op and shape: a run stopped by its time limit keeps what it measured.
            jp.write_records(records, "training_peers", args.json, common, now, ceilings)

    jp.write_records(records, "training_peers", args.json, common, now, ceilings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
