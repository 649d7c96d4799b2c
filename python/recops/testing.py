"""Deterministic test inputs shared with the C++ side (docs/cases.md).

Every generated number is a stateless hash of ``(seed, index)``; the functions here reproduce
``src/core/hash_rng.h`` and the CLI's generators (``tools/recops/gen.cpp``) bit for bit, so a case
of ``src/ops/<op>/cases.yaml`` gives the same tensors in pytest, ``recops check`` and the C++ tests.

``sample_inputs(op, device, requires_grad)`` turns an op's ``cases.yaml`` into ``SampleInput``
objects (args, kwargs and the case they came from) for correctness tests, ``opcheck`` and
``gradcheck``; ``error_inputs(op, device)`` gives the cases with ``expect_error``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from pathlib import Path
from typing import Any, Iterator, Optional

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

# The op folder of each op name (the cumsum family shares one).
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
    offsets_dtype: str
    out_dtype: Optional[str]

    @property
    def name(self) -> str:
        parts = [self.op, self.case_id, self.dtype]
        if self.op in ("jagged_to_padded_dense", "dense_to_jagged"):
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

    path = OPS_DIR / OP_FOLDER[op] / "cases.yaml"
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
    combination, in file order; `large` cases only when asked."""
    doc = load_cases(op)
    file_op = doc.get("op")
    for case in doc["cases"]:
        ops = _as_list(case.get("op"), [file_op])
        if op not in ops:
            continue
        if not include_large and "large" in (case.get("tags") or []):
            continue
        for dt in _as_list(case.get("dtype"), [DEFAULT_DTYPE[op]]):
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


def sample_inputs(op: str, device="cpu", requires_grad: bool = False, *,
                  include_large: bool = False) -> list:
    """Valid samples (cases without ``expect_error``, plus those the binding repairs) of op's
    cases.yaml on ``device``."""
    out = []
    for case, dt, odt, outdt in case_rows(op, include_large=include_large):
        if ("expect_error" in case and not binding_repairs(case)) or "out_shape" in case \
                or not _backend_ok(case, device):
            continue
        if dt in ("fp64",) and torch.device(device).type not in ("cpu", "cuda"):
            continue
        out.append(build_sample(op, case, dt, odt, outdt, device, requires_grad))
    return out


def error_inputs(op: str, device="cpu") -> list:
    """(sample, expected error text) of the cases with ``expect_error`` that the binding can
    express (``out_shape`` cases test the C++ entry's own out checks and are left out)."""
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
    gradcheck and AOT tracing all allocate such tensors contiguously and fail."""
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
