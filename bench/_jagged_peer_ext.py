"""Upstream peers of bench/jagged_peers.py: FBGEMM's compiled ops (``torch.ops.fbgemm``, when
fbgemm_gpu is importable) and the Triton kernels of FBGEMM (``fbgemm_gpu/triton/jagged``), SLL
(``fbgemm_gpu/sll/triton``, its Triton paths: ``use_fbgemm_kernel=False``) and Meta's
generative-recommenders (``ops/triton/triton_jagged.py``).

The Triton sources are not installed: ``scripts/prepare_peers.sh`` unpacks FBGEMM's and SLL's into
``.peers/fbgemm_gpu_triton``; generative-recommenders lives in ``.peers/generative-recommenders``.
Every peer is optional. A module that fails to import is remembered with its error, and each peer
built from it raises that error when called, so that the bench records it and goes on.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import torch

FBGEMM_TRITON = "fbgemm_gpu.triton.jagged.triton_jagged_tensor_ops"
SLL_BMM = "fbgemm_gpu.sll.triton.triton_jagged_bmm"
SLL_SOFTMAX = "fbgemm_gpu.sll.triton.triton_jagged_softmax"
SLL_ADD = "fbgemm_gpu.sll.triton.triton_jagged_dense_elementwise_add"
SLL_DENSE_ATTN = "fbgemm_gpu.sll.triton.triton_jagged_dense_flash_attention"
SLL_MH_ATTN = "fbgemm_gpu.sll.triton.triton_multi_head_jagged_flash_attention"
SLL_CAT = "fbgemm_gpu.sll.triton.triton_dense_jagged_cat_jagged_out"
GR_TRITON = "generative_recommenders.ops.triton.triton_jagged"


def fbgemm_ops():
    """torch.ops.fbgemm when the installed fbgemm_gpu registered its ops, else None."""
    try:
        import fbgemm_gpu  # noqa: F401
    except Exception as e:  # not installed on most machines we run on: recorded, not fatal
        print(f"# fbgemm_gpu not importable ({type(e).__name__}); FBGEMM op peers skipped",
              file=sys.stderr)
        return None
    if not hasattr(torch.ops.fbgemm, "jagged_to_padded_dense"):
        print("# fbgemm_gpu imported but registered no ops (a stand-in package?); FBGEMM op peers "
              "skipped", file=sys.stderr)
        return None
    return torch.ops.fbgemm


class PeerError(RuntimeError):
    """A peer that could not be built or run; the message is what the record carries."""


class TritonPeers:
    """Imports the Triton peer modules on first use, remembering failures."""

    def __init__(self, dirs):
        # Appended, not prepended: an installed fbgemm_gpu (with its compiled ops) keeps precedence
        # over the stand-in packages of .peers; its sll/triton sources are the same files.
        for d in dirs:
            if d and Path(d).is_dir() and str(d) not in sys.path:
                sys.path.append(str(d))
        self._mods = {}

    def module(self, name):
        if name not in self._mods:
            try:
                self._mods[name] = importlib.import_module(name)
            except Exception as e:
                self._mods[name] = PeerError(f"import {name}: {type(e).__name__}: {e}")
        m = self._mods[name]
        if isinstance(m, Exception):
            raise m
        return m

    def fn(self, module, attr):
        """A callable that resolves module.attr when called (an import error surfaces there)."""
        def call(*args, **kw):
            return getattr(self.module(module), attr)(*args, **kw)
        return call


def _first(t):
    return t[0] if isinstance(t, (tuple, list)) else t


def _needs(fb, name):
    """FBGEMM op `name`, or a function that raises why it is missing."""
    try:
        return getattr(fb, name)
    except (AttributeError, RuntimeError) as e:
        def missing(*args, **kw):
            raise PeerError(f"torch.ops.fbgemm.{name} not in this fbgemm_gpu: {e}")
        return missing


def _needs_sll(fb, name):
    """FBGEMM's sll_* op `name`: fbgemm_gpu registers those when fbgemm_gpu.sll is imported."""
    try:
        importlib.import_module("fbgemm_gpu.sll")
    except Exception as e:
        def missing(*args, **kw):
            raise PeerError(f"import fbgemm_gpu.sll: {type(e).__name__}: {e}")
        return missing
    return _needs(fb, name)


# Each builder returns {peer name: (function of the op's inputs, differentiable)}; the functions
# take the same arguments as the recops op's public Python function.
def peers_to_dense(fb, tri):
    out = {}
    if fb is not None:
        op = _needs(fb, "jagged_to_padded_dense")
        out["fbgemm"] = (lambda v, o, L, pad: op(v, [o], [L], pad), True)
    ftri = tri.fn(FBGEMM_TRITON, "jagged_to_dense")
    out["fbgemm_triton:jagged_to_dense"] = (lambda v, o, L, pad: ftri(v, [o], [L], pad), False)
    return out


def peers_to_jagged(fb, tri):
    out = {}
    if fb is not None:
        op = _needs(fb, "dense_to_jagged")
        out["fbgemm"] = (lambda d, o, n: op(d, [o], n)[0], True)
    ftri = tri.fn(FBGEMM_TRITON, "dense_to_jagged")
    out["fbgemm_triton:dense_to_jagged"] = (lambda d, o, n: ftri(d, [o])[0], False)
    return out


def _elementwise(fb, tri, fb_name, triton_name, label):
    """FBGEMM's jagged-out op and its Triton twin, both called as (x, [offsets], y)[0]."""
    out = {}
    if fb is not None:
        op = _needs(fb, fb_name)
        out["fbgemm"] = (lambda x, o, y: op(x, [o], y)[0], True)
    ftri = tri.fn(FBGEMM_TRITON, triton_name)
    out["fbgemm_triton:" + label] = (lambda x, o, y: ftri(x, [o], y)[0], False)
    return out


def peers_add(fb, tri):
    out = _elementwise(fb, tri, "jagged_dense_elementwise_add_jagged_output",
                       "jagged_dense_elementwise_add_jagged_output", "add_jagged_output")
    sll = tri.fn(SLL_ADD, "jagged_dense_elementwise_add")
    out["sll_triton:jagged_dense_elementwise_add"] = (
        lambda x, o, y: sll(x, o, y, y.shape[1], use_fbgemm_kernel=False), True)
    return out


def peers_mul(fb, tri):
    # SLL's jagged_dense_elementwise_mul_jagged_out is the jagged² (N_b x N_b block) product, not
    # this op: no SLL peer here.
    return _elementwise(fb, tri, "jagged_dense_elementwise_mul",
                        "jagged_dense_elementwise_mul_jagged_output", "mul_jagged_output")


def peers_softmax(fb, tri):
    out = {}
    if fb is not None:
        op = _needs(fb, "jagged_softmax")
        out["fbgemm"] = (lambda x, o, L: op(x, o, L)[0], True)
    sll = tri.fn(SLL_SOFTMAX, "jagged_softmax")
    out["sll_triton:jagged_softmax"] = (lambda x, o, L: sll(x, o, L, use_fbgemm_kernel=False), True)
    return out


def peers_dense_bmm(fb, tri):
    out = {}
    if fb is not None:
        op = _needs(fb, "jagged_dense_bmm")
        out["fbgemm"] = (lambda x, o, y, L: op(x, o, y, L)[0], True)
    sll = tri.fn(SLL_BMM, "jagged_dense_bmm")
    out["sll_triton:jagged_dense_bmm"] = (
        lambda x, o, y, L: sll(x, y, o, L, False, use_fbgemm_kernel=False), True)
    # Meta's kernel computes rows l < max_seq_len only and leaves the rest of its output
    # uninitialised: with truncated sequences its max error counts those rows.
    gr = tri.fn(GR_TRITON, "triton_jagged_dense_bmm")
    out["gr_triton:jagged_dense_bmm"] = (lambda x, o, y, L: gr(L, o, x, y), True)
    return out


def peers_jagged_bmm(fb, tri):
    out = {}
    if fb is not None:
        op = _needs(fb, "jagged_jagged_bmm")
        out["fbgemm"] = (lambda x, y, o, L: op(x, y, o, L), True)
    sll = tri.fn(SLL_BMM, "jagged_jagged_bmm")
    out["sll_triton:jagged_jagged_bmm"] = (
        lambda x, y, o, L: sll(x, y, o, L, False, use_fbgemm_kernel=False), True)
    return out


def peers_dense_flash_attention(fb, tri):
    """SLL's op (FBGEMM registers it for CUDA only, over the same Triton kernel) and the kernel
    itself; allow_tf32=False on both, as ours."""
    out = {}
    if fb is not None:
        op = _needs_sll(fb, "sll_jagged_dense_flash_attention")
        out["fbgemm"] = (lambda q, k, v, b, o, L: op(q, k, v, b, o, L, False), True)
    sll = tri.fn(SLL_DENSE_ATTN, "jagged_dense_flash_attention")
    out["sll_triton:jagged_dense_flash_attention"] = (
        lambda q, k, v, b, o, L: sll(q, k, v, b, o, L, allow_tf32=False), True)
    return out


def peers_multi_head_flash_attention(fb, tri):
    out = {}
    if fb is not None:
        op = _needs_sll(fb, "sll_multi_head_jagged_flash_attention")
        out["fbgemm"] = (lambda q, k, v, o, L: op(q, k, v, o, L, False), True)
    sll = tri.fn(SLL_MH_ATTN, "multi_head_jagged_flash_attention")
    out["sll_triton:multi_head_jagged_flash_attention"] = (
        lambda q, k, v, o, L: sll(q, k, v, o, L, allow_tf32=False), True)
    return out


def peers_segment_sum(fb, tri):
    if fb is None:
        return {}
    op = _needs(fb, "segment_sum_csr")
    return {"fbgemm": (lambda bs, seg, v: op(bs, seg, v), False)}


def peers_permute(fb, op_name):
    """FBGEMM's permute_1D / permute_2D_sparse_data (forward only, as recops' op)."""
    if fb is None:
        return {}
    return {"fbgemm": (_needs(fb, op_name), False)}


def peers_index_select(fb, tri):
    if fb is None:
        return {}
    op = _needs(fb, "jagged_index_select")
    return {"fbgemm": (lambda v, n, idx, rows: op(v, n, idx, rows)[0], True)}


def peers_concat_1d(fb, tri, dense_a, max_L):
    """concat_1d_jagged's peers: SLL's dense_jagged_cat_jagged_out (a dense [B] part A prepended
    to a jagged B; its Triton path and FBGEMM's op; max_seq_len = the longest sample, so nothing
    is truncated). No peer for two jagged parts here (generative-recommenders'
    concat_1d_jagged_jagged is a CPU op of its C++ extension)."""
    out = {}
    if not dense_a:
        return out
    if fb is not None:
        op = _needs_sll(fb, "sll_dense_jagged_cat_jagged_out")
        out["fbgemm:sll_dense_jagged_cat_jagged_out"] = (
            lambda va, oa, vb, ob: op(va, vb, ob, max_L), False)
    sll = tri.fn(SLL_CAT, "dense_jagged_cat_jagged_out")
    out["sll_triton:dense_jagged_cat_jagged_out"] = (
        lambda va, oa, vb, ob: sll(va, vb, ob, max_L), False)
    return out
