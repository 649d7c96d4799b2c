#!/usr/bin/env python3
"""Reliability sweep of recops (issue 21): bad and edge inputs, tried as a new user would, each
probe in its own process with a timeout.

Run (from the repository root; the torch library must be current, see README.md here)::

    RECOPS_TORCH_LIB=$PWD/build/lib/librecops_torch.so RECOPS_BIN=$PWD/build/bin/recops \\
        PYTHONPATH=$PWD/python .venv/bin/python tests/reliability/sweep.py [--json FILE]
        [--only PATTERN] [--timeout S] [--jobs N] [--no-cli] [--list] [-v]

Probes
------
Python part: every public op function of ``recops`` (the op kit's wrappers, ``recops.__all__``,
plus the block-mask helpers and split functions of the op folders). Each op gets one valid *base
call*: the smallest fp32 (else first) valid sample of its ``cases.yaml`` (``recops.testing``
records it with the CLI), its schema values mapped onto the wrapper's parameters (the kit's
``pair`` and ``names`` faces), or a hand-written base for the few functions without a case file.
Mutations of the base come from small tables (``_tensor_probes``, ``_int_probes``,
``_float_probes``, ``_special_probes``), one probe each; ``EDGE`` adds hand-written valid edge
inputs (empty batch, zero length, zero heads, D = 0, NaN padding ...) with a plain-PyTorch
expectation. Each probe has an *input category* (``wrong-dtype``, ``wrong-rank``, ``mismatched-
shape``, ``offsets-*``, ``meta-mixed``, ``none-tensor``, ``huge-size``, ``negative-size``,
``zero-size``, ``scalar-range``, ``bad-enum``, ``bad-index``, ``non-contiguous``, ``broadcast``,
``aliased``, ``empty``, ``nonfinite-data``, ``threads``) and an *expectation*: ``invalid`` (must
raise), ``valid`` (must return the right thing) or ``either`` (the spec allows both; it must not
crash or hang, a refusal must be clear, and a returned output must be possible: no output of more
than 2^36 elements).

CLI part: ``$RECOPS_BIN`` with bad flags, bad flag values, malformed or hostile case files and
corrupt recordings (``compare``), each a subprocess with the timeout.

Outcomes (the sweep's categories)
---------------------------------
``crash``
    Python: the child process was killed by a signal or exited without reporting a result.
    CLI: exit status >= 128 or killed by a signal.
``hang``
    the probe ran past ``--timeout`` seconds (the child is killed).
``accepted-bad-input``
    an ``invalid`` probe returned without an exception (CLI: a bad flag or bad case file exited
    0), or an ``either`` probe returned an output that cannot exist (more than 2^36 elements).
``silent-wrong``
    a ``valid`` probe returned, but its result differs from what the probe expects: the
    plain-PyTorch computation of the same thing (EDGE probes), the base call's result on
    contiguous inputs (``non-contiguous``), the same call with its broadcast (stride-0) input
    made contiguous (``broadcast``), the same call with each tensor its own copy (``aliased``),
    on one thread (``threads``), or the base call's output shapes (``nonfinite-data``). Float
    results are compared with rtol = atol = 1e-4 and NaN equal to NaN; integer results exactly.
``rejected-valid``
    a ``valid`` probe raised (e.g. an empty input the spec says returns an empty output).
``unclear-message``
    a probe raised (or the CLI exited non-zero), but the message does not say what is wrong.
    Python rule: ``str(exception)`` must contain the op's name (the Python function's name or
    the registered op's name, e.g. ``hstu_attn`` or ``hstu_attn_fwd``) and, when the probe
    mutated an argument, that argument's name as a whole word (for the ``window`` pair also
    ``window_left`` / ``window_right``). CLI rule: for a bad flag, the output (stdout +
    stderr) must name the flag (with or without its dashes) or the offending value; for a bad
    case file, it must name the file, the case id or the offending field/tag.
``ok``
    everything else: an invalid probe refused clearly, a valid probe returned the right result.

Children are forked from this process after torch and recops are imported (start method
``fork``), at most ``--jobs`` (default 2) at a time, with one intra-op thread, no core files and
an address-space limit (``RLIMIT_AS``: this process's size + 4 GiB), so that an attempt to
allocate a huge output fails instead of swapping (not for the ``threads`` probes: a thread's
stack reservation counts against it). The parent never runs an op and sets one intra-op thread
before building the probes: an OpenMP team created in the parent does not survive the fork, and
a child's parallel region would wait for its lost threads forever. The probe list is
deterministic: same build, same probes, same ids.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import fnmatch
import inspect
import json
import math
import multiprocessing as mp
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, List, Optional

import torch

import recops
from recops import _kit, testing

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATEGORIES = ["crash", "hang", "accepted-bad-input", "silent-wrong", "rejected-valid",
              "unclear-message", "ok"]
HUGE_ELEMS = 2**36  # an output larger than this cannot have been allocated under RLIMIT_AS

# ---------------------------------------------------------------------------------------------
# probes


@dataclasses.dataclass
class Probe:
    id: str                      # family/op/category/detail, unique
    family: str                  # jagged, hstu, stem, training, cli
    op: str                      # the Python function (or CLI subcommand)
    category: str                # input category
    expect: str                  # invalid | valid | either
    what: str                    # one line: what the probe does
    arg: Optional[str] = None    # the mutated argument (for the message rule)
    names: tuple = ()            # names the message may use for the op
    run: Optional[Callable] = None   # child: () -> outcome dict (Python probes)
    cmd: Optional[list] = None       # CLI probes: argv
    clear: tuple = ()                # CLI probes: any of these in the output makes it clear
    as_limit: bool = True            # RLIMIT_AS in the child (off for the thread probes: each
                                     # thread's stack reservation counts against it)


def _desc(v) -> str:
    if isinstance(v, torch.Tensor):
        dt = str(v.dtype).replace("torch.", "")
        dev = "" if v.device.type == "cpu" else f"{v.device.type} "
        nc = "" if v.is_contiguous() else " strided"
        if v.numel() <= 8 and v.device.type == "cpu" and not v.dtype.is_complex:
            return f"tensor({v.tolist()}, dtype={dt})" if not dev else f"<{dev}{dt}{list(v.shape)}>"
        return f"<{dev}{dt}{list(v.shape)}{nc}>"
    return repr(v)


def call_line(fn_name: str, kw: dict) -> str:
    return f"recops.{fn_name}(" + ", ".join(f"{k}={_desc(v)}" for k, v in kw.items()) + ")"


def _clone(kw: dict) -> dict:
    return {k: (v.clone() if isinstance(v, torch.Tensor) and v.device.type != "meta" else v)
            for k, v in kw.items()}


def _tensors(out) -> list:
    if isinstance(out, torch.Tensor):
        if out.is_nested:
            return [out.values()]
        return [out]
    if isinstance(out, (tuple, list)):
        r = []
        for o in out:
            r += _tensors(o)
        return r
    return []


def _close(a: torch.Tensor, b: torch.Tensor, what: str) -> Optional[str]:
    if a.shape != b.shape:
        return f"{what}: shape {list(a.shape)} != expected {list(b.shape)}"
    if a.dtype != b.dtype:
        return f"{what}: dtype {a.dtype} != expected {b.dtype}"
    if a.device.type == "meta" or a.numel() == 0:
        return None
    if a.dtype.is_floating_point or a.dtype.is_complex:
        x, y = a.detach().double(), b.detach().double()
        nan_x, nan_y = x.isnan(), y.isnan()
        if not torch.equal(nan_x, nan_y):
            return f"{what}: NaN pattern differs ({int(nan_x.sum())} vs {int(nan_y.sum())} NaN)"
        x, y = x[~nan_x], y[~nan_y]
        inf = x.isinf() | y.isinf()
        if not torch.equal(x[inf], y[inf]):
            return f"{what}: inf pattern differs"
        x, y = x[~inf], y[~inf]
        err = (x - y).abs()
        tol = 1e-4 + 1e-4 * y.abs()
        if bool((err > tol).any()):
            return f"{what}: max abs error {float(err.max()):.3g} (rtol = atol = 1e-4)"
        return None
    if not torch.equal(a, b):
        return f"{what}: integer values differ"
    return None


def _compare(got, want) -> Optional[str]:
    g, w = _tensors(got), _tensors(want)
    if len(g) != len(w):
        return f"{len(g)} outputs, expected {len(w)}"
    for i, (a, b) in enumerate(zip(g, w)):
        bad = _close(a, b, f"output {i}")
        if bad:
            return bad
    return None


def _impossible(out) -> Optional[str]:
    for i, t in enumerate(_tensors(out)):
        if t.numel() > HUGE_ELEMS:
            return (f"output {i} has shape {list(t.shape)} ({t.numel()} elements), which cannot "
                    f"have been allocated")
    return None


def _names_ok(msg: str, names: tuple, arg: Optional[str], aliases: dict) -> bool:
    low = msg.lower()
    if not any(n.lower() in low for n in names):
        return False
    if arg is None:
        return True
    args = list(arg) if isinstance(arg, tuple) else [arg]
    cands = args + [a for x in args for a in aliases.get(x, ())]
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(c.lower())}(?![A-Za-z0-9_])", low)
               for c in cands)


ARG_ALIASES = {"window": ("window_left", "window_right")}


def judge(expect: str, names: tuple, arg: Optional[str], fn: Callable[[], Any],
          check: Optional[Callable[[Any], Optional[str]]] = None) -> dict:
    """Runs fn() in the child and classifies it (the docstring's rules)."""
    try:
        out = fn()
    except Exception as e:  # noqa: BLE001 - every exception is a refusal
        msg = f"{type(e).__name__}: {e}".strip().splitlines()
        first = " ".join(msg[:3])[:400]
        if expect == "valid":
            return {"outcome": "rejected-valid", "detail": first}
        if not _names_ok(str(e), names, arg, ARG_ALIASES):
            return {"outcome": "unclear-message", "detail": first}
        return {"outcome": "ok", "detail": "refused: " + first}
    if expect == "invalid":
        return {"outcome": "accepted-bad-input",
                "detail": "returned " + ", ".join(_desc(t) for t in _tensors(out))[:300]}
    bad = _impossible(out)
    if bad:
        return {"outcome": "accepted-bad-input", "detail": bad}
    if expect == "valid" and check is not None:
        bad = check(out)
        if bad:
            return {"outcome": "silent-wrong", "detail": bad}
    return {"outcome": "ok", "detail": "returned"}


# ---------------------------------------------------------------------------------------------
# base calls


@dataclasses.dataclass
class Base:
    name: str            # Python function name
    family: str
    kit: str             # registered op name (for messages)
    make: Callable[[], dict]   # fresh kwargs of the valid call
    required: frozenset  # tensor params that may not be None

    @property
    def fn(self):
        return getattr(recops, self.name)

    @property
    def names(self) -> tuple:
        short = self.name[:-4] if self.name.endswith("_fwd") else self.name
        return tuple(dict.fromkeys((self.name, self.kit, self.name.rstrip("_"), short)))


def _i64(x):
    return torch.tensor(x, dtype=torch.int64)


def _i32(x):
    return torch.tensor(x, dtype=torch.int32)


def _rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


# Public functions that are not kit wrappers, or whose case file gives no sample: their bases.
HAND_BASES = {
    "hstu_mask": ("hstu", "hstu_seq_mask", lambda: {"seq_len": 5, "seq_len_k": 5}),
    "split_1d_jagged": ("jagged", "split_1d_jagged", lambda: {
        "values": _rand(7), "offsets_a": _i64([0, 2, 3]), "offsets_b": _i64([0, 1, 4]),
        "shape_a": 3, "shape_b": 4}),
    "split_2d_jagged": ("jagged", "split_2d_jagged", lambda: {
        "values": _rand(7, 4), "offsets_a": _i64([0, 2, 3]), "offsets_b": _i64([0, 1, 4]),
        "rows_a": 3, "rows_b": 4}),
    "to_dense_block_mask": ("stem", "to_dense_block_mask", lambda: {
        "sparse_indices": _i32([[[[0, -1], [0, 1]]]]), "sparse_seq_len": _i32([[[1, 2]]])}),
    "causal_conv1d_btd": ("training", "causal_conv1d", lambda: {
        "x": _rand(2, 9, 4), "weight": _rand(4, 3, seed=1)}),
}
# Helpers that need something this sweep does not probe (FlexAttention's BlockMask).
SKIPPED_FUNCTIONS = {"to_flex_block_mask": "returns a FlexAttention BlockMask (torch's)",
                     "set_validate": "a switch, not an op", "library_path": "a path",
                     "__version__": "a string"}


def _wrapper_kwargs(info: dict, sample) -> dict:
    schema = getattr(torch.ops.recops, info["name"]).default._schema
    vals = testing.schema_values(sample)
    faces = info.get("py", {})
    args = list(schema.arguments)
    kw, skip = {}, False
    for i, (a, v) in enumerate(zip(args, vals)):
        if skip:
            skip = False
            continue
        face = faces.get(a.name, {})
        if "pair" in face:
            kw[face["pair"]] = (v, vals[i + 1])
            skip = True
        elif "names" in face:
            names = face["names"].split()
            kw[a.name] = names[v] if isinstance(v, int) else v
        else:
            kw[a.name] = v
    return kw


def _size(kw) -> int:
    return sum(v.numel() for v in kw.values() if isinstance(v, torch.Tensor))


def _pick_sample(op: str):
    samples = []
    for n in (3, 2, 1):  # a recording of n cases may fail as a whole (one bad row): fewer
        samples = testing.sample_inputs(op, "cpu", max_cases=n)
        if samples:
            break

    def good(s):
        ts = [v for v in testing.schema_values(s) if isinstance(v, torch.Tensor)]
        return all(t.numel() > 0 for t in ts) and sum(t.numel() for t in ts) < 2**18

    pool = [s for s in samples if good(s)]
    if not pool:  # the first cases are edge cases (B = 0 ...): look further
        pool = [s for s in testing.sample_inputs(op, "cpu", max_cases=10) if good(s)] or samples
    if not pool:
        return None
    fp32 = [s for s in pool if s.dtype == "fp32"]
    pool = fp32 or pool
    return min(pool, key=lambda s: sum(v.numel() for v in testing.schema_values(s)
                                       if isinstance(v, torch.Tensor)))


def build_bases(log, wanted: Callable[[str], bool] = lambda name: True) -> tuple:
    """({function name: Base}, {function name: why it has none}) of the functions ``wanted``."""
    bases, missing = {}, {}
    table = {i["python_name"] or i["name"]: i for i in _kit.op_table() if i["python_name"] != "-"}
    public = sorted(n for n in recops.__all__ if callable(getattr(recops, n, None)))
    for name in public:
        if not wanted(name):
            continue
        if name in SKIPPED_FUNCTIONS:
            missing[name] = SKIPPED_FUNCTIONS[name]
            continue
        fn = getattr(recops, name)
        params = inspect.signature(fn).parameters
        if name in HAND_BASES:
            family, kit, make = HAND_BASES[name]
        elif name in table:
            info = table[name]
            family, kit = info["family"], info["name"]
            try:
                s = _pick_sample(kit)
            except Exception as e:  # noqa: BLE001
                missing[name] = f"no sample: {type(e).__name__}: {e}"[:200]
                continue
            if s is None:
                missing[name] = "its case file gives no valid CPU sample"
                continue
            frozen = _wrapper_kwargs(info, s)
            make = (lambda frozen=frozen: _clone(frozen))
        else:
            missing[name] = "not a kit op and no hand-written base"
            continue
        required = frozenset(p for p, par in params.items()
                             if "Tensor" in str(par.annotation)
                             and "Optional" not in str(par.annotation))
        bases[name] = Base(name, family, kit, make, required)
        log(f"  base {name}: {call_line(name, make())[:160]}")
    return bases, missing


# ---------------------------------------------------------------------------------------------
# mutation tables

OFFSET_NAMES = re.compile(r"(offsets|cu_seqlens|csr_seg)")
LENGTH_NAMES = re.compile(r"(lengths|seq_lens|split_sizes|last_page_len)$")
INDEX_NAMES = {"indices", "permute", "sorted_idx", "labels", "page_ids", "sparse_indices",
               "seq_idx", "block_table"}

# int parameters whose huge value (2^40, 2^62) sizes an allocation or an int32 field: refused.
# (A max_seq_len that only truncates, as in jagged_softmax, allocates nothing: "either" there.)
HUGE_INVALID = {"total_L", "max_len", "max_length", "total_z", "num_dense_output_rows",
                "selected_lengths_sum", "permuted_lengths_sum", "q_heads", "kv_heads",
                "dim_qkflat", "seq_len", "seq_len_k", "max_q_blocks", "max_kv_blocks",
                "stem_block_size", "stem_stride", "rows_a", "rows_b", "shape_a", "shape_b",
                ("jagged_to_padded_dense", "max_seq_len")}
# int parameters for which a negative value may mean something (a sentinel or a free value).
SIGNED_OK = {"ignore_index", "seed", "offset", "k_block_num_bias_medium",
             "k_block_num_bias_large", "n_prefix_from_right"}
# int parameters for which 0 is refused.
ZERO_INVALID = {"chunk_size", "stem_block_size", "stem_stride", "sparse_block_size", "num_heads",
                "target_group_size", "q_heads", "kv_heads", "dim_qkflat", "iters"}
# a loop count: huge values legitimately run long; probed with negative only.
NO_HUGE = {"iters", "seed", "offset"}
# float parameters and the values they must refuse.
FLOAT_INVALID = {"eps": ("nan", "inf", "-1"), "dropout_ratio": ("nan", "inf", "-1"),
                 "label_smoothing": ("nan", "inf", "-1"),
                 "k_block_num_rate_medium": ("nan", "inf", "-1"),
                 "k_block_num_rate_large": ("nan", "inf", "-1")}
FLOAT_VALUES = {"nan": math.nan, "inf": math.inf, "-1": -1.0, "0": 0.0}

# Valid-by-design exceptions to the generic tables: (function, category, arg) -> (expect, why).
OVERRIDES: Dict[tuple, tuple] = {
    ("clipped_swiglu", "wrong-rank", "x:2d"): ("either", "x is [*, 2I]: leading dims are free"),
    ("complete_cumsum", "wrong-rank", "t:2d"): ("either", "t may be 2-D [R, n]"),
    ("exclusive_cumsum", "wrong-rank", "t:2d"): ("either", "t may be 2-D [R, n]"),
    ("inclusive_cumsum", "wrong-rank", "t:2d"): ("either", "t may be 2-D [R, n]"),
    ("exclusive_cumsum", "wrong-rank", "t:0d"):
        ("either", "any rank, scanned flattened (FBGEMM; torch.cumsum takes a 0-d tensor too)"),
    ("inclusive_cumsum", "wrong-rank", "t:0d"):
        ("either", "any rank, scanned flattened (FBGEMM; torch.cumsum takes a 0-d tensor too)"),
    ("hstu_attn", "zero-size", "target_group_size"):
        ("either", "0 is the seed's 'no target mask' (hstu_attn README)"),
    ("permute_1D_sparse_data", "mismatched-shape", "permute"):
        ("either", "a permutation may repeat or drop features"),
    ("permute_2D_sparse_data", "mismatched-shape", "permute"):
        ("either", "a permutation may repeat or drop features"),
    ("to_dense_block_mask", "mismatched-shape", "sparse_indices"):
        ("either", "more id slots, the extra ones past sparse_seq_len"),
    ("dense_to_jagged", "offsets-out-of-range", "seq_offsets:last"):
        ("either", "total_L comes from the offsets; rows past S are 0 (deviation 1)"),
    ("block_sparse_attention", "offsets-out-of-range", "cu_seqlens_kv:last"):
        ("either", "only the starts of cu_seqlens_kv are read; lengths are kv_seq_lens"),
    ("stem_prepare", "offsets-out-of-range", "cu_seqlens_kv:last"):
        ("either", "only the starts of cu_seqlens_kv are read; lengths are kv_seq_lens"),
    ("norm_mul_dropout", "huge-size", "num_heads:2^40"): ("either", "unused without group_norm"),
    ("norm_mul_dropout", "huge-size", "num_heads:2^62"): ("either", "unused without group_norm"),
    ("norm_mul_dropout", "negative-size", "num_heads"): ("either", "unused without group_norm"),
    ("norm_mul_dropout", "zero-size", "num_heads"): ("either", "unused without group_norm"),
    ("norm_mul_dropout", "negative-size", "linear_dim"): ("either", "-1 and below: the default"),
}


def _bad_dtype(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point:
        return t.to(torch.complex64)
    return t.to(torch.float32)


def _noncontig(t: torch.Tensor) -> torch.Tensor:
    if t.dim() == 0:
        return t
    if t.dim() == 1:
        return torch.stack([t, torch.zeros_like(t)], dim=-1)[..., 0]
    return torch.stack([t, torch.zeros_like(t)], dim=1).flatten(0, 1)[::2]


def _mismatch(t: torch.Tensor) -> torch.Tensor:
    pad = torch.zeros(*t.shape[:-1], 3, dtype=t.dtype)
    return torch.cat([t, pad], dim=-1)


def _linked(kw: dict, p: str) -> bool:
    """Heuristic: t's last dim is tied to another tensor argument's dim (same size there)."""
    t = kw[p]
    if t.dim() == 0:
        return False
    s = t.shape[-1]
    for q, u in kw.items():
        if q != p and isinstance(u, torch.Tensor) and u.dim() > 0 and s in tuple(u.shape):
            return True
    return False


class Gen:
    """Collects the probes of one base."""

    def __init__(self, base: Base, out: list):
        self.b, self.out = base, out

    def add(self, category, detail, expect, arg, mutate, what, check="none"):
        """mutate(kw) -> kw (in the child). check: none | base-same | base-shapes | contig-same
        (the same call with every tensor argument made contiguous) | clone-same (... with every
        tensor argument its own copy)."""
        b = self
        key = (self.b.name, category, detail)
        if key in OVERRIDES:
            expect = OVERRIDES[key][0]
            what += f" [{expect}: {OVERRIDES[key][1]}]"
        base = self.b

        def run():
            kw = mutate(base.make())
            fn = base.fn
            chk = None
            if check in ("contig-same", "clone-same"):
                op = torch.Tensor.contiguous if check == "contig-same" else torch.Tensor.clone
                ref = {k: op(v) if isinstance(v, torch.Tensor) else v
                       for k, v in mutate(base.make()).items()}
                want = fn(**ref)
                chk = (lambda out: _compare(out, want))
            if check in ("base-same", "base-shapes"):
                want = fn(**base.make())
                if check == "base-same":
                    chk = (lambda out: _compare(out, want))
                else:
                    shapes = [tuple(t.shape) for t in _tensors(want)]
                    chk = (lambda out: None if [tuple(t.shape) for t in _tensors(out)] == shapes
                           else f"output shapes {[list(t.shape) for t in _tensors(out)]} != "
                                f"base {[list(s) for s in shapes]}")
            return judge(expect, base.names, arg, lambda: fn(**kw), chk)

        pid = f"{base.family}/{base.name}/{category}/{detail}"
        b.out.append(Probe(pid, base.family, base.name, category, expect, what, arg,
                           base.names, run=run))


def _set(kw, p, v):
    kw[p] = v
    return kw


def _edit(kw, p, f):
    kw[p] = f(kw[p])
    return kw


def _tensor_probes(g: Gen, kw0: dict) -> None:
    tensors = [p for p, v in kw0.items() if isinstance(v, torch.Tensor)]
    plain = [p for p in tensors if not OFFSET_NAMES.search(p) and not LENGTH_NAMES.search(p)]
    floats = [p for p in tensors if kw0[p].dtype.is_floating_point]
    # every tensor: meta mixed with cpu, and None where required
    for p in tensors[:1] + [q for q in tensors[1:] if OFFSET_NAMES.search(q)]:
        if len(tensors) > 1:
            g.add("meta-mixed", p, "invalid", p, lambda kw, p=p: _edit(kw, p, lambda t: t.to("meta")),
                  f"{p} on meta, the rest on cpu")
        if p in g.b.required and p in tensors[:1]:
            g.add("none-tensor", p, "invalid", p, lambda kw, p=p: _set(kw, p, None),
                  f"{p}=None (required)")
    # a strided view with the same values of the first two tensors, and of every tensor of an op
    # that writes none in place
    in_place = g.b.name.endswith("_")
    for i, p in enumerate(tensors):
        if (i < 2 or not in_place) and kw0[p].dim() >= 1 and kw0[p].numel() > 1:
            g.add("non-contiguous", p, "valid", p, lambda kw, p=p: _edit(kw, p, _noncontig),
                  f"{p} a strided view (same values)", "base-same")
    # every floating tensor of an op that writes none in place as a broadcast view (stride 0 along
    # dim 0: `t[:1].expand_as(t)`, as a user passes an expanded bias), which must give what its
    # contiguous copy gives
    if not in_place:
        for p in floats:
            if kw0[p].dim() >= 1 and kw0[p].shape[0] > 1:
                g.add("broadcast", p, "valid", p,
                      lambda kw, p=p: _edit(kw, p, lambda t: t[:1].expand_as(t)),
                      f"{p} as t[:1].expand_as(t) (stride 0 along dim 0)", "contig-same")
        # one tensor passed for two inputs of the same shape and dtype (x and y of a bmm, q and k)
        same = [q for q in floats[1:] if kw0[q].shape == kw0[floats[0]].shape and
                kw0[q].dtype == kw0[floats[0]].dtype] if floats else []
        if same:
            a, b = floats[0], same[0]
            g.add("aliased", f"{a}={b}", "valid", (a, b), lambda kw, a=a, b=b: _set(kw, b, kw[a]),
                  f"the tensor {a} passed as {b} too", "clone-same")
    # the first two tensors: dtype, rank
    for p in tensors[:2]:
        t = kw0[p]
        exp = "invalid" if t.dtype.is_floating_point or OFFSET_NAMES.search(p) or \
            LENGTH_NAMES.search(p) or p in INDEX_NAMES else "either"
        g.add("wrong-dtype", p, exp, p, lambda kw, p=p: _edit(kw, p, _bad_dtype),
              f"{p} as {_bad_dtype(t[:0]).dtype}")
        if t.dim() >= 1 and p in tensors[:1]:
            g.add("wrong-rank", f"{p}:0d", "invalid", p,
                  lambda kw, p=p: _edit(kw, p, lambda t: torch.zeros((), dtype=t.dtype)),
                  f"{p} 0-d")
        if t.dim() == 1:
            g.add("wrong-rank", f"{p}:2d", "invalid", p,
                  lambda kw, p=p: _edit(kw, p, lambda t: t.unsqueeze(0)), f"{p} as [1, n]")
    # mismatched shapes: the first two plain tensors, last dim + 3
    for p in plain[:1]:
        if kw0[p].dim() >= 1:
            exp = "invalid" if _linked(kw0, p) else "either"
            g.add("mismatched-shape", p, exp, tuple([p] + [q for q in tensors if q != p]),
                  lambda kw, p=p: _edit(kw, p, _mismatch),
                  f"{p} last dim + 3")
    # non-finite data: valid, output shapes as the base's
    for p in floats[:1]:
        for name, val in (("nan", math.nan), ("-inf", -math.inf)) if p == floats[0] else ():
            def mut(kw, p=p, val=val):
                t = kw[p].clone()
                if t.numel():
                    t.view(-1)[t.numel() // 2] = val
                kw[p] = t
                return kw
            g.add("nonfinite-data", f"{p}:{name}", "valid", p, mut,
                  f"one {name} in {p}", "base-shapes")
    # offsets
    for p in tensors:
        t = kw0[p]
        if OFFSET_NAMES.search(p) and t.dim() == 1 and t.numel() >= 2 and \
                not t.dtype.is_floating_point:
            def nonmono(t):
                return torch.cat([t[:1], t[-1:] + 2, t[1:]])
            g.add("offsets-not-monotonic", p, "invalid", p, lambda kw, p=p: _edit(kw, p, nonmono),
                  f"{p} with a decreasing step")

            def last_out(t):
                t = t.clone()
                t[-1] += 7
                return t
            g.add("offsets-out-of-range", f"{p}:last", "invalid", p,
                  lambda kw, p=p: _edit(kw, p, last_out), f"{p}[-1] + 7 (past the values)")

            def first_neg(t):
                t = t.clone()
                t[0] = -1
                return t
            g.add("offsets-out-of-range", f"{p}:first", "invalid", p,
                  lambda kw, p=p: _edit(kw, p, first_neg), f"{p}[0] = -1")

            def huge(t):
                t = t.to(torch.int64).clone()
                t[-1] = 2**40
                return t
            g.add("offsets-out-of-range", f"{p}:huge", "invalid", p,
                  lambda kw, p=p: _edit(kw, p, huge), f"{p}[-1] = 2^40 (int64)")
            g.add("offsets-wrong-dtype", p, "invalid", p,
                  lambda kw, p=p: _edit(kw, p, lambda t: t.to(torch.int16)), f"{p} as int16")
        if LENGTH_NAMES.search(p) and t.numel() >= 1 and not t.dtype.is_floating_point:
            def neg(t):
                t = t.clone()
                t.view(-1)[0] = -1
                return t
            g.add("negative-size", f"{p}:elem", "invalid", p, lambda kw, p=p: _edit(kw, p, neg),
                  f"{p}[0] = -1")

            def big(t):
                t = t.to(torch.int64).clone()
                t.view(-1)[0] = 2**40
                return t
            g.add("huge-size", f"{p}:elem", "invalid", p, lambda kw, p=p: _edit(kw, p, big),
                  f"{p}[0] = 2^40 (int64)")
        if p in INDEX_NAMES and t.numel() >= 1 and not t.dtype.is_floating_point:
            def oob(t):
                t = t.clone()
                t.view(-1)[0] = 2**30
                return t
            g.add("bad-index", p, "invalid", p, lambda kw, p=p: _edit(kw, p, oob),
                  f"{p}[0] = 2^30 (out of range)")


def _int_probes(g: Gen, kw0: dict) -> None:
    ints = [p for p, v in kw0.items() if isinstance(v, int) and not isinstance(v, bool)]
    for p in ints:
        if p not in NO_HUGE:
            inv = p in HUGE_INVALID or (g.b.name, p) in HUGE_INVALID
            for e in (40, 62) if inv else (62,):
                exp = "invalid" if inv else "either"
                g.add("huge-size", f"{p}:2^{e}", exp, p, lambda kw, p=p, e=e: _set(kw, p, 2**e),
                      f"{p}=2^{e}")
        exp = "either" if p in SIGNED_OK else "invalid"
        g.add("negative-size", p, exp, p, lambda kw, p=p: _set(kw, p, -2), f"{p}=-2")
        if p in ZERO_INVALID:
            g.add("zero-size", p, "invalid", p, lambda kw, p=p: _set(kw, p, 0), f"{p}=0")


def _float_probes(g: Gen, kw0: dict) -> None:
    floats = [p for p, v in kw0.items() if isinstance(v, float)]
    for p in floats:
        for name in ("nan", "inf", "-1") if p in FLOAT_INVALID else ("nan", "-1"):
            exp = "invalid" if name in FLOAT_INVALID.get(p, ()) else "either"
            g.add("scalar-range", f"{p}:{name}", exp, p,
                  lambda kw, p=p, v=FLOAT_VALUES[name]: _set(kw, p, v), f"{p}={name}")


def _special_probes(g: Gen, kw0: dict) -> None:
    for p, v in kw0.items():
        if isinstance(v, str):
            g.add("bad-enum", p, "invalid", p, lambda kw, p=p: _set(kw, p, "bogus"),
                  f"{p}='bogus'")
        if isinstance(v, tuple) and len(v) == 2:  # a pair face
            for d, bad in (("short", (1,)), ("none", None), ("str", ("a", "b"))):
                g.add("bad-pair", f"{p}:{d}", "invalid", p,
                      lambda kw, p=p, bad=bad: _set(kw, p, bad), f"{p}={bad!r}")
    # thread counts far above the cores (valid: same result as one thread)
    for n in (PROBE_THREADS[0],):
        base = g.b

        def run(n=n, base=base):
            want = base.fn(**base.make())
            torch.set_num_threads(n)
            return judge("valid", base.names, None, lambda: base.fn(**base.make()),
                         lambda out: _compare(out, want))
        g.out.append(Probe(f"{base.family}/{base.name}/threads/{n}", base.family, base.name,
                           "threads", "valid", f"torch.set_num_threads({n}) then the base call",
                           None, base.names, run=run, as_limit=False))


# torch.set_num_threads of the threads probes (--probe-threads). 1000 exceeded this machine's task
# limit (libgomp "Thread creation failed", then fork() EAGAIN in the sweep itself, and the same for
# the other sessions sharing it); the thread probes run one at a time, after the others.
PROBE_THREADS = [256]

# ---------------------------------------------------------------------------------------------
# hand-written edge probes with a plain-PyTorch expectation


def ref_j2pd(values, offsets, max_l, pad=0.0):
    B = offsets.numel() - 1
    out = torch.full((B, max_l, *values.shape[1:]), pad, dtype=values.dtype)
    for b in range(B):
        s, e = int(offsets[b]), int(offsets[b + 1])
        n = min(e - s, max_l)
        out[b, :n] = values[s:s + n]
    return out


def ref_d2j(dense, offsets):
    B = offsets.numel() - 1
    rows = []
    for b in range(B):
        n = int(offsets[b + 1] - offsets[b])
        part = dense[b, :min(n, dense.shape[1])]
        if n > dense.shape[1]:
            part = torch.cat([part, torch.zeros(n - dense.shape[1], *dense.shape[2:],
                                                dtype=dense.dtype)])
        rows.append(part)
    if not rows:
        return torch.zeros(0, *dense.shape[2:], dtype=dense.dtype)
    return torch.cat(rows)


def _shape_is(shape):
    def chk(out):
        got = [list(t.shape) for t in _tensors(out)]
        return None if got[:1] == [list(shape)] else f"shape {got[:1]} != expected {[list(shape)]}"
    return chk


def _equals(want_fn):
    return lambda out: _compare(out if isinstance(out, torch.Tensor) else _tensors(out)[0],
                                want_fn())


def _rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


# (function, family, name, kwargs builder, check(out) -> None | what is wrong)
EDGE = [
    ("jagged_to_padded_dense", "jagged", "b0", lambda: dict(
        values=torch.zeros(0, 3), seq_offsets=_i64([0]), max_seq_len=4), _shape_is([0, 4, 3])),
    ("jagged_to_padded_dense", "jagged", "zero_lengths_pad5", lambda: dict(
        values=torch.zeros(0, 2), seq_offsets=_i64([0, 0, 0]), max_seq_len=3, padding_value=5.0),
     _equals(lambda: torch.full((2, 3, 2), 5.0))),
    ("jagged_to_padded_dense", "jagged", "d0", lambda: dict(
        values=torch.zeros(5, 0), seq_offsets=_i64([0, 2, 5]), max_seq_len=4),
     _shape_is([2, 4, 0])),
    ("jagged_to_padded_dense", "jagged", "max_len0", lambda: dict(
        values=_rand(5, 2), seq_offsets=_i64([0, 2, 5]), max_seq_len=0), _shape_is([2, 0, 2])),
    ("jagged_to_padded_dense", "jagged", "truncate_and_pad", lambda: dict(
        values=_rand(7, 3), seq_offsets=_i32([0, 2, 2, 7]), max_seq_len=4, padding_value=-1.5),
     _equals(lambda: ref_j2pd(_rand(7, 3), _i32([0, 2, 2, 7]), 4, -1.5))),
    ("jagged_to_padded_dense", "jagged", "nan_padding", lambda: dict(
        values=_rand(3, 2), seq_offsets=_i64([0, 1, 3]), max_seq_len=3, padding_value=math.nan),
     _equals(lambda: ref_j2pd(_rand(3, 2), _i64([0, 1, 3]), 3, math.nan))),
    ("jagged_to_padded_dense", "jagged", "int_values", lambda: dict(
        values=torch.arange(10, dtype=torch.int32).reshape(5, 2), seq_offsets=_i64([0, 4, 5]),
        max_seq_len=2, padding_value=-7.0),
     _equals(lambda: ref_j2pd(torch.arange(10, dtype=torch.int32).reshape(5, 2), _i64([0, 4, 5]),
                              2, -7))),
    ("jagged_to_padded_dense", "jagged", "b0_huge_max_len", lambda: dict(
        values=torch.zeros(0, 2), seq_offsets=_i64([0]), max_seq_len=2**40),
     _shape_is([0, 2**40, 2])),
    ("dense_to_jagged", "jagged", "b0", lambda: dict(
        dense=torch.zeros(0, 4, 3), seq_offsets=_i64([0])), _shape_is([0, 3])),
    ("dense_to_jagged", "jagged", "zero_lengths", lambda: dict(
        dense=torch.ones(2, 3, 2), seq_offsets=_i64([0, 0, 0])), _shape_is([0, 2])),
    ("dense_to_jagged", "jagged", "d0", lambda: dict(
        dense=torch.zeros(2, 4, 0), seq_offsets=_i64([0, 2, 5])), _shape_is([5, 0])),
    ("dense_to_jagged", "jagged", "s0", lambda: dict(
        dense=torch.zeros(2, 0, 3), seq_offsets=_i64([0, 2, 5])),
     _equals(lambda: torch.zeros(5, 3))),
    ("dense_to_jagged", "jagged", "values", lambda: dict(
        dense=_rand(3, 4, 2), seq_offsets=_i32([0, 3, 3, 7])),
     _equals(lambda: ref_d2j(_rand(3, 4, 2), _i32([0, 3, 3, 7])))),
    ("complete_cumsum", "jagged", "empty", lambda: dict(t=_i64([])), _equals(lambda: _i64([0]))),
    ("complete_cumsum", "jagged", "rows_empty", lambda: dict(t=torch.zeros(3, 0, dtype=torch.int64)),
     _equals(lambda: torch.zeros(3, 1, dtype=torch.int64))),
    ("complete_cumsum", "jagged", "values", lambda: dict(t=_i64([3, 0, 5, 1])),
     _equals(lambda: _i64([0, 3, 3, 8, 9]))),
    ("exclusive_cumsum", "jagged", "empty", lambda: dict(t=_i64([])),
     _equals(lambda: _i64([]))),
    ("exclusive_cumsum", "jagged", "values", lambda: dict(t=_i32([3, 0, 5, 1])),
     _equals(lambda: _i32([0, 3, 3, 8]))),
    ("inclusive_cumsum", "jagged", "empty", lambda: dict(t=_i64([])),
     _equals(lambda: _i64([]))),
    ("inclusive_cumsum", "jagged", "values", lambda: dict(t=_i64([3, 0, 5, 1])),
     _equals(lambda: _i64([3, 3, 8, 9]))),
    ("jagged_softmax", "jagged", "b0", lambda: dict(
        values=torch.zeros(0, 3), seq_offsets=_i64([0]), max_seq_len=4), _shape_is([0, 3])),
    ("jagged_softmax", "jagged", "zero_lengths", lambda: dict(
        values=torch.zeros(0, 3), seq_offsets=_i64([0, 0, 0]), max_seq_len=4),
     _shape_is([0, 3])),
    ("hstu_attn", "hstu", "zero_heads", lambda: dict(
        q=torch.zeros(6, 0, 8), k=torch.zeros(6, 0, 8), v=torch.zeros(6, 0, 8),
        seq_offsets_q=_i64([0, 6])), _shape_is([6, 0, 8])),
    ("hstu_attn", "hstu", "zero_batch", lambda: dict(
        q=torch.zeros(0, 2, 8), k=torch.zeros(0, 2, 8), v=torch.zeros(0, 2, 8),
        seq_offsets_q=_i64([0])), _shape_is([0, 2, 8])),
    ("hstu_attn", "hstu", "zero_lengths", lambda: dict(
        q=torch.zeros(0, 2, 8), k=torch.zeros(0, 2, 8), v=torch.zeros(0, 2, 8),
        seq_offsets_q=_i64([0, 0, 0])), _shape_is([0, 2, 8])),
    ("hstu_attn", "hstu", "huge_window_unbounded", lambda: dict(
        q=_rand(8, 2, 8), k=_rand(8, 2, 8, seed=1), v=_rand(8, 2, 8, seed=2),
        seq_offsets_q=_i64([0, 5, 8]), window=(2**63 - 1, 2**63 - 1)),
     _equals(lambda: recops.hstu_attn(_rand(8, 2, 8), _rand(8, 2, 8, seed=1),
                                      _rand(8, 2, 8, seed=2), _i64([0, 5, 8]), window=(-1, -1)))),
    ("hstu_mask", "hstu", "zero", lambda: dict(seq_len=0), _shape_is([0, 0])),
    ("hstu_mask", "hstu", "causal", lambda: dict(seq_len=4),
     _equals(lambda: torch.ones(4, 4, dtype=torch.bool).tril())),
    ("rms_norm", "training", "zero_rows", lambda: dict(x=torch.zeros(0, 8), weight=torch.ones(8)),
     _shape_is([0, 8])),
    ("rms_norm", "training", "values", lambda: dict(x=_rand(5, 8), weight=_rand(8, seed=1),
                                                    eps=1e-6),
     _equals(lambda: _rms(_rand(5, 8), _rand(8, seed=1), 1e-6))),
    ("layer_norm", "training", "zero_rows", lambda: dict(x=torch.zeros(0, 8),
                                                         weight=torch.ones(8), bias=torch.zeros(8)),
     _shape_is([0, 8])),
    ("layer_norm", "training", "values", lambda: dict(x=_rand(5, 8), weight=_rand(8, seed=1),
                                                      bias=_rand(8, seed=2)),
     _equals(lambda: torch.nn.functional.layer_norm(_rand(5, 8), (8,), _rand(8, seed=1),
                                                    _rand(8, seed=2), 1e-5))),
    ("l2norm", "training", "zero_rows", lambda: dict(x=torch.zeros(0, 8)), _shape_is([0, 8])),
    ("clipped_swiglu", "training", "zero_rows", lambda: dict(x=torch.zeros(0, 8)),
     _shape_is([0, 4])),
    ("block_sparse_attention", "stem", "zero_heads", lambda: dict(
        q=torch.zeros(6, 0, 8, dtype=torch.bfloat16), k=torch.zeros(6, 0, 8, dtype=torch.bfloat16),
        v=torch.zeros(6, 0, 8, dtype=torch.bfloat16),
        sparse_indices=torch.zeros(1, 0, 1, 1, dtype=torch.int32),
        sparse_seq_len=torch.zeros(1, 0, 1, dtype=torch.int32), cu_seqlens_q=_i32([0, 6]),
        kv_seq_lens=_i32([6]), cu_seqlens_kv=_i32([0, 6]), sparse_block_size=8),
     _shape_is([6, 0, 8])),
    ("stem_prepare", "stem", "zero_heads", lambda: dict(
        q=torch.zeros(6, 0, 8, dtype=torch.bfloat16), k=torch.zeros(6, 0, 8, dtype=torch.bfloat16),
        v=torch.zeros(6, 0, 8, dtype=torch.bfloat16), cu_seqlens_q=_i32([0, 6]),
        kv_seq_lens=_i32([6]), cu_seqlens_kv=_i32([0, 6])),
     lambda out: None if all(t.shape[1] == 0 for t in _tensors(out)) else
     f"shapes {[list(t.shape) for t in _tensors(out)]}: dim 1 (heads) should be 0"),
]


def _edge_probes(bases: Dict[str, Base]) -> list:
    out = []
    for name, family, tag, make, check in EDGE:
        names = bases[name].names if name in bases else (name,)

        def run(name=name, make=make, check=check, names=names):
            return judge("valid", names, None, lambda: getattr(recops, name)(**make()), check)
        out.append(Probe(f"{family}/{name}/empty/{tag}" if tag not in (
            "values", "truncate_and_pad", "nan_padding", "int_values", "causal",
            "huge_window_unbounded") else f"{family}/{name}/reference/{tag}",
            family, name, "empty" if "value" not in tag and tag not in (
                "truncate_and_pad", "nan_padding", "causal", "huge_window_unbounded")
            else "reference", "valid", call_line(name, make())[:200], None, names, run=run))
    return out


def python_probes(bases: Dict[str, Base]) -> list:
    probes = []
    for name in sorted(bases):
        g = Gen(bases[name], probes)
        kw0 = bases[name].make()
        _tensor_probes(g, kw0)
        _int_probes(g, kw0)
        _float_probes(g, kw0)
        _special_probes(g, kw0)
    probes += _edge_probes(bases)
    return probes


# ---------------------------------------------------------------------------------------------
# CLI probes

def cli_probes(binary: str, tmp: str) -> list:
    ops_dir = os.path.join(ROOT, "src", "ops")
    probes = []

    def add(cat, detail, cmd, clear, expect="invalid", what=None):
        probes.append(Probe(f"cli/{cmd[0]}/{cat}/{detail}", "cli", cmd[0], cat, expect,
                            what or "recops " + " ".join(cmd), None, (), cmd=cmd, clear=clear))

    cd = ["--cases-dir", ops_dir]
    small = ["--op", "rms_norm", "--backend", "cpu", "--smoke", "-q"]
    required = {"record": ["--out", os.path.join(tmp, "rec_x")], "compare": [tmp],
                "report": [os.path.join(tmp, "results.json"), "--out", tmp]}
    for sub in ("check", "bench", "record", "compare", "list", "tune", "report"):
        add("bad-flag", f"{sub}:unknown", [sub, "--frobnicate"] + required.get(sub, []),
            ("frobnicate",))
    for sub, flag in (("check", "--op"), ("bench", "--shape"), ("check", "--backend"),
                      ("check", "--threads"), ("record", "--out"), ("check", "--json")):
        add("bad-flag", f"{sub}:{flag}:novalue", [sub, flag], (flag,))
    bad_values = [
        ("check", "--backend", "nope"), ("check", "--dtype", "fp13"),
        ("check", "--impl", "bogus"), ("check", "--op", "nope"), ("check", "--repeat", "-1"),
        ("check", "--repeat", "abc"), ("check", "--threads", "0"), ("check", "--threads", "-3"),
        ("check", "--shard", "3/2"), ("check", "--shard", "0/0"), ("check", "--shard", "abc"),
        ("check", "--nonfinite", "foo"), ("check", "--stress-seconds", "-1"),
        ("check", "--case", "nope"), ("check", "--offsets-dtype", "fp32"),
        ("check", "--streams", "-1"), ("bench", "--shape", "nope"),
        ("bench", "--max-seconds", "-1"), ("bench", "--threshold", "nan"),
        ("bench", "--min-reps", "-5"), ("bench", "--against", "/nonexistent/x.json"),
        ("list", "--op", "nope"), ("tune", "--min-gain", "abc"), ("tune", "--rounds", "-1"),
        ("record", "--dtype", "fp13"),
    ]
    for sub, flag, val in bad_values:
        cmd = [sub, flag, val] + _small_for(sub, flag) + cd
        if sub == "record":
            cmd += ["--out", os.path.join(tmp, "rec_bad")]
        distinct = len(val) >= 3 and not re.fullmatch(r"-?[0-9./]+", val)
        add("bad-flag-value", f"{sub}:{flag}={val}", cmd, (flag,) + ((val,) if distinct else ()))
    add("bad-flag-value", "check:--cases-dir=missing", ["check", "--cases-dir",
                                                         "/nonexistent/dir"], ("/nonexistent/dir",
                                                                               "cases-dir"))
    add("bad-flag-value", "check:--json=unwritable", ["check", "--json", "/nonexistent/d/x.json"]
        + _small_for("check", "--json") + cd, ("/nonexistent/d/x.json", "--json"))
    add("bad-flag-value", "compare:missing-dir", ["compare", "/nonexistent/rec"] + cd,
        ("/nonexistent/rec",))
    # malformed / hostile case files
    case_files = [
        ("jagged_to_padded_dense", "huge_max_seq_len",
         "  - id: h\n    lengths: [3]\n    E: [2]\n    max_seq_len: 4611686018427387904\n", "h"),
        ("jagged_to_padded_dense", "max_seq_len_2e40",
         "  - id: h\n    lengths: [3]\n    E: [2]\n    max_seq_len: 1099511627776\n", "h"),
        ("jagged_to_padded_dense", "negative_length",
         "  - id: n\n    lengths: [-3]\n    E: [2]\n    max_seq_len: 4\n", "n"),
        ("jagged_to_padded_dense", "string_length",
         "  - id: s\n    lengths: [abc]\n    E: [2]\n    max_seq_len: 4\n", "s"),
        ("jagged_to_padded_dense", "huge_E",
         "  - id: e\n    lengths: [3]\n    E: [1099511627776]\n    max_seq_len: 4\n", "e"),
        ("jagged_to_padded_dense", "offsets_decreasing",
         "  - id: o\n    offsets: [0, 5, 2]\n    E: [2]\n    max_seq_len: 4\n", "o"),
        ("jagged_to_padded_dense", "seed_past_int64",
         "  - id: s\n    seed: 100000000000000000000000\n    lengths: [3]\n    E: [2]\n"
         "    max_seq_len: 4\n", "s"),
        ("jagged_to_padded_dense", "unknown_tag",
         "  - id: t\n    lengths: [3]\n    E: [2]\n    max_seq_len: 4\n    tags: [frobnicate=1]\n",
         "frobnicate"),
        ("jagged_to_padded_dense", "bad_dtype",
         "  - id: d\n    lengths: [3]\n    E: [2]\n    max_seq_len: 4\n    dtype: fp13\n", "fp13"),
        ("dense_to_jagged", "huge_S",
         "  - id: s\n    lengths: [3, 1]\n    E: [2]\n    S: 4611686018427387904\n", "s"),
        ("dense_to_jagged", "huge_row_pad",
         "  - id: r\n    lengths: [3, 1]\n    E: [2]\n    row_pad: 4611686018427387904\n", "r"),
        ("hstu_attn_fwd", "huge_heads",
         "  - id: h\n    lengths: [3]\n    shape: [4611686018427387904, 1, 16]\n", "h"),
        ("hstu_attn_fwd", "negative_dim",
         "  - id: h\n    lengths: [3]\n    shape: [1, 1, -16]\n", "h"),
        ("hstu_attn_fwd", "short_shape",
         "  - id: h\n    lengths: [3]\n    shape: [1]\n", "h"),
        ("hstu_attn_fwd", "huge_paged",
         "  - id: h\n    lengths: [3, 1]\n    shape: [1, 1, 16]\n"
         "    tags: [paged=4611686018427387904]\n", "h"),
        ("hstu_attn_fwd", "bad_window_tag",
         "  - id: h\n    lengths: [3]\n    shape: [1, 1, 16]\n    tags: [window=3x:2]\n", "window"),
        ("hstu_attn_fwd", "unknown_tag",
         "  - id: h\n    lengths: [3]\n    shape: [1, 1, 16]\n    tags: [scores=zipf]\n",
         "scores"),
        ("stem_indexer", "garbage_kv",
         "  - id: k\n    lengths: [9]\n    shape: [16, 16, 64]\n    tags: [kv=12:q]\n", "kv"),
        ("stem_indexer", "huge_qmax",
         "  - id: k\n    lengths: [9]\n    shape: [2, 1, 16]\n    tags: [qmax=4611686018427387904]\n",
         "k"),
        ("stem_indexer", "huge_kmax",
         "  - id: k\n    lengths: [9]\n    shape: [2, 1, 16]\n    tags: [kmax=4611686018427387904]\n",
         "k"),
        ("block_sparse_attention", "huge_lengths",
         "  - id: b\n    lengths: [4611686018427387904]\n    shape: [2, 1, 16]\n", "b"),
        ("rms_norm", "huge_shape",
         "  - id: r\n    shape: [4611686018427387904, 4611686018427387904]\n", "r"),
        ("complete_cumsum", "negative_shape", "  - id: c\n    shape: [-4]\n", "c"),
        ("complete_cumsum", "not_a_list", "  - id: c\n    shape: 7\n", "c"),
    ]
    for op, tag, body, key in case_files:
        folder = _folder_of(op)
        d = os.path.join(tmp, "cases", tag)
        os.makedirs(os.path.join(d, folder), exist_ok=True)
        path = os.path.join(d, folder, "cases.yaml")
        with open(path, "w") as f:
            f.write(f"op: {op}\nstandard: exact\ncases:\n{body}")
        add("bad-case-file", f"{op}:{tag}", ["check", "--backend", "cpu", "--op", op,
                                            "--cases-dir", d], (path, key))
    for tag, data in (("empty", b""), ("binary", bytes(range(256)) * 4),
                      ("deep", b"op: rms_norm\ncases: " + b"[" * 5000 + b"]" * 5000 + b"\n"),
                      ("not_mapping", b"- 1\n- 2\n")):
        d = os.path.join(tmp, "cases", "raw_" + tag)
        os.makedirs(os.path.join(d, _folder_of("rms_norm")), exist_ok=True)
        path = os.path.join(d, _folder_of("rms_norm"), "cases.yaml")
        with open(path, "wb") as f:
            f.write(data)
        add("bad-case-file", f"rms_norm:raw_{tag}", ["check", "--backend", "cpu", "--op",
                                                     "rms_norm", "--cases-dir", d], (path,))
    # corrupt recordings (compare reads files from another machine)
    probes += _recording_probes(binary, tmp, ops_dir)
    return probes


def _small_for(sub: str, flag: str) -> list:
    base = {"check": ["--op", "rms_norm", "--backend", "cpu", "--smoke", "-q"],
            "bench": ["--op", "rms_norm", "--backend", "cpu", "--quick", "--max-seconds", "0.1"],
            "tune": ["--op", "rms_norm", "--backend", "cpu", "--quick", "--max-seconds", "0.1",
                     "--out", "/dev/null"],
            "record": ["--op", "rms_norm", "--backend", "cpu", "--quick"]}.get(sub, [])
    out, i = [], 0
    while i < len(base):
        if base[i] == flag:
            i += 2 if i + 1 < len(base) and not base[i + 1].startswith("-") else 1
            continue
        out.append(base[i])
        i += 1
    return out


def _folder_of(op: str) -> str:
    return testing._folder_of(op)


def _recording_probes(binary: str, tmp: str, ops_dir: str) -> list:
    rec = os.path.join(tmp, "rec_good")
    r = subprocess.run([binary, "record", "--backend", "cpu", "-q", "--op",
                        "jagged_to_padded_dense", "--case", "b1", "--dtype", "fp32", "--out", rec,
                        "--cases-dir", ops_dir], capture_output=True, text=True, timeout=120)
    man = os.path.join(rec, "manifest.json")
    if r.returncode != 0 or not os.path.isfile(man):
        return []
    entry = json.load(open(man))["cases"][0]
    probes = []

    def variant(tag, edit, clear):
        d = os.path.join(tmp, "rec_" + tag)
        shutil.copytree(rec, d)
        edit(d, entry)
        probes.append(Probe(f"cli/compare/corrupt-recording/{tag}", "cli", "compare",
                            "corrupt-recording", "invalid", f"recops compare on a recording with "
                            f"{tag.replace('_', ' ')}", None, (),
                            cmd=["compare", d, "--backend", "cpu", "--cases-dir", ops_dir],
                            clear=clear))

    def st_path(d, e):
        return os.path.join(d, e["inputs"])

    def rewrite_header(d, e, fn):
        p = st_path(d, e)
        raw = open(p, "rb").read()
        n = struct.unpack("<Q", raw[:8])[0]
        hdr = json.loads(raw[8:8 + n])
        fn(hdr)
        h = json.dumps(hdr).encode()
        h += b" " * ((8 - len(h) % 8) % 8)
        open(p, "wb").write(struct.pack("<Q", len(h)) + h + raw[8 + n:])

    def huge_shape(h):
        k = next(k for k in h if k != "__metadata__")
        h[k]["shape"] = [2**61 + 2]

    def bad_offsets(h):
        k = next(k for k in h if k != "__metadata__")
        h[k]["data_offsets"] = [0, 2**62]

    variant("huge_shape", lambda d, e: rewrite_header(d, e, huge_shape),
            (entry["inputs"], "shape", "size"))
    variant("bad_data_offsets", lambda d, e: rewrite_header(d, e, bad_offsets),
            (entry["inputs"], "offset"))
    variant("truncated", lambda d, e: open(st_path(d, e), "r+b").truncate(20),
            (entry["inputs"],))
    variant("huge_header_len", lambda d, e: _poke(st_path(d, e), 0, struct.pack("<Q", 2**62)),
            (entry["inputs"], "header"))
    variant("empty_file", lambda d, e: open(st_path(d, e), "wb").close(), (entry["inputs"],))
    variant("manifest_garbage", lambda d, e: open(os.path.join(d, "manifest.json"), "w").write(
        "{not json"), ("manifest.json",))
    variant("manifest_missing_file", lambda d, e: os.remove(st_path(d, e)), (entry["inputs"],))
    return probes


def _poke(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


# ---------------------------------------------------------------------------------------------
# running

_AS_LIMIT = [None]


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _child(probe: Probe, conn) -> None:
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if _AS_LIMIT[0] and probe.as_limit:
            resource.setrlimit(resource.RLIMIT_AS, (_AS_LIMIT[0], _AS_LIMIT[0]))
        torch.set_num_threads(1)
        res = probe.run()
    except BaseException as e:  # noqa: BLE001 - a harness error is reported, not hidden
        res = {"outcome": "crash", "detail": "harness: " + "".join(
            traceback.format_exception_only(type(e), e)).strip()[:400]}
    try:
        conn.send(res)
        conn.close()
    finally:
        os._exit(0)


def run_python(probes: List[Probe], timeout: float, jobs: int, progress) -> Dict[str, dict]:
    ctx = mp.get_context("fork")
    results, pending, running = {}, list(probes), {}
    while pending or running:
        while pending and len(running) < jobs:
            p = pending.pop(0)
            rd, wr = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(p, wr), daemon=True)
            proc.start()
            wr.close()
            running[p.id] = (p, proc, rd, time.monotonic())
        time.sleep(0.005)
        for pid, (p, proc, rd, t0) in list(running.items()):
            res = None
            if rd.poll():
                try:
                    res = rd.recv()
                except EOFError:
                    res = None
                proc.join(5)
                if res is None:
                    res = _dead(proc)
            elif not proc.is_alive():
                proc.join()
                res = rd.recv() if rd.poll() else _dead(proc)
            elif time.monotonic() - t0 > timeout:
                proc.kill()
                proc.join()
                res = {"outcome": "hang", "detail": f"no result within {timeout:g} s"}
            if res is not None:
                res["seconds"] = round(time.monotonic() - t0, 3)
                results[pid] = res
                rd.close()
                del running[pid]
                progress(p, res)
    return results


def _dead(proc) -> dict:
    code = proc.exitcode
    if code is not None and code < 0:
        try:
            sig = signal.Signals(-code).name
        except ValueError:
            sig = str(-code)
        return {"outcome": "crash", "detail": f"killed by {sig}"}
    return {"outcome": "crash", "detail": f"exited {code} without reporting a result"}


def run_cli_probe(binary: str, p: Probe, timeout: float) -> dict:
    t0 = time.monotonic()
    try:
        r = subprocess.run([binary] + p.cmd, capture_output=True, timeout=timeout,
                           stdin=subprocess.DEVNULL,
                           preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
    except subprocess.TimeoutExpired:
        return {"outcome": "hang", "detail": f"no exit within {timeout:g} s",
                "seconds": round(time.monotonic() - t0, 3)}
    text = (r.stdout + r.stderr).decode(errors="replace")
    tail = " | ".join(line.strip() for line in text.strip().splitlines()[-3:])[:400]
    sec = round(time.monotonic() - t0, 3)
    rc = r.returncode
    if rc < 0 or rc >= 128:
        return {"outcome": "crash", "detail": f"exit status {rc}: {tail}", "seconds": sec}
    if rc == 0:
        return {"outcome": "accepted-bad-input", "detail": f"exit status 0: {tail}",
                "seconds": sec}
    if not any(c.lower() in text.lower() for c in p.clear):
        return {"outcome": "unclear-message", "detail": f"exit {rc}: {tail}", "seconds": sec}
    return {"outcome": "ok", "detail": f"exit {rc}: {tail}", "seconds": sec}


def run_cli(binary: str, probes: List[Probe], timeout: float, jobs: int, progress) -> dict:
    from concurrent.futures import ThreadPoolExecutor

    results = {}
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = {ex.submit(run_cli_probe, binary, p, timeout): p for p in probes}
        for fut, p in futs.items():
            results[p.id] = fut.result()
            progress(p, results[p.id])
    return results


# ---------------------------------------------------------------------------------------------
# report


def _snapshot_binary(path: Optional[str], tmp: str) -> Optional[str]:
    if not path:
        return None
    for _ in range(120):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            dst = os.path.join(tmp, "recops")
            shutil.copy2(path, dst)
            return dst
        time.sleep(1)
    return None


def _commit() -> str:
    try:
        c = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src",
                                "include", "python", "tools"], capture_output=True,
                               text=True).stdout.strip()
        return c + ("+dirty" if dirty else "")
    except OSError:
        return "unknown"


def table(rows: Dict[str, collections.Counter], cols: List[str]) -> str:
    w = max([len("family")] + [len(r) for r in rows])
    head = f"{'family':<{w}} " + " ".join(f"{c:>{max(len(c), 5)}}" for c in cols) + "  total"
    lines = [head, "-" * len(head)]
    for r, cnt in rows.items():
        lines.append(f"{r:<{w}} " + " ".join(f"{cnt.get(c, 0):>{max(len(c), 5)}}" for c in cols)
                     + f"  {sum(cnt.values()):>5}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", help="write every probe and its outcome to this file")
    ap.add_argument("--only", action="append", default=[],
                    help="fnmatch pattern on probe ids (family/op/category/detail); a plain "
                         "word matches as a substring; repeatable")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per probe (20)")
    ap.add_argument("--jobs", type=int, default=2, help="probes at once (2)")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI probes")
    ap.add_argument("--probe-threads", type=int, default=PROBE_THREADS[0],
                    help="torch.set_num_threads of the threads probes (256; see PROBE_THREADS)")
    ap.add_argument("--no-python", action="store_true", help="skip the Python probes")
    ap.add_argument("--list", action="store_true", help="list the probes and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per probe")
    args = ap.parse_args(argv)
    PROBE_THREADS[0] = args.probe_threads
    t_start = time.monotonic()

    def log(msg):
        if args.verbose:
            print(msg, flush=True)

    def selected(pid):
        if not args.only:
            return True
        return any(fnmatch.fnmatchcase(pid, pat) if any(ch in pat for ch in "*?[")
                   else pat in pid for pat in args.only)

    # One intra-op thread in this process before anything runs: an OpenMP team created here
    # would be inherited by the forked children without its threads, and a child's first
    # parallel region would wait for them forever (seen as a `hang` of every threads probe).
    torch.set_num_threads(1)
    def wanted_function(name):
        # --only patterns of the form family/op/...: build only those ops' bases (recording
        # every op's sample takes ~30 s); a plain word may match anything.
        if not args.only:
            return True
        for pat in args.only:
            parts = pat.split("/")
            if len(parts) < 2 or not any(ch in pat for ch in "*?["):
                if len(parts) < 2:
                    return True
            if fnmatch.fnmatchcase(name, parts[1]) or (len(parts) >= 2 and parts[1] in name
                                                        and not any(c in pat for c in "*?[")):
                return True
        return False

    tmp = tempfile.mkdtemp(prefix="recops-sweep-")
    try:
        # The build directory is shared: snapshot the CLI, which another build may relink
        # while this runs (the samples of the base calls are recorded with it).
        binary = _snapshot_binary(os.environ.get("RECOPS_BIN") or testing.cli_binary(), tmp)
        if binary:
            os.environ["RECOPS_BIN"] = binary
        probes: List[Probe] = []
        missing = {}
        if not args.no_python:
            bases, missing = build_bases(log, wanted_function)
            probes += python_probes(bases)
        if not args.no_cli:
            if binary and os.path.isfile(binary):
                probes += cli_probes(binary, tmp)
            else:
                print("sweep: no recops CLI (set RECOPS_BIN); CLI probes skipped")
        ids = [p.id for p in probes]
        dup = [i for i, n in collections.Counter(ids).items() if n > 1]
        assert not dup, f"duplicate probe ids: {dup[:5]}"
        probes = [p for p in probes if selected(p.id)]
        if args.list:
            if missing:
                print("without probes:", missing)
            for p in probes:
                print(f"{p.id:<70} {p.expect:<8} {p.what}")
            print(f"{len(probes)} probes")
            return 0
        py = [p for p in probes if p.run is not None]
        cli = [p for p in probes if p.cmd is not None]
        _AS_LIMIT[0] = _vm_size() + (4 << 30)
        done = [0]

        def progress(p, res):
            done[0] += 1
            if args.verbose:
                print(f"[{done[0]}/{len(probes)}] {res['outcome']:<18} {p.id}  "
                      f"{res.get('detail', '')[:120]}", flush=True)
            elif res["outcome"] != "ok":
                print(f"  {res['outcome']:<18} {p.id}", flush=True)

        serial = [p for p in py if p.category == "threads"]
        results = run_python([p for p in py if p.category != "threads"], args.timeout,
                             args.jobs, progress)
        results.update(run_python(serial, args.timeout, 1, progress))
        if cli:
            results.update(run_cli(binary, cli, args.timeout, args.jobs, progress))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.monotonic() - t_start

    per_family: Dict[str, collections.Counter] = collections.OrderedDict()
    per_input: Dict[str, collections.Counter] = collections.OrderedDict()
    for fam in ("jagged", "hstu", "stem", "training", "cli"):
        per_family[fam] = collections.Counter()
    for p in probes:
        o = results[p.id]["outcome"]
        per_family.setdefault(p.family, collections.Counter())[o] += 1
        per_input.setdefault(p.category, collections.Counter())[o] += 1
    per_family = {k: v for k, v in per_family.items() if v}
    total = collections.Counter()
    for v in per_family.values():
        total.update(v)
    per_family["all"] = total
    commit = _commit()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"\nrecops reliability sweep: {len(probes)} probes, commit {commit}, {date}, "
          f"torch {torch.__version__}, wall {wall:.0f} s (--jobs {args.jobs}, --timeout "
          f"{args.timeout:g})\n")
    print("Outcomes per op family:")
    print(table(per_family, CATEGORIES))
    print("\nOutcomes per input category:")
    print(table(dict(sorted(per_input.items())), CATEGORIES))
    if missing:
        print("\nPublic functions without probes: " + "; ".join(
            f"{k} ({v})" for k, v in sorted(missing.items())))
    bad = [p for p in probes if results[p.id]["outcome"] != "ok"]
    if bad:
        print(f"\nNon-ok probes ({len(bad)}), by outcome; reproduce one with "
              f"tests/reliability/sweep.py --only '<id>' -v:")
        for cat in CATEGORIES[:-1]:
            group = [p for p in bad if results[p.id]["outcome"] == cat]
            if not group:
                continue
            print(f"\n[{cat}] {len(group)}")
            for p in group:
                print(f"  {p.id}: {p.what}\n      -> {results[p.id]['detail'][:300]}")
    if args.json:
        doc = {"commit": commit, "date": date, "torch": torch.__version__,
               "wall_seconds": round(wall, 1), "timeout": args.timeout, "jobs": args.jobs,
               "only": args.only, "categories": CATEGORIES,
               "per_family": {k: dict(v) for k, v in per_family.items()},
               "per_input_category": {k: dict(v) for k, v in per_input.items()},
               "functions_without_probes": missing,
               "probes": [{"id": p.id, "family": p.family, "op": p.op, "category": p.category,
                           "expect": p.expect, "arg": p.arg, "what": p.what,
                           **({"cmd": ["recops"] + p.cmd} if p.cmd else {}),
                           **results[p.id]} for p in probes]}
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"\nwrote {args.json}")
    worst = {"crash", "hang", "accepted-bad-input", "silent-wrong"}
    return 1 if any(results[p.id]["outcome"] in worst for p in probes) else 0


if __name__ == "__main__":
    sys.exit(main())
