"""Meta's HSTU entry point (generative-recommenders ``hstu_mha``) on top of ``recops.hstu_attn``:
``SiLU(alpha · Q Kᵀ) / max_seq_len · V`` per sequence, q/k/v jagged by one ``seq_offsets``.

Meta's mask is built on "collapsed ids": every context token has one id, every target token has
the id just after history. Without a sliding window that is exactly the spec §3 mask with
``num_contexts = contextual_seq_len`` (per sequence, clamped to its length), ``num_targets``,
``target_group_size = 1``, causal. Meta's sliding window (``max_attn_len`` with
``min_full_attn_seq_len``) is measured on those collapsed ids, which recops's window is not: it
is rejected with an error rather than answered differently (``window_mode = collapsed`` is not
implemented yet). Dropout is not supported (pass ``dropout_pr=0`` or ``training=False``).
"""

from typing import Optional

import torch

from ..hstu import hstu_attn


def hstu_mha(
    max_seq_len: int,
    alpha: float,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    seq_offsets: torch.Tensor,
    causal: bool = True,
    dropout_pr: float = 0.0,
    training: bool = True,
    num_targets: Optional[torch.Tensor] = None,
    max_attn_len: int = 0,
    contextual_seq_len: int = 0,
    min_full_attn_seq_len: int = 0,
    sort_by_length: bool = False,
    **kernel_options,
) -> torch.Tensor:
    """Meta ``hstu_mha`` (q, k, v ``[total, H, d]`` jagged by ``seq_offsets``); ``sort_by_length``
    and kernel choices are accepted and ignored (recops picks its implementation itself)."""
    if max_attn_len > 0:
        raise NotImplementedError(
            "hstu_mha: max_attn_len > 0 (Meta's sliding window on collapsed ids) is not supported "
            "by recops yet; recops.hstu_attn's window counts plain positions"
        )
    if training and dropout_pr > 0:
        raise NotImplementedError("hstu_mha: dropout is not supported (dropout_pr must be 0)")
    if not causal and (contextual_seq_len > 0 or num_targets is not None):
        raise NotImplementedError("hstu_mha: contexts/targets need causal=True")
    contexts = None
    if contextual_seq_len > 0:
        lengths = seq_offsets[1:] - seq_offsets[:-1]
        contexts = torch.clamp(lengths, max=contextual_seq_len)
    return hstu_attn(
        q, k, v, seq_offsets, seq_offsets, max_seq_len, max_seq_len,
        num_contexts=contexts, num_targets=num_targets, target_group_size=1,
        mask_type="causal" if causal else "none", alpha=alpha, silu_scale=1.0 / max_seq_len,
    )
