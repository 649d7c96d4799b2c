"""The seed's Ascend entry names (``torch.ops.mxrec.hstu_jagged`` / ``hstu_dense``, the
``hstu_dense_forward`` operator of ``seeds/000_1a4a0d9ad9628bda.txt``) on top of
``recops.hstu_attn``, with the seed's argument names:

- ``mask_type`` 0 lower triangular (causal), 1 upper (anti-causal), 2 none, 3 custom ``mask``
  (``[B, N, S, S]``, nonzero keeps);
- ``attn_bias`` is ``rab`` (``[B, N, S, S]``; recops also takes N = 1);
- ``silu_scale`` defaults to ``1/max_seq_len``; ``alpha`` to recops' ``1/sqrt(d)`` (the seed
  names no default);
- ``target_group_size`` 0 creates no target mask (the targets follow the mask like history);
- ``is_delta_qk`` is accepted and not needed: recops aligns the last query with the last key
  whenever a sequence has fewer queries than keys.
"""

from typing import Optional

import torch

from .. import hstu_attn

_MASK_TYPES = ("causal", "anti_causal", "none", "custom")


def _mask_name(mask_type: int) -> str:
    if mask_type not in range(4):
        raise ValueError(
            f"hstu_jagged/hstu_dense: mask_type={mask_type} must be 0 (lower triangular), "
            "1 (upper), 2 (none) or 3 (custom mask)"
        )
    return _MASK_TYPES[mask_type]


def hstu_jagged(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: Optional[torch.Tensor] = None,
    attn_bias: Optional[torch.Tensor] = None,
    mask_type: int = 0,
    max_seq_len: Optional[int] = None,
    max_seq_len_k: Optional[int] = None,
    silu_scale: Optional[float] = None,
    seq_offset: Optional[torch.Tensor] = None,
    seq_offset_k: Optional[torch.Tensor] = None,
    num_context: Optional[torch.Tensor] = None,
    num_target: Optional[torch.Tensor] = None,
    target_group_size: int = 1,
    alpha: Optional[float] = None,
    kv_cache: Optional[torch.Tensor] = None,
    page_offsets: Optional[torch.Tensor] = None,
    page_ids: Optional[torch.Tensor] = None,
    last_page_len: Optional[torch.Tensor] = None,
    is_delta_qk: int = 0,
) -> torch.Tensor:
    """The seed's jagged form: q ``[s_b, N_q, D]``, k, v ``[s_b, N_k, D]``, ``seq_offset`` /
    ``seq_offset_k`` ``[B+1]``."""
    if seq_offset is None:
        raise ValueError("hstu_jagged: seq_offset ([B+1] offsets of q) is required")
    return hstu_attn(
        q, k, v, seq_offset, seq_offset_k if seq_offset_k is not None else seq_offset,
        max_seq_len, max_seq_len_k if max_seq_len_k is not None else max_seq_len,
        num_contexts=num_context, num_targets=num_target, target_group_size=target_group_size,
        mask_type=_mask_name(mask_type), mask=mask, rab=attn_bias, alpha=alpha,
        silu_scale=silu_scale, kv_cache=kv_cache, page_offsets=page_offsets, page_ids=page_ids,
        last_page_len=last_page_len,
    )


def hstu_dense(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: Optional[torch.Tensor] = None,
    attn_bias: Optional[torch.Tensor] = None,
    mask_type: int = 0,
    max_seq_len: Optional[int] = None,
    max_seq_len_k: Optional[int] = None,
    silu_scale: Optional[float] = None,
    num_context: Optional[torch.Tensor] = None,
    num_target: Optional[torch.Tensor] = None,
    target_group_size: int = 1,
    alpha: Optional[float] = None,
    is_delta_qk: int = 0,
) -> torch.Tensor:
    """The seed's dense (``layout="normal"``) form: q ``[B, S, N_q, D]``, k, v ``[B, S, N_k, D]``;
    the max lengths are the dense S (given ones must equal them)."""
    return hstu_attn(
        q, k, v, None, None, max_seq_len, max_seq_len_k,
        num_contexts=num_context, num_targets=num_target, target_group_size=target_group_size,
        mask_type=_mask_name(mask_type), mask=mask, rab=attn_bias, alpha=alpha,
        silu_scale=silu_scale,
    )
