"""NVIDIA's HSTU entry point (recsys-examples ``hstu_attn_varlen_func``, now FBGEMM
``experimental/hstu``) on top of ``recops.hstu_attn``: the same argument order and defaults.

Differences from the canonical op, all of them NVIDIA's conventions:
- ``window_size`` defaults to ``(-1, -1)`` (no mask); causal is ``(-1, 0)``;
- ``alpha`` defaults to 1.0 (the canonical wrapper defaults to 1/sqrt(d));
- the output is divided by ``scaling_seqlen`` (-1: ``max_seqlen_q``), i.e. ``silu_scale``;
- ``has_drab`` asks for the gradient of ``rab`` (recops derives it from ``rab.requires_grad``,
  so ``has_drab=False`` detaches rab).
- ``cu_seqlens_t`` (NVIDIA's target offsets, ``[B+1]``, used in paged inference) is read as
  ``num_targets = cu_seqlens_t[1:] - cu_seqlens_t[:-1]``; give it or ``num_targets``, not both.
"""

from typing import Optional, Tuple

import torch

from .. import hstu_attn


def hstu_attn_varlen_func(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens_q: torch.Tensor,
    cu_seqlens_k: torch.Tensor,
    max_seqlen_q: int,
    max_seqlen_k: int,
    num_contexts: Optional[torch.Tensor] = None,
    num_targets: Optional[torch.Tensor] = None,
    target_group_size: int = 1,
    window_size: Tuple[int, int] = (-1, -1),
    alpha: float = 1.0,
    rab: Optional[torch.Tensor] = None,
    has_drab: bool = False,
    kv_cache: Optional[torch.Tensor] = None,
    page_offsets: Optional[torch.Tensor] = None,
    page_ids: Optional[torch.Tensor] = None,
    last_page_lens: Optional[torch.Tensor] = None,
    cu_seqlens_t: Optional[torch.Tensor] = None,
    func: Optional[torch.Tensor] = None,
    scaling_seqlen: int = -1,
) -> torch.Tensor:
    """NVIDIA ``hstu_attn_varlen_func``: ``SiLU(alpha · (Q Kᵀ + rab)) / scaling_seqlen · V`` under
    the context / target / window mask (see ``recops.hstu_attn`` for shapes and the mask)."""
    if cu_seqlens_t is not None:
        # NVIDIA's paged-inference form of the targets: cumulative target counts per sequence.
        if num_targets is not None:
            raise ValueError(
                "hstu_attn_varlen_func: give either num_targets or cu_seqlens_t, not both"
            )
        if cu_seqlens_t.dim() != 1 or cu_seqlens_t.shape[0] != cu_seqlens_q.shape[0]:
            raise ValueError(
                "hstu_attn_varlen_func: cu_seqlens_t must be [B+1] like cu_seqlens_q, got "
                f"{list(cu_seqlens_t.shape)}"
            )
        num_targets = cu_seqlens_t[1:] - cu_seqlens_t[:-1]
    if rab is not None and not has_drab:
        rab = rab.detach()
    scale = max_seqlen_q if scaling_seqlen == -1 else scaling_seqlen
    return hstu_attn(
        q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
        num_contexts=num_contexts, num_targets=num_targets,
        target_group_size=target_group_size, window=tuple(window_size), mask_type="causal",
        func=func, rab=rab, alpha=alpha, silu_scale=1.0 / scale if scale > 0 else 1.0,
        kv_cache=kv_cache, page_offsets=page_offsets, page_ids=page_ids,
        last_page_len=last_page_lens,
    )
