"""recops.onnx: export through torch.onnx (dynamo) to one recops::<op> node per op, checked by
onnx.checker and run in ONNX Runtime (the recops nodes through onnxruntime-extensions PyOps),
matching torch."""

import contextlib
import functools
import io
import warnings

import numpy as np
import pytest
import torch

onnx = pytest.importorskip("onnx", reason="onnx is not installed (make deps-py installs it)")
pytest.importorskip("onnxscript", reason="onnxscript is not installed (make deps-py)")
pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (make deps-py)")
pytest.importorskip("onnxruntime_extensions",
                    reason="onnxruntime-extensions is not installed (make deps-py)")

import recops  # noqa: E402
import recops.onnx as ro  # noqa: E402
from recops import testing  # noqa: E402

# accuracy.md thresholds; fp64 outputs get fp32's, since ONNX float attributes are float32.
_T = {torch.float32: 2**-13, torch.float64: 2**-13, torch.float16: 2**-10}


def _export(module, args, path):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return ro.export(module, args, str(path))


def _close(got: np.ndarray, want: torch.Tensor):
    """ONNX Runtime's output against torch's: integers exact, floats by accuracy.md's `single`
    standard (NaN where torch has NaN)."""
    want = want.detach()
    assert tuple(got.shape) == tuple(want.shape)
    if not want.dtype.is_floating_point:
        assert np.array_equal(got, want.numpy())
        return
    g = torch.from_numpy(np.asarray(got)).double()
    w = want.double()
    assert torch.equal(torch.isnan(g), torch.isnan(w))
    finite = torch.isfinite(w)
    assert torch.equal(g[~finite & ~torch.isnan(w)], w[~finite & ~torch.isnan(w)])
    g, w = g[finite], w[finite]
    if w.numel() == 0:
        return
    T = _T[want.dtype]
    small = max(float(w.abs().max()) * 2**-10, 1e-30)
    rel = (g - w).abs() / w.abs().clamp_min(small)
    assert float(rel.mean()) <= T and float(rel.max()) <= 10 * T, (float(rel.max()), T)


class _Model(torch.nn.Module):
    """jagged_to_padded_dense -> hstu_attn -> rms_norm, as a served model would chain them."""

    def __init__(self, D: int):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.linspace(0.5, 1.5, D))

    def forward(self, q, k, v, offsets):
        out = recops.hstu_attn(q, k, v, offsets, max_seq_len_q=6,
                               max_seq_len_k=6, alpha=0.25)
        out = recops.rms_norm(out, self.weight, eps=1e-5)
        return recops.jagged_to_padded_dense(out.flatten(1), offsets, max_seq_len=6)


def test_module_exports_checks_and_runs(tmp_path):
    torch.manual_seed(0)
    offsets = torch.tensor([0, 4, 4, 10])
    q, k, v = (torch.randn(10, 2, 16) for _ in range(3))
    model = _Model(16).eval()
    path = tmp_path / "model.onnx"
    _export(model, (q, k, v, offsets), path)

    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    recops_nodes = [n for n in proto.graph.node if n.domain == ro.DOMAIN]
    assert sorted(n.op_type for n in recops_nodes) == \
        ["hstu_attn_fwd", "jagged_to_padded_dense", "rms_norm"]
    hstu = next(n for n in recops_nodes if n.op_type == "hstu_attn_fwd")
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in hstu.attribute}
    assert attrs["max_seq_len_q"] == 6 and attrs["alpha"] == pytest.approx(0.25)
    assert any(o.domain == ro.DOMAIN and o.version == ro.VERSION for o in proto.opset_import)
    # shape inference: the output's type and shape are in the model
    inferred = onnx.shape_inference.infer_shapes(proto, strict_mode=True)
    out = inferred.graph.output[0].type.tensor_type
    assert out.elem_type == onnx.TensorProto.FLOAT
    assert [d.dim_value for d in out.shape.dim] == [3, 6, 32]

    sess = ro.session(path)
    feeds = dict(zip([i.name for i in sess.get_inputs()],
                     [t.numpy() for t in (q, k, v, offsets)]))
    (got,) = sess.run(None, feeds)
    _close(got, model(q, k, v, offsets))


def test_schema_and_translation_for_every_op():
    ops = ro.exportable_ops()
    mutating = {i["name"] for i in recops._kit.op_table()
                if getattr(torch.ops.recops, i["name"]).default._schema.is_mutable}
    assert mutating == {"inplace_rope_"}  # ONNX values are immutable: not exported
    assert set(ops) == {i["name"] for i in recops._kit.op_table()} - mutating
    table = ro.translation_table()
    for op in ops:
        schema = onnx.defs.get_schema(op, ro.VERSION, ro.DOMAIN)
        args = ro.op_args(op)
        assert [p.name for p in schema.inputs] == [n for n, k, _ in args if k.endswith("tensor")]
        assert set(schema.attributes) == {n for n, k, _ in args if not k.endswith("tensor")}
        assert len(schema.outputs) == len(getattr(torch.ops.recops, op).default._schema.returns)
        assert getattr(torch.ops.recops, op).default in table


class _Call(torch.nn.Module):
    """One op with the sample's non-tensor arguments fixed; the tensors are the inputs."""

    def __init__(self, sample):
        super().__init__()
        self.op, self.args, self.kwargs = sample.op, sample.args, sample.kwargs
        self.pos = [i for i, a in enumerate(self.args) if isinstance(a, torch.Tensor)]
        self.kw = [k for k, a in self.kwargs.items() if isinstance(a, torch.Tensor)]

    def tensors(self):
        return [self.args[i] for i in self.pos] + [self.kwargs[k] for k in self.kw]

    def forward(self, *tensors):
        args, kwargs = list(self.args), dict(self.kwargs)
        for i, t in zip(self.pos, tensors):
            args[i] = t
        for k, t in zip(self.kw, tensors[len(self.pos):]):
            kwargs[k] = t
        return getattr(torch.ops.recops, self.op)(*args, **kwargs)


def _empty(s):
    return any(t.numel() == 0 for t in _Call(s).tensors())


def _samples():
    """Case samples of the conversions and cumsums (built by recops.testing): per op its first
    non-empty and first empty row, plus the first row of each other dtype over these ops (bf16
    and fp8 left out: numpy, the feeds' type, has neither); about 15 exports of 1-3 s CPU."""
    out, dtypes = [], set()
    for op in ro.exportable_ops():
        if op not in testing.OP_FOLDER:
            continue  # test_every_op_runs_in_onnxruntime
        seen = set()
        for s in testing.sample_inputs(op, "cpu"):
            if s.dtype in ("bf16", "fp8_e4m3") or testing.torch_cannot_hold(s):
                continue
            empty = _empty(s)
            key = "empty" if empty else "rows"
            if key not in seen or (not empty and s.dtype not in dtypes):
                seen.add(key)
                dtypes.add(s.dtype)
                out.append(pytest.param(s, id=s.name))
    return out


def _export_and_run(model, ops, path):
    """Exports ``model`` (its tensors() the inputs), checks that it holds one recops node per op
    of ``ops`` and runs it in ONNX Runtime: (ORT's outputs, torch's)."""
    tensors = model.tensors()
    _export(model, tuple(tensors), path)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto)
    assert sorted(n.op_type for n in proto.graph.node if n.domain == ro.DOMAIN) == sorted(ops)
    sess = ro.session(path)
    got = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), tensors)})
    want = model(*tensors)
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    return got, want


def _run_in_onnxruntime(sample, tmp_path):
    for g, w in zip(*_export_and_run(_Call(sample), [sample.op], tmp_path / "op.onnx")):
        _close(g, w)


@pytest.mark.parametrize("sample", _samples())
def test_op_cases_run_in_onnxruntime(sample, tmp_path):
    _run_in_onnxruntime(sample, tmp_path)


# numpy (the feeds) has no bfloat16 or float8_e4m3fn; the PyOp carriers hold fp16 as float32.
_CASES = 8  # the first valid cases of each op's file searched for a sample
_NO_NUMPY = {torch.bfloat16: "bf16", torch.float8_e4m3fn: "fp8"}


def _meta_refusal(s):
    """Why torch.export cannot trace the sample (the op's Meta kernel needs a size that reads
    the data, e.g. permuted_lengths_sum), or None."""
    meta = [a.to("meta") if isinstance(a, torch.Tensor) else a for a in s.args]
    kw = {k: a.to("meta") if isinstance(a, torch.Tensor) else a for k, a in s.kwargs.items()}
    try:
        getattr(torch.ops.recops, s.op).default(*meta, **kw)
    except (RuntimeError, ValueError) as e:
        return f"the output size reads the data, which export cannot trace: {str(e)[:160]}"
    return None


@functools.lru_cache(maxsize=None)
def _first_sample(op):
    """(the op's first non-empty sample that numpy can feed and export can trace, or None; the
    reasons the others were left out)."""
    reasons = set()
    for s in testing.sample_inputs(op, "cpu", max_cases=_CASES):
        bad = sorted({_NO_NUMPY[t.dtype] for t in _Call(s).tensors() if t.dtype in _NO_NUMPY})
        if bad:
            reasons.add(f"{'/'.join(bad)} inputs (numpy, the feeds' type, has no such dtype)")
        elif _empty(s):
            reasons.add(f"empty inputs only in the first {_CASES} cases")
        elif _meta_refusal(s):
            reasons.add(_meta_refusal(s))
        else:
            return s, frozenset(reasons)
    reasons |= {f"{row}: {why}" for row, why in testing.sample_gaps(op, max_cases=_CASES)}
    return None, frozenset(reasons or {"its case file has no valid row"})


_OTHERS = [op for op in ro.exportable_ops() if op not in testing.OP_FOLDER]


@pytest.mark.parametrize("op", _OTHERS)
def test_every_op_has_an_onnx_sample(op):
    """Every other exportable op has a sample test_every_family_runs_in_onnxruntime exports,
    or the reason it has none."""
    sample, reasons = _first_sample(op)
    if sample is None:
        pytest.skip("; ".join(sorted(reasons)))
    assert _Call(sample).tensors()


class _Many(torch.nn.Module):
    """Several ops, each on its own sample's tensors, in one graph: one export per family."""

    def __init__(self, samples):
        super().__init__()
        self.calls = [_Call(s) for s in samples]
        self.counts = [len(c.tensors()) for c in self.calls]

    def tensors(self):
        return [t for c in self.calls for t in c.tensors()]

    def forward(self, *tensors):
        outs, i = [], 0
        for c, n in zip(self.calls, self.counts):
            o = c(*tensors[i:i + n])
            outs += list(o) if isinstance(o, (tuple, list)) else [o]
            i += n
        return tuple(outs)


@pytest.mark.parametrize("family", sorted({i["family"] for i in recops._kit.op_table()}))
def test_every_family_runs_in_onnxruntime(family, tmp_path):
    """The other exportable ops of a family, each on its first usable case sample (the CLI's
    recorded inputs, recops.testing), exported as one model (one export per family keeps this
    to seconds), checked and run in ONNX Runtime, every output against torch."""
    fam = {i["name"] for i in recops._kit.op_table() if i["family"] == family}
    samples = [s for s in (_first_sample(op)[0] for op in _OTHERS if op in fam) if s]
    if not samples:
        pytest.skip(f"no op of {family} has a sample (test_every_op_has_an_onnx_sample)")
    got, want = _export_and_run(_Many(samples), [s.op for s in samples],
                                tmp_path / "family.onnx")
    k = 0
    for s in samples:
        n = len(getattr(torch.ops.recops, s.op).default._schema.returns)
        for g, w in zip(got[k:k + n], want[k:k + n]):
            try:
                _close(g, w)
            except AssertionError as e:
                raise AssertionError(f"{s.name}: {e}") from None
        k += n


def test_kernel_error_is_raised_not_fatal(tmp_path):
    """A recops error inside ONNX Runtime comes back from run() as the op's own message."""
    values, offsets = torch.randn(5, 2), torch.tensor([0, 2, 5])
    path = tmp_path / "j.onnx"

    class M(torch.nn.Module):
        def forward(self, values, offsets):
            return torch.ops.recops.jagged_to_padded_dense(values, offsets, 3, 0.0)

    _export(M(), (values, offsets), path)
    sess = ro.session(path)
    with pytest.raises(RuntimeError, match="offsets"):
        sess.run(None, {"values": values.numpy(), "offsets": np.array([0, 4, 2])})
    (got,) = sess.run(None, {"values": values.numpy(), "offsets": offsets.numpy()})
    _close(got, M()(values, offsets))


def _forms():
    torch.manual_seed(0)
    x, b, off = torch.randn(5, 8), torch.randn(8), torch.tensor([0, 2, 5])
    ops = torch.ops.recops
    return {
        "dtype_attribute": (lambda x: ops.rms_norm_rstd(x, 1e-5, torch.float64), (x,)),
        "symint_attribute": (lambda v, o: ops.jagged_softmax(v, o, 3), (torch.randn(5, 1), off)),
        "missing_middle_input": (lambda x, b: ops.layer_norm(x, None, b), (x, b)),
        "three_outputs": (lambda logits, labels: ops.fused_cross_entropy_fwd(
            logits, labels, None, -100, 0.1, 0.0, 0.0, 2), (torch.randn(4, 8),
                                                           torch.tensor([1, 3, -100, 7]))),
    }


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


@pytest.mark.parametrize("form", list(_forms()))
def test_argument_forms(form, tmp_path):
    """Argument forms the case samples above do not reach: a dtype attribute, a missing
    optional input before a present one, an op with three outputs."""
    fn, args = _forms()[form]
    path = tmp_path / "f.onnx"
    _export(_Fn(fn).eval(), args, path)
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    sess = ro.session(path)
    got = sess.run(None, {i.name: a.numpy() for i, a in zip(sess.get_inputs(), args)})
    want = fn(*args)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _close(g, w)
