"""recops: operators for generative recommenders and long-context attention, as PyTorch ops.

Three families (specs in ``docs/spec/``; each op's README under ``src/ops/<family>/<op>/``):

- HSTU attention (hstu_attention.md): ``hstu_attn``, forward and backward over jagged or dense
  sequences with the spec's masks (causal, windows, contexts, targets, custom), rab and GQA;
  ``hstu_mask``, the valid mask of one sequence; NVIDIA's and Meta's call forms in
  ``recops.compat``.
- Jagged tensor ops (jagged_ops.md): ``jagged_to_padded_dense``, ``dense_to_jagged`` and the
  offset scans ``complete_cumsum`` / ``exclusive_cumsum`` / ``inclusive_cumsum``; FBGEMM's
  call forms in ``recops.compat.fbgemm``.
- The Stem sparse prefill ops (stem_indexer.md): ``stem_prepare``, ``stem_indexer``,
  ``stem_indexer_metadata`` and ``block_sparse_attention``, with block-mask helpers in
  ``recops.stem``.

``set_validate`` switches the checks of tensor contents on CUDA calls (the CPU always checks).

Importing the package loads ``librecops_torch.so``, which registers the ``torch.ops.recops.*``
operators (CPU, CUDA when built with it, Meta and Autograd kernels). The library is searched for,
in order:

1. ``$RECOPS_TORCH_LIB`` (a path to the ``.so``);
2. next to this package (``pip install .`` puts it there);
3. ``<repo>/build/lib`` (the CMake build of a source checkout, e.g. ``make build``).

Size letters of the jagged ops (jagged_ops.md): ``B`` sequences, ``total_L`` rows of a jagged
values tensor, ``max_L`` the truncation bound (``max_seq_len``), ``D`` the product of the trailing
dims ``E``. A jagged tensor is ``values [total_L, *E]`` plus ``seq_offsets [B+1]`` (int32 or
int64, ``seq_offsets[0] == 0``, non-decreasing, ``seq_offsets[B] == total_L``). The letters of
HSTU and Stem: ``include/recops/hstu.h`` and ``include/recops/sparse_attn.h``.
"""

import os as _os
from pathlib import Path as _Path

import torch as _torch

__all__ = [
    "jagged_to_padded_dense",
    "dense_to_jagged",
    "complete_cumsum",
    "exclusive_cumsum",
    "inclusive_cumsum",
    "set_validate",
    "hstu_attn",
    "hstu_mask",
    "stem_prepare",
    "stem_indexer",
    "stem_indexer_metadata",
    "block_sparse_attention",
    "library_path",
    "__version__",
]

_LIB_NAME = "librecops_torch.so"


def _version() -> str:
    # The one version string: project(recops VERSION ...) of CMakeLists.txt, read from the source
    # tree when this is a checkout, else from the installed package's metadata (built from it).
    import re

    cmake = _Path(__file__).resolve().parents[2] / "CMakeLists.txt"
    if cmake.is_file():
        m = re.search(r"project\(recops VERSION ([0-9][0-9.]*)", cmake.read_text())
        if m:
            return m.group(1)
    try:
        from importlib.metadata import version

        return version("recops")
    except Exception:
        return "unknown"


__version__ = _version()


def _find_library() -> _Path:
    here = _Path(__file__).resolve().parent
    env = _os.environ.get("RECOPS_TORCH_LIB")
    candidates = []
    if env:
        candidates.append(_Path(env))
    candidates.append(here / _LIB_NAME)
    candidates.append(here.parent.parent / "build" / "lib" / _LIB_NAME)
    for c in candidates:
        if c.is_file():
            return c
    raise ImportError(
        "recops: cannot find " + _LIB_NAME + "; looked at "
        + ", ".join(str(c) for c in candidates)
        + ". Build it (cmake -S . -B build && cmake --build build) or set RECOPS_TORCH_LIB."
    )


library_path = _find_library()
if not hasattr(_torch.ops.recops, "jagged_to_padded_dense"):
    _torch.ops.load_library(str(library_path))

# Every op of the kit's registry gets a wrapper here (python/recops/_kit.py), and the op folders'
# Python modules are imported: a new op needs no edit of this file.
from . import _kit  # noqa: E402

_exports = _kit.build()
globals().update(_exports)
__all__ += sorted(n for n in _exports if n not in __all__)

from .ops import set_validate  # noqa: E402,F401
from . import stem  # noqa: E402,F401  (recops.stem: the Stem ops and block-mask helpers)
