"""recops on TensorFlow: the kit's ops as TF custom ops, on ``tf.Tensor``s.

``librecops_tf.so`` (``src/tensorflow/kit_tf.cpp``) registers one TF op per op of the kit's
registry, generated from the same argument tables as the PyTorch binding, and is loaded here with
``tf.load_op_library``. This module writes, from the same table, one wrapper per op with the names
and defaults of ``recops.<op>`` (``recops.tensorflow.hstu_attn(q, k, v, offsets, ...)``) and
registers each op's gradient (its table's backward op) with ``tf.RegisterGradient``, so
``tf.GradientTape`` differentiates through them.

How arguments travel (see kit_tf.cpp): tensors are inputs; an absent optional tensor is an empty
placeholder plus ``has_<arg>=False``; ints, bools and dtypes are attrs; floats are string attrs
holding ``repr(value)`` (TF's float attrs are 32-bit). TF fixes an op's output dtypes when the node
is built, so the wrapper asks the library (its ``recops_tf_out_dtypes``, which runs the op's shape
function) for them.

Python faces of the table (``kit::PyArg``) supported: ``def``, ``kw``, ``names`` (a string enum),
``pair`` (a tuple of two ints), the rules ``same`` and ``longest`` (``longest`` reads the offsets,
so it needs eager tensors), ``needed_with``. Not supported: the ``nested``/``nested_out`` rules
(torch.nested tensors; give values and offsets), the op folders' own Python modules (their
``recops`` wrappers replace the generated ones; here the generated wrapper stays), fp8 tensors
(TensorFlow has no float8_e4m3fn dtype in Python). The ops run on the CPU.
"""

import ast
import ctypes
import inspect
import json
import os
from pathlib import Path
from typing import Dict, List

import tensorflow as tf

_LIB_NAME = "librecops_tf.so"

_TF_DTYPES = {
    "fp64": tf.float64,
    "fp32": tf.float32,
    "fp16": tf.float16,
    "bf16": tf.bfloat16,
    "int32": tf.int32,
    "int64": tf.int64,
    "uint8": tf.uint8,
    "bool": tf.bool,
}
_NAMES = {v: k for k, v in _TF_DTYPES.items()}


def _find_library() -> Path:
    here = Path(__file__).resolve().parent
    candidates = []
    if os.environ.get("RECOPS_TF_LIB"):
        candidates.append(Path(os.environ["RECOPS_TF_LIB"]))
    candidates += [here / _LIB_NAME, here.parent.parent / "build" / "lib" / _LIB_NAME]
    for c in candidates:
        if c.is_file():
            return c
    raise ImportError(f"recops.tensorflow: cannot find {_LIB_NAME}; looked at "
                      f"{', '.join(map(str, candidates))}. Build it (cmake with a Python that "
                      f"imports tensorflow: RECOPS_BUILD_TENSORFLOW) or set RECOPS_TF_LIB.")


library_path = _find_library()
_ops = tf.load_op_library(str(library_path))
_c = ctypes.CDLL(str(library_path))
_c.recops_tf_table.restype = ctypes.c_char_p
_c.recops_tf_out_dtypes.restype = ctypes.c_char_p
_c.recops_tf_out_dtypes.argtypes = [ctypes.c_char_p, ctypes.c_char_p]

TABLE: Dict[str, dict] = {d["name"]: d for d in json.loads(_c.recops_tf_table())}


def _dtype_name(dt) -> str:
    if isinstance(dt, str):
        return dt
    dt = tf.as_dtype(dt)
    if dt not in _NAMES:
        raise TypeError(f"recops.tensorflow: dtype {dt.name} is not supported")
    return _NAMES[dt]


def _tensor_spec(t) -> dict:
    spec = {"dtype": _dtype_name(t.dtype),
            "shape": [-1 if s is None else int(s) for s in t.shape.as_list()]}
    # An eager integer tensor's values: shape functions that size an output from offsets or
    # lengths read them (the C++ side reads zeros without them).
    if (t.dtype in (tf.int32, tf.int64) and hasattr(t, "numpy")
            and t.shape.num_elements() is not None and t.shape.num_elements() <= 1 << 20):
        spec["data"] = t.numpy().ravel().tolist()
    return spec


def _out_dtypes(info: dict, values: list) -> List[str]:
    spec = []
    for a, v in zip(info["args"], values):
        if a["type"] in ("tensor", "opt_tensor"):
            spec.append(None if v is None else _tensor_spec(v))
        elif a["type"] == "opt_dtype":
            spec.append(None if v is None else _dtype_name(v))
        elif v is None:
            spec.append(None)
        elif a["type"] == "bool":
            spec.append(bool(v))
        elif a["type"] in ("float", "opt_float"):
            spec.append(float(v))
        else:
            spec.append(int(v))
    got = json.loads(_c.recops_tf_out_dtypes(info["name"].encode(), json.dumps(spec).encode()))
    if "dtypes" in got:
        return [d or _dtype_name(values[info["device_arg"]].dtype) for d in got["dtypes"]]
    # The shape function refused (unknown sizes in a graph, or inputs the kernel will reject
    # with the op's own message): the outputs follow the device argument's dtype.
    like = values[info["device_arg"]] if info["args"] else None
    dt = _dtype_name(like.dtype) if like is not None else "fp32"
    return [dt] * len(info["outs"])


def call_op(op: str, *values):
    """Runs recops op ``op`` (its table name, e.g. ``"hstu_attn_bwd"``) with one value per
    argument of its table, in order (``None`` for an absent optional). Returns a tensor for a
    one-output op, else a tuple."""
    info = TABLE[op]
    if len(values) != len(info["args"]):
        raise TypeError(f"{op}: expected {len(info['args'])} arguments, got {len(values)}")
    values = [tf.convert_to_tensor(v) if a["type"] == "tensor" and v is not None
              and not isinstance(v, tf.Tensor) else v for a, v in zip(info["args"], values)]
    kw = {}
    for a, v in zip(info["args"], values):
        n, t = a["tf"], a["type"]
        if t == "tensor":
            if v is None:
                raise ValueError(f"{op}: {a['name']} is required (got None)")
            kw[n] = v
        elif t == "opt_tensor":
            kw[n] = tf.zeros([0], tf.float32) if v is None else tf.convert_to_tensor(v)
            kw["has_" + n] = v is not None
        elif t == "int":
            kw[n] = int(v)
        elif t == "opt_int":
            kw[n] = [] if v is None else [int(v)]
        elif t in ("float", "opt_float"):
            kw[n] = "" if v is None else repr(float(v))
        elif t == "bool":
            kw[n] = bool(v)
        elif t == "opt_dtype":
            kw[n] = "" if v is None else _dtype_name(v)
    for o, dt in zip(info["outs"], _out_dtypes(info, values)):
        kw["TO_" + o["tf"]] = _TF_DTYPES[dt]
    out = getattr(_ops, info["tf_name"])(**kw)  # a tensor for one output, else a list
    return out if len(info["outs"]) == 1 else tuple(out)


# ---- gradients ---------------------------------------------------------------------------------


def _forward_values(info: dict, op) -> list:
    """The forward call's values (table order) from a graph/eager op's inputs and attrs."""
    values, k = [], 0
    for a in info["args"]:
        n, t = a["tf"], a["type"]
        if t in ("tensor", "opt_tensor"):
            x = op.inputs[k]
            k += 1
            values.append(None if t == "opt_tensor" and not op.get_attr("has_" + n) else x)
        elif t == "opt_int":
            v = op.get_attr(n)
            values.append(int(v[0]) if v else None)
        elif t in ("float", "opt_float"):
            v = op.get_attr(n)
            v = v.decode() if isinstance(v, bytes) else v
            values.append(float(v) if v else None)
        elif t == "opt_dtype":
            v = op.get_attr(n)
            v = v.decode() if isinstance(v, bytes) else v
            values.append(v or None)
        else:
            values.append(op.get_attr(n))
    return values


def _dim(t, i: int) -> int:
    return int(t.shape[i]) if t.shape[i] is not None else tf.shape(t)[i]


# The backwards the table cannot say (the torch binding's hooks, src/ops/*/*/binding.cpp): each
# takes the forward's values (table order), its outputs and the differentiable outputs'
# gradients, and returns one gradient per differentiable argument.
_GRAD_HOOKS = {
    # grad_values = dense_to_jagged(grad, seq_offsets, total_L)
    "jagged_to_padded_dense": lambda f, y, g: [
        call_op("dense_to_jagged", g[0], f[1], _dim(f[0], 0))],
    # grad_dense = jagged_to_padded_dense(grad, seq_offsets, S, 0)
    "dense_to_jagged": lambda f, y, g: [
        call_op("jagged_to_padded_dense", g[0], f[1], _dim(f[0], 1), 0.0)],
    "jagged_dense_elementwise_add": lambda f, y, g: [
        g[0], call_op("jagged_to_padded_dense", g[0], f[1], _dim(f[2], 1), 0.0)],
    # the backward takes the forward's output
    "jagged_softmax": lambda f, y, g: [call_op("jagged_softmax_bwd", g[0], y[0], f[1], f[2])],
    "jagged2_softmax": lambda f, y, g: [
        call_op("jagged2_softmax_bwd", g[0], y[0], f[1], f[2], f[3])],
    # y is a constant of the op (a mask shared by the batch): no gradient
    "jagged2_dense_elementwise_mul": lambda f, y, g: [
        call_op("jagged2_dense_elementwise_mul_bwd", g[0], *f), None],
    "sort_chunks_by_idx": lambda f, y, g: list(call_op(
        "sort_chunks_by_idx_bwd", g[0], f[1], f[2], g[1] if f[3] is not None else None)),
    "fused_cross_entropy": lambda f, y, g: [call_op(
        "fused_cross_entropy_bwd", g[0], f[0], f[1], f[2],
        call_op("fused_cross_entropy_fwd", *f)[2], *f[3:8])],
    # the backward op takes the forward's out and lse, recomputed with the _fwd op (as the torch
    # binding's hook does)
    "jagged_dense_flash_attention": lambda f, y, g: list(call_op(
        "jagged_dense_flash_attention_bwd", g[0], *f[:5],
        *call_op("jagged_dense_flash_attention_fwd", *f), *f[5:])),
    "multi_head_jagged_flash_attention": lambda f, y, g: list(call_op(
        "multi_head_jagged_flash_attention_bwd", g[0], *f[:4],
        *call_op("multi_head_jagged_flash_attention_fwd", *f), *f[4:])),
    # the residual's gradient is grad_y itself
    "causal_conv1d": lambda f, y, g: list(call_op(
        "causal_conv1d_bwd", g[0], g[1], *f[:8], None, *f[9:], True, True, False))[:4] + [g[0]],
}


def _make_grad(info: dict):
    hook = _GRAD_HOOKS.get(info["name"])

    def grad(op, *grads):
        fwd = _forward_values(info, op)
        gout = [g if g is not None else tf.zeros_like(op.outputs[i])
                for i, (g, o) in enumerate(zip(grads, info["outs"])) if o["grad"]]
        if hook is not None:
            g = hook(fwd, op.outputs, gout)
        else:
            want = [v is not None for a, v in zip(info["args"], fwd)
                    if a["grad"] and a["type"] == "opt_tensor"]
            g = call_op(info["backward"], *gout, *fwd, *want)
            g = list(g) if isinstance(g, tuple) else [g]
        out, j = [], 0
        for a, v in zip(info["args"], fwd):
            if a["type"] not in ("tensor", "opt_tensor"):
                continue
            if a["grad"]:
                out.append(g[j] if v is not None else None)
                j += 1
            else:
                out.append(None)
        return out

    return grad


for _info in TABLE.values():
    if _info["backward"] or _info["name"] in _GRAD_HOOKS:
        tf.RegisterGradient(_info["tf_name"])(_make_grad(_info))


# ---- wrappers with recops' faces ---------------------------------------------------------------


class _Required:
    def __repr__(self):
        return "<required>"


_REQUIRED = _Required()


def _literal(s: str):
    """A schema or face default ("None", "True", "0.0", "-1") as a Python value."""
    return ast.literal_eval(s)


def _longest(offsets, t, dim):
    if offsets is None:
        return int(t.shape[dim])
    o = tf.convert_to_tensor(offsets)
    if int(tf.size(o)) <= 1:
        return 0
    return int(tf.reduce_max(o[1:] - o[:-1]))


def make_wrapper(info: dict):
    """A function with ``recops.<op>``'s parameters (as the table's Python faces shape them) that
    calls the TF op."""
    name = info["python_name"] or info["name"]
    args = info["args"]
    params, star = [], False
    P = inspect.Parameter
    plan = []  # (param name, kind, payload) -> how to produce the table values
    i = 0
    while i < len(args):
        a = args[i]
        face = a["py"]
        if (a["kw"] or face.get("kw")) and not star:
            star = True
        kind = P.KEYWORD_ONLY if star else P.POSITIONAL_OR_KEYWORD
        default = P.empty
        if "pair" in face:
            b = args[i + 1]
            pname = face["pair"]
            default = (_literal(a.get("def", "None")), _literal(b.get("def", "None")))
            plan.append((pname, "pair", (a, b)))
            i += 2
        else:
            pname = a["name"]
            if "names" in face:
                names = face["names"].split()
                default = names[_literal(a["def"])] if "def" in a else P.empty
                plan.append((pname, "names", (a, names)))
            else:
                plan.append((pname, "plain", (a,)))
                if "def" in face:
                    default = _literal(face["def"])
                elif "def" in a:
                    default = _literal(a["def"])
            i += 1
        if default is P.empty and any(p.default is not P.empty for p in params) and not star:
            default = _REQUIRED
        params.append(P(pname, kind, default=default))
    sig = inspect.Signature(params)
    rules = [(p[0], p[2][0]["py"]) for p in plan if p[1] == "plain"]

    def fn(*pos, **kw):
        bound = sig.bind(*pos, **kw)
        bound.apply_defaults()
        v = dict(bound.arguments)
        for pname, value in v.items():
            if value is _REQUIRED:
                raise TypeError(f"{name}() missing required argument: '{pname}'")
        for pname, face in rules:
            if "needed_with" in face and v[pname] is None and v.get(face["needed_with"]) is not None:
                raise ValueError(f"{name}: {face['why']}")
            rule = face.get("rule", "").split()
            if v[pname] is None and rule and rule[0] == "same":
                v[pname] = v[rule[1]]
            elif v[pname] is None and rule and rule[0] == "longest":
                v[pname] = _longest(v[rule[1]], v[rule[2]], int(rule[3]))
        values = []
        for pname, kind, payload in plan:
            if kind == "pair":
                p = v[pname]
                if not isinstance(p, (tuple, list)) or len(p) != 2:
                    raise ValueError(f"{name}: {pname}={p!r} must be a pair "
                                     f"({payload[0]['name']}, {payload[1]['name']}) of two ints")
                values += [p[0], p[1]]
            elif kind == "names":
                names = payload[1]
                if v[pname] not in names:
                    raise ValueError(f"{name}: {pname}={v[pname]!r}; expected one of "
                                     f"{sorted(names)}")
                values.append(names.index(v[pname]))
            else:
                values.append(v[pname])
        return call_op(info["name"], *values)

    fn.__signature__ = sig
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = inspect.cleandoc(info["doc"]) if info["doc"] else None
    fn.__module__ = __name__
    return fn


__all__ = ["call_op", "make_wrapper", "TABLE", "library_path"]
for _info in TABLE.values():
    if _info["python_name"] != "-":
        _fn = make_wrapper(_info)
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)
