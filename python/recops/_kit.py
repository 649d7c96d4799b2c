"""The Python half of the op kit: a wrapper for every op the library registered.

The C++ registry (``torch.ops.recops._kit_ops()``) lists each op with its family, the Python name
of its wrapper and its docstring; the wrapper's signature comes from the op's schema, which the
binding generated from the op's argument table. Each wrapper is a plain function (written out and
compiled once at import, so a call costs no argument binding) that calls
``torch.ops.recops.<op>``; autograd comes from the binding's Autograd kernel.

An op folder may add Python of its own: every ``*.py`` file in ``src/ops/<family>/<op>/``
(installed as ``recops/_ops/<family>/<op>/`` in a wheel) is imported after the generated
wrappers; the names in its ``__all__`` are exported from ``recops`` and replace a generated
wrapper of the same name.
"""

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


def make_wrapper(info: dict):
    """A plain function with the schema's arguments and defaults that calls the op."""
    name = info["python_name"] or info["name"]
    packet = getattr(torch.ops.recops, info["name"])
    schema = packet.default._schema
    params, call, defaults = [], [], {}
    star = False
    for a in schema.arguments:
        if a.kwarg_only and not star:
            params.append("*")
            star = True
        p = f"{a.name}: {_annotation(a)}"
        if a.has_default_value():
            defaults[a.name] = a.default_value
            p += f" = _defaults[{a.name!r}]"
        params.append(p)
        call.append(f"{a.name}={a.name}" if a.kwarg_only else a.name)
    ret = "torch.Tensor" if len(schema.returns) == 1 else "tuple"
    src = (f"def {name}({', '.join(params)}) -> {ret}:\n"
           f"    return _op({', '.join(call)})\n")
    scope = {"_op": packet.default, "_defaults": defaults, "torch": torch}
    exec(compile(src, f"<recops op {info['name']}>", "exec"),
         {"Optional": __import__("typing").Optional, **scope}, scope)
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
    return out
