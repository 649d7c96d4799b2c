# recops.tensorflow (the TF custom ops generated from the kit's tables, src/tensorflow): each op
# on tf.Tensors against the torch op on the same inputs, gradients through tf.GradientTape against
# torch autograd. Skipped when tensorflow (or librecops_tf.so) is not importable.
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
tf = pytest.importorskip("tensorflow", reason="tensorflow is not installed (tensorflow-cpu)")
rtf = pytest.importorskip("recops.tensorflow",
                          reason="librecops_tf.so is not built (RECOPS_BUILD_TENSORFLOW)")

import recops  # noqa: E402
from recops import testing  # noqa: E402
_TF_OF = {torch.float64: tf.float64, torch.float32: tf.float32, torch.float16: tf.float16,
          torch.bfloat16: tf.bfloat16, torch.int32: tf.int32, torch.int64: tf.int64,
          torch.uint8: tf.uint8, torch.bool: tf.bool}


def to_tf(t):
    if isinstance(t, torch.dtype):  # a ScalarType argument (e.g. out_dtype) by its TF name
        return rtf._NAMES[_TF_OF[t]]
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: through float32, exactly
        return tf.cast(tf.constant(t.float().numpy()), tf.bfloat16)
    return tf.constant(t.numpy())


def to_np(t):
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy()
    return (tf.cast(t, tf.float32) if t.dtype == tf.bfloat16 else t).numpy()


def assert_same(a, b, rtol=0.0, atol=0.0):
    a, b = to_np(a), to_np(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _kw(kwargs):
    return {k: (rtf._NAMES[_TF_OF[v]] if isinstance(v, torch.dtype) else v)
            for k, v in kwargs.items()}


# ---- the conversions and the cumsums: every sample of their cases.yaml ------------------------

_OPS = ["jagged_to_padded_dense", "dense_to_jagged", "complete_cumsum", "exclusive_cumsum",
        "inclusive_cumsum"]


def _samples():
    out = []
    for op in _OPS:
        for s in testing.sample_inputs(op, "cpu"):
            if s.dtype == "fp8_e4m3" or testing.torch_cannot_hold(s):
                continue  # TF has no fp8 dtype; outputs torch cannot allocate
            out.append(pytest.param(s, id=s.name))
    return out


@pytest.mark.parametrize("sample", _samples())
def test_conversions_and_cumsums(sample):
    want = testing.call(sample)
    got = getattr(rtf, sample.op)(*map(to_tf, sample.args), **_kw(sample.kwargs))
    assert_same(got, want)


@pytest.mark.parametrize("op", ["jagged_to_padded_dense", "dense_to_jagged"])
def test_conversion_gradients(op):
    samples = [s for s in testing.sample_inputs(op, "cpu", requires_grad=True)
               if s.dtype in ("fp32", "fp64") and not testing.torch_cannot_hold(s)
               and s.args[0].numel() <= 1 << 16][:6]
    assert samples
    for s in samples:
        out = testing.call(s)
        g = torch.randn_like(out) if out.numel() else torch.zeros_like(out)
        (want,) = torch.autograd.grad(out, s.args[0], g, allow_unused=True)
        x = to_tf(s.args[0])
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = getattr(rtf, op)(x, *map(to_tf, s.args[1:]), **_kw(s.kwargs))
        got = tape.gradient(y, x, output_gradients=to_tf(g))
        assert_same(got, want if want is not None else torch.zeros_like(s.args[0]))


def test_graph_mode_shapes():
    off = tf.constant([0, 2, 2, 7], tf.int64)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def f(v):
        y = rtf.jagged_to_padded_dense(v, off, 5)
        assert y.shape.as_list() == [3, 5, 3]  # B from the offsets, E from values
        return y

    v = tf.random.uniform([7, 3])
    assert_same(f(v), recops.jagged_to_padded_dense(torch.tensor(v.numpy()),
                                                    torch.tensor(off.numpy()), 5))


def test_graph_mode_gradient_and_data_sized_outputs():
    # In a tf.function the wrapper sees no values: output dtypes of ops whose shape function
    # reads lengths (jagged_index_select) still come out right, and the gradient runs as a graph.
    off = tf.constant([0, 2, 2, 6], tf.int64)

    def fwd_bwd(x):
        with tf.GradientTape() as t:
            t.watch(x)
            y = rtf.hstu_attn(x, x, x, off, max_seq_len_q=4, max_seq_len_k=4,
                              num_targets=tf.constant([1, 0, 2]))
            s = tf.reduce_sum(y * y)
        return y, t.gradient(s, x)

    x = tf.random.uniform([6, 2, 4], dtype=tf.float64)
    for a, b in zip(tf.function(fwd_bwd)(x), fwd_bwd(x)):
        assert_same(a, b)
    sel = tf.function(lambda v, n: rtf.jagged_index_select(v, n, tf.constant([2, 0], tf.int64)))
    v, n = tf.random.uniform([6, 3]), tf.constant([2, 0, 4], tf.int64)
    for a, b in zip(sel(v, n), rtf.jagged_index_select(v, n, tf.constant([2, 0], tf.int64))):
        assert_same(a, b)


def test_errors_name_the_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_seq_len"):
        rtf.jagged_to_padded_dense(tf.zeros([3, 2]), tf.constant([0, 3], tf.int64), -1)


# ---- HSTU attention: forward and backward, every mask feature ---------------------------------


def _problem(dtype, lengths=(5, 0, 9), H=2, d=8, delta=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    lk = [x + delta for x in lengths]
    oq = torch.tensor([0] + np.cumsum(lengths).tolist())
    ok = torch.tensor([0] + np.cumsum(lk).tolist())
    mk = lambda *s: (torch.rand(*s, generator=g, dtype=torch.float64) * 2 - 1).to(dtype)  # noqa
    return mk(int(oq[-1]), H, d), mk(int(ok[-1]), H, d), mk(int(ok[-1]), H, d), oq, ok


_FEATURES = {
    "causal": {},
    "contexts": {"num_contexts": [2, 0, 3]},
    "targets": {"num_targets": [2, 0, 4], "target_group_size": 2},
    "contexts_targets": {"num_contexts": [1, 0, 2], "num_targets": [2, 0, 3]},
    "window": {"window": (3, 1)},
    "anti_causal": {"mask_type": "anti_causal"},
    "none": {"mask_type": "none"},
    "rab": {"rab": True},
    "rab_scales": {"rab": True, "alpha": 0.3, "silu_scale": 0.1},
    "custom": {"mask_type": "custom", "mask": True},
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("feature", sorted(_FEATURES))
def test_hstu_attn(feature, dtype):
    q, k, v, oq, ok = _problem(dtype)
    Sq, Sk = int((oq[1:] - oq[:-1]).max()), int((ok[1:] - ok[:-1]).max())
    kw = dict(_FEATURES[feature])
    for n in ("num_contexts", "num_targets"):
        if n in kw:
            kw[n] = torch.tensor(kw[n])
    if kw.pop("rab", False):
        kw["rab"] = torch.randn(3, 2, Sq, Sk, dtype=dtype)
    if kw.pop("mask", False):
        kw["mask"] = torch.rand(3, 2, Sq, Sk, generator=torch.Generator().manual_seed(2)) > 0.3
    diff = [q, k, v] + ([kw["rab"]] if "rab" in kw else [])
    for t in diff:
        t.requires_grad_(True)
    out = recops.hstu_attn(q, k, v, oq, ok, Sq, Sk, **kw)
    dout = torch.randn_like(out)
    want = torch.autograd.grad(out, diff, dout)

    tdiff = [to_tf(t) for t in diff]
    tkw = {n: to_tf(x) for n, x in kw.items()}
    with tf.GradientTape() as tape:
        tape.watch(tdiff)
        if "rab" in tkw:
            tkw["rab"] = tdiff[3]
        got_out = rtf.hstu_attn(*tdiff[:3], to_tf(oq), to_tf(ok), Sq, Sk, **tkw)
    got = tape.gradient(got_out, tdiff, output_gradients=to_tf(dout))
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-6)
    assert_same(got_out, out, **tol)
    for a, b in zip(got, want):
        assert_same(a, b, **tol)


def test_hstu_attn_defaults_read_the_offsets():
    q, k, v, oq, _ = _problem(torch.float32, delta=0)
    want = recops.hstu_attn(q, k, v, oq)
    assert_same(rtf.hstu_attn(to_tf(q), to_tf(k), to_tf(v), to_tf(oq)), want)


# ---- every op the TF layer registered: recops.testing's samples (the CLI's recorded inputs) ------

_CASES = 8  # per op: its first valid cases (recops.testing records only these)
_PER_DTYPE = 2  # of their rows, the first of each dtype
_FLOATS = (torch.float32, torch.float64)


def _tf_samples(op, requires_grad=False):
    """(samples, reason when none): the first _PER_DTYPE samples of each dtype TF has."""
    picked, seen, skipped = [], {}, set()
    for s in testing.sample_inputs(op, "cpu", requires_grad, max_cases=_CASES):
        vals = testing.schema_values(s)
        if any(isinstance(v, torch.Tensor) and v.dtype not in _TF_OF for v in vals):
            skipped.add("fp8 (TensorFlow has no float8_e4m3fn dtype)")
            continue
        if seen.get(s.dtype, 0) < _PER_DTYPE:
            seen[s.dtype] = seen.get(s.dtype, 0) + 1
            picked.append(s)
    gaps = [f"{row}: {why}" for row, why in testing.sample_gaps(op, max_cases=_CASES)]
    return picked, "; ".join(sorted(skipped) + gaps) or "its case file has no valid row"


def _outs(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


# Valid inputs TF refuses (a recorded failure must still fail; when it stops, delete it). Empty
# since the shape function sees a known 0 extent as 0 (keyed no_keys declared out_lengths float).
_TF_REFUSES: dict = {}


@pytest.mark.parametrize("op", sorted(rtf.TABLE))
def test_every_op_against_torch(op):
    samples, why = _tf_samples(op)
    if not samples:
        pytest.skip(why)
    for s in samples:
        vals = testing.schema_values(s)
        if s.name in _TF_REFUSES:
            with pytest.raises(tf.errors.InvalidArgumentError, match=_TF_REFUSES[s.name]):
                rtf.call_op(op, *map(to_tf, vals))
            continue
        got = _outs(rtf.call_op(op, *map(to_tf, vals)))
        try:
            want = _outs(testing.call(s))
        except (RuntimeError, ValueError):
            # The torch binding refuses some valid all-empty inputs (jagged_index_select's
            # b0_k0: an empty CPU tensor's null data read as a tensor without data): TF must
            # give what the CLI recorded.
            want = None
        assert want is None or len(got) == len(want), s.name
        pairs = testing.recorded_pairs(s, got) if s.record else [(i, a, a) for i, a in
                                                                  enumerate(got)]
        for i, (name, a, rec) in enumerate(pairs):
            if rec is None:
                # Not produced by this call (e.g. dbias without bias): an empty placeholder,
                # whose dtype TF and torch choose differently.
                assert a.shape.num_elements() == 0, name
                continue
            assert_same(a, rec if want is None else want[i])


@pytest.mark.parametrize("op", sorted(n for n, i in rtf.TABLE.items()
                                      if i["backward"] or n in rtf._GRAD_HOOKS))
def test_every_gradient_against_torch(op):
    info = rtf.TABLE[op]
    samples, why = _tf_samples(op, requires_grad=True)
    compared, reasons = 0, [why] if not samples else []
    for s in samples:
        if s.name in _TF_REFUSES:  # the forward test holds it to its failure
            reasons.append(f"{s.name}: TF refuses ({_TF_REFUSES[s.name]})")
            continue
        vals = testing.schema_values(s)
        diff = [i for i, v in enumerate(vals) if isinstance(v, torch.Tensor) and v.requires_grad
                and v.dtype in _FLOATS]
        if not diff:
            reasons.append(f"{s.name}: no fp32/fp64 input that takes a gradient")
            continue
        try:
            outs = _outs(testing.call(s))
        except (RuntimeError, ValueError) as ex:
            reasons.append(f"{s.name}: torch refuses ({str(ex)[:60]})")
            continue
        g = torch.Generator().manual_seed(3)
        douts = [torch.randn(o.shape, generator=g, dtype=o.dtype) if o.dtype in _FLOATS else None
                 for o in outs]
        pairs = [(o, go) for o, go, od in zip(outs, douts, info["outs"])
                 if od["grad"] and go is not None and o.requires_grad]
        if not pairs:
            reasons.append(f"{s.name}: no differentiable output")
            continue
        want = torch.autograd.grad([p[0] for p in pairs], [vals[i] for i in diff],
                                   [p[1] for p in pairs], allow_unused=True)
        tvals = [to_tf(v) for v in vals]
        with tf.GradientTape() as tape:
            tape.watch([tvals[i] for i in diff])
            touts = _outs(rtf.call_op(op, *tvals))
        tpairs = [(t, to_tf(go)) for t, go, od in zip(touts, douts, info["outs"])
                  if od["grad"] and go is not None]
        got = tape.gradient([p[0] for p in tpairs], [tvals[i] for i in diff],
                            output_gradients=[p[1] for p in tpairs])
        for i, a, b in zip(diff, got, want):
            if b is None:
                b = torch.zeros_like(vals[i])
            if a is None:
                a = tf.zeros_like(tvals[i])
            assert_same(a, b, rtol=1e-6, atol=1e-6)
        compared += 1
    if not compared:
        pytest.skip("; ".join(reasons))
