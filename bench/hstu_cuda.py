#!/usr/bin/env python3
"""HSTU attention on the GPU (issue 4): one run that re-measures the two ceilings (copy GB/s,
bf16 matmul TFLOP/s), times recops' forward, backward and forward+backward and plain PyTorch
(padded, materialised scores) on the same inputs, checks the outputs against each other, and
writes JSON records in the performance.md format.

FLOP convention (hstu_attention.md §6): only valid (unmasked) score entries count;
forward = 2 (d + dv) per valid entry per head, backward = 2.5 x forward, fwd_bwd = 3.5 x forward.

Meta's Triton HSTU kernel (generative-recommenders, `triton_hstu_mha`) is the peer 'meta_triton'
when its sources are present (default `.peers/generative-recommenders`, ignored by git and never
committed; `--meta-dir` names another folder, `--no-meta` skips it). It runs in a worker process
on the same inputs (saved to a temporary file), because an illegal memory access poisons the CUDA
context: a crash is recorded (`peer_error`) and the worker restarted for the next case. Meta's
autotuner is restricted to a few configurations (`--meta-configs small`, the default, recorded in
each record as `peer_configs`) to bound the device time; `--meta-configs full` keeps its list.
Mask mapping: Meta's N = max_len (its 1/N is our default silu_scale 1/Sq), alpha = 1/sqrt(d), its
causal mask with targets matches ours (group size 1), contextual_seq_len = our per-sequence
contexts when every sequence has them.

    python3 bench/hstu_cuda.py --json out.json [--quick] [--meta-dir DIR | --no-meta]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
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
    if kind.startswith("range:"):  # "range:LO:HI": B lengths uniform in [LO, HI] (issue 19's rows)
        lo, hi = (int(x) for x in kind.split(":")[1:])
        return [int(x) for x in torch.randint(lo, hi + 1, (B,), generator=gen)]
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


# ---- Meta's Triton kernel (peer 'meta_triton'), run in a worker process -----------------------

# (BLOCK_M, BLOCK_N, num_warps, num_stages) kept from Meta's lists by --meta-configs small: the
# usual winners for d = 128 on Hopper-class parts; each one costs a Triton compile per mask variant.
META_SMALL_FWD = [(128, 64, 8, 2), (64, 64, 4, 2), (128, 32, 4, 4)]
META_SMALL_BWD = [(64, 64, 8, 2), (32, 128, 8, 2), (64, 64, 4, 2)]


def meta_import(meta_dir, configs):
    """Imports Meta's triton_hstu_mha from meta_dir; restricts its autotuners when configs is
    'small'. Returns (mha, description of the configurations)."""
    sys.path.insert(0, meta_dir)
    import triton.language as tl

    # Triton >= 3.4 dropped the experimental TMA names that Meta's kernel references in its
    # enable_tma branches (never taken here: enable_tma=False); its JIT still resolves every
    # name it references, so they get stand-ins that are never called.
    shims = [n for n in ("_experimental_descriptor_load", "_experimental_descriptor_store")
             if not hasattr(tl, n)]
    for n in shims:
        setattr(tl, n, tl.load if n.endswith("load") else tl.store)
    from generative_recommenders.ops.triton import triton_hstu_attention as m

    desc = "meta autotune: full list"
    if configs == "small":

        def keep(tuner, allowed):
            sel = [c for c in tuner.configs
                   if (c.kwargs.get("BLOCK_M"), c.kwargs.get("BLOCK_N"), c.num_warps, c.num_stages)
                   in allowed and not c.kwargs.get("SEQUENCE_PARALLEL", False)
                   and c.kwargs.get("UNROLL", 1) == 1]
            if sel:
                tuner.configs = sel
            return len(tuner.configs)

        nf = keep(m._hstu_attn_fwd, META_SMALL_FWD)
        nb = keep(m._hstu_attn_bwd, META_SMALL_BWD)
        desc = f"meta autotune restricted: fwd {nf} configs {META_SMALL_FWD}, bwd {nb} {META_SMALL_BWD}"
    if shims:
        desc += f"; unused-name shims for Triton {triton_version()}: {shims}"
    return m.triton_hstu_mha, desc


def triton_version():
    import triton

    return triton.__version__


def _why(e):
    """The exception and its cause, first lines (Triton's compile errors put the reason last)."""
    parts = [f"{type(e).__name__}: {str(e)[-300:]}"]
    if e.__cause__ is not None:
        parts.append(f"cause {type(e.__cause__).__name__}: {str(e.__cause__)[:300]}")
    return " | ".join(parts)


def meta_worker(meta_dir, configs):
    """Reads case paths from stdin; per case prints 'RESULT {json}' after the forward and after
    forward+backward, saving Meta's outputs next to the case file."""
    try:
        mha, desc = meta_import(meta_dir, configs)
    except Exception as e:
        print("RESULT " + json.dumps({"phase": "import", "error": _why(e)}), flush=True)
        return 1
    print("RESULT " + json.dumps({"phase": "ready", "configs": desc}), flush=True)
    for line in sys.stdin:
        path = line.strip()
        if not path:
            continue
        c = torch.load(path)
        q, k, v, dout, off = (c[n].to(DEV) for n in ("q", "k", "v", "dout", "off"))
        nt = c["num_targets"].to(DEV) if c["num_targets"] is not None else None
        args = dict(N=c["N"], alpha=c["alpha"], seq_offsets=off, num_targets=nt,
                    contextual_seq_len=c["contextual_seq_len"])
        try:
            fwd = lambda: mha(q=q, k=k, v=v, **args)  # noqa: E731
            out = fwd()
            torch.cuda.synchronize()
            t_f = timeit(fwd)
            torch.save({"out": out.cpu()}, path + ".fwd.pt")
            print("RESULT " + json.dumps({"phase": "fwd", "ms": t_f}), flush=True)
        except Exception as e:
            print("RESULT " + json.dumps({"phase": "fwd", "error": _why(e)}), flush=True)
            continue
        try:
            qg, kg, vg = (x.detach().clone().requires_grad_(True) for x in (q, k, v))

            def fb():
                qg.grad = kg.grad = vg.grad = None  # as zero_grad(set_to_none=True): no accumulation
                mha(q=qg, k=kg, v=vg, **args).backward(dout)

            fb()
            torch.cuda.synchronize()
            grads = [x.grad.cpu() for x in (qg, kg, vg)]
            t_fb = timeit(fb)
            torch.save({"dq": grads[0], "dk": grads[1], "dv": grads[2]}, path + ".bwd.pt")
            print("RESULT " + json.dumps({"phase": "fwd_bwd", "ms": t_fb}), flush=True)
        except Exception as e:
            print("RESULT " + json.dumps({"phase": "fwd_bwd", "error": _why(e)}), flush=True)
    return 0


class MetaPeer:
    """The parent's handle on the worker: run(case) -> {"fwd": ms or error, "fwd_bwd": ...}; a
    worker that dies (e.g. an illegal memory access) is recorded and restarted next time."""

    def __init__(self, meta_dir, configs):
        self.meta_dir, self.configs, self.proc, self.desc = meta_dir, configs, None, None
        self.tmp = tempfile.mkdtemp(prefix="hstu_meta_")

    def _start(self):
        cmd = [sys.executable, os.path.abspath(__file__), "--meta-worker", "--meta-dir",
               self.meta_dir, "--meta-configs", self.configs, "--json", "-"]
        self.errlog = open(os.path.join(self.tmp, "worker.err"), "a+")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errlog, text=True, bufsize=1)
        r = self._read()
        if r is None or r.get("phase") != "ready":
            raise RuntimeError(f"meta worker failed to start: {r} {self._err_tail()}")
        self.desc = r["configs"]

    def _read(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            if line.startswith("RESULT "):
                return json.loads(line[7:])

    def _err_tail(self):
        self.errlog.flush()
        self.errlog.seek(0)
        return self.errlog.read()[-600:]

    def run(self, case, timeout_note=""):
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        path = os.path.join(self.tmp, "case.pt")
        torch.save(case, path)
        self.proc.stdin.write(path + "\n")
        self.proc.stdin.flush()
        res = {"path": path}
        for phase in ("fwd", "fwd_bwd"):
            r = self._read()
            if r is None:  # the worker died: a crash (its stderr says why)
                self.proc.wait()
                res[phase] = {"error": f"worker died (exit {self.proc.returncode}): "
                                       + self._err_tail()[-400:]}
                self.proc = None
                break
            res[phase] = r
            if phase == "fwd" and "error" in r:
                break
        return res

    def close(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)


def _cmp(ours, theirs):
    """(max abs difference, that over max |theirs|)."""
    a, b = ours.float().cpu(), theirs.float().cpu()
    m = float((a - b).abs().max())
    return m, m / max(float(b.abs().max()), 1e-30)


def meta_records(peer, rec, sh, q, k, v, dout, off, kw, max_len, alpha, contexts, out, ours_g,
                 t_fwd, t_bwd, t_fb, fwd_flops):
    """Times Meta's kernel on our inputs (worker process) and adds the meta_triton records."""
    ncx = sh["contexts"]
    if ncx and min(contexts) != ncx:
        print("    meta_triton: skipped (its contextual_seq_len is one number for all sequences)")
        return
    case = {"q": q.cpu(), "k": k.cpu(), "v": v.cpu(), "dout": dout.cpu(), "off": off.cpu(),
            "num_targets": kw["num_targets"].cpu() if "num_targets" in kw else None,
            "N": max_len, "alpha": alpha, "contextual_seq_len": ncx}
    try:
        res = peer.run(case)
    except Exception:
        res = {"fwd": {"error": traceback.format_exc()[-400:]}}
    extra = {"peer_configs": peer.desc}
    f = res.get("fwd", {"error": "not run"})
    if "ms" in f:
        mo = torch.load(res["path"] + ".fwd.pt")["out"]
        e_abs, e_rel = _cmp(out, mo)
        rec("fwd", t_fwd, fwd_flops, "meta_triton", f["ms"], e_abs,
            dict(extra, rel_err_vs_peer=e_rel, peer_tflops=fwd_flops / f["ms"] / 1e9))
        print(f"    meta_triton fwd {f['ms']:.3f} ms ({fwd_flops / f['ms'] / 1e9:.1f} TFLOP/s), "
              f"ours/meta speedup {f['ms'] / t_fwd:.2f}x, max|ours-meta| {e_abs:.3g} (rel {e_rel:.3g})")
    else:
        rec("fwd", t_fwd, fwd_flops, "meta_triton", None, None, dict(extra, peer_error=f["error"]))
        print(f"    meta_triton fwd FAILED: {f['error'][-300:]}")
        return
    fb = res.get("fwd_bwd", {"error": "not run"})
    if "ms" in fb:
        mg = torch.load(res["path"] + ".bwd.pt")
        errs = {n: _cmp(o, mg[n]) for n, o in zip(("dq", "dk", "dv"), ours_g)}
        e_abs = max(e[0] for e in errs.values())
        rel = {n: e[1] for n, e in errs.items()}
        t_mb = max(fb["ms"] - f["ms"], 1e-6)
        rec("bwd", t_bwd, 2.5 * fwd_flops, "meta_triton", t_mb, e_abs,
            dict(extra, rel_err_vs_peer=rel, peer_tflops=2.5 * fwd_flops / t_mb / 1e9))
        rec("fwd_bwd", t_fb, 3.5 * fwd_flops, "meta_triton", fb["ms"], e_abs,
            dict(extra, rel_err_vs_peer=rel, peer_tflops=3.5 * fwd_flops / fb["ms"] / 1e9))
        print(f"    meta_triton fwd+bwd {fb['ms']:.3f} ms ({3.5 * fwd_flops / fb['ms'] / 1e9:.1f}), "
              f"ours/meta {fb['ms'] / t_fb:.2f}x; bwd {t_mb:.3f} ms, ours/meta {t_mb / t_bwd:.2f}x; "
              f"rel err dq/dk/dv {rel}")
    else:
        for ph, t, fl in (("bwd", t_bwd, 2.5), ("fwd_bwd", t_fb, 3.5)):
            rec(ph, t, fl * fwd_flops, "meta_triton", None, None, dict(extra, peer_error=fb["error"]))
        print(f"    meta_triton fwd+bwd FAILED (recorded): {fb['error'][-300:]}")


def bench_shape(sh, gen, ceil, meta, with_plain, peer_arg=None):
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
    # The forward's byte floor: q, k, v read and o written once (bf16), the offsets and counts.
    fwd_bytes = total * H * (2 * d + 2 * dv) * 2 + 8 * (Bn + 1) * (1 + bool(nt) + bool(ncx))
    shape = dict(sh, B=Bn, S=max_len, Hk=H, total_tokens=total, fwd_bytes=fwd_bytes)
    recs = []

    # The implementations the entry picks here (these shapes have no rab, mask tensor or paged
    # KV): on a 9.0 device cuda_sm90, forward for d = dv in {64, 128, 256}, backward for
    # d = dv in {64, 128}; elsewhere cuda_sm80_fa for d, dv <= 128 and cuda_sm80 the rest.
    fa = "cuda_sm80_fa" if max(d, dv) <= 128 else "cuda_sm80"
    hopper = torch.cuda.get_device_capability() == (9, 0)
    fwd_impl = "cuda_sm90" if hopper and d == dv and d in (64, 128, 256) else fa
    bwd_impl = "cuda_sm90" if hopper and d == dv and d in (64, 128) else fa
    impls = {"fwd": fwd_impl, "bwd": bwd_impl,
             "fwd_bwd": fwd_impl if fwd_impl == bwd_impl else f"{fwd_impl}+{bwd_impl}"}

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
            "gbps": (fwd_bytes / ms / 1e6) if (ms and phase == "fwd") else None,
            "frac_flops_ceiling": (flops / ms / 1e9 / ceil["bf16_matmul_tflops"]) if ms else None,
            "frac_bw_ceiling": (fwd_bytes / ms / 1e6 / ceil["copy_gbps"])
            if (ms and phase == "fwd") else None,
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
        # Gradients set to None first (zero_grad(set_to_none=True), as a training step does): the
        # time is the op's, without three gradient-accumulation adds (Meta's fb does the same).
        qg.grad = kg.grad = vg.grad = None
        o = recops.hstu_attn(qg, kg, vg, off, off, max_len, max_len, **kw)
        o.backward(dout)

    t_fb = timeit(fb)
    t_bwd = max(t_fb - t_fwd, 1e-6)
    qg.grad = kg.grad = vg.grad = None
    fb()  # one clean backward for the comparisons
    ours_g = [x.grad.detach() for x in (qg, kg, vg)]
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
    if peer_obj := peer_arg:
        meta_records(peer_obj, rec, sh, q, k, v, dout, off, kw, max_len, alpha, contexts, out,
                     ours_g, t_fwd, t_bwd, t_fb, fwd_flops)
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
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--meta-dir", default=os.path.join(here, "..", ".peers", "generative-recommenders"),
                    help="folder holding Meta's generative_recommenders package (peer meta_triton)")
    ap.add_argument("--no-meta", action="store_true")
    ap.add_argument("--meta-configs", choices=("small", "full"), default="small")
    ap.add_argument("--meta-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--shapes", default="", help="comma-separated indices into the shape list")
    a = ap.parse_args()
    if a.meta_worker:
        return meta_worker(a.meta_dir, a.meta_configs)
    peer = None
    if not a.no_meta and os.path.isdir(os.path.join(a.meta_dir, "generative_recommenders")):
        peer = MetaPeer(os.path.abspath(a.meta_dir), a.meta_configs)
        print(f"meta_triton: {a.meta_dir} ({a.meta_configs} autotune list)")
    else:
        print("meta_triton: not present (or --no-meta), peer skipped")
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
        # Skewed jagged batch like the one on which Meta's forward+backward crashed in the issue's
        # measurement (B=128, lengths 128-2048), with and without targets.
        dict(base, B=128, S=1024, lengths="skewed", targets=64),
        dict(base, B=128, S=1024, lengths="skewed"),
        dict(base, B=16, S=8192, targets=256),
        dict(base, B=8, S=16384, targets=256),
        dict(base, targets=256, contexts=32),
        # Issue 19's rows: lengths uniform in 256-2048 at B = 128 (goal: >= 85% of the full-length
        # TFLOP/s), and the short batch B = 1024, lengths 50-200, H = 2, d = 64 (goal: forward
        # within 2x of its byte floor; the records carry gbps and frac_bw_ceiling).
        dict(base, B=128, S=2048, lengths="range:256:2048"),
        dict(base, B=1024, S=200, H=2, d=64, dv=64, lengths="range:50:200"),
    ]
    if a.quick:
        shapes = shapes[:3]
    if a.shapes:
        shapes = [shapes[int(i)] for i in a.shapes.split(",")]
    gen = torch.Generator().manual_seed(0)
    recs = []
    for i, sh in enumerate(shapes):
        try:
            recs += bench_shape(sh, gen, ceil, meta, with_plain=sh["S"] <= 4096 and i < 4,
                                peer_arg=peer)
        except Exception:  # one shape failing must not lose the others
            traceback.print_exc()
            recs.append(dict(meta, op="hstu_attn", shape=sh, error=traceback.format_exc()[-400:]))
        torch.cuda.empty_cache()
        with open(a.json, "w") as f:
            json.dump(recs, f, indent=1)
    if peer is not None:
        peer.close()
    print(f"wrote {len(recs)} records to {a.json}")


if __name__ == "__main__":
    sys.exit(main())
