"""The Python half of the op kit: a wrapper for every op the library registered.

The C++ registry (``torch.ops.recops._kit_ops()``) lists each op with its family, the Python name
of its wrapper, its docstring and the Python faces of its arguments (``kit::PyArg`` in
``src/core/kit/op_def.h``); the wrapper's signature comes from the op's schema, which the binding
generated from the op's argument table, changed where an argument has a face: another default or
keyword-only split, a string for an enum (``names``), one tuple for two ints (``pair``), a default
filled by a named rule (``rule``, see ``_RULES``). Each wrapper is a plain function (written out and
compiled once at import, so a call costs no argument binding) that calls
``torch.ops.recops.<op>``; autograd comes from the binding's Autograd kernel.

An op folder may add Python of its own: every ``*.py`` file in ``src/ops/<family>/<op>/``
(installed as ``recops/_ops/<family>/<op>/`` in a wheel) is imported after the generated
wrappers; the names in its ``__all__`` are exported from ``recops`` and replace a generated
wrapper of the same name.
"""

import ast
import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Dict, List

import torch

_HERE = Path(__file__).resolve().parent


def ops_dir() -> Path:
    """Where the op folders are: the wheel's ``recops/_ops`` or a source tree's ``src/ops``."""
    installed = _HERE / "_ops"
    if installed.is_dir():
        return installed
    return _HERE.parent.parent / "src" / "ops"


def op_table() -> List[dict]:
    """The registry's ops: ``name``, ``family``, ``python_name``, ``doc``, ``backward``."""
    return json.loads(torch.ops.recops._kit_ops())


_ANNOTATION = {
    "Tensor": "torch.Tensor",
    "Optional[Tensor]": "Optional[torch.Tensor]",
    "int": "int",
    "SymInt": "int",
    "Optional[int]": "Optional[int]",
    "Optional[SymInt]": "Optional[int]",
    "float": "float",
    "Optional[float]": "Optional[float]",
    "bool": "bool",
    "Optional[ScalarType]": "Optional[torch.dtype]",
}


def _annotation(arg) -> str:
    # real_type keeps ScalarType (type says int); SymInt is an int for callers.
    return _ANNOTATION.get(str(getattr(arg, "real_type", arg.type)), "object")


def _longest(offsets: torch.Tensor) -> int:
    """The longest sequence of ``[B+1]`` offsets (a data-dependent read)."""
    if offsets.numel() <= 1:
        return 0
    return int((offsets[1:] - offsets[:-1]).max())


# The named rules that fill a None (kit::PyArg::rule): name -> (arity, code of the value).
_RULES = {
    "same": (1, "{0}"),
    "longest": (3, "_longest({0}) if {0} is not None else {1}.size({2})"),
}


def _unnest(values, given_offsets, op: str, vname: str, oname: str):
    """(values, offsets, nested) from a torch.nested tensor of layout torch.jagged in ``values``
    (its values() and offsets()), or the arguments as given with nested None."""
    if not (isinstance(values, torch.Tensor) and values.is_nested):
        if given_offsets is None:
            raise ValueError(f"{op}: {oname} is required unless {vname} is a torch.nested tensor "
                             f"with layout=torch.jagged")
        return values, given_offsets, None
    if values.layout != torch.jagged:
        raise ValueError(f"{op}: {vname} is a torch.nested tensor of layout {values.layout}; "
                         f"only layout=torch.jagged is accepted")
    if given_offsets is not None:
        raise ValueError(f"{op}: {vname} is a torch.nested tensor, which carries its offsets; "
                         f"{oname} must be None")
    if getattr(values, "_ragged_idx", 1) != 1 or values._lengths is not None:
        raise ValueError(f"{op}: {vname} must be jagged in dim 1 and have no holes (lengths)")
    return values.values(), values.offsets(), values


def _optional(annotation: str) -> str:
    return annotation if annotation.startswith("Optional[") else f"Optional[{annotation}]"


def make_wrapper(info: dict):
    """A plain function with the schema's arguments and defaults, as the arguments' Python faces
    change them, that calls the op."""
    name = info["python_name"] or info["name"]
    packet = getattr(torch.ops.recops, info["name"])
    schema = packet.default._schema
    faces = info.get("py", {})
    params, call, defaults, checks, fills = [], [], {}, [], []
    scope = {"_op": packet.default, "_defaults": defaults, "_longest": _longest, "torch": torch,
             "_unnest": _unnest}
    rewrap = None  # the nested tensor argument whose offsets the (jagged) output takes
    star = False
    args = list(schema.arguments)
    for i, a in enumerate(args):
        face = faces.get(a.name, {})
        if i > 0 and "pair" in faces.get(args[i - 1].name, {}):
            continue  # the second of a pair: taken with the first
        if (a.kwarg_only or face.get("kw")) and not star:
            params.append("*")
            star = True
        pname, annotation = a.name, _annotation(a)
        if "pair" in face:
            b = args[i + 1]
            pname, annotation = face["pair"], "Tuple[int, int]"
            defaults[pname] = (a.default_value, b.default_value)
            checks.append(f"    if not isinstance({pname}, (tuple, list)) or len({pname}) != 2:\n"
                          f"        raise ValueError(f\"{name}: {pname}={{{pname}!r}} must be a "
                          f"pair ({a.name}, {b.name}) of two ints\")\n")
            call += [(a, f"{pname}[0]"), (b, f"{pname}[1]")]
        elif "names" in face:
            names = face["names"].split()
            annotation = "str"
            defaults[pname] = names[a.default_value]
            scope[f"_names_{pname}"] = {n: v for v, n in enumerate(names)}
            checks.append(f"    if {pname} not in _names_{pname}:\n"
                          f"        raise ValueError(f\"{name}: {pname}={{{pname}!r}}; "
                          f"expected one of {sorted(names)}\")\n")
            call.append((a, f"_names_{pname}[{pname}]"))
        else:
            call.append((a, pname))
            if "def" in face:
                defaults[pname] = ast.literal_eval(face["def"])
                if defaults[pname] is None:
                    annotation = _optional(annotation)
            elif a.has_default_value():
                defaults[pname] = a.default_value
        if "needed_with" in face:
            fills.append(f"    if {pname} is None and {face['needed_with']} is not None:\n"
                         f"        raise ValueError({name + ': ' + face['why']!r})\n")
        if "rule" in face and face["rule"].split()[0] in ("nested", "nested_out"):
            # "nested <values>": a torch.nested jagged tensor in <values> gives this offsets
            # argument; "nested_out": the output (jagged like <values>) is returned nested too.
            rule, vname = face["rule"].split()
            fills.append(f"    {vname}, {pname}, _nested = _unnest({vname}, {pname}, "
                         f"{name!r}, {vname!r}, {pname!r})\n")
            rewrap = rewrap or (rule == "nested_out")
        elif "rule" in face:
            rule, *operands = face["rule"].split()
            arity, code = _RULES[rule]
            assert len(operands) == arity, f"{info['name']}: rule {face['rule']!r}"
            fills.append(f"    if {pname} is None:\n"
                         f"        {pname} = {code.format(*operands)}\n")
        p = f"{pname}: {annotation}"
        if pname in defaults:
            p += f" = _defaults[{pname!r}]"
        elif any("=" in q for q in params) and not star:
            # After an argument a face made optional, Python wants a default. It is None, not a
            # sentinel object: torch.compile on torch 2.11 cannot compare a user-defined object
            # ("UserDefinedObjectVariable(_Required)"). An argument whose type admits None takes
            # None when left out; for any other, None (given or left out) is a TypeError.
            p += " = None"
            if not annotation.startswith("Optional["):
                checks.append(f"    if {pname} is None:\n        raise TypeError(\"{name}() "
                              f"missing required argument: '{pname}' (None is not a value for "
                              f"it)\")\n")
        params.append(p)
        if (str(a.type) == "Tensor" and not {"rule", "pair", "names"} & face.keys()
                and pname not in defaults and not p.endswith("= None")):
            # A required tensor given as None: say which, instead of the dispatcher's "no
            # fallback function is registered" (it finds no device to dispatch on).
            checks.append(f"    if {pname} is None:\n        raise TypeError(\"recops.{name}: "
                          f"{pname} must be a tensor, got None\")\n")
    call = [f"{a.name}={e}" if a.kwarg_only else e for a, e in call]
    ret = "torch.Tensor" if len(schema.returns) == 1 else "tuple"
    body = f"    return _op({', '.join(call)})\n"
    if rewrap:
        body = (f"    _out = _op({', '.join(call)})\n"
                f"    if _nested is None:\n        return _out\n"
                f"    return torch.nested.nested_tensor_from_jagged(_out, _nested.offsets())\n")
    src = (f"def {name}({', '.join(params)}) -> {ret}:\n" + "".join(checks) + "".join(fills) +
           body)
    typing = __import__("typing")
    exec(compile(src, f"<recops op {info['name']}>", "exec"),
         {"Optional": typing.Optional, "Tuple": typing.Tuple, **scope}, scope)
    fn = scope[name]
    fn.__doc__ = inspect.cleandoc(info["doc"]) if info["doc"] else None
    fn.__module__ = "recops"
    fn.__qualname__ = name
    return fn


def _op_modules() -> List[Path]:
    root = ops_dir()
    return sorted(p for p in root.glob("*/*/*.py")
                  if not p.name.startswith(("test", "_")) and not p.parent.name.startswith("_"))


def build() -> Dict[str, object]:
    """Every export of the package's op layer: generated wrappers, then the op folders' modules."""
    out: Dict[str, object] = {}
    for info in op_table():
        if info["python_name"] == "-":
            continue
        fn = make_wrapper(info)
        out[fn.__name__] = fn
    for path in _op_modules():
        family, op = path.parent.parent.name, path.parent.name
        modname = f"recops._ops.{family}.{op}.{path.stem}"
        spec = importlib.util.spec_from_file_location(modname, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        spec.loader.exec_module(mod)
        for n in getattr(mod, "__all__", []):
            out[n] = getattr(mod, n)
        # {name: f}: f(generated wrapper) replaces it, keeping its signature and doc (e.g.
        # inplace_rope_'s path for torch.compile on older torch).
        for n, extend in getattr(mod, "__extends__", {}).items():
            out[n] = extend(out[n])
    return out
