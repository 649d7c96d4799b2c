"""Deterministic test inputs shared with the C++ side (docs/cases.md).

Every generated number is a stateless hash of ``(seed, index)``; the functions here reproduce
``src/core/hash_rng.h`` and the CLI's generators (``tools/recops/gen.cpp``) bit for bit, so a case
of ``src/ops/<op>/cases.yaml`` gives the same tensors in pytest, ``recops check`` and the C++ tests.

``sample_inputs(op, device, requires_grad)`` turns an op's ``cases.yaml`` into ``SampleInput``
objects (args, kwargs and the case they came from) for correctness tests, ``opcheck`` and
``gradcheck``, for every op the library registered:

- the two jagged conversions and the three cumsums are built here (``build_sample``), strided
  inputs (``row_pad``) included;
- every other op's samples are the inputs the CLI itself generated: ``recops record --backend cpu
  --op <op>`` runs once per op and process (into a temporary directory; the CLI is
  ``$RECOPS_BIN``, the package's ``recops/bin/recops``, a source tree's ``build/bin/recops`` or a
  ``recops`` on PATH, see ``cli_binary``) and its safetensors are mapped onto the op's schema:
  tensors by argument name, scalars from the manifest's ``args`` (the values the case states
  under the argument's name), else the schema default. Strided inputs come back contiguous
  (the recording stores the logical values), so those samples do not exercise strides. A row
  that cannot be mapped is left out with its reason in ``sample_gaps(op)``; each sample keeps
  the CLI's outputs (``recorded_outputs(sample)``; ``recorded_pairs(sample, outs)`` matches
  them to an op's outputs by name). ``max_cases=N`` records and samples only the first N
  valid cases of the file (an op with 100 cases takes seconds to record);
  ``tests/python/test_testing.py`` checks that torch reproduces the CLI's outputs bit for bit
  on every sample, which is what makes the mapping trustworthy.

``error_inputs(op, device)`` gives the cases with ``expect_error`` (the conversions and cumsums;
the other ops' refusals are checked by ``recops check`` and their op folders' tests).

Testing an integration of your own (a wrapper, an exporter, another framework) on every op::

    from recops import testing
    for op in testing.registered_ops():
        for s in testing.sample_inputs(op, max_cases=3):
            want = testing.call(s)                     # torch.ops.recops.<op>(*s.args, **s.kwargs)
            got = my_integration(op, *testing.schema_values(s))   # schema order, None if absent
            compare(got, want)                         # e.g. testing.assert_accurate per output
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import json
import math
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import torch

from . import _kit

_M64 = (1 << 64) - 1

# ---- hash_rng.h ------------------------------------------------------------------------------


def hash64(seed: int, i: int) -> int:
    """SplitMix64 finaliser over (seed, i), as ``recops::core::hash64``."""
    z = (seed * 0x9E3779B97F4A7C15 + i + 0x632BE59BD9B4E019) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def hash64_array(seed: int, idx: np.ndarray) -> np.ndarray:
    """``hash64(seed, i)`` for every i of an integer array (uint64 arithmetic wraps mod 2^64)."""
    i = np.asarray(idx, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64((seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _M64) + i
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def uniform01(seed: int, i):
    """Uniform in [0, 1) with 53 random bits; i an int or an integer array."""
    if isinstance(i, (int, np.integer)):
        return (hash64(seed, int(i)) >> 11) * (1.0 / 9007199254740992.0)
    return (hash64_array(seed, i) >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def uniform_int(seed: int, i, lo: int, hi: int):
    """Integer uniform in [lo, hi] (inclusive); i an int or an integer array."""
    span = (hi - lo + 1) & _M64
    if isinstance(i, (int, np.integer)):
        h = hash64(seed, int(i))
        return lo + (h if span == 0 else h % span)
    h = hash64_array(seed, i)
    r = h if span == 0 else h % np.uint64(span)
    # lo + r in exact integers (r < span fits int64 whenever the result does).
    return r.astype(np.int64) + np.int64(lo)


def tensor_seed(case_seed: int, k: int) -> int:
    """Seed of a case's tensor in slot k (0 = lengths, 1 = first data input, ...)."""
    return hash64(case_seed, 0x1000 + k)


# ---- dtypes ------------------------------------------------------------------------------------

DTYPES = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp8_e4m3": torch.float8_e4m3fn,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}

# (explicit mantissa bits, exponent of the smallest normal) of each binary format.
_FORMATS = {"fp64": (52, -1022), "fp32": (23, -126), "fp16": (10, -14), "bf16": (7, -126),
            "fp8_e4m3": (3, -6)}


def round_to_dtype(x: np.ndarray, name: str) -> np.ndarray:
    """Rounds float64 values to the format ``name`` once, to nearest even (as dtype.h does; a
    cast through float32 would round twice). Returns float64 values exactly representable in it.
    Generated values never reach the formats' overflow range."""
    if name == "fp64":
        return x
    mant, emin = _FORMATS[name]
    _, e = np.frexp(x)  # x = m * 2^e, 0.5 <= |m| < 1: the leading bit is 2^(e-1)
    q = np.exp2(np.maximum(e - 1, emin) - mant)  # spacing of the format around x
    return np.rint(x / q) * q


def generate_values(shape, name: str, seed: int, scale: float = 1.0,
                    value_range: Optional[tuple] = None) -> torch.Tensor:
    """A CPU tensor of dtype ``name`` whose element i (row-major) is the docs/cases.md value."""
    n = int(np.prod(shape)) if len(shape) else 1
    idx = np.arange(n, dtype=np.uint64)
    if name in ("fp64", "fp32", "fp16", "bf16"):
        v = round_to_dtype((uniform01(seed, idx) * 2.0 - 1.0) * scale, name)
    elif name == "fp8_e4m3":
        v = round_to_dtype((uniform01(seed, idx) * 2.0 - 1.0) * 8.0, name)
    elif name in ("int32", "int64"):
        lo, hi = value_range if value_range is not None else (-1000, 1000)
        return torch.from_numpy(uniform_int(seed, idx, lo, hi)).to(DTYPES[name]).reshape(shape)
    elif name == "uint8":
        return torch.from_numpy(uniform_int(seed, idx, 0, 255)).to(torch.uint8).reshape(shape)
    elif name == "bool":
        return torch.from_numpy((hash64_array(seed, idx) & np.uint64(1)).astype(np.bool_)).reshape(shape)
    else:
        raise ValueError(f"unknown dtype '{name}'")
    t = torch.from_numpy(v)
    if name in ("fp32", "fp16", "bf16", "fp8_e4m3"):
        t = t.to(torch.float32)  # exact: every value is representable in the target format
    return t.to(DTYPES[name]).reshape(shape)


def rowpadded_values(lead, E, name: str, case_seed: int, slot: int, row_pad: int = 0,
                     scale: float = 1.0, value_range=None) -> torch.Tensor:
    """A ``[*lead, *E]`` input whose rows are ``D + row_pad`` elements apart (a strided view when
    row_pad > 0), filled like the CLI's make_rowpadded_input: the padding holds values of another
    stream (slot + 100) so a kernel that reads it gives wrong results."""
    D = int(np.prod(E)) if len(E) else 1
    rows = int(np.prod(lead)) if len(lead) else 1
    view = generate_values(tuple(lead) + tuple(E), name, tensor_seed(case_seed, slot), scale,
                           value_range)
    if row_pad == 0:
        return view
    width = D + row_pad
    buf = generate_values((rows, width), name, tensor_seed(case_seed, 100 + slot), scale,
                          value_range)
    buf[:, :D] = view.reshape(rows, D)
    return buf.as_strided(tuple(lead) + tuple(E), _rowpadded_strides(lead, E, width))


def _rowpadded_strides(lead, E, width):
    strides = [0] * (len(lead) + len(E))
    s = 1
    for i in range(len(lead) + len(E) - 1, len(lead) - 1, -1):
        strides[i] = s
        s *= max(int(E[i - len(lead)]), 1)
    s = width
    for i in range(len(lead) - 1, -1, -1):
        strides[i] = s
        s *= max(int(lead[i]), 1)
    return tuple(strides)


# ---- the accuracy standard (docs/spec/accuracy.md) -----------------------------------------------

# T per output dtype; fp64 outputs are held to fp32's threshold.
ACCURACY_T = {torch.float64: 2.0**-13, torch.float32: 2.0**-13, torch.float16: 2.0**-10,
              torch.bfloat16: 2.0**-7}


def _errors(out: np.ndarray, gold: np.ndarray) -> tuple:
    """(max-abs, relative L2) over the elements whose golden is finite."""
    f = np.isfinite(gold)
    if not f.any():
        return 0.0, 0.0
    d = np.abs(out[f] - gold[f])
    g2 = float(np.sum(gold[f] ** 2))
    return float(d.max()), float(math.sqrt(float(np.sum(d**2)) / g2)) if g2 > 0 else float(
        math.sqrt(float(np.sum(d**2))))


def assert_accurate(out, gold, dtype, *, plain=None, small=None, name: str = "output") -> None:
    """Judges `out` against the fp64 `gold` by the accuracy standard, for outputs of `dtype`.

    Always: the non-finite pattern must match (NaN where the golden is NaN, the same Inf).
    Without `plain`, the `single` standard: rel_i = |out − gold| / max(|gold|, small),
    mean(rel) <= T, max(rel) <= 10·T, and |out − gold| <= T·small where |gold| < small (`small`
    defaults to the dtype's smallest normal times max|gold|). With `plain` (the same function
    computed plainly at the same precision), the `double` standard:
    err(out) <= 2·err(plain) + T/8 for the max-abs and the relative L2 error alike.
    """
    T = ACCURACY_T[dtype]
    o = out.detach().double().cpu().numpy().ravel()
    g = gold.detach().double().cpu().numpy().ravel()
    assert o.shape == g.shape, f"{name}: {o.shape} vs golden {g.shape}"
    bad = ((np.isnan(g) != np.isnan(o)) | (np.isinf(g) & (o != g))
           | (np.isfinite(g) & ~np.isfinite(o)))
    assert not bad.any(), (f"{name}: non-finite pattern differs from the golden at "
                           f"{np.flatnonzero(bad)[:8].tolist()}")
    if plain is not None:
        p = plain.detach().double().cpu().numpy().ravel()
        (ma, rl), (pma, prl) = _errors(o, g), _errors(p, g)
        assert ma <= 2 * pma + T / 8, f"{name}: max-abs {ma:.3g} > 2·{pma:.3g} + T/8 (T={T:.3g})"
        assert rl <= 2 * prl + T / 8, f"{name}: rel L2 {rl:.3g} > 2·{prl:.3g} + T/8 (T={T:.3g})"
        return
    f = np.isfinite(g)
    if not f.any():
        return
    o, g = o[f], g[f]
    if small is None:
        small = float(torch.finfo(dtype).tiny) * max(float(np.abs(g).max()), 1.0)
    tiny = np.abs(g) < small
    d = np.abs(o - g)
    assert not (d[tiny] > T * small).any(), f"{name}: abs error above T·small where |gold| < small"
    rel = d[~tiny] / np.abs(g[~tiny])
    if rel.size:
        assert rel.mean() <= T, f"{name}: mean rel {rel.mean():.3g} > T={T:.3g}"
        assert rel.max() <= 10 * T, f"{name}: max rel {rel.max():.3g} > 10·T={10 * T:.3g}"


# ---- lengths -----------------------------------------------------------------------------------


def _round_half_away(x: float) -> float:
    r = math.floor(x)
    return r + 1.0 if x - r >= 0.5 else r  # std::round for x >= 0


def make_lengths(spec, case_seed: int) -> list:
    """The lengths of a case: an explicit list, or ``{gen, B, max | lo, hi}`` (docs/cases.md)."""
    if isinstance(spec, (list, tuple)):
        return [int(v) for v in spec]
    gen, B = spec["gen"], int(spec["B"])
    mx = int(spec.get("max", 0))
    s = tensor_seed(case_seed, 0)
    if gen == "uniform":
        if mx <= 0:
            return [0] * B
        return [int(v) for v in uniform_int(s, np.arange(B, dtype=np.uint64), 0, mx - 1)]
    if gen == "skewed":
        if mx <= 0:
            return [0] * B
        out = []
        mu = math.log(mx / 4.0)
        for b in range(B):
            u1, u2 = uniform01(s, 2 * b), uniform01(s, 2 * b + 1)
            z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
            x = _round_half_away(math.exp(mu + z))
            out.append(int(min(2.0 * mx, x)))
        return out
    if gen == "empty":
        return [0] * B
    if gen == "all_max":
        return [mx] * B
    if gen == "range":
        return [int(v) for v in uniform_int(s, np.arange(B, dtype=np.uint64), int(spec["lo"]), int(spec["hi"]))]
    raise ValueError(f"unknown length generator '{gen}'")


def offsets_from_lengths(lengths) -> list:
    out = [0]
    for v in lengths:
        out.append(out[-1] + int(v))
    return out


# ---- case files --------------------------------------------------------------------------------

# The op folders: a source tree's src/ops, or the wheel's recops/_ops (the case files are package
# data), whichever this package was loaded from (python/recops/_kit.py).
OPS_DIR = _kit.ops_dir()

# The op folder of each op whose samples are built here (the cumsum family shares one); the other
# ops' folders are found by their case files (_folder_of).
OP_FOLDER = {
    "jagged_to_padded_dense": "jagged/jagged_to_padded_dense",
    "dense_to_jagged": "jagged/dense_to_jagged",
    "complete_cumsum": "jagged/cumsum",
    "exclusive_cumsum": "jagged/cumsum",
    "inclusive_cumsum": "jagged/cumsum",
}
DEFAULT_DTYPE = {"jagged_to_padded_dense": "fp32", "dense_to_jagged": "fp32",
                 "complete_cumsum": "int64", "exclusive_cumsum": "int64",
                 "inclusive_cumsum": "int64"}


@dataclasses.dataclass
class SampleInput:
    op: str
    case_id: str
    args: tuple
    kwargs: dict
    case: dict
    dtype: str
    offsets_dtype: Optional[str]
    out_dtype: Optional[str]
    # Samples from `recops record` (every op but the five built here): the recording's manifest
    # entry and its directory (recorded_outputs reads the CLI's outputs from them).
    record: Optional[dict] = None
    record_dir: Optional[str] = None

    @property
    def name(self) -> str:
        parts = [self.op, self.case_id, self.dtype]
        if self.op in ("jagged_to_padded_dense", "dense_to_jagged") or (
                self.record is not None and self.offsets_dtype):
            parts.append(self.offsets_dtype)
        if self.out_dtype:
            parts.append("out_" + self.out_dtype)
        return "-".join(parts)

    def __repr__(self) -> str:  # pytest ids
        return self.name


@functools.lru_cache(maxsize=None)
def load_cases(op: str) -> dict:
    """The parsed ``cases.yaml`` of op's folder (cached; do not modify the result)."""
    import yaml

    path = OPS_DIR / _folder_of(op) / "cases.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"recops.testing: {op}'s case file {path} is missing")
    with open(path) as f:
        doc = yaml.safe_load(f)
    if not isinstance(doc, dict) or "cases" not in doc:
        raise ValueError(f"{path}: expected a mapping with `op` and `cases`")
    return doc


def _as_list(v, default):
    if v is None:
        return list(default)
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _number(v) -> float:
    if isinstance(v, str):
        return {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}[v.strip().lower()]
    return float(v)


def case_rows(op: str, *, include_large: bool = False) -> Iterator[tuple]:
    """(case, dtype, offsets_dtype, out_dtype) rows of op's case file, one per expanded
    combination, in file order; `large` cases only when asked. A case without `dtype` gives the
    op's default dtype for the five ops built here, None (the CLI driver's default) for the
    others."""
    doc = load_cases(op)
    file_op = doc.get("op")
    for case in doc["cases"]:
        ops = _as_list(case.get("op"), [file_op])
        if op not in ops:
            continue
        if not include_large and "large" in (case.get("tags") or []):
            continue
        for dt in _as_list(case.get("dtype"), [DEFAULT_DTYPE.get(op)]):
            for odt in _as_list(case.get("offsets_dtype"), ["int64"]):
                for outdt in _as_list(case.get("out_dtype"), [None]):
                    yield case, dt, odt, outdt


def _offsets(case, odt, device) -> tuple:
    seed = int(case.get("seed", 0))
    if "lengths" in case:
        offs = offsets_from_lengths(make_lengths(case["lengths"], seed))
    else:
        offs = [int(v) for v in case["offsets"]]
    t = torch.tensor(offs, dtype=DTYPES[odt])
    if "offsets_shape" in case:
        t = t.reshape([int(s) for s in case["offsets_shape"]])
    return t.to(device), offs


def build_sample(op: str, case: dict, dt: str, odt: str, outdt, device="cpu",
                 requires_grad: bool = False) -> SampleInput:
    """The inputs of one case row, generated as the CLI does."""
    seed = int(case.get("seed", 0))
    scale = float(case.get("scale", 1.0))
    rng = tuple(case["range"]) if "range" in case else None
    row_pad = int(case.get("row_pad", 0))
    E = [int(e) for e in case.get("E", [])]
    grad = requires_grad and DTYPES[dt].is_floating_point and dt != "fp8_e4m3"
    if op == "jagged_to_padded_dense":
        off, offs = _offsets(case, odt, device)
        total_L = int(case["total_L"]) if "total_L" in case else (offs[-1] if offs else 0)
        values = rowpadded_values([total_L], E, dt, seed, 1, row_pad, scale, rng).to(device)
        values.requires_grad_(grad)
        kwargs = {}
        if "padding_value" in case:
            kwargs["padding_value"] = _number(case["padding_value"])
        args = (values, off, int(case["max_seq_len"]))
        return SampleInput(op, case["id"], args, kwargs, case, dt, odt, None)
    if op == "dense_to_jagged":
        off, offs = _offsets(case, odt, device)
        B = max(0, len(offs) - 1)
        S = int(case["S"]) if "S" in case else max(
            [offs[b + 1] - offs[b] for b in range(B)], default=0)
        dense = rowpadded_values([B, S], E, dt, seed, 1, row_pad, scale, rng).to(device)
        dense.requires_grad_(grad)
        kwargs = {}
        if "total_L" in case:
            kwargs["total_L"] = int(case["total_L"])
        return SampleInput(op, case["id"], (dense, off), kwargs, case, dt, odt, None)
    # cumsum family
    shape = [int(s) for s in case["shape"]]
    lead, last = shape[:-1], shape[-1:]
    t = rowpadded_values(lead, last, dt, seed, 1, row_pad, scale, rng).to(device)
    kwargs = {}
    if outdt is not None:
        kwargs["out_dtype"] = DTYPES[outdt]
    return SampleInput(op, case["id"], (t,), kwargs, case, dt, odt, outdt)


def _backend_ok(case, device) -> bool:
    backends = case.get("backends")
    return not backends or torch.device(device).type in backends


def binding_repairs(case: dict) -> bool:
    """Cases the C++ entry refuses for a layout the binding fixes by copying once (jagged_ops.md
    §1.3: inputs whose trailing dims are not dense are made contiguous); through the binding
    they are valid samples."""
    text = str(case.get("expect_error", "")).lower()
    return "contiguous" in text or "last stride" in text


# ---- every other op: the inputs `recops record` wrote ----------------------------------------


@functools.lru_cache(maxsize=None)
def _case_files() -> Dict[str, str]:
    """{op: its folder under OPS_DIR} for every op a case file names (its `op`, or a case's)."""
    import yaml

    folders = {}
    for path in sorted(OPS_DIR.glob("*/*/cases.yaml")):
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
        folder = str(path.parent.relative_to(OPS_DIR))
        names = [doc.get("op")] + [o for c in doc.get("cases") or []
                                   for o in _as_list(c.get("op"), [])]
        for name in names:
            if name:
                folders.setdefault(name, folder)
    return folders


def _folder_of(op: str) -> str:
    if op in OP_FOLDER:
        return OP_FOLDER[op]
    if op not in _case_files():
        raise KeyError(f"recops.testing: no case file under {OPS_DIR} names op '{op}'")
    return _case_files()[op]


def registered_ops() -> List[str]:
    """Every op the library registered (``torch.ops.recops.<op>``), in the registry's order."""
    return [info["name"] for info in _kit.op_table()]


def cli_binary() -> Optional[str]:
    """The ``recops`` CLI that records the samples: ``$RECOPS_BIN``, the package's
    ``recops/bin/recops``, a source tree's ``build/bin/recops``, or a ``recops`` on PATH; None
    when there is none."""
    here = Path(__file__).resolve().parent
    for cand in (os.environ.get("RECOPS_BIN"), here / "bin" / "recops",
                 here.parent.parent / "build" / "bin" / "recops", shutil.which("recops")):
        if cand and Path(cand).is_file() and os.access(cand, os.X_OK):
            return str(cand)
    return None


_TMP: List[str] = []


def _tmp_root() -> Path:
    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="recops-samples-"))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return Path(_TMP[0])


@functools.lru_cache(maxsize=None)
def _recording(op: str, include_large: bool, case_ids: Optional[tuple] = None) -> tuple:
    """(directory, manifest entries of op, the CLI's failed rows or None) of ``recops record
    --backend cpu --op <op>`` (only the cases ``case_ids`` when given), run once per arguments
    and process. No entries when op has no recordable case."""
    binary = cli_binary()
    if binary is None:
        raise RuntimeError(f"recops.testing: the samples of {op} are the inputs the recops CLI "
                           f"generates, and there is no CLI: build it (build/bin/recops) or set "
                           f"RECOPS_BIN")
    out = _tmp_root() / f"{op}-{len(os.listdir(_tmp_root()))}"
    cmd = [binary, "record", "--backend", "cpu", "-q", "--op", op, "--out", str(out),
           "--cases-dir", str(OPS_DIR)] + ([] if include_large else ["--quick"])
    if case_ids is not None:
        if not case_ids:
            return str(out), [], None
        cmd += ["--case", ",".join(case_ids)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    manifest = out / "manifest.json"
    if "no cases selected" in r.stderr:
        return str(out), [], None
    if not manifest.is_file():
        raise RuntimeError(f"recops.testing: `{' '.join(cmd)}` failed ({r.returncode}): "
                           f"{(r.stderr or r.stdout).strip()[-2000:]}")
    entries = json.loads(manifest.read_text())["cases"]
    # Exit status 1: some rows failed in the CLI (listed with ERROR in its table).
    errors = None if r.returncode == 0 else \
        [line.strip() for line in r.stdout.splitlines() if "ERROR" in line][:5]
    return str(out), [e for e in entries if e["op"] == op], errors


def _safetensors_shapes(path: str) -> Dict[str, list]:
    """{name: shape} from a safetensors file's header (without allocating the tensors)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def _overflows(shape) -> bool:
    span = 1
    for d in shape:
        span *= max(int(d), 1)
    return span > 2**63 - 1


def _arg_type(a) -> str:
    return str(getattr(a, "real_type", a.type))


def _scalar(a, v):
    """A recorded or case value as argument a's Python type."""
    t = _arg_type(a)
    if v is None:
        return None
    if t.endswith("ScalarType]") or t == "ScalarType":
        return DTYPES[v] if isinstance(v, str) else v
    if t.endswith("bool]") or t == "bool":
        return bool(v)
    if t.endswith(("int]", "SymInt]")) or t in ("int", "SymInt"):
        return int(v)
    return _number(v)


@functools.lru_cache(maxsize=None)
def _grad_args(op: str) -> frozenset:
    for info in _kit.op_table():
        if info["name"] == op:
            return frozenset(info.get("grad", []))
    return frozenset()


def _recorded_sample(op: str, d: str, e: dict, case: dict, device, requires_grad: bool):
    """(SampleInput, None) for one manifest entry, or (None, the reason it cannot be one)."""
    from safetensors.torch import load_file

    path = os.path.join(d, e["inputs"])
    shapes = _safetensors_shapes(path)
    if any(_overflows(s) for s in shapes.values()):
        return None, "an input's contiguous strides overflow int64 (torch cannot hold it)"
    if any(_overflows(s) for s in _safetensors_shapes(os.path.join(d, e["outputs"])).values()):
        return None, "an output's contiguous strides overflow int64 (torch cannot hold it)"
    tensors = load_file(path)
    given = e.get("args") or {}
    args, kwargs = [], {}
    grads = _grad_args(op) if requires_grad else frozenset()
    for a in getattr(torch.ops.recops, op).default._schema.arguments:
        t = _arg_type(a)
        if t in ("Tensor", "Optional[Tensor]"):
            v = tensors.get(a.name)
            if v is None and t == "Tensor":
                return None, f"the recording has no tensor '{a.name}'"
            if v is not None:
                v = v.to(device)
                if a.name in grads and v.dtype.is_floating_point and \
                        v.dtype != torch.float8_e4m3fn:
                    v.requires_grad_(True)
        elif a.name in given:
            v = _scalar(a, given[a.name])
        elif isinstance((case.get("args") or {}).get(a.name), (bool, int, float, str)):
            v = _scalar(a, case["args"][a.name])  # a CLI older than the manifest's `args`
        elif a.has_default_value():
            v = a.default_value
        else:
            return None, f"no value for the required argument '{a.name}'"
        if a.kwarg_only:
            kwargs[a.name] = v
        else:
            args.append(v)
    s = SampleInput(op, e["case"], tuple(args), kwargs, case, e["dtype"],
                    e.get("offsets_dtype"), e.get("out_dtype"), record=e, record_dir=d)
    return s, None


def _first_cases(op: str, include_large: bool, n: int) -> tuple:
    """The ids of the first n cases of op's file that record valid rows."""
    ids = []
    for case, *_ in case_rows(op, include_large=include_large):
        if len(ids) == n:
            break
        if "expect_error" in case or "out_shape" in case or case["id"] in ids or \
                not _backend_ok(case, "cpu"):
            continue
        ids.append(case["id"])
    return tuple(ids)


def _recorded_samples(op: str, device, requires_grad: bool, include_large: bool,
                      max_cases: Optional[int] = None) -> tuple:
    """([SampleInput], [(row name, reason)]) of op's recorded rows on ``device``."""
    if op not in _case_files():
        return [], [(op, "no case file names this op (e.g. an alias or a helper of another "
                         "op's cases)")]
    ids = None if max_cases is None else _first_cases(op, include_large, max_cases)
    d, entries, errors = _recording(op, include_large, ids)
    cases = {c["id"]: c for c in load_cases(op)["cases"]}
    out, gaps = [], [(op, f"recops record failed on rows: {e}") for e in errors or []]
    for e in entries:
        case = cases.get(e["case"], {"id": e["case"]})
        if "out_shape" in case or not _backend_ok(case, device):
            continue
        s, why = _recorded_sample(op, d, e, case, device, requires_grad)
        if s is None:
            gaps.append(("-".join(x for x in (op, e["case"], e["dtype"]) if x), why))
        else:
            out.append(s)
    return out, gaps


def sample_gaps(op: str, *, include_large: bool = False, max_cases: Optional[int] = None) -> list:
    """(row, reason) of op's recorded rows that ``sample_inputs`` (with the same arguments)
    leaves out: an input or output torch cannot hold, a required argument without a value.
    Empty for the five ops built here."""
    if op in OP_FOLDER:
        return []
    return _recorded_samples(op, "cpu", False, include_large, max_cases)[1]


def recorded_outputs(sample: SampleInput) -> Optional[dict]:
    """The CLI's outputs of a recorded sample ({output name: CPU tensor}, in the op's output
    order; a driver may record more outputs than the op returns, e.g. stem_indexer's both
    precisions), or None for a sample built here."""
    if sample.record is None:
        return None
    from safetensors.torch import load_file

    got = load_file(os.path.join(sample.record_dir, sample.record["outputs"]))
    order = sample.record.get("output_names") or sorted(got)  # an older CLI's: by name
    return {n: got[n] for n in order}


@functools.lru_cache(maxsize=None)
def output_names(op: str) -> tuple:
    """The names of op's outputs in its argument table, in order."""
    for info in _kit.op_table():
        if info["name"] == op:
            return tuple(info.get("outs", []))
    return ()


def recorded_pairs(sample: SampleInput, outs) -> list:
    """(name, output, the CLI's recorded output or None) for each of ``outs`` (the op's
    outputs, in order, from any framework) of a recorded sample. None: the CLI produced no such
    output for this call (e.g. dbias without bias), so the output must be an empty placeholder.
    Outputs are matched by their names in the op's table; a driver that names them otherwise
    (or records more, stem_indexer's two precisions) is matched by position."""
    rec = recorded_outputs(sample)
    if rec is None:
        raise ValueError(f"recops.testing: {sample.name} was built here, not recorded")
    outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
    names = list(output_names(sample.op)) or [f"out{i}" for i in range(len(outs))]
    if set(rec) <= set(names):
        return [(n, o, rec.get(n)) for n, o in zip(names, outs)]
    want = list(rec.values())
    return [(n, o, want[i] if i < len(want) else None) for i, (n, o) in enumerate(zip(names, outs))]


def schema_values(sample: SampleInput) -> list:
    """The sample's values in the op's schema order (None for an absent optional tensor), as
    positional arguments of ``torch.ops.recops.<op>.default`` or ``recops.tensorflow.call_op``."""
    schema = getattr(torch.ops.recops, sample.op).default._schema
    pos = iter(sample.args)
    out = []
    for a in schema.arguments:
        if a.kwarg_only:
            out.append(sample.kwargs.get(a.name, a.default_value if a.has_default_value()
                                         else None))
        else:
            out.append(next(pos, a.default_value if a.has_default_value() else None))
    return out


def sample_inputs(op: str, device="cpu", requires_grad: bool = False, *,
                  include_large: bool = False, max_cases: Optional[int] = None) -> list:
    """Valid samples (cases without ``expect_error``, plus those the binding repairs) of op's
    cases.yaml on ``device``, for every registered op (see the module docstring: the five
    conversions and cumsums are built here, the others are the CLI's recorded inputs, with
    contiguous tensors; ``sample_gaps(op)`` lists the rows left out). ``requires_grad`` marks the
    floating tensors of the arguments that receive a gradient. ``max_cases``: only the rows of
    the first that many valid cases (each case expands into a row per dtype), which for the
    recorded ops also records only those (the whole file of an op with 100 cases takes
    seconds)."""
    if op not in OP_FOLDER:
        return _recorded_samples(op, device, requires_grad, include_large, max_cases)[0]
    out = []
    cases = None if max_cases is None else _first_cases(op, include_large, max_cases)
    for case, dt, odt, outdt in case_rows(op, include_large=include_large):
        if cases is not None and case["id"] not in cases:
            continue
        if ("expect_error" in case and not binding_repairs(case)) or "out_shape" in case \
                or not _backend_ok(case, device):
            continue
        if dt in ("fp64",) and torch.device(device).type not in ("cpu", "cuda"):
            continue
        out.append(build_sample(op, case, dt, odt, outdt, device, requires_grad))
    return out


def error_inputs(op: str, device="cpu") -> list:
    """(sample, expected error text) of the cases with ``expect_error`` that the binding can
    express (``out_shape`` cases test the C++ entry's own out checks and are left out). Only the
    five ops built here: the CLI records no inputs of a refused case, so for the others this is
    empty (``recops check`` runs their refusals)."""
    if op not in OP_FOLDER:
        return []
    out = []
    for case, dt, odt, outdt in case_rows(op, include_large=False):
        if "expect_error" not in case or binding_repairs(case) or "out_shape" in case \
                or not _backend_ok(case, device):
            continue
        try:
            s = build_sample(op, case, dt, odt, outdt, device, False)
        except (ValueError, RuntimeError, KeyError):
            continue  # inputs torch itself cannot build
        out.append((s, case["expect_error"]))
    return out


def torch_cannot_hold(sample: SampleInput) -> Optional[str]:
    """A reason when torch itself cannot process the sample's output (recops can): an empty
    output whose contiguous strides overflow int64, e.g. [0, 2^62, 7]. Torch's comparisons,
    gradcheck and AOT tracing all allocate such tensors contiguously and fail. (Recorded samples
    with such tensors are left out of sample_inputs, see sample_gaps.)"""
    if sample.op != "jagged_to_padded_dense":
        return None
    values, offsets, max_l = sample.args
    span = max(max_l, 1)
    for d in values.shape[1:]:
        span *= max(int(d), 1)
    if span > 2**63 - 1:
        return ("the output's contiguous strides overflow int64, which torch refuses "
                "('Stride calculation overflowed') outside recops")
    return None


def call(sample: SampleInput) -> Any:
    """Runs the sample through ``torch.ops.recops``."""
    return getattr(torch.ops.recops, sample.op)(*sample.args, **sample.kwargs)
