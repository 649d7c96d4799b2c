"""NVIDIA's HSTU entry point (recsys-examples ``hstu_attn_varlen_func``) on top of
``recops.hstu_attn``, in every released argument order (provenance: the op's README):

- ``(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, num_contexts, num_targets,
  target_group_size, window_size, alpha, rab, has_drab, kv_cache, page_offsets, page_ids,
  last_page_lens, cu_seqlens_t, func, scaling_seqlen)``; older releases spell the offsets
  ``seq_offsets_q`` / ``seq_offsets_k`` / ``seq_offsets_t`` (accepted as keywords too);
- the newest: ``(q, k, v, cu_seqlens_q, cu_seqlens_k, seqused_q, seqused_k, max_seqlen_q,
  max_seqlen_k, scaling_seqlen, num_contexts, num_targets, target_group_size, window_size, alpha,
  rab, has_drab, func, kv_cache, page_offsets, page_ids, last_page_lens, quant_mode)``.

The sixth positional argument tells them apart: an int (``max_seqlen_q``) or a tensor / None
(``seqused_q``). ``hstu_attn_qkvpacked_func`` takes q, k, v packed as ``[total, 3, heads, d]``.
FBGEMM's ``experimental/hstu`` form is ``recops.compat.fbgemm_hstu``.

NVIDIA's conventions, where they differ from the canonical op:
- ``window_size`` defaults to ``(-1, -1)`` (no mask); causal is ``(-1, 0)``;
- ``alpha`` defaults to 1.0 (the canonical wrapper defaults to 1/sqrt(d));
- the output is divided by ``scaling_seqlen`` (-1: ``max_seqlen_q``), i.e. ``silu_scale``;
- ``has_drab`` asks for the gradient of ``rab`` (``has_drab=False`` detaches rab);
- ``cu_seqlens_t`` (target offsets, ``[B+1]``) is read as ``num_targets = diff(cu_seqlens_t)``;
  give it or ``num_targets``, not both;
- ``seqused_q`` / ``seqused_k`` (``[B]``): sequence b uses only the first ``seqused[b]`` tokens
  of its slot ``[cu_seqlens[b], cu_seqlens[b+1])``. recops runs the op on the compacted used
  tokens (exact; one host read of the counts) and returns zeros in the unused query rows;
- ``quant_mode``: -1 (no quantisation) only; the FP8 modes (0 cast, 1-4 scaled) raise
  NotImplementedError.
"""

import torch

from .. import hstu_attn
from ._args import bind

_RELEASED = (
    "q k v cu_seqlens_q cu_seqlens_k max_seqlen_q max_seqlen_k num_contexts num_targets "
    "target_group_size window_size alpha rab has_drab kv_cache page_offsets page_ids "
    "last_page_lens cu_seqlens_t func scaling_seqlen"
).split()
_NEWEST = (
    "q k v cu_seqlens_q cu_seqlens_k seqused_q seqused_k max_seqlen_q max_seqlen_k scaling_seqlen "
    "num_contexts num_targets target_group_size window_size alpha rab has_drab func kv_cache "
    "page_offsets page_ids last_page_lens quant_mode"
).split()
_DEFAULTS = {
    "seqused_q": None, "seqused_k": None, "num_contexts": None, "num_targets": None,
    "target_group_size": 1, "window_size": (-1, -1), "alpha": 1.0, "rab": None,
    "has_drab": False, "kv_cache": None, "page_offsets": None, "page_ids": None,
    "last_page_lens": None, "cu_seqlens_t": None, "func": None, "scaling_seqlen": -1,
    "quant_mode": -1,
}
_ALIASES = {"seq_offsets_q": "cu_seqlens_q", "seq_offsets_k": "cu_seqlens_k",
            "seq_offsets_t": "cu_seqlens_t"}
_NAME = "hstu_attn_varlen_func"


def _bind(args, kwargs) -> dict:
    """The arguments by name, from either positional order and any keywords."""
    newest = len(args) > 5 and (args[5] is None or isinstance(args[5], torch.Tensor))
    order = _NEWEST if newest else _RELEASED
    return bind(_NAME, args, kwargs, order, _DEFAULTS, _RELEASED[:7], aliases=_ALIASES)


def _used_rows(cu: torch.Tensor, used: torch.Tensor, name: str):
    """Rows ``cu[b] + j`` for ``j < used[b]``, in order, and the offsets of the compacted view."""
    B = cu.shape[0] - 1
    if used.dim() != 1 or used.shape[0] != B:
        raise ValueError(f"{_NAME}: {name} must be [B] = [{B}], got {list(used.shape)}")
    used = used.to(device=cu.device, dtype=torch.int64)
    lengths = cu[1:].to(torch.int64) - cu[:-1].to(torch.int64)
    if bool(((used < 0) | (used > lengths)).any()):
        raise ValueError(f"{_NAME}: {name}[b] must be in [0, the sequence's length]")
    offsets = torch.zeros(B + 1, dtype=torch.int64, device=cu.device)
    offsets[1:] = torch.cumsum(used, 0)
    total = int(offsets[-1])
    start = torch.repeat_interleave(cu[:-1].to(torch.int64), used, output_size=total)
    first = torch.repeat_interleave(offsets[:-1], used, output_size=total)
    rows = start + torch.arange(total, device=cu.device) - first
    return rows, offsets.to(cu.dtype)


def hstu_attn_varlen_func(*args, **kwargs) -> torch.Tensor:
    """NVIDIA ``hstu_attn_varlen_func``: ``SiLU(alpha · (Q Kᵀ + rab)) / scaling_seqlen · V`` under
    the context / target / window mask (see ``recops.hstu_attn`` for shapes and the mask, and this
    module's docstring for the accepted argument orders)."""
    a = _bind(args, kwargs)
    if a["quant_mode"] is not None and a["quant_mode"] != -1:
        raise NotImplementedError(
            f"{_NAME}: quant_mode={a['quant_mode']} (FP8) is not implemented in recops; "
            "only quant_mode=-1 (no quantisation)"
        )
    q, k, v = a["q"], a["k"], a["v"]
    cu_q, cu_k = a["cu_seqlens_q"], a["cu_seqlens_k"]
    num_targets, cu_t = a["num_targets"], a["cu_seqlens_t"]
    if cu_t is not None:
        if num_targets is not None:
            raise ValueError(f"{_NAME}: give either num_targets or cu_seqlens_t, not both")
        if cu_t.dim() != 1 or cu_t.shape[0] != cu_q.shape[0]:
            raise ValueError(
                f"{_NAME}: cu_seqlens_t must be [B+1] like cu_seqlens_q, got {list(cu_t.shape)}"
            )
        num_targets = cu_t[1:] - cu_t[:-1]
    rab = a["rab"]
    if rab is not None and not a["has_drab"]:
        rab = rab.detach()
    func = a["func"]
    rows_q = None
    if a["seqused_q"] is not None:
        rows_q, cu_q = _used_rows(cu_q, a["seqused_q"], "seqused_q")
        q = q.index_select(0, rows_q)
        if func is not None:
            func = func.index_select(2, rows_q)
    if a["seqused_k"] is not None:
        rows_k, cu_k = _used_rows(cu_k, a["seqused_k"], "seqused_k")
        k, v = k.index_select(0, rows_k), v.index_select(0, rows_k)
    max_q = a["max_seqlen_q"]
    scaling = a["scaling_seqlen"]
    scale = max_q if scaling == -1 else scaling
    out = hstu_attn(
        q, k, v, cu_q, cu_k, max_q, a["max_seqlen_k"],
        num_contexts=a["num_contexts"], num_targets=num_targets,
        target_group_size=a["target_group_size"], window=tuple(a["window_size"]),
        mask_type="causal", func=func, rab=rab, alpha=a["alpha"],
        silu_scale=1.0 / scale if scale > 0 else 1.0,
        kv_cache=a["kv_cache"], page_offsets=a["page_offsets"], page_ids=a["page_ids"],
        last_page_len=a["last_page_lens"],
    )
    if rows_q is None:
        return out
    full = out.new_zeros((a["q"].shape[0],) + tuple(out.shape[1:]))
    return full.index_copy(0, rows_q, out)


def hstu_attn_qkvpacked_func(qkv, seq_offsets_q, seq_offsets_k, max_seqlen_q, max_seqlen_k,
                             num_contexts=None, num_targets=None, target_group_size=1,
                             window_size=(-1, -1), alpha=1.0, rab=None, has_drab=False,
                             func=None) -> torch.Tensor:
    """NVIDIA ``hstu_attn_qkvpacked_func``: q, k and v packed as ``qkv [total, 3, heads, d]``
    (self-attention over one token set, as NVIDIA's code indexes it; its gradient comes back in
    the same packing), the other arguments as ``hstu_attn_varlen_func``'s released order."""
    if qkv.dim() != 4 or qkv.shape[1] != 3:
        raise ValueError(f"hstu_attn_qkvpacked_func: qkv must be [total, 3, heads, head_dim], got "
                         f"{list(qkv.shape)}")
    q, k, v = qkv.unbind(1)
    return hstu_attn_varlen_func(q, k, v, seq_offsets_q, seq_offsets_k, max_seqlen_q, max_seqlen_k,
                                 num_contexts, num_targets, target_group_size, window_size, alpha,
                                 rab, has_drab, func=func)
