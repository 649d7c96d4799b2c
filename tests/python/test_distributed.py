# recops.distributed (issue 22): HSTU context parallelism over torch.distributed, checked against
# the single-process recops.hstu_attn on the same inputs, forward and backward, in 2 and 4 gloo
# processes spawned here (CPU). The same worker runs on NCCL when given CUDA devices (not run in
# CI: one GPU is lent).
import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import recops
from recops import distributed as D

# (name, dtype, Hq, Hk, kwargs builder); every case runs on random lengths with empty sequences
# and sequences shorter than 2·world.
CASES = [
    ("causal", torch.float32, 2, 2, lambda g, B, S, L, T: {}),
    # The plain causal mask runs per chunk pair on the op's own masks (_ChunkCalls).
    ("causal_gqa_attn_scale", torch.float32, 4, 1, lambda g, B, S, L, T: dict(
        attn_scale=torch.rand(T, generator=g) + 0.5)),
    ("causal_bf16", torch.bfloat16, 2, 2, lambda g, B, S, L, T: {}),
    ("ctx_targets_gqa", torch.float32, 4, 2, lambda g, B, S, L, T: dict(
        num_contexts=_counts(g, L, 3), num_targets=_counts(g, L, 5), target_group_size=2)),
    ("window_targets", torch.float32, 2, 1, lambda g, B, S, L, T: dict(
        window=(3, 0), num_targets=_counts(g, L, 4), target_group_size=3)),
    ("anti_causal_ctx", torch.float32, 2, 2, lambda g, B, S, L, T: dict(
        mask_type="anti_causal", num_contexts=_counts(g, L, 2))),
    ("none_attn_scale", torch.float32, 2, 2, lambda g, B, S, L, T: dict(
        mask_type="none", attn_scale=torch.rand(T, generator=g) + 0.5)),
    ("rab_targets_fp64", torch.float64, 2, 2, lambda g, B, S, L, T: dict(
        rab=torch.randn(B, 1, S, S, generator=g, dtype=torch.float64), num_targets=_counts(g, L, 3),
        num_contexts=_counts(g, L, 2), window=(5, 2))),
    ("targets_bf16", torch.bfloat16, 2, 2, lambda g, B, S, L, T: dict(
        num_targets=_counts(g, L, 4), target_group_size=2)),
    ("rab_heads_custom_mask", torch.float32, 2, 2, lambda g, B, S, L, T: dict(
        rab=torch.randn(B, 2, S, S, generator=g), mask_type="custom",
        mask=torch.rand(B, 1, S, S, generator=g) < 0.6)),
]


def _counts(g, L, most):
    return torch.minimum(torch.randint(0, most + 1, L.shape, generator=g), L)


def _inputs(case, world, device):
    name, dtype, Hq, Hk, make = case
    g = torch.Generator().manual_seed(sum(map(ord, name)) + 7 * world)  # same on every rank
    L = torch.randint(0, 23, (7,), generator=g)
    L[0], L[3], L[5] = 0, 1, 2 * world - 1  # empty and shorter than 2·world
    off = torch.zeros(L.numel() + 1, dtype=torch.int64)
    off[1:] = torch.cumsum(L, 0)
    T, S, d = int(off[-1]), int(L.max()), 8
    wide = torch.float64 if dtype == torch.float64 else torch.float32
    q, k, v, dout = (torch.randn(T, *hd, generator=g, dtype=wide).to(dtype)
                     for hd in ((Hq, d), (Hk, d), (Hk, 6), (Hq, 6)))
    kw = make(g, L.numel(), S, L, T)
    mv = lambda x: x.to(device) if torch.is_tensor(x) else x  # noqa: E731
    return [mv(x) for x in (q, k, v, dout, off)], {n: mv(x) for n, x in kw.items()}


def _close(name, got, want, tol):
    scale = max(1.0, float(want.abs().max())) if want.numel() else 1.0
    err = float((got.double() - want.double()).abs().max()) if want.numel() else 0.0
    assert err <= tol * scale, f"{name}: max error {err:.3g} > {tol:.1g} x {scale:.3g}"


def _worker(rank, world, port, backend, results):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)
    device = "cpu"
    if backend == "nccl":
        torch.cuda.set_device(rank)
        device = f"cuda:{rank}"
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        for case in CASES:
            if backend == "nccl" and case[1] == torch.float64:
                continue  # fp64 runs the CPU reference only
            (q, k, v, dout, off), kw = _inputs(case, world, device)
            # bf16: each partial output is rounded before the sum (README), up to W roundings.
            tol = {torch.float64: 1e-13, torch.float32: 1e-6}.get(q.dtype, 8e-3)
            rab = kw.get("rab")
            if rab is not None:
                rab.requires_grad_(True)
            leaves = [t.requires_grad_(True) for t in (q, k, v)]
            ref = recops.hstu_attn(*leaves, off, off, **kw)
            ref.backward(dout)
            want = [ref.detach()] + [t.grad for t in leaves]
            want_drab = None if rab is None else rab.grad.clone()
            if rab is not None:
                rab.grad = None

            ql, meta = D.cp_shard(q.detach(), off)
            loc = [ql.requires_grad_(True)] + [meta.shard(t.detach()).requires_grad_(True)
                                               for t in (k, v)]
            out = D.hstu_attn_cp(*loc, meta, **kw)
            out.backward(meta.shard(dout))
            got = [D.cp_unshard(t, meta) for t in [out.detach()] + [t.grad for t in loc]]
            for what, a, b in zip(("out", "dq", "dk", "dv"), got, want):
                _close(f"{case[0]} world={world} rank={rank} {what}", a, b, tol)
            if rab is not None:
                drab = rab.grad.clone()
                dist.all_reduce(drab)  # each rank holds its query rows' share
                _close(f"{case[0]} world={world} rank={rank} drab", drab, want_drab, tol)
        results[rank] = "ok"
    finally:
        dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(world, backend):
    results = mp.Manager().dict()
    # gloo children come from a fork server that imported torch and recops once (a plain fork
    # breaks once this pytest process has run autograd, and spawning re-imports torch per
    # process: seconds each on a loaded 2-core runner); NCCL needs fresh processes (CUDA does not
    # survive a fork).
    if backend == "gloo":
        mp.set_forkserver_preload(["torch", "recops", "recops.distributed"])
    method = "forkserver" if backend == "gloo" else "spawn"
    mp.start_processes(_worker, args=(world, _free_port(), backend, results), nprocs=world,
                       join=True, start_method=method)
    assert dict(results) == {r: "ok" for r in range(world)}


@pytest.mark.parametrize("world", [2, 4])
def test_cp_gloo_matches_single_process(world):
    _spawn(world, "gloo")


@pytest.mark.skipif(torch.cuda.device_count() < 2 or not dist.is_nccl_available(),
                    reason="needs 2 CUDA devices and NCCL")
def test_cp_nccl_matches_single_process():
    _spawn(2, "nccl")


def test_world_one_is_the_op_exactly():
    # One func call covering the whole sequence: bit-identical to the op.
    (q, k, v, dout, off), kw = _inputs([c for c in CASES if c[0] == "ctx_targets_gqa"][0], 1, "cpu")
    ql, meta = D.cp_shard(q, off)
    got = D.cp_unshard(D.hstu_attn_cp(ql, meta.shard(k), meta.shard(v), meta, **kw), meta)
    assert torch.equal(got, recops.hstu_attn(q, k, v, off, off, **kw))


def test_empty_batches():
    for off in (torch.tensor([0]), torch.tensor([0, 0, 0])):
        q = torch.randn(0, 2, 8, requires_grad=True)
        ql, meta = D.cp_shard(q, off)
        out = D.hstu_attn_cp(ql, ql, ql, meta)
        out.sum().backward()
        assert out.shape == (0, 2, 8) and D.cp_unshard(out, meta).shape == (0, 2, 8)


def _mask_from_calls(meta, o, L):
    """The global [L, L] validity of sequence 0 that the ring's func intervals give, every rank
    against every key owner."""
    got = torch.zeros(L, L, dtype=torch.bool)
    for r in range(meta.world):
        meta.rank = r
        pr = meta.part(r)
        for s in range(meta.world):
            f = D._Call(meta, s, o, "cpu").func[0].long()  # [9, n_r]
            kpos = meta.part(s).pos
            for i in range(pr.pos.numel()):
                for j in range(1, D._NFUNC, 2):
                    got[pr.pos[i], kpos[f[j, i]:f[j + 1, i]]] = True
                assert f[0, i] == 0 and bool((f[1:, i].diff() >= 0).all())
    return got


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_func_intervals_are_the_global_mask(world):
    # Exhaustive over small configurations: the union of the ring's interval masks is exactly
    # hstu_mask (the op's own definition) for one sequence.
    g = torch.Generator().manual_seed(world)
    for trial in range(40):
        L = int(torch.randint(0, 14, (1,), generator=g))
        C, T = (int(torch.randint(0, L + 1, (1,), generator=g)) for _ in range(2))
        G = int(torch.randint(1, 4, (1,), generator=g))
        mt = ["causal", "anti_causal", "none"][trial % 3]
        win = tuple(int(x) for x in torch.randint(-1, 4, (2,), generator=g))
        meta = D.CPMeta(torch.tensor([0, L]), world, 0)
        o = D._Opts(torch.tensor([C]), torch.tensor([T]), G,
                    *({"causal": win, "anti_causal": (0, -1), "none": (-1, -1)}[mt]),
                    None, None, 1.0, 1.0, None)
        want = recops.hstu_mask(L, num_contexts=C, num_targets=T, target_group_size=G,
                                window=win, mask_type=mt)
        assert torch.equal(_mask_from_calls(meta, o, L), want), (L, C, T, G, mt, win)


def test_shard_layout_dual_chunk_swap():
    off = torch.tensor([0, 8, 11, 11])  # lengths 8, 3, 0
    meta = D.CPMeta(off, world=2, rank=1)
    # 4 chunks per sequence; rank 1 holds chunks 1 and 2: tokens 2-3 and 4-5 of sequence 0;
    # sequence 1's chunks are [0,0), [0,1), [1,2), [2,3): tokens 8 and 9 (rank 0 gets 10).
    assert meta.part(1).index.tolist() == [2, 3, 4, 5, 8, 9]
    assert meta.part(0).index.tolist() == [0, 1, 6, 7, 10]
    assert meta.counts == [5, 6]


def test_errors_name_the_argument():
    q = torch.randn(5, 2, 8)
    ql, meta = D.cp_shard(q, torch.tensor([0, 5]))
    with pytest.raises(ValueError, match="k_local"):
        D.hstu_attn_cp(ql, q[:2], ql, meta)
    with pytest.raises(ValueError, match="func"):
        D.hstu_attn_cp(ql, ql, ql, meta, func=torch.zeros(1, 1, 5, dtype=torch.int32))
    with pytest.raises(ValueError, match="num_targets"):
        D.hstu_attn_cp(ql, ql, ql, meta, num_targets=torch.tensor([6]))
    with pytest.raises(ValueError, match="seq_offsets"):
        D.cp_shard(q, torch.tensor([1, 5]))
    with pytest.raises(ValueError, match="window"):
        D.hstu_attn_cp(ql, ql, ql, meta, mask_type="none", window=(2, 0))
    with pytest.raises(ValueError, match="rab"):
        D.hstu_attn_cp(ql, ql, ql, meta, rab=torch.zeros(1, 1, 4, 4))
