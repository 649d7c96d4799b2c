"""ONNX export of recops ops and ONNX Runtime sessions that run them.

Export: every op of the registry (``_kit.op_table()``, the tables the binding was generated from)
gets an ONNX op schema in the domain ``recops`` (version 1) and an onnxscript translation for
torch's dynamo exporter that emits one node ``recops::<op>``: the op's tensor arguments are the
node's inputs (a missing optional tensor is an empty input name), its non-tensor arguments are
attributes (int and bool as INT, float as FLOAT, a dtype as INT holding the ONNX element type, an
optional argument left out when None). The node's output types and shapes are in the model's
value_info (the exporter writes them from torch's fake tensors) and the schemas' inference runs
the op's Meta kernel when the input shapes are static.

Runtime: no PyPI or Debian (bookworm) package ships ONNX Runtime's C/C++ API headers, so the ops
are not a native ORT custom-op library; :func:`session` registers them through onnxruntime-
extensions' custom-op mechanism (PyOp), whose kernels call ``torch.ops.recops`` on CPU tensors
made with ``torch.from_numpy``. ONNX Runtime runs every other node; the recops nodes run in the
recops core (the CPU implementation, or the CUDA one with ``device="cuda"``).
"""

import functools
import json
import threading
from typing import Dict, List, Optional, Sequence

import numpy as np
import torch

from . import _kit

DOMAIN = "recops"
VERSION = 1

_TENSOR_TYPES = ["tensor(float)", "tensor(double)", "tensor(float16)", "tensor(bfloat16)",
                 "tensor(int64)", "tensor(int32)", "tensor(bool)", "tensor(uint8)",
                 "tensor(int8)"]

# torch dtype <-> ONNX TensorProto element type (the dtype attributes and the PyOp types).
_ONNX_OF_TORCH = {torch.float32: 1, torch.uint8: 2, torch.int8: 3, torch.int32: 6,
                  torch.int64: 7, torch.bool: 9, torch.float16: 10, torch.float64: 11,
                  torch.bfloat16: 16}
_TORCH_OF_ONNX = {v: k for k, v in _ONNX_OF_TORCH.items()}


def _kind(arg) -> str:
    """tensor, opt_tensor, int, float, bool, dtype (an argument's ONNX face), with ``opt_``
    where None is allowed."""
    t = str(getattr(arg, "real_type", arg.type))
    base = {"Tensor": "tensor", "Optional[Tensor]": "opt_tensor", "int": "int", "SymInt": "int",
            "Optional[int]": "opt_int", "Optional[SymInt]": "opt_int", "float": "float",
            "Optional[float]": "opt_float", "bool": "bool", "Optional[bool]": "opt_bool",
            "Optional[ScalarType]": "opt_dtype", "ScalarType": "dtype"}.get(t)
    if base is None:
        raise NotImplementedError(f"recops.onnx: argument {arg.name} of type {t} has no ONNX "
                                  f"form yet")
    return base


def _schema_of(op: str):
    return getattr(torch.ops.recops, op).default._schema


def op_args(op: str) -> List[tuple]:
    """(name, kind, default) of op's arguments in schema order; default is None when there is
    none (or it is None)."""
    out = []
    for a in _schema_of(op).arguments:
        out.append((a.name, _kind(a), a.default_value if a.has_default_value() else None))
    return out


def exportable_ops() -> List[str]:
    """The registry's ops that have an ONNX form: every op but the ones that write an argument
    in place (``inplace_rope_``: ONNX values are immutable; use ``inplace_rope_bwd``'s
    out-of-place rotation, or export the model before patching it in)."""
    names = []
    for info in _kit.op_table():
        try:
            op_args(info["name"])
        except NotImplementedError:
            continue
        if _schema_of(info["name"]).is_mutable:
            continue
        names.append(info["name"])
    return names


# ----------------------------------------------------------------------------------- schemas

class _NotInferable(Exception):
    pass


def _infer(op: str, ctx) -> None:
    """Output types and shapes from the op's Meta kernel, when every present input has a static
    shape. Otherwise it raises, so that the node's outputs keep the types they have (the
    exporter's, from torch's fake tensors): onnxscript's optimizer would replace them with an
    inferred type that has no element type."""
    import onnx

    kwargs, i = {}, 0
    for name, kind, default in op_args(op):
        if kind.endswith("tensor"):
            t = ctx.get_input_type(i) if i < ctx.get_num_inputs() else None
            i += 1
            if t is None or not t.HasField("tensor_type"):
                kwargs[name] = None
                continue
            tt = t.tensor_type
            if tt.elem_type not in _TORCH_OF_ONNX or not tt.HasField("shape") or \
                    any(not d.HasField("dim_value") for d in tt.shape.dim):
                raise _NotInferable(f"{op}: input {name} has no static shape")
            kwargs[name] = torch.empty([d.dim_value for d in tt.shape.dim],
                                       dtype=_TORCH_OF_ONNX[tt.elem_type], device="meta")
        else:
            a = ctx.get_attribute(name)
            kwargs[name] = _attr_to_torch(kind, None if a is None else
                                          onnx.helper.get_attribute_value(a), default)
    try:
        out = getattr(torch.ops.recops, op).default(**kwargs)
    except Exception as e:  # data-dependent shapes (offsets read on the host) or bad input
        raise _NotInferable(f"{op}: the Meta kernel cannot tell: {e}") from None
    for k, t in enumerate(out if isinstance(out, (tuple, list)) else (out,)):
        ctx.set_output_type(k, onnx.helper.make_tensor_type_proto(_ONNX_OF_TORCH[t.dtype],
                                                                  list(t.shape)))


def _attr_to_torch(kind: str, value, default):
    if value is None:
        return None if kind.startswith("opt_") else default
    if kind.endswith("dtype"):
        return _TORCH_OF_ONNX[int(value)]
    if kind.endswith("bool"):
        return bool(value)
    if kind.endswith("int"):
        return int(value)
    return float(value)


_registered = False
_lock = threading.Lock()


def register_schemas() -> None:
    """Registers an ONNX op schema ``recops::<op>`` (version 1) for every exportable op (once)."""
    global _registered
    import onnx.defs as defs

    with _lock:
        if _registered:
            return
        S = defs.OpSchema
        for op in exportable_ops():
            if defs.has(op, DOMAIN):
                continue
            inputs, attrs, constraints = [], [], []
            for name, kind, default in op_args(op):
                if kind.endswith("tensor"):
                    option = (S.FormalParameterOption.Optional if kind == "opt_tensor"
                              else S.FormalParameterOption.Single)
                    inputs.append(S.FormalParameter(name, f"T_{name}", param_option=option))
                    constraints.append((f"T_{name}", _TENSOR_TYPES, ""))
                else:
                    t = S.AttrType.FLOAT if kind.endswith("float") else S.AttrType.INT
                    required = default is None and not kind.startswith("opt_")
                    attrs.append(S.Attribute(name, t, "", required=required))
            outputs = []
            for k in range(len(_schema_of(op).returns)):
                outputs.append(S.FormalParameter(f"out{k}", f"O{k}"))
                constraints.append((f"O{k}", _TENSOR_TYPES, ""))
            schema = S(op, DOMAIN, VERSION, f"recops op {op} (see recops' docs)", inputs=inputs,
                       outputs=outputs, type_constraints=constraints, attributes=attrs)
            schema.set_type_and_shape_inference_function(
                lambda ctx, _op=op: _infer(_op, ctx))
            defs.register_schema(schema)
        _registered = True


# ------------------------------------------------------------------------------- translation

def _emit(op: str, values: dict):
    """One node recops::<op> from the exporter's arguments (tensors and Python scalars)."""
    import onnxscript

    opset = onnxscript.values.Opset(DOMAIN, VERSION)
    inputs, attrs = [], {}
    for name, kind, default in op_args(op):
        v = values[name]
        if kind.endswith("tensor"):
            inputs.append(v)
        elif v is not None:
            if isinstance(v, torch.dtype):
                v = _ONNX_OF_TORCH[v]
            if not isinstance(v, (int, float, bool)):
                raise ValueError(f"recops.onnx: {op}: argument {name} must be a constant "
                                 f"{kind.replace('opt_', '')} at export (got a traced "
                                 f"{type(v).__name__}, e.g. read from tensor data): pass it "
                                 f"as a Python number")
            attrs[name] = int(v) if kind.endswith(("int", "bool", "dtype")) else float(v)
    while inputs and inputs[-1] is None:
        inputs.pop()  # trailing missing optional inputs are left out
    n = len(_schema_of(op).returns)
    return getattr(opset, op)(*inputs, **attrs, _num_outputs=n) if n > 1 else \
        getattr(opset, op)(*inputs, **attrs)


def _translation(op: str):
    """A function with op's argument names (tensors unannotated, i.e. ONNX inputs; scalars
    without annotation too, so that None and dtypes pass) that emits the node."""
    # Every parameter has a default (the schema's, else None) so that an optional argument may
    # come before a required one; the exporter passes what the FX node holds.
    params = [f"{name}=_d[{name!r}]" for name, _, _ in op_args(op)]
    names = [a[0] for a in op_args(op)]
    src = (f"def {op}({', '.join(params)}):\n"
           f"    return _emit({op!r}, {{{', '.join(f'{n!r}: {n}' for n in names)}}})\n")
    scope = {"_emit": _emit, "_d": {n: d for n, _, d in op_args(op)}}
    exec(compile(src, f"<recops.onnx {op}>", "exec"), scope)
    return scope[op]


def translation_table() -> Dict:
    """{torch.ops.recops.<op>.default: translation} for torch.onnx.export's
    ``custom_translation_table``."""
    register_schemas()
    return {getattr(torch.ops.recops, op).default: _translation(op) for op in exportable_ops()}


def export(module, args, path, **kw):
    """Exports ``module`` called with ``args`` to the ONNX file ``path`` through
    ``torch.onnx.export(dynamo=True)``, each recops op as one node ``recops::<op>``. ``kw`` goes
    to torch.onnx.export (``custom_translation_table`` entries are added to recops'). Returns
    the ONNXProgram."""
    table = translation_table()
    table.update(kw.pop("custom_translation_table", None) or {})
    kw.setdefault("dynamo", True)
    if not kw["dynamo"]:
        raise ValueError("recops.onnx.export: dynamo=False is not supported (the recops "
                         "translations are for the dynamo exporter)")
    return torch.onnx.export(module, tuple(args) if isinstance(args, list) else args, path,
                             custom_translation_table=table, **kw)


# ------------------------------------------------------------------------------------ runtime

# onnxruntime-extensions 0.15 keeps its PyOps in a std::vector whose elements ONNX Runtime
# points at: registering one after a session exists can move them and crash a later session.
# So a fixed pool of PyOps ("recops_<i>") is registered once, before the first session, and
# each (op, input presence, element types, device) takes a slot for the life of the process:
# the slot's types and kernel are set on its PyCustomOpDef, which the PyOp reads when a
# session is made.
_SLOTS = 512
_pool: List[object] = []
_slot_of: Dict[str, object] = {}  # key -> the Opdef of its slot

# PyOp kernels exchange float32, float64, int32 and int64 only (onnxruntime-extensions 0.15
# refuses float16 at run time); other element types cross as a carrier type that holds every
# value exactly, with a Cast on each side in the graph, and the op runs in the true dtype.
_CARRIER = {1: 1, 11: 11, 6: 6, 7: 7, 10: 1, 16: 1, 9: 6, 2: 6, 3: 6}

# A Python exception that leaves a PyOp kernel aborts the process (onnxruntime-extensions
# 0.15 lets it cross a noexcept boundary), so a kernel records its error here, returns empty
# outputs, and Session.run raises it (one slot for the process: ORT may run a kernel on
# another thread than the caller's).
class _Errors:
    first = None


_errors = _Errors()


def _slot(key: str, kernel, in_types: Sequence[int], out_types: Sequence[int]):
    """The PyOp (an onnxruntime-extensions Opdef) that runs ``key``, set up on first use."""
    from onnxruntime_extensions import PyCustomOpDef
    from onnxruntime_extensions._ocos import Opdef

    with _lock:
        if not _pool:
            for i in range(_SLOTS):
                _pool.append(Opdef.create(_unused, op_type=f"recops_{i}", inputs=[],
                                          outputs=[PyCustomOpDef.dt_float],
                                          attrs={"recops_args": PyCustomOpDef.dt_string}))
        if key not in _slot_of:
            if len(_slot_of) == _SLOTS:
                raise RuntimeError(f"recops.onnx: more than {_SLOTS} distinct recops node "
                                   f"signatures in this process")
            opdef = _pool[len(_slot_of)]
            opdef._nativedef.input_types = [_pyop_type(_CARRIER[t]) for t in in_types]
            opdef._nativedef.output_types = [_pyop_type(_CARRIER[t]) for t in out_types]
            opdef.body = kernel
            _slot_of[key] = opdef
        return _slot_of[key]


def _unused(*args, **kwargs):
    raise RuntimeError("recops.onnx: a PyOp slot ran before it was given a kernel")


def _pyop_type(onnx_elem: int):
    from onnxruntime_extensions import PyCustomOpDef as P

    return {1: P.dt_float, 6: P.dt_int32, 7: P.dt_int64, 11: P.dt_double}[onnx_elem]


def _kernel(op: str, present: Sequence[bool], device: str, in_types: Sequence[int],
            out_types: Sequence[int]):
    def run(*arrays, recops_args):
        try:
            return body(*arrays, recops_args=recops_args)
        except BaseException as e:  # noqa: B036 (nothing may leave the kernel)
            with _lock:
                if _errors.first is None:
                    _errors.first = e
            outs = tuple(np.empty((0,), dtype=_numpy_dtype(_CARRIER[t])) for t in out_types)
            return outs if len(outs) > 1 else outs[0]

    def body(*arrays, recops_args):
        attrs = json.loads(recops_args)
        given = iter(zip(arrays, in_types))
        kwargs = {}
        tensors = [a for a in op_args(op) if a[1].endswith("tensor")]
        for (name, _, _), here in zip(tensors, present):
            if here:
                array, t = next(given)
                kwargs[name] = torch.from_numpy(np.ascontiguousarray(array)).to(
                    device=device, dtype=_TORCH_OF_ONNX[t])
            else:
                kwargs[name] = None
        for name, kind, default in op_args(op):
            if not kind.endswith("tensor"):
                kwargs[name] = _attr_to_torch(kind, attrs.get(name), default)
        with torch.no_grad():
            out = getattr(torch.ops.recops, op).default(**kwargs)
        outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        res = tuple(o.to(_TORCH_OF_ONNX[_CARRIER[t]]).cpu().numpy()
                    for o, t in zip(outs, out_types))
        return res if len(res) > 1 else res[0]

    return run


def _numpy_dtype(onnx_elem: int):
    return torch.empty(0, dtype=_TORCH_OF_ONNX[onnx_elem]).numpy().dtype


def _value_types(graph) -> Dict[str, int]:
    types = {}
    for v in list(graph.input) + list(graph.output) + list(graph.value_info):
        if v.type.HasField("tensor_type"):
            types[v.name] = v.type.tensor_type.elem_type
    for t in graph.initializer:
        types[t.name] = t.data_type
    return types


def to_runtime_model(model, device: str = "cpu"):
    """A copy of ``model`` whose recops nodes are onnxruntime-extensions PyOps (domain
    ai.onnx.contrib; one slot per op, input presence, element types and device; the attributes
    as one JSON string ``recops_args``), their kernels set up in this process; inputs and
    outputs of a type PyOps cannot carry go through Casts."""
    import onnx
    from onnx import helper
    from onnxruntime_extensions import default_opset_domain

    model = onnx.ModelProto.FromString(model.SerializeToString())
    if any(n.domain == DOMAIN for f in model.functions for n in f.node):
        raise NotImplementedError("recops.onnx: recops nodes inside model functions")
    graph = model.graph
    types = _value_types(graph)
    contrib = default_opset_domain()
    known = set(exportable_ops())
    nodes = []
    for node in graph.node:
        if node.domain != DOMAIN:
            nodes.append(node)
            continue
        op = node.op_type
        if op not in known:
            raise ValueError(f"recops.onnx: node {node.name!r}: {op} is no recops op here")
        n_tensors = sum(1 for a in op_args(op) if a[1].endswith("tensor"))
        present = [bool(n) for n in list(node.input) + [""] * (n_tensors - len(node.input))]
        for n in list(node.input) + list(node.output):
            if n and n not in types:
                raise ValueError(f"recops.onnx: node {node.name!r} ({op}): {n!r} has no type "
                                 f"in the model (export it with recops.onnx.export)")
            if n and types[n] not in _CARRIER:
                raise NotImplementedError(f"recops.onnx: node {node.name!r} ({op}): {n!r} has "
                                          f"element type {types[n]}, which no carrier holds")
        in_types = [types[n] for n in node.input if n]
        out_types = [types[n] for n in node.output]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        key = "{}__{}__{}__{}__{}".format(op, "".join("1" if p else "0" for p in present),
                                          "_".join(map(str, in_types)),
                                          "_".join(map(str, out_types)), device)
        slot = _slot(key, _kernel(op, present, device, in_types, out_types), in_types,
                     out_types)
        ins, outs, after = [], [], []
        for n in (n for n in node.input if n):
            if _CARRIER[types[n]] != types[n]:
                nodes.append(helper.make_node("Cast", [n], [n + "__recops_carrier"],
                                              to=_CARRIER[types[n]]))
                n = n + "__recops_carrier"
            ins.append(n)
        for n in node.output:
            if _CARRIER[types[n]] != types[n]:
                after.append(helper.make_node("Cast", [n + "__recops_carrier"], [n],
                                              to=types[n]))
                n = n + "__recops_carrier"
            outs.append(n)
        nodes.append(helper.make_node(slot.op_type, ins, outs, name=node.name, domain=contrib,
                                      recops_args=json.dumps(attrs)))
        nodes.extend(after)
    del graph.node[:]
    graph.node.extend(nodes)
    if not any(o.domain == contrib for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid(contrib, 1))
    return model


@functools.lru_cache(maxsize=None)
def _session_class():
    import onnxruntime as ort

    class Session(ort.InferenceSession):
        """An InferenceSession whose run() raises the first error of a recops kernel (the
        kernels cannot raise through ONNX Runtime)."""

        def run(self, *args, **kwargs):
            _errors.first = None
            try:
                out = super().run(*args, **kwargs)
            except Exception as e:
                err, _errors.first = _errors.first, None
                if err is not None:
                    raise err from e
                raise
            err, _errors.first = _errors.first, None
            if err is not None:
                raise err
            return out

    return Session


def session(path, providers: Optional[list] = None, device: str = "cpu", **kw):
    """An ``onnxruntime.InferenceSession`` of the ONNX file (or ModelProto) ``path`` with the
    recops ops registered: ``providers`` as ONNX Runtime takes them (default CPU); the recops
    nodes run in the recops core on ``device`` ("cpu", or "cuda" for the CUDA kernels; data
    crosses to the host between nodes). ``kw`` goes to InferenceSession."""
    import onnx
    import onnxruntime as ort
    from onnxruntime_extensions import get_library_path

    model = path if isinstance(path, onnx.ModelProto) else onnx.load(str(path))
    model = to_runtime_model(model, device)
    so = kw.pop("sess_options", None) or ort.SessionOptions()
    so.register_custom_ops_library(get_library_path())
    return _session_class()(model.SerializeToString(), so,
                                providers=providers or ["CPUExecutionProvider"], **kw)
