"""Random differential runs of recops' drop-in surfaces against the peers' own CPU code, in one
process on the same inputs (a script, not a pytest file; see README.md here):

- ``recops.compat.fbgemm`` against ``torch.ops.fbgemm`` (fbgemm-gpu-cpu): the conversions,
  pack_segments (v1, v2), the elementwise ops, softmax, the bmms, the cumsums (1-D, 2-D,
  batched), index select, the permutes (1-D, 2-D, the 1-D-lengths form, the old name),
  invert_permute, segment_sum_csr, offsets_range, the stacked conversions and
  batched_dense_vec_jagged_2d_mul, forward; and the gradients of the ops FBGEMM differentiates;
- ``recops.compat.torchrec.kjt_permute`` against ``KeyedJaggedTensor.permute``, with one batch
  size for every key and with a batch size per key (``stride_per_key_per_rank``);
- ``recops.compat.fla.chunk_gated_delta_rule`` / ``chunk_kda`` against fla-core's own PyTorch
  references (``fla/ops/gated_delta_rule/naive.py``, ``fla/ops/kda/naive.py``: the token-by-token
  recurrences in fp32), outputs and final states, when fla's sources are given (``--fla-dir``,
  default ``.peers/training``: ``scripts/prepare_peers.sh`` unpacks fla-core there).

Each case draws its shapes, dtypes and parameters from ``random.Random(seed)``. A case the peer
refuses (a dtype its CPU kernels lack, an input outside its preconditions) counts as
``peer-refused``; a case where ours raises or differs counts as ``FAIL`` with its message.
Compared: integers, row moves and the cumsums bit for bit; arithmetic within a few roundings of
the dtype; FBGEMM's unwritten rows (softmax and dense bmm rows past max_L, which it leaves
``empty``) are not compared. Known and documented differences are not drawn: values with more
than 2 dims (FBGEMM 1.8 drops inner dims), ``total_L`` above the last offset (recops refuses,
jagged_ops.md §2.2), offsets_range inputs FBGEMM reads out of bounds (offsets[0] != 0, last offset
past range_size). Exit status 1 on any FAIL.

    PYTHONPATH=python RECOPS_TORCH_LIB=build/lib/librecops_torch.so \\
        .venv/bin/python tests/reliability/peer_diff.py --cases 300
"""

import argparse
import random
import sys

import torch

_TOL = {torch.float64: 1e-10, torch.float32: 2e-4, torch.float16: 3e-2, torch.bfloat16: 2.5e-1}


class Tally:
    def __init__(self, verbose=False):
        self.counts, self.fails, self.verbose = {}, [], verbose

    def run(self, name, ours, peer, exact=False, keep=None):
        """Compares ours() with peer(); keep (a bool row mask) restricts the comparison."""
        c = self.counts.setdefault(name, [0, 0, 0])
        try:
            want = peer()
        except Exception as e:  # the peer refuses this input
            c[1] += 1
            if self.verbose and c[1] <= 2:
                print(f"peer refuses {name}: {str(e).splitlines()[0][:160]}")
            return
        try:
            got = ours()
            _compare(got, want, exact, keep)
            c[0] += 1
        except Exception as e:
            c[2] += 1
            if sum(1 for f in self.fails if f[0] == name) < 3:
                self.fails.append((name, f"{type(e).__name__}: {str(e)[:300]}"))

    def report(self):
        for k, (ok, refused, bad) in sorted(self.counts.items()):
            print(f"{k:34s} equal {ok:5d}   peer-refused {refused:5d}   FAIL {bad}")
        for name, msg in self.fails:
            print("FAIL", name, msg)
        return not self.fails


def _compare(a, b, exact, keep):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), (type(b), len(a))
        for x, y in zip(a, b):
            _compare(x, y, exact, keep)
        return
    if a is None or b is None:
        assert a is None and b is None, (type(a), type(b))
        return
    if keep is not None and a.dim() > 0 and a.shape[0] == keep.numel():
        a, b = a[keep], b[keep]
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    if exact or not a.is_floating_point():
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    else:
        tol = _TOL[a.dtype]
        torch.testing.assert_close(a.double(), b.double(), rtol=tol, atol=tol, equal_nan=True)


def _values(shape, dt, g):
    if dt.is_floating_point:
        return torch.randn(shape, generator=g).to(dt)
    return torch.randint(-1000, 1000, shape, generator=g, dtype=dt)


def _offsets(lengths, dt):
    o = torch.zeros(lengths.numel() + 1, dtype=torch.int64)
    o[1:] = torch.cumsum(lengths, 0)
    return o.to(dt)


def _kept_rows(off, total, L):
    o, keep = off.long(), torch.zeros(total, dtype=torch.bool)
    for b in range(off.numel() - 1):
        keep[o[b]:min(int(o[b + 1]), int(o[b]) + L)] = True
    return keep


def fbgemm_case(t, seed):
    from recops.compat import fbgemm as C
    F = torch.ops.fbgemm
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    B, L, D = rng.choice([0, 1, 2, 5, 17, 64]), rng.choice([0, 1, 3, 8, 33]), rng.choice(
        [1, 2, 3, 8, 16, 33])
    dt = rng.choice([torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
                     torch.int32] if rng.random() < 0.2 else
                    [torch.float32, torch.float64, torch.float16, torch.bfloat16])
    odt = rng.choice([torch.int32, torch.int64])
    lengths = torch.tensor([rng.randint(0, L + 3) if rng.random() < 0.9 else 0 for _ in range(B)],
                           dtype=torch.int64)
    off = _offsets(lengths, odt)
    tot = int(off[-1])
    two_d = rng.random() < 0.7
    v = _values((tot, D) if two_d else (tot,), dt, g)
    if two_d and rng.random() < 0.2:  # a transposed (non-contiguous) view
        v = _values((D, tot), dt, g).t()
    pad = rng.choice([0.0, -1.0, 7.5, float("-inf")]) if dt.is_floating_point else float(
        rng.choice([0, -1, 3]))
    t.run("jagged_to_padded_dense", lambda: C.jagged_to_padded_dense(v, [off], [L], pad),
          lambda: F.jagged_to_padded_dense(v, [off], [L], pad), exact=True)
    if two_d:
        t.run("jagged_2d_to_dense", lambda: C.jagged_2d_to_dense(v, off, L),
              lambda: F.jagged_2d_to_dense(v, off, L), exact=True)
    else:
        ip = rng.choice([0, -1, 5])
        t.run("jagged_1d_to_dense", lambda: C.jagged_1d_to_dense(v, off, L, ip),
              lambda: F.jagged_1d_to_dense(v, off, L, ip), exact=True)
    dense = _values((B, L) + tuple(v.shape[1:]), dt, g)
    tl = rng.choice([None, tot])
    t.run("dense_to_jagged", lambda: C.dense_to_jagged(dense, [off], tl)[0],
          lambda: F.dense_to_jagged(dense, [off], tl)[0], exact=True)
    if two_d and dt.is_floating_point:
        y = _values((B, L, D), dt, g)
        keep = _kept_rows(off, tot, L)
        t.run("jagged_dense_elementwise_add_jagged_output",
              lambda: C.jagged_dense_elementwise_add_jagged_output(v, [off], y)[0],
              lambda: F.jagged_dense_elementwise_add_jagged_output(v, [off], y)[0])
        t.run("jagged_dense_elementwise_add", lambda: C.jagged_dense_elementwise_add(v, [off], y),
              lambda: F.jagged_dense_elementwise_add(v, [off], y))
        t.run("jagged_dense_elementwise_mul",
              lambda: C.jagged_dense_elementwise_mul(v, [off], y)[0],
              lambda: F.jagged_dense_elementwise_mul(v, [off], y)[0])
        t.run("jagged_softmax", lambda: C.jagged_softmax(v, off, L)[0],
              lambda: F.jagged_softmax(v, off, L)[0], keep=keep)
        if dt in (torch.float32, torch.float64):
            n = rng.choice([1, 4, 9])
            yb, y2 = _values((B, D, n), dt, g), _values((tot, n), dt, g)
            t.run("jagged_dense_bmm", lambda: C.jagged_dense_bmm(v, off, yb, L)[0],
                  lambda: F.jagged_dense_bmm(v, off, yb, L)[0], keep=keep)
            t.run("jagged_jagged_bmm", lambda: C.jagged_jagged_bmm(v, y2, off, L),
                  lambda: F.jagged_jagged_bmm(v, y2, off, L))
            grads_case(t, C, F, v.contiguous(), y, yb, y2, off, L, keep)
    cdt = rng.choice([torch.int32, torch.int64])
    c = torch.randint(0, 64, (rng.choice([0, 1, 7, 100]),), generator=g, dtype=cdt)
    if rng.random() < 0.3:
        c = torch.randint(0, 64, (rng.choice([0, 1, 3]), rng.choice([0, 1, 9])), generator=g,
                          dtype=cdt)
    for kind in ("complete", "exclusive", "inclusive"):
        fn = f"asynchronous_{kind}_cumsum"
        t.run(fn, lambda: getattr(C, fn)(c), lambda: getattr(F, fn)(c), exact=True)
    if c.dim() == 2:
        t.run("asynchronous_batched_complete_cumsum",
              lambda: C.asynchronous_batched_complete_cumsum(c),
              lambda: F.asynchronous_batched_complete_cumsum(c), exact=True)
    perm = torch.randperm(rng.choice([0, 1, 9]), generator=g).to(odt)
    t.run("invert_permute", lambda: C.invert_permute(perm), lambda: F.invert_permute(perm),
          exact=True)
    if dt.is_floating_point:
        t.run("pack_segments", lambda: C.pack_segments(v, lengths, L),
              lambda: F.pack_segments(v, lengths, L), exact=True)
        minf, presence = rng.random() < 0.5, rng.random() < 0.5
        t.run("pack_segments_v2", lambda: C.pack_segments_v2(v, lengths, L, minf, presence),
              lambda: F.pack_segments_v2(v, lengths, L, minf, presence), exact=True)
    idt = rng.choice([torch.int32, torch.int64])
    idx = torch.randint(0, max(B, 1), (rng.choice([0, 1, 5, 40]) if B else 0,), generator=g,
                        dtype=idt)
    rows = v if two_d else v.view(-1, 1)
    t.run("jagged_index_select", lambda: C.jagged_index_select(rows, lengths.to(idt), idx),
          lambda: F.jagged_index_select(rows, lengths.to(idt), idx), exact=True)
    T, Bp = rng.choice([1, 3, 8]), rng.choice([0, 1, 4])
    # FBGEMM's CPU permutes take int32 lengths only: int64 is drawn once in four.
    pl = torch.randint(0, 4, (T, Bp), generator=g,
                       dtype=torch.int64 if rng.random() < 0.25 else torch.int32)
    n = int(pl.sum())
    pv = _values((n,), rng.choice([torch.float32, torch.int64, torch.int32]), g)
    pw = torch.rand(n, generator=g) if rng.random() < 0.5 else None
    P = rng.choice([0, 1, T, 2 * T])
    perm = torch.randint(0, T, (P,), generator=g, dtype=pl.dtype)
    t.run("permute_2D_sparse_data", lambda: C.permute_2D_sparse_data(perm, pl, pv, pw),
          lambda: F.permute_2D_sparse_data(perm, pl, pv, pw, None), exact=True)
    t.run("permute_sparse_data", lambda: C.permute_sparse_data(perm, pl, pv, pw),
          lambda: F.permute_sparse_data(perm, pl, pv, pw, None), exact=True)
    if Bp:
        t.run("permute_2D_sparse_data_input1D",
              lambda: C.permute_2D_sparse_data_input1D(perm, pl.view(-1), pv, Bp, pw),
              lambda: F.permute_2D_sparse_data_input1D(perm, pl.view(-1), pv, Bp, pw, None),
              exact=True)
    perm1 = torch.randint(0, max(T * Bp, 1), (P if T * Bp else 0,), generator=g, dtype=pl.dtype)
    t.run("permute_1D_sparse_data", lambda: C.permute_1D_sparse_data(perm1, pl.view(-1), pv, pw),
          lambda: F.permute_1D_sparse_data(perm1, pl.view(-1), pv, pw, None), exact=True)
    ns, bs = rng.choice([0, 1, 5, 30]), rng.choice([1, 2, 3])
    seg = _offsets(torch.randint(0, 4, (ns,), generator=g), odt)
    sv = _values((int(seg[-1]) * bs,), torch.float64 if rng.random() < 0.25 else torch.float32,
                 g)  # FBGEMM's CPU segment_sum_csr has no fp64
    t.run("segment_sum_csr", lambda: C.segment_sum_csr(bs, seg, sv),
          lambda: F.segment_sum_csr(bs, seg, sv))
    starts = torch.sort(torch.randint(0, 50, (rng.choice([1, 4]),), generator=g))[0].to(odt)
    starts[0] = 0
    rs = rng.choice([1, 10, 60])
    if int(starts[-1]) <= rs:
        t.run("offsets_range", lambda: C.offsets_range(starts, rs),
              lambda: F.offsets_range(starts, rs), exact=True)
    K, Bs = rng.choice([1, 2, 4]), rng.choice([1, 3])
    sl = torch.randint(0, 5, (K, Bs), generator=g)
    opk = [0] + torch.cumsum(sl.sum(1), 0).tolist()
    ml = [rng.choice([0, 2, 6]) for _ in range(K)]
    v1 = torch.randint(0, 100, (opk[-1],), generator=g)
    v2 = torch.randn(opk[-1], 3, generator=g)
    t.run("stacked_jagged_1d_to_dense", lambda: C.stacked_jagged_1d_to_dense(v1, sl, opk, ml, 0),
          lambda: F.stacked_jagged_1d_to_dense(v1, sl, opk, ml, 0), exact=True)
    t.run("stacked_jagged_2d_to_dense", lambda: C.stacked_jagged_2d_to_dense(v2, sl, opk, ml, 0),
          lambda: F.stacked_jagged_2d_to_dense(v2, sl, opk, ml, 0), exact=True)
    H, Dh, mN = rng.choice([1, 2, 3]), rng.choice([1, 4]), rng.choice([1, 3, 8])
    av, vv = torch.randn(tot, H * Dh, generator=g), torch.randn(B * H, mN, generator=g)
    t.run("batched_dense_vec_jagged_2d_mul",
          lambda: C.batched_dense_vec_jagged_2d_mul(vv, av, off),
          lambda: F.batched_dense_vec_jagged_2d_mul(vv, av, off))


def grads_case(t, C, F, v, y, yb, y2, off, L, keep):
    """Output and input gradients through autograd, ours against FBGEMM's (fp32 / fp64)."""
    def through(fn, inputs):
        def call():
            ins = [x.detach().clone().requires_grad_() for x in inputs]
            out = fn(*ins)
            out = out[0] if isinstance(out, (list, tuple)) else out
            w = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view(out.shape)
            grads = torch.autograd.grad(out, ins, w, allow_unused=True)
            return [out.detach()] + [gr for gr in grads]
        return call
    cases = {
        "grad jagged_to_padded_dense": (lambda x: C.jagged_to_padded_dense(x, [off], [L]),
                                        lambda x: F.jagged_to_padded_dense(x, [off], [L]), [v]),
        "grad jagged_dense_elementwise_add": (
            lambda x, d: C.jagged_dense_elementwise_add(x, [off], d),
            lambda x, d: F.jagged_dense_elementwise_add(x, [off], d), [v, y]),
        "grad jagged_dense_elementwise_mul": (
            lambda x, d: C.jagged_dense_elementwise_mul(x, [off], d)[0],
            lambda x, d: F.jagged_dense_elementwise_mul(x, [off], d)[0], [v, y]),
        "grad jagged_jagged_bmm": (lambda x, w: C.jagged_jagged_bmm(x, w, off, L),
                                   lambda x, w: F.jagged_jagged_bmm(x, w, off, L), [v, y2]),
    }
    for name, (ours, peer, inputs) in cases.items():
        t.run(name, through(ours, inputs), through(peer, inputs))
    # Rows past max_L: FBGEMM leaves the softmax's and dense bmm's output and gradient unwritten.
    t.run("grad jagged_softmax", through(lambda x: C.jagged_softmax(x, off, L)[0], [v]),
          through(lambda x: F.jagged_softmax(x, off, L)[0], [v]), keep=keep)
    t.run("grad jagged_dense_bmm",
          through(lambda x, w: C.jagged_dense_bmm(x, off, w, L)[0], [v, yb]),
          through(lambda x, w: F.jagged_dense_bmm(x, off, w, L)[0], [v, yb]), keep=keep)


def torchrec_case(t, seed):
    from torchrec.sparse.jagged_tensor import KeyedJaggedTensor
    from recops.compat import torchrec as R
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    K = rng.choice([1, 2, 3, 5])
    variable = rng.random() < 0.5
    strides = [rng.choice([0, 1, 2, 4]) for _ in range(K)]
    if not variable:
        strides = [strides[0]] * K
    lengths = torch.randint(0, 4, (sum(strides),), generator=g,
                            dtype=rng.choice([torch.int32, torch.int64]))
    n = int(lengths.sum())
    values = torch.randint(0, 1000, (n,), generator=g) if rng.random() < 0.5 else torch.randn(
        n, generator=g)
    weights = torch.rand(n, generator=g) if rng.random() < 0.5 else None
    keys = [f"f{i}" for i in range(K)]
    if variable:
        kjt = KeyedJaggedTensor(keys=keys, values=values, lengths=lengths, weights=weights,
                                stride_per_key_per_rank=[[s] for s in strides])
    else:
        kjt = KeyedJaggedTensor(keys=keys, values=values, lengths=lengths, weights=weights,
                                stride=strides[0])
    order = [rng.randrange(K) for _ in range(rng.choice([0, 1, K, 2 * K]))]

    def fields(k):
        return [k.values(), k.lengths().long(), k.offsets().long(), k.weights_or_none(),
                torch.tensor(k.stride_per_key()), torch.tensor([k.stride()]),
                torch.tensor(k.length_per_key(), dtype=torch.int64)]
    t.run("kjt_permute (variable batch)" if variable else "kjt_permute",
          lambda: fields(R.kjt_permute(kjt, order)), lambda: fields(kjt.permute(order)),
          exact=True)


def _load_file(path, name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fla_case(t, seed, gdn, kda):
    """Both recurrences on one random problem: fp64 inputs for fla's references, fp32 for ours
    (their recurrences run in fp32), every chunk size recops serves."""
    from recops.compat import fla
    rng, g = random.Random(seed), torch.Generator().manual_seed(seed)
    B, T, H = rng.choice([1, 2]), rng.choice([1, 5, 64, 70, 130]), rng.choice([1, 2])
    K, V = rng.choice([8, 16, 32]), rng.choice([8, 16, 24])

    def r(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)
    q, v = r(B, T, H, K), r(B, T, H, V)
    k = torch.nn.functional.normalize(r(B, T, H, K), dim=-1)
    beta = torch.rand(B, T, H, generator=g, dtype=torch.float64)
    h0 = r(B, H, K, V) if rng.random() < 0.5 else None
    scale = rng.choice([None, 0.3])
    gate = -torch.rand(B, T, H, generator=g, dtype=torch.float64) * 0.5
    gk = -torch.rand(B, T, H, K, generator=g, dtype=torch.float64) * 0.5
    f32 = [x.float() for x in (q, k, v, beta)]
    h32 = None if h0 is None else h0.float()
    t.run("fla chunk_gated_delta_rule",
          lambda: list(fla.chunk_gated_delta_rule(f32[0], f32[1], f32[2], gate.float(), f32[3],
                                                  scale=scale, initial_state=h32,
                                                  output_final_state=True,
                                                  chunk_size=rng.choice([16, 32, 64]))),
          lambda: [x.float() for x in gdn.naive_recurrent_gated_delta_rule(
              q, k, v, beta, gate, scale=scale, initial_state=h0, output_final_state=True)])
    t.run("fla chunk_kda",
          lambda: list(fla.chunk_kda(f32[0], f32[1], f32[2], gk.float(), f32[3], scale=scale,
                                     initial_state=h32, output_final_state=True,
                                     chunk_size=rng.choice([32, 64]))),
          lambda: [x.float() for x in kda.naive_recurrent_kda(
              q, k, v, gk, beta, scale=scale, initial_state=h0, output_final_state=True)])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300, help="random cases per surface")
    ap.add_argument("--seed", type=int, default=0, help="first seed")
    ap.add_argument("--fla-dir", default=".peers/training",
                    help="a directory holding fla-core's sources (fla/ops/...); skipped if absent")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print the first two refusals of each peer function")
    a = ap.parse_args()
    import recops  # noqa: F401  (registers torch.ops.recops)
    t = Tally(a.verbose)
    try:
        import fbgemm_gpu  # noqa: F401
        for s in range(a.seed, a.seed + a.cases):
            fbgemm_case(t, s)
    except ImportError as e:
        print("skipped fbgemm:", e)
    try:
        import torchrec  # noqa: F401
        for s in range(a.seed, a.seed + a.cases):
            torchrec_case(t, s)
    except ImportError as e:
        print("skipped torchrec:", e)
    from pathlib import Path
    fla_ops = Path(a.fla_dir) / "fla" / "ops"
    if (fla_ops / "kda" / "naive.py").exists():
        sys.path.insert(0, str(Path(a.fla_dir)))  # the references import einops from there
        gdn = _load_file(fla_ops / "gated_delta_rule" / "naive.py", "fla_gdn_naive")
        kda = _load_file(fla_ops / "kda" / "naive.py", "fla_kda_naive")
        for s in range(a.seed, a.seed + max(1, a.cases // 5)):
            fla_case(t, s, gdn, kda)
    else:
        print(f"skipped fla: no fla-core sources under {a.fla_dir}")
    sys.exit(0 if t.report() else 1)


if __name__ == "__main__":
    main()
