"""HSTU attention (``hstu_attention.md``), exported as ``recops.hstu_attn`` / ``recops.hstu_mask``
(python/recops/_kit.py imports this module): the autograd-aware wrapper of
``torch.ops.recops.hstu_attn_fwd`` / ``hstu_attn_bwd``. Argument names, defaults, docs; no math.

Letters: ``B`` sequences, ``Hq``/``Hk`` query/key heads (``Hq % Hk == 0``), ``d`` the q/k head dim,
``dv`` the v head dim, ``Lq``/``Lk`` one sequence's lengths, ``Sq``/``Sk`` = ``max_seq_len_q/_k``.
"""

import math
from typing import Optional, Tuple

import torch

__all__ = ["hstu_attn", "hstu_mask"]

_ops = torch.ops.recops

_MASK_TYPES = {"causal": 0, "anti_causal": 1, "none": 2, "custom": 3}


def _max_len(offsets: torch.Tensor) -> int:
    if offsets.numel() <= 1:
        return 0
    return int((offsets[1:] - offsets[:-1]).max())


def hstu_attn(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets_q: Optional[torch.Tensor] = None,
    seq_offsets_k: Optional[torch.Tensor] = None,
    max_seq_len_q: Optional[int] = None,
    max_seq_len_k: Optional[int] = None,
    *,
    num_contexts: Optional[torch.Tensor] = None,
    num_targets: Optional[torch.Tensor] = None,
    target_group_size: int = 1,
    window: Tuple[int, int] = (-1, 0),
    mask_type: str = "causal",
    mask: Optional[torch.Tensor] = None,
    func: Optional[torch.Tensor] = None,
    rab: Optional[torch.Tensor] = None,
    alpha: Optional[float] = None,
    silu_scale: Optional[float] = None,
    attn_scale: Optional[torch.Tensor] = None,
    kv_cache: Optional[torch.Tensor] = None,
    page_offsets: Optional[torch.Tensor] = None,
    page_ids: Optional[torch.Tensor] = None,
    last_page_len: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """HSTU attention: per sequence and query head,
    ``O = s · (M ⊙ SiLU(α (Q Kᵀ + rab))) V`` with the mask ``M`` of spec §3.

    Args:
        q: jagged ``[total_q, Hq, d]`` (with ``seq_offsets_q``) or dense ``[B, Sq, Hq, d]``;
            fp32, fp16, bf16 (fp64 runs the reference, for gradcheck).
        k: ``[total_k, Hk, d]`` or ``[B, Sk, Hk, d]``, q's dtype. ``v``: same with ``dv`` last.
        seq_offsets_q, seq_offsets_k: ``[B+1]`` int32/int64 (jagged layout); ``seq_offsets_k``
            defaults to ``seq_offsets_q``. Both None: dense layout.
        max_seq_len_q, max_seq_len_k: bounds of the lengths (the padded extents of ``rab`` and
            ``mask``); default: the dense S, or the longest sequence read from the offsets (a
            data-dependent read: pass them explicitly under ``torch.compile``). With a paged cache
            ``max_seq_len_k`` counts cached + new keys and must be given.
        num_contexts, num_targets: ``[B]`` int32/int64 per-sequence counts in ``[0, Lk]``.
        target_group_size: ``>= 1``; a target sees history and its own group causally.
        window: ``(left, right)``, -1 unbounded; ``(-1, 0)`` is causal, ``(w, 0)`` a sliding window.
        mask_type: ``"causal"`` (uses ``window``), ``"anti_causal"``, ``"none"`` or ``"custom"``
            (needs ``mask``).
        mask: ``[B, Hq or 1, Sq, Sk]`` bool or q's dtype, nonzero keeps (``mask_type="custom"``).
        func: ``[Hq or 1, nfunc, total_q]`` int32, ``nfunc`` odd: query keeps keys in
            ``[0, F0) ∪ [F1, F2) ∪ …`` (replaces the built-in mask).
        rab: ``[B, Hq or 1, Sq, Sk]`` relative attention bias in q's dtype. ``alpha`` multiplies
            it too (NVIDIA convention): to get ``SiLU(α QKᵀ + rab)`` pass ``rab / alpha``.
        alpha: score scale, default ``1/sqrt(d)``.
        silu_scale: output normaliser ``s``, default ``1/max_seq_len_q``.
        attn_scale: ``[total_q]`` fp32 per-token normaliser (replaces ``silu_scale``).
        kv_cache, page_offsets, page_ids, last_page_len: paged K/V history (inference only):
            ``[num_pages, 2, page_size, Hk, d]``, ``[B+1]``, ``[page_offsets[-1]]``, ``[B]``.

    Returns:
        like ``q`` with ``dv`` in the last dim.

    Differentiable in ``q``, ``k``, ``v`` and ``rab`` (the backward is deterministic); a paged
    cache has no gradient. Double backward raises.

    Raises:
        RuntimeError naming the argument and the rule for every bad input of spec §5.
    """
    if mask_type not in _MASK_TYPES:
        raise ValueError(
            f"hstu_attn: mask_type={mask_type!r}; expected one of {sorted(_MASK_TYPES)}"
        )
    if seq_offsets_q is not None and seq_offsets_k is None:
        seq_offsets_k = seq_offsets_q
    jagged = seq_offsets_q is not None
    if max_seq_len_q is None:
        max_seq_len_q = _max_len(seq_offsets_q) if jagged else q.size(1)
    if max_seq_len_k is None:
        if kv_cache is not None:
            raise ValueError("hstu_attn: with a paged cache give max_seq_len_k (cached + new keys)")
        max_seq_len_k = _max_len(seq_offsets_k) if jagged else k.size(1)
    if alpha is None:
        alpha = 1.0 / math.sqrt(q.size(-1)) if q.size(-1) > 0 else 1.0
    return _ops.hstu_attn_fwd(
        q, k, v, seq_offsets_q, seq_offsets_k, max_seq_len_q, max_seq_len_k,
        num_contexts, num_targets, target_group_size, window[0], window[1],
        _MASK_TYPES[mask_type], mask, func, rab, alpha, silu_scale, attn_scale,
        kv_cache, page_offsets, page_ids, last_page_len,
    )


def hstu_mask(
    seq_len: int,
    seq_len_k: Optional[int] = None,
    *,
    num_contexts: int = 0,
    num_targets: int = 0,
    target_group_size: int = 1,
    window: Tuple[int, int] = (-1, 0),
    mask_type: str = "causal",
) -> torch.Tensor:
    """The dense boolean mask ``M`` of one sequence (spec §3), ``[seq_len, seq_len_k]``:
    ``M[i, c]`` is True where query ``i`` attends to key ``c``. Evaluated by the op's reference,
    so it is exactly what ``hstu_attn`` uses for this configuration.

    Args:
        seq_len: ``Lq``; ``seq_len_k``: ``Lk`` (default ``Lq``; larger means delta-q: the last
            query aligns with the last key).
        num_contexts, num_targets, target_group_size, window, mask_type: as in ``hstu_attn``
            (``mask_type`` ``"causal"``, ``"anti_causal"`` or ``"none"``).

    Example (spec §3's worked example)::

        >>> recops.hstu_mask(9, num_contexts=2, num_targets=4, target_group_size=2).int()
    """
    if mask_type not in ("causal", "anti_causal", "none"):
        raise ValueError(f"hstu_mask: mask_type={mask_type!r}; expected causal, anti_causal or none")
    Lq = seq_len
    Lk = seq_len if seq_len_k is None else seq_len_k
    q = torch.empty(Lq, 1, 0)
    k = torch.empty(Lk, 1, 0)
    oq, ok = torch.tensor([0, Lq]), torch.tensor([0, Lk])
    return _ops.hstu_mask(
        q, k, k, oq, ok, Lq, Lk, torch.tensor([num_contexts]), torch.tensor([num_targets]),
        target_group_size, window[0] if mask_type == "causal" else -1,
        window[1] if mask_type == "causal" else 0, _MASK_TYPES[mask_type],
    )
