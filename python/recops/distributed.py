"""HSTU attention with context parallelism over ``torch.distributed`` (issue 22).

Each jagged sequence of length ``L`` is cut into ``2·W`` chunks (``W`` the group's size; chunk
``j`` is tokens ``[j·L // 2W, (j+1)·L // 2W)``); rank ``r`` holds chunks ``r`` and ``2W−1−r``
(DualChunkSwap), so under a causal mask every rank gets about the same number of valid scores.

    q_l, meta = cp_shard(q, seq_offsets)          # this rank's tokens of every sequence
    k_l = meta.shard(k); v_l = meta.shard(v)      # (or cp_shard(k, seq_offsets)[0])
    out_l = hstu_attn_cp(q_l, k_l, v_l, meta, num_targets=nt, target_group_size=2)
    out = cp_unshard(out_l, meta)                 # the whole output on every rank

``hstu_attn_cp`` runs a ring: at step ``t`` a rank attends its queries to the K/V of rank
``(r − t) mod W`` while the next K/V arrive (batched isend/irecv; on CUDA the NCCL transfers run
on NCCL's stream, concurrent with the kernel on the current stream). HSTU has no softmax
normaliser, so the output is the plain sum of the partial outputs over the key chunks, provided
every partial uses the global normaliser: ``silu_scale`` defaults to ``1 / max_seq_len`` of the
whole batch (as in ``recops.hstu_attn``), never of a chunk. The backward runs the ring again:
dQ stays, dK/dV accumulators (fp32) travel with the K/V and end at their owner.

Masks: the plain causal mask runs per (query chunk, key chunk) pair on the op's own causal /
none masks (``_ChunkCalls``; every kernel takes them). Otherwise each (this rank's queries, rank
s's keys) call gets the exact global mask of spec §3 as a ``func`` interval mask (at most two
intervals per query row globally, four in the call's key index: ``nfunc = 9``) built from global
positions; a custom ``mask`` and ``rab`` are gathered from the
global ``[B, H, S, S]`` tensors at the call's (row, column) positions. Not supported: ``func``,
a paged cache and delta-q (different query and key offsets), which the ring does not define.

``rab``'s gradient on a rank holds that rank's query rows only; summed over the group (the
gradient all-reduce of a replicated tensor) it is the single-process gradient. ``cp_unshard`` is
not differentiable (take the loss on the local outputs).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional, Sequence, Tuple

import torch
import torch.distributed as dist

__all__ = ["CPMeta", "cp_shard", "cp_unshard", "hstu_attn_cp"]

_MASK_TYPES = {"causal": 0, "anti_causal": 1, "none": 2, "custom": 3}
_NFUNC = 9

# When a list, hstu_attn_cp appends (compute_done, comm_done) CUDA event pairs per ring step
# (bench/hstu_cp.py measures the exposed communication time with them).
_timing_events: Optional[list] = None


def _group_info(group) -> Tuple[int, int]:
    if not dist.is_available() or not dist.is_initialized():
        return 1, 0
    return dist.get_world_size(group), dist.get_rank(group)


def _global_rank(group, r: int) -> int:
    if group is None:
        return r
    return dist.get_global_rank(group, r)


@dataclasses.dataclass
class _Part:
    """One rank's share: its tokens in order (chunk r of every sequence then chunk 2W−1−r,
    sequence by sequence), all index tensors int64 on the CPU."""

    lens: torch.Tensor  # [B] tokens of each sequence on this rank
    offsets: torch.Tensor  # [B+1] local jagged offsets
    index: torch.Tensor  # [n] global token index of each local token
    seq: torch.Tensor  # [n] sequence of each local token
    pos: torch.Tensor  # [n] position within its sequence
    first_len: torch.Tensor  # [B] length of the first of the two chunks


class CPMeta:
    """How a jagged batch is split over a context-parallel group (from ``cp_shard``).

    Attributes: ``world``, ``rank``, ``offsets`` (global ``[B+1]`` int64, CPU), ``lengths``,
    ``bounds`` (``[B, 2W+1]`` chunk starts within each sequence), ``max_seq_len`` (longest
    sequence), ``counts`` (tokens held by each rank)."""

    def __init__(self, seq_offsets: torch.Tensor, world: int, rank: int):
        off = seq_offsets.detach().to("cpu", torch.int64)
        if off.dim() != 1 or off.numel() < 1:
            raise ValueError(f"cp_shard: seq_offsets must be [B+1], got shape {list(off.shape)}")
        lengths = off[1:] - off[:-1]
        if int(off[0]) != 0 or bool((lengths < 0).any()):
            raise ValueError("cp_shard: seq_offsets must start at 0 and be non-decreasing")
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"cp_shard: rank {rank} not in a group of {world}")
        self.world, self.rank = world, rank
        self.offsets, self.lengths = off, lengths
        self.B = lengths.numel()
        n = 2 * world
        j = torch.arange(n + 1, dtype=torch.int64)
        self.bounds = (lengths[:, None] * j[None, :]) // n  # 64-bit index math
        self.max_seq_len = int(lengths.max()) if self.B else 0
        self._parts = {}
        self._dev = {}
        self.counts = [int(self.part(s).index.numel()) for s in range(world)]

    def chunks(self, s: int) -> Tuple[int, int]:
        return s, 2 * self.world - 1 - s

    def part(self, s: int) -> _Part:
        if s not in self._parts:
            c0, c1 = self.chunks(s)
            a0, a1 = self.bounds[:, c0], self.bounds[:, c0 + 1]
            b0, b1 = self.bounds[:, c1], self.bounds[:, c1 + 1]
            first = a1 - a0
            lens = first + (b1 - b0)
            loff = torch.zeros(self.B + 1, dtype=torch.int64)
            torch.cumsum(lens, 0, out=loff[1:])
            n = int(loff[-1])
            seq = torch.repeat_interleave(torch.arange(self.B), lens, output_size=n)
            j = torch.arange(n, dtype=torch.int64) - loff[:-1][seq]  # index within the share
            in_first = j < first[seq]
            pos = torch.where(in_first, a0[seq] + j, b0[seq] + j - first[seq])
            self._parts[s] = _Part(lens, loff, self.offsets[:-1][seq] + pos, seq, pos, first)
        return self._parts[s]

    def chunk_rows(self, s: int, which: int) -> Tuple[torch.Tensor, torch.Tensor]:
        """Rows of rank s's share that hold its first (0) or second (1) chunk of every
        sequence, and those chunks' lengths [B]."""
        p = self.part(s)
        j = torch.arange(p.seq.numel(), dtype=torch.int64) - p.offsets[:-1][p.seq]
        sel = (j < p.first_len[p.seq]) if which == 0 else (j >= p.first_len[p.seq])
        return torch.nonzero(sel).flatten(), p.first_len if which == 0 else p.lens - p.first_len

    def _on(self, name: str, t: torch.Tensor, device) -> torch.Tensor:
        key = (name, str(device))
        if key not in self._dev:
            self._dev[key] = t.to(device)
        return self._dev[key]

    def shard(self, x: torch.Tensor) -> torch.Tensor:
        """This rank's rows of a global jagged tensor ``[total, ...]`` (tokens or per-token data)."""
        total = int(self.offsets[-1])
        if x.dim() < 1 or x.shape[0] != total:
            raise ValueError(
                f"cp_shard: x must have seq_offsets[-1] = {total} rows, got shape {list(x.shape)}")
        return x.index_select(0, self._on(f"index{self.rank}", self.part(self.rank).index,
                                          x.device))


def cp_shard(x: torch.Tensor, seq_offsets: torch.Tensor, group=None) -> Tuple[torch.Tensor, CPMeta]:
    """This rank's chunks of every sequence of the jagged ``x [total, ...]`` and the split's
    ``CPMeta``. Reads ``seq_offsets`` on the host (one synchronisation for CUDA offsets)."""
    world, rank = _group_info(group)
    meta = CPMeta(seq_offsets, world, rank)
    return meta.shard(x), meta


def cp_unshard(out_local: torch.Tensor, meta: CPMeta, group=None) -> torch.Tensor:
    """Gathers every rank's rows into the global jagged tensor ``[total, ...]`` (all-gather;
    every rank gets the whole). Not differentiable."""
    _check_group(meta, group, "cp_unshard")
    _check_rows("out_local", out_local, meta.counts[meta.rank], "cp_unshard")
    total = int(meta.offsets[-1])
    out = out_local.new_empty((total,) + tuple(out_local.shape[1:]))
    if meta.world == 1:
        return out.index_copy_(0, meta._on("index0", meta.part(0).index, out.device),
                               out_local.detach())
    width = max(meta.counts)
    pad = out_local.new_zeros((width,) + tuple(out_local.shape[1:]))
    pad[: out_local.shape[0]] = out_local.detach()
    bufs = [torch.empty_like(pad) for _ in range(meta.world)]
    dist.all_gather(bufs, pad, group=group)
    for s in range(meta.world):
        idx = meta._on(f"index{s}", meta.part(s).index, out.device)
        out.index_copy_(0, idx, bufs[s][: meta.counts[s]])
    return out


def _check_group(meta: CPMeta, group, who: str):
    world, rank = _group_info(group)
    if (world, rank) != (meta.world, meta.rank):
        raise ValueError(f"{who}: meta was made for rank {meta.rank} of {meta.world}, but the "
                         f"group has rank {rank} of {world}")


def _check_rows(name: str, t: torch.Tensor, n: int, who: str):
    if t.dim() < 1 or t.shape[0] != n:
        raise ValueError(f"{who}: {name} must have this rank's {n} rows (cp_shard), "
                         f"got shape {list(t.shape)}")


def _ring(send: Sequence[torch.Tensor], recv_like: Sequence[Tuple[tuple, torch.dtype]], group,
          meta: CPMeta, tag: int):
    """Sends ``send`` to the next rank and receives tensors of the given shapes from the previous
    one; returns (buffers, requests). Empty tensors are not sent (both sides know the sizes)."""
    nxt = _global_rank(group, (meta.rank + 1) % meta.world)
    prv = _global_rank(group, (meta.rank - 1) % meta.world)
    device = send[0].device
    bufs = [torch.empty(shape, dtype=dt, device=device) for shape, dt in recv_like]
    sent = [t.contiguous() for t in send if t.numel()]
    ops = [dist.P2POp(dist.isend, t, nxt, group, tag) for t in sent]
    ops += [dist.P2POp(dist.irecv, b, prv, group, tag) for b in bufs if b.numel()]
    reqs = dist.batch_isend_irecv(ops) if ops else []
    # The sent tensors stay referenced until the requests are waited for.
    return bufs, (reqs, sent)


def _wait(pending):
    """Waits for a ``_ring``'s requests (on CUDA: the current stream waits for NCCL's). With
    timing on (``_timing_events`` a list), records the GPU time the stream stood still."""
    reqs = pending[0] if pending else []
    if not reqs:
        return
    ev = _event_pair()
    for q in reqs:
        q.wait()
    _event_done(ev)


@dataclasses.dataclass
class _Opts:
    nc: Optional[torch.Tensor]
    nt: Optional[torch.Tensor]
    group_size: int
    left: int
    right: int
    mask: Optional[torch.Tensor]
    rab: Optional[torch.Tensor]
    alpha: float
    silu_scale: Optional[float]
    attn_scale: Optional[torch.Tensor]  # this rank's rows
    plain_causal: bool = False  # whole-chunk masks: _ChunkCalls


class _Call:
    """The jagged problem "this rank's queries × the keys of rank s": key sequences padded to
    at least the query length (the op needs Lq <= Lk), the global mask as func intervals or a
    gathered custom mask, and rab gathered at the same positions."""

    def __init__(self, meta: CPMeta, s: int, o: _Opts, device):
        pr, ps = meta.part(meta.rank), meta.part(s)
        lk = torch.maximum(ps.lens, pr.lens)
        koff = torch.zeros(meta.B + 1, dtype=torch.int64)
        torch.cumsum(lk, 0, out=koff[1:])
        self.identity = bool(torch.equal(lk, ps.lens))
        dst = koff[:-1][ps.seq] + (torch.arange(ps.seq.numel()) - ps.offsets[:-1][ps.seq])
        on = lambda name, t: meta._on(f"{name}{meta.rank},{s}", t, device)  # noqa: E731
        self.total_k = int(koff[-1])
        self.key_dst = on("kdst", dst)
        self.off_q = on("offq", pr.offsets)
        self.off_k = on("offk", koff)
        self.max_q = int(pr.lens.max()) if meta.B else 0
        self.max_k = int(lk.max()) if meta.B else 0
        self.func = self.mask = self.rab = None
        if o.mask is not None or o.rab is not None:
            # [B, max_q] / [B, max_k] global positions, -1 past the sequence.
            qpos = self._padded(pr, self.max_q)
            kpos = self._padded(ps, self.max_k)
            self.qpos, self.kpos = on("qpos", qpos), on("kpos", kpos)
            self.valid = (self.qpos[:, :, None] >= 0) & (self.kpos[:, None, :] >= 0)
        if o.mask is not None:
            self.mask = self._gather(o.mask) & self.valid[:, None]
        else:
            self.func = self._intervals(meta, s, o, device)
        if o.rab is not None:
            self.rab = self._gather(o.rab)

    @staticmethod
    def _padded(p: _Part, width: int) -> torch.Tensor:
        out = torch.full((p.lens.numel(), width), -1, dtype=torch.int64)
        j = torch.arange(p.seq.numel()) - p.offsets[:-1][p.seq]
        out[p.seq, j] = p.pos
        return out

    def _gather(self, g: torch.Tensor) -> torch.Tensor:
        """``g[b, h, qpos, kpos]`` as ``[B, H, max_q, max_k]`` (padding reads position 0)."""
        b = torch.arange(g.shape[0], device=g.device)[:, None, None]
        t = g[b, :, self.qpos.clamp(min=0)[:, :, None], self.kpos.clamp(min=0)[:, None, :]]
        return t.permute(0, 3, 1, 2).contiguous()

    def scatter_grad(self, d: torch.Tensor, out: torch.Tensor):
        """Adds the call's ``[B, H, max_q, max_k]`` gradient into the global ``out``."""
        bb, ii, cc = torch.nonzero(self.valid, as_tuple=True)
        src = d.permute(0, 2, 3, 1)[bb, ii, cc]  # [n, H]
        out.permute(0, 2, 3, 1).index_put_((bb, self.qpos[bb, ii], self.kpos[bb, cc]),
                                           src.to(out.dtype), accumulate=True)

    def _intervals(self, meta: CPMeta, s: int, o: _Opts, device) -> torch.Tensor:
        pr = meta.part(meta.rank)
        on = lambda name, t: meta._on(f"{name}{meta.rank}", t, device)  # noqa: E731
        seq, r = on("seq", pr.seq), on("pos", pr.pos)
        L = on("len", meta.lengths)[seq]
        C = o.nc.to(device, torch.int64)[seq] if o.nc is not None else torch.zeros_like(L)
        T = o.nt.to(device, torch.int64)[seq] if o.nt is not None else torch.zeros_like(L)
        h = L - T
        lo = (r - o.left).clamp(min=0) if o.left >= 0 else torch.zeros_like(r)
        hi = torch.minimum(r + o.right + 1, L) if o.right >= 0 else L
        tgt = (T > 0) & (r >= h)
        g0 = h + torch.div(r - h, o.group_size, rounding_mode="floor") * o.group_size
        a_hi = torch.where(tgt, torch.minimum(hi, h), hi)
        b_lo = torch.where(tgt, torch.maximum(lo, g0), hi)  # empty unless a target row
        ctx = (C > 0) & (r < C)
        a_lo = torch.where(ctx, torch.zeros_like(lo), lo)
        a_hi = torch.where(ctx, h, a_hi)
        b_lo = torch.where(ctx, hi.new_zeros(()).expand_as(hi), b_lo)
        b_hi = torch.where(ctx, hi.new_zeros(()).expand_as(hi), hi)
        bounds = on("bounds", meta.bounds)[seq]
        c0, c1 = meta.chunks(s)
        first = bounds[:, c0 + 1] - bounds[:, c0]
        cols = [torch.zeros_like(r)]
        end = torch.zeros_like(r)
        for lo_c, hi_c, shift in ((bounds[:, c0], bounds[:, c0 + 1], -bounds[:, c0]),
                                  (bounds[:, c1], bounds[:, c1 + 1], first - bounds[:, c1])):
            for x, y in ((a_lo, a_hi), (b_lo, b_hi)):
                x2, y2 = torch.maximum(x, lo_c), torch.minimum(y, hi_c)
                keep = x2 < y2
                # Empty intervals sit at the previous end, so the list stays sorted.
                x3 = torch.where(keep, x2 + shift, end)
                y3 = torch.where(keep, y2 + shift, end)
                end = y3
                cols += [x3, y3]
        return torch.stack(cols).to(torch.int32)[None].contiguous()  # [1, 9, n_q]


    def fwd(self, q, k, v, o: _Opts, wide):
        """This call's share of the output rows of every local query, in ``wide``."""
        return _fwd_call(q, _pad_keys(k, self), _pad_keys(v, self), self, o).to(wide)

    def bwd(self, dout, q, k, v, o: _Opts, wide, drab):
        """(dq, dk, dv) in ``wide``, dk/dv in rank s's token layout; adds into ``drab``."""
        dq, dk, dv, dr = _bwd_call(dout, q, _pad_keys(k, self), _pad_keys(v, self), self, o,
                                   drab is not None)
        if drab is not None:
            self.scatter_grad(dr, drab)
        return dq.to(wide), _unpad_keys(dk, self).to(wide), _unpad_keys(dv, self).to(wide)


class _ChunkCalls:
    """The plain causal mask (no contexts, targets, window, custom mask or rab): per (query
    chunk, key chunk) pair the mask is whole-chunk, so the op's built-in masks serve and every
    kernel (cuda_sm90 included) takes the call: the same chunk is causal (equal lengths), an
    earlier key chunk fully visible (mask none), a later one skipped. A key chunk one token
    shorter than the query chunk is padded with a zero row: SiLU(0) = 0 and the row's V is 0, so
    it adds exactly nothing (and its gradient is dropped)."""

    def __init__(self, meta: CPMeta, s: int, o: _Opts, device):
        r, W = meta.rank, meta.world
        self.pairs = []
        for qa, qsel in ((r, 0), (2 * W - 1 - r, 1)):
            for ka, ksel in ((s, 0), (2 * W - 1 - s, 1)):
                if ka > qa:
                    continue
                qi, qlen = meta.chunk_rows(r, qsel)
                ki, klen = meta.chunk_rows(s, ksel)
                c = _Call.__new__(_Call)  # a bare record of the call's offsets and padding
                lk = torch.maximum(klen, qlen)
                koff = torch.zeros(meta.B + 1, dtype=torch.int64)
                torch.cumsum(lk, 0, out=koff[1:])
                qoff = torch.zeros(meta.B + 1, dtype=torch.int64)
                torch.cumsum(qlen, 0, out=qoff[1:])
                kseq = torch.repeat_interleave(torch.arange(meta.B), klen, output_size=ki.numel())
                kj = torch.arange(ki.numel()) - (torch.cumsum(klen, 0) - klen)[kseq]
                on = lambda name, t: meta._on(f"{name}{r},{s},{qsel}{ksel}", t, device)  # noqa
                c.identity = bool(torch.equal(lk, klen))
                c.key_dst, c.total_k = on("ckdst", koff[:-1][kseq] + kj), int(koff[-1])
                c.off_q, c.off_k = on("coffq", qoff), on("coffk", koff)
                c.max_q = int(qlen.max()) if meta.B else 0
                c.max_k = int(lk.max()) if meta.B else 0
                c.func = c.mask = c.rab = None
                c.mask_type = 0 if ka == qa else 2  # causal or none (default window)
                c.scale = None if o.attn_scale is None else o.attn_scale[on("cqi", qi)]
                self.pairs.append((on("cqi", qi), on("cki", ki), c))

    def fwd(self, q, k, v, o: _Opts, wide):
        out = torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=wide, device=q.device)
        for qi, ki, c in self.pairs:
            part = _fwd_call(q[qi], _pad_keys(k[ki], c), _pad_keys(v[ki], c), c, o)
            out.index_add_(0, qi, part.to(wide))
        return out

    def bwd(self, dout, q, k, v, o: _Opts, wide, drab):
        dq = torch.zeros(q.shape, dtype=wide, device=q.device)
        dk = torch.zeros(k.shape, dtype=wide, device=q.device)
        dv = torch.zeros(v.shape, dtype=wide, device=q.device)
        for qi, ki, c in self.pairs:
            g = _bwd_call(dout[qi], q[qi], _pad_keys(k[ki], c), _pad_keys(v[ki], c), c, o, False)
            dq.index_add_(0, qi, g[0].to(wide))
            dk.index_add_(0, ki, _unpad_keys(g[1], c).to(wide))
            dv.index_add_(0, ki, _unpad_keys(g[2], c).to(wide))
        return dq, dk, dv


def _mask_args(c):
    # The func / custom-mask calls leave window and mask type at their defaults.
    return (-1, 0), getattr(c, "mask_type", 3 if c.mask is not None else 0)


def _scale(c, o: _Opts):
    return getattr(c, "scale", o.attn_scale)


def _fwd_call(q, k, v, c: _Call, o: _Opts):
    (wl, wr), mt = _mask_args(c)
    return torch.ops.recops.hstu_attn_fwd(
        q, k, v, c.off_q, c.off_k, c.max_q, c.max_k, None, None, 1, wl, wr, mt, c.mask, c.func,
        c.rab, o.alpha, o.silu_scale, _scale(c, o), None, None, None, None)


def _bwd_call(dout, q, k, v, c: _Call, o: _Opts, want_drab: bool):
    (wl, wr), mt = _mask_args(c)
    return torch.ops.recops.hstu_attn_bwd(
        dout, q, k, v, c.off_q, c.off_k, c.max_q, c.max_k, None, None, 1, wl, wr, mt, c.mask,
        c.func, c.rab, o.alpha, o.silu_scale, _scale(c, o), None, None, None, None, want_drab)


def _acc_dtype(dt: torch.dtype) -> torch.dtype:
    # Partial sums in fp32 (fp64 for fp64 inputs, which run the reference).
    return torch.float64 if dt == torch.float64 else torch.float32


def _pad_keys(t: torch.Tensor, c: _Call) -> torch.Tensor:
    if c.identity:
        return t
    out = t.new_zeros((c.total_k,) + tuple(t.shape[1:]))
    return out.index_copy_(0, c.key_dst, t)


def _unpad_keys(t: torch.Tensor, c: _Call) -> torch.Tensor:
    return t if c.identity else t.index_select(0, c.key_dst)


def _kv_shapes(meta: CPMeta, s: int, k: torch.Tensor, v: torch.Tensor, dtype=None):
    n = meta.counts[s]
    return [((n,) + tuple(k.shape[1:]), dtype or k.dtype), ((n,) + tuple(v.shape[1:]),
                                                            dtype or v.dtype)]


class _HstuCP(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, rab, meta: CPMeta, o: _Opts, group):
        W, r = meta.world, meta.rank
        calls = [None] * W
        wide = _acc_dtype(q.dtype)
        acc = torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=wide, device=q.device)
        kv, s = (k, v), r
        for t in range(W):
            reqs = None
            if t < W - 1:
                nxt_bufs, reqs = _ring(kv, _kv_shapes(meta, (s - 1) % W, k, v), group, meta, 1)
            calls[s] = (_ChunkCalls if o.plain_causal else _Call)(meta, s, o, q.device)
            acc += calls[s].fwd(q, kv[0], kv[1], o, wide)
            if t < W - 1:
                _wait(reqs)
                kv, s = tuple(nxt_bufs), (s - 1) % W
        ctx.save_for_backward(q, k, v)
        ctx.meta, ctx.o, ctx.group, ctx.calls = meta, o, group, calls
        ctx.rab_shape = None if rab is None else (rab.shape, rab.dtype, rab.requires_grad)
        return acc.to(q.dtype)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        meta, o, group, calls = ctx.meta, ctx.o, ctx.group, ctx.calls
        W, r = meta.world, meta.rank
        dout = dout.contiguous()
        want_drab = ctx.rab_shape is not None and ctx.needs_input_grad[3]
        drab, wide = None, _acc_dtype(q.dtype)
        if want_drab:
            drab = torch.zeros(ctx.rab_shape[0], dtype=wide, device=q.device)
        dq = torch.zeros(q.shape, dtype=wide, device=q.device)
        kv, s = (k, v), r
        acc, acc_reqs = None, None
        for t in range(W):
            reqs = None
            if t < W - 1:
                nxt_bufs, reqs = _ring(kv, _kv_shapes(meta, (s - 1) % W, k, v), group, meta, 1)
            dq_c, dk_c, dv_c = calls[s].bwd(dout, q, kv[0], kv[1], o, wide, drab)
            dq += dq_c
            mine = [dk_c, dv_c]
            if t > 0:
                _wait(acc_reqs)
                mine = [a + m for a, m in zip(acc, mine)]
            if W > 1:
                # The accumulators of rank s go on; the previous rank's, for the keys used at the
                # next step (or this rank's own after the last one), come in.
                acc, acc_reqs = _ring(mine, _kv_shapes(meta, (s - 1) % W, k, v, wide),
                                      group, meta, 2)
            else:
                acc = mine
            _wait(reqs)
            if t < W - 1:
                kv, s = tuple(nxt_bufs), (s - 1) % W
        _wait(acc_reqs)
        dk, dv = acc[0].to(k.dtype), acc[1].to(v.dtype)
        if drab is not None:
            drab = drab.to(ctx.rab_shape[1])
        return dq.to(q.dtype), dk, dv, drab, None, None, None


def _event_pair():
    if _timing_events is None or not torch.cuda.is_available():
        return None
    # The first event marks where the stream's queued work (the step's kernel) ends.
    ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
    ev[0].record()
    return ev


def _event_done(ev):
    if ev is not None:
        ev[1].record()
        _timing_events.append(ev)


def hstu_attn_cp(q_local: torch.Tensor, k_local: torch.Tensor, v_local: torch.Tensor,
                 meta: CPMeta, *, num_contexts: Optional[torch.Tensor] = None,
                 num_targets: Optional[torch.Tensor] = None, target_group_size: int = 1,
                 window: Tuple[int, int] = (-1, 0), mask_type: str = "causal",
                 mask: Optional[torch.Tensor] = None, rab: Optional[torch.Tensor] = None,
                 alpha: Optional[float] = None, silu_scale: Optional[float] = None,
                 attn_scale: Optional[torch.Tensor] = None, max_seq_len_q: Optional[int] = None,
                 max_seq_len_k: Optional[int] = None, group=None, **unsupported) -> torch.Tensor:
    """``recops.hstu_attn`` over a context-parallel group: this rank's output rows.

    ``q_local``, ``k_local``, ``v_local``: this rank's rows (``cp_shard`` / ``meta.shard``) of
    jagged ``[total, H, d]`` tensors with one set of offsets (self-attention). The keyword
    arguments are ``recops.hstu_attn``'s, global as there: ``num_contexts``, ``num_targets``
    ``[B]``; ``mask``, ``rab`` ``[B, H or 1, S, S]``; ``attn_scale [total]`` (global rows);
    ``max_seq_len_q`` (default: the longest sequence) sets ``silu_scale``'s default
    ``1/max_seq_len_q`` and the extents of ``mask`` and ``rab``. Differentiable in q, k, v and rab.
    """
    who = "hstu_attn_cp"
    for name in ("func", "kv_cache", "page_offsets", "page_ids", "last_page_len"):
        if unsupported.get(name) is not None:
            raise ValueError(f"{who}: {name} is not supported with context parallelism")
    for name in ("seq_offsets", "seq_offsets_q", "seq_offsets_k"):
        if unsupported.get(name) is not None:
            raise ValueError(f"{who}: {name} comes from meta (cp_shard); delta-q (different "
                             "query and key offsets) is not supported")
    rest = [n for n, x in unsupported.items() if x is not None and n not in (
        "func", "kv_cache", "page_offsets", "page_ids", "last_page_len", "seq_offsets",
        "seq_offsets_q", "seq_offsets_k")]
    if rest:
        raise TypeError(f"{who}: unexpected keyword arguments {rest}")
    _check_group(meta, group, who)
    n = meta.counts[meta.rank]
    for name, t in (("q_local", q_local), ("k_local", k_local), ("v_local", v_local)):
        if t.dim() != 3:
            raise ValueError(f"{who}: {name} must be jagged [n, H, d], got {list(t.shape)}")
        _check_rows(name, t, n, who)
    if mask_type not in _MASK_TYPES:
        raise ValueError(f"{who}: mask_type must be one of {list(_MASK_TYPES)}, got {mask_type!r}")
    if (mask_type == "custom") != (mask is not None):
        raise ValueError(f"{who}: mask_type='custom' and mask go together")
    if target_group_size < 1:
        raise ValueError(f"{who}: target_group_size must be >= 1, got {target_group_size}")
    if mask_type in ("anti_causal", "none") and tuple(window) != (-1, 0):
        raise ValueError(f"{who}: mask_type {mask_type} fixes the window; give either it or a "
                         f"window {tuple(window)}, not both")
    left, right = {"causal": tuple(window), "anti_causal": (0, -1), "none": (-1, -1),
                   "custom": (-1, -1)}[mask_type]
    if left < -1 or right < -1:
        raise ValueError(f"{who}: window bounds must be >= -1, got {tuple(window)}")
    S = meta.max_seq_len if max_seq_len_q is None else int(max_seq_len_q)
    if max_seq_len_k is not None and int(max_seq_len_k) != S:
        raise ValueError(f"{who}: max_seq_len_k must equal max_seq_len_q (self-attention)")
    if S < meta.max_seq_len:
        raise ValueError(f"{who}: max_seq_len_q={S} is shorter than the longest sequence "
                         f"({meta.max_seq_len})")
    for name, t in (("num_contexts", num_contexts), ("num_targets", num_targets)):
        if t is not None:
            tc = t.detach().to("cpu", torch.int64)
            if tc.shape != (meta.B,):
                raise ValueError(f"{who}: {name} must be [B] = [{meta.B}], got {list(t.shape)}")
            if bool(((tc < 0) | (tc > meta.lengths)).any()):
                raise ValueError(f"{who}: {name} must be in [0, L] for every sequence")
    for name, t in (("mask", mask), ("rab", rab)):
        if t is not None and (t.dim() != 4 or t.shape[0] != meta.B or t.shape[2] != S
                              or t.shape[3] != S or t.shape[1] not in (1, q_local.shape[1])):
            raise ValueError(f"{who}: {name} must be [B, Hq or 1, S, S] = [{meta.B}, "
                             f"{q_local.shape[1]} or 1, {S}, {S}], got {list(t.shape)}")
    scale_l = None
    if attn_scale is not None:
        scale_l = meta.shard(attn_scale)
    elif silu_scale is None:
        silu_scale = 1.0 / S if S > 0 else 1.0
    if alpha is None:
        alpha = 1.0 / math.sqrt(q_local.shape[-1]) if q_local.shape[-1] else 1.0
    o = _Opts(num_contexts, num_targets, int(target_group_size), int(left), int(right),
              None if mask is None else mask.detach() != 0, None if rab is None else rab.detach(),
              float(alpha), silu_scale, scale_l)
    o.plain_causal = (mask_type == "causal" and (left, right) == (-1, 0) and mask is None
                      and rab is None and num_contexts is None and num_targets is None)
    return _HstuCP.apply(q_local, k_local, v_local, rab, meta, o, group)
