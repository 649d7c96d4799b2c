"""Meta's HSTU entry point (generative-recommenders ``hstu_mha``) on top of ``recops.hstu_attn``:
``SiLU(alpha · Q Kᵀ) / max_seq_len · V`` per sequence, q/k/v jagged by one ``seq_offsets``.

Meta's mask is written on "collapsed ids". Position ``i`` of a sequence of length ``n`` gets the id
``max(i - C + 1, 0)`` when ``C = contextual_seq_len > 0`` (every context token shares id 0, and so
does the first history token's predecessor), else ``i``; with ``num_targets`` the ids are capped at
``M = n - C + 1 - T`` (``n - T`` without contexts) so that every target shares the id just after
history. Key ``c`` is valid for row ``r`` when

* ``c == r``, or
* causal: ``id_c < id_r``; non-causal: ``id_c != id_r``; and, with ``max_attn_len = W > 0``,
  ``|id_r - id_c| <= W`` unless the row is "full" (``min_full_attn_seq_len = F > 0`` and
  ``id_r >= M - F``), or
* ``C > 0``, ``id_r == 0`` and ``id_c < M`` (contexts see everything but the targets).

Two paths, one rule:

* no window and causal: that rule is exactly the spec §3 mask with ``num_contexts = min(C, n)``,
  ``num_targets``, ``target_group_size = 1``, causal, for every sequence with ``n >= C + T``; the
  op runs its built-in mask (the fast path of every implementation). Sequences shorter than
  ``C + T`` follow the spec's clamping there, not Meta's degenerate ids (where all ids collapse and
  only the diagonal survives); pass ``window_mode="collapsed"`` to get Meta's rule for those too.
* a window (``max_attn_len > 0``), non-causal with targets, or ``window_mode="collapsed"``: the ids
  are monotone in the position, so every row's valid keys are at most three key intervals, which
  the wrapper computes on the device (``searchsorted`` over the padded ids: no host sync, graph-
  and compile-safe) and passes as the spec's interval mask ``func`` (``nfunc = 7``:
  ``[0, 0) ∪ [a, b) ∪ [r, r+1) ∪ [c, d)``, disjoint and sorted).

Meta rejects contexts with a non-causal mask, and so does this wrapper. Dropout is not supported
(pass ``dropout_pr=0`` or ``training=False``). ``attn_scale`` (a scalar or ``[total]`` tensor)
replaces ``1/max_seq_len`` as in Meta's PyTorch reference.
"""

from typing import Optional

import torch

from .. import hstu_attn
from ._args import bind

_BIG = 2**31 - 1


def _collapsed_func(
    seq_offsets: torch.Tensor,
    total: int,
    max_seq_len: int,
    causal: bool,
    num_targets: Optional[torch.Tensor],
    max_attn_len: int,
    contextual_seq_len: int,
    min_full_attn_seq_len: int,
) -> torch.Tensor:
    """``func`` ``[1, 7, total]`` int32 holding Meta's collapsed-id mask (see the module doc)."""
    dev = seq_offsets.device
    offsets = seq_offsets.to(torch.int64)
    lengths = offsets[1:] - offsets[:-1]  # [B]
    B, N = lengths.numel(), max_seq_len
    pos = torch.arange(N, device=dev, dtype=torch.int64).view(1, N)
    ids = pos.expand(B, N)
    max_ids = lengths.view(B, 1)
    if contextual_seq_len > 0:
        ids = torch.clamp(ids - (contextual_seq_len - 1), min=0)
        max_ids = max_ids - (contextual_seq_len - 1)
    if num_targets is not None:
        max_ids = max_ids - num_targets.to(torch.int64).view(B, 1)
        ids = torch.minimum(ids, max_ids)
    inside = pos < lengths.view(B, 1)
    # Monotone in the position; padding sorts last, so counts never include it.
    sorted_ids = torch.where(inside, ids, torch.full_like(ids, _BIG)).contiguous()

    def first_at_least(x: torch.Tensor) -> torch.Tensor:  # first position with id >= x, [B, N]
        return torch.searchsorted(sorted_ids, x.contiguous(), right=False)

    unbounded = torch.full_like(ids, -(2**40))
    if max_attn_len > 0:
        full = torch.zeros_like(inside)
        if min_full_attn_seq_len > 0:
            full = ids >= max_ids - min_full_attn_seq_len
        lo_id = torch.where(full, unbounded, ids - max_attn_len)
        hi_id = torch.where(full, -unbounded, ids + max_attn_len + 1)
    else:
        lo_id, hi_id = unbounded, -unbounded
    a_lo = first_at_least(lo_id)
    a_hi = first_at_least(ids)  # keys with a smaller id: [a_lo, a_hi), a_hi <= r
    if contextual_seq_len > 0:  # rows with id 0 also see every key with id < M
        ctx_row = ids == 0
        a_lo = torch.where(ctx_row, torch.zeros_like(a_lo), a_lo)
        a_hi = torch.where(ctx_row, first_at_least(max_ids.expand(B, N)), a_hi)
    rows = pos.expand(B, N)
    diag_in_a = (a_lo <= rows) & (rows < a_hi)
    d_lo = torch.where(diag_in_a, a_lo, rows)  # empty when the diagonal is already in [a_lo, a_hi)
    d_hi = torch.where(diag_in_a, a_lo, rows + 1)
    if causal:
        c_lo = c_hi = torch.zeros_like(rows)
    else:  # keys with a larger id, (r, ...): [first id > id_r, first id >= hi_id)
        c_lo = first_at_least(ids + 1)
        c_hi = first_at_least(hi_id)
    zero = torch.zeros_like(rows)
    dense = torch.stack([zero, a_lo, a_hi, d_lo, d_hi, c_lo, c_hi], dim=0)  # [7, B, N]
    dense = torch.clamp(dense, max=N).to(torch.int32)
    # Jagged rows of the padded [B, N] grid, in token order (a gather: no data-dependent size).
    tok = torch.arange(total, device=dev, dtype=torch.int64)
    seq = torch.searchsorted(offsets[1:].contiguous(), tok, right=True).clamp(max=max(B - 1, 0))
    row = (tok - offsets[seq]).clamp(min=0, max=max(N - 1, 0))
    if B == 0 or N == 0:
        return torch.zeros(1, 7, total, dtype=torch.int32, device=dev)
    return dense[:, seq, row].unsqueeze(0).contiguous()


_ORDER = ("max_seq_len alpha q k v seq_offsets causal dropout_pr training num_targets attn_scale "
          "max_attn_len contextual_seq_len min_full_attn_seq_len sort_by_length kernel "
          "enable_tma").split()
_ORDER_NO_SCALE = [n for n in _ORDER if n != "attn_scale"]
_DEFAULTS = {"causal": True, "dropout_pr": 0.0, "training": True, "num_targets": None,
             "attn_scale": None, "max_attn_len": 0, "contextual_seq_len": 0,
             "min_full_attn_seq_len": 0, "sort_by_length": False, "kernel": None,
             "enable_tma": False, "window_mode": "auto"}


def hstu_mha(*args, **kwargs) -> torch.Tensor:
    """Meta ``hstu_mha`` (q, k, v ``[total, H, d]`` jagged by ``seq_offsets``), with Meta's
    collapsed-id mask (module doc), in both released argument orders:
    ``(max_seq_len, alpha, q, k, v, seq_offsets, causal=True, dropout_pr=0.0, training=True,
    num_targets=None, attn_scale=None, max_attn_len=0, contextual_seq_len=0,
    min_full_attn_seq_len=0, sort_by_length=False, kernel=..., enable_tma=False)``
    (generative-recommenders now) and the same without ``attn_scale`` (before it, and
    torchrec-derived copies such as tzrec): the eleventh positional argument tells them apart, a
    tensor or None (``attn_scale``) or an int (``max_attn_len``). ``sort_by_length``, ``kernel``,
    ``enable_tma`` and other kernel options are accepted and ignored (recops picks its
    implementation itself). Keyword ``window_mode``: ``"auto"`` (built-in mask when it is exact,
    the interval mask otherwise) or ``"collapsed"`` (always the interval mask)."""
    order = (_ORDER_NO_SCALE if len(args) > 10 and args[10] is not None
             and not isinstance(args[10], torch.Tensor) else _ORDER)
    # names outside _DEFAULTS are kernel options: kept, and ignored
    a = bind("hstu_mha", args, kwargs, order, _DEFAULTS, _ORDER[:6], strict=False)
    max_seq_len, alpha, q, k, v, seq_offsets = (a[n] for n in _ORDER[:6])
    causal, dropout_pr, training = a["causal"], a["dropout_pr"], a["training"]
    num_targets, attn_scale, window_mode = a["num_targets"], a["attn_scale"], a["window_mode"]
    max_attn_len, contextual_seq_len = a["max_attn_len"], a["contextual_seq_len"]
    min_full_attn_seq_len = a["min_full_attn_seq_len"]
    if training and dropout_pr > 0:
        raise NotImplementedError("hstu_mha: dropout is not supported (dropout_pr must be 0)")
    if window_mode not in ("auto", "collapsed"):
        raise ValueError(f"hstu_mha: window_mode must be 'auto' or 'collapsed', got {window_mode!r}")
    if max_attn_len < 0 or contextual_seq_len < 0 or min_full_attn_seq_len < 0:
        raise ValueError(
            "hstu_mha: max_attn_len, contextual_seq_len and min_full_attn_seq_len must be >= 0"
        )
    if not causal and contextual_seq_len > 0:
        raise ValueError("hstu_mha: contextual_seq_len > 0 needs causal=True (as in Meta's kernel)")
    if attn_scale is not None:
        total = q.shape[0]
        attn_scale = attn_scale.to(torch.float32)
        attn_scale = attn_scale.expand(total) if attn_scale.dim() == 0 else attn_scale.view(total)
        attn_scale = attn_scale.contiguous()
    silu_scale = 1.0 / max_seq_len if max_seq_len > 0 else 1.0
    use_func = (
        window_mode == "collapsed" or max_attn_len > 0 or (not causal and num_targets is not None)
    )
    if use_func:
        func = _collapsed_func(
            seq_offsets, q.shape[0], max_seq_len, causal, num_targets, max_attn_len, contextual_seq_len,
            min_full_attn_seq_len,
        )
        return hstu_attn(
            q, k, v, seq_offsets, seq_offsets, max_seq_len, max_seq_len, func=func, alpha=alpha,
            silu_scale=silu_scale, attn_scale=attn_scale,
        )
    contexts = None
    if contextual_seq_len > 0:
        lengths = seq_offsets[1:] - seq_offsets[:-1]
        contexts = torch.clamp(lengths, max=contextual_seq_len)
    return hstu_attn(
        q, k, v, seq_offsets, seq_offsets, max_seq_len, max_seq_len,
        num_contexts=contexts, num_targets=num_targets, target_group_size=1,
        mask_type="causal" if causal else "none", alpha=alpha, silu_scale=silu_scale,
        attn_scale=attn_scale,
    )
